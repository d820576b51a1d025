"""The engine's readouts of a frozen backbone: the evaluation, its ``eval`` sections, its metrics.

A modality without its own evaluation (:meth:`~hardneg.modalities.base.Modality.evaluate`) is
evaluated by :func:`evaluate_encoder` on ``encoder(x)[0]`` (HCL, Robinson et al., ICLR 2021, §5.1;
Arora et al., ICML 2019): the backbone runs in eval mode (BatchNorm running statistics) on the
un-augmented inputs; the representations ``h`` of the training split fit the classifiers, the test
split scores them:

* linear readout (logistic regression on standardised ``h``), on all labels and, where asked, on a
  few labels per class (averaged over seeded draws),
* weighted kNN (k = 200, t = 0.1; top-1 and top-5),
* mean classifier (``argmax_c μ_cᵀ h``, L2-normalised features) and the average
  (k+1)-way accuracy of Arora et al. (Def. 2.2).

Its ``eval`` section is :class:`ReadoutEval`; latent-class data (the latent simulator, articles)
also reports Arora et al.'s Table 1 (:class:`ClassTableEval`). Each section hands the readouts its
keys (:meth:`ReadoutEval.readouts`), names the metrics that ``compare`` / ``sweep`` tables show
(:meth:`ReadoutEval.table_metrics`) and the headline ones (:meth:`ReadoutEval.headline_metrics`);
the online kNN curve (``eval.every_n_epochs``) records :data:`ONLINE_METRIC`.

>>> sorted(set(ClassTableEval.model_fields) - set(ReadoutEval.model_fields))
['latent_table']
>>> ReadoutEval().table_metrics()
('linear_top1', 'knn_top1', 'knn_top5', 'mean_top1')
>>> ReadoutEval().headline_metrics()
('linear_top1', 'knn_top1', 'mean_top1')
"""

from __future__ import annotations

import time
from typing import Annotated, Any

import numpy as np
import torch
from pydantic import Field
from torch import nn

from hardneg.config.schema import EvalSection
from hardneg.data.vectors import Split, split_inputs
from hardneg.modalities.results import EvalResult

__all__ = ["ONLINE_METRIC", "ClassTableEval", "ReadoutEval", "evaluate_encoder"]

#: The metric of the online kNN curve (``eval.every_n_epochs``): weighted-kNN top-1 (HCL §6.3).
ONLINE_METRIC = "knn_top1"

PositiveInt = Annotated[int, Field(ge=1)]

# the headline metrics of the readouts, in the order of the tables' columns
_READOUT_COLUMNS = ("linear_top1", "knn_top1", "knn_top5", "mean_top1")
# the few of them that name a result at a glance (progress line, a sweep's series figures)
_HEADLINE = ("linear_top1", "knn_top1", "mean_top1")
# Arora et al.'s Table 1: the mean classifier on avg-2 / avg-10 tasks and mu-5's top-1
_TABLE1_COLUMNS = ("mu_avg2", "mu_avg10", "mu5_top1")


class ReadoutEval(EvalSection):
    """``eval`` of the engine's readouts (linear, weighted kNN, mean classifier, k-wise accuracy)."""

    linear: bool = Field(True, description="linear readout")
    linear_C: float = Field(1.0, gt=0.0, description="inverse L2 strength of the linear readout")
    knn: bool = Field(True, description="weighted kNN (top-1 / top-5)")
    knn_k: int = Field(200, ge=1, description="neighbours of the weighted kNN")
    knn_temperature: float = Field(0.1, gt=0.0, description="temperature of the kNN weights")
    mean_classifier: bool = Field(True, description="mean classifier (Arora et al.)")
    kwise: list[PositiveInt] = Field(
        default_factory=lambda: [1], description="k of the average (k+1)-way accuracy"
    )
    kwise_tasks: int = Field(500, ge=1, description="sampled tasks per k")
    mean_shots: list[PositiveInt] = Field(
        default_factory=list, description="mean classifier from k samples per class (Arora et al.'s mu-5)"
    )
    linear_shots: list[PositiveInt] = Field(
        default_factory=list,
        description="linear readout from k labels per class (SimCLR's few-label readout): linear{k}shot_top1",
    )
    shot_draws: int = Field(5, ge=1, description="seeded class-balanced label draws averaged per k")
    every_n_epochs: int = Field(0, ge=0, description="online kNN accuracy every n epochs (0 = off)")

    def readouts(self) -> dict[str, Any]:
        """The keyword arguments of :func:`hardneg.evaluate.evaluate_encoder` that this section sets."""
        return {
            "linear": self.linear,
            "linear_C": self.linear_C,
            "knn": self.knn,
            "knn_k": self.knn_k,
            "knn_temperature": self.knn_temperature,
            "mean_classifier": self.mean_classifier,
            "kwise": self.kwise,
            "kwise_tasks": self.kwise_tasks,
            "mean_shots": self.mean_shots,
            "linear_shots": self.linear_shots,
            "shot_draws": self.shot_draws,
            "latent_table": False,
        }

    def table_metrics(self) -> tuple[str, ...]:
        """The metrics a ``compare`` / ``sweep`` table shows, in column order (absent ones are left out)."""
        return self._columns()

    def headline_metrics(self) -> tuple[str, ...]:
        """The linear, kNN and mean-classifier top-1 accuracies."""
        return _HEADLINE

    def sampled_task_sizes(self) -> list[int]:
        """The ``k`` of the ``(k + 1)``-way tasks the evaluation samples (``eval.kwise_tasks`` each):
        ``eval.kwise`` with the mean classifier."""
        return list(self.kwise) if self.mean_classifier else []

    def _columns(self) -> tuple[str, ...]:
        """The readouts' columns, each few-label readout right after the all-label one."""
        shots = tuple(f"linear{k}shot_top1" for k in self.linear_shots)
        return (_READOUT_COLUMNS[0], *shots, *_READOUT_COLUMNS[1:])


class ClassTableEval(ReadoutEval):
    """:class:`ReadoutEval` of latent-class data, with Arora et al.'s Table 1 (ICML 2019)."""

    latent_table: bool = Field(
        False, description="Arora et al.'s Table 1: Tr / mu / mu-5 on avg-2, avg-10, top-1, top-10"
    )

    def readouts(self) -> dict[str, Any]:
        """:meth:`ReadoutEval.readouts` with ``latent_table``."""
        return {**super().readouts(), "latent_table": self.latent_table}

    def sampled_task_sizes(self) -> list[int]:
        """:meth:`ReadoutEval.sampled_task_sizes` and, with ``latent_table``, Table 1's avg-2 and avg-10."""
        return [*super().sampled_task_sizes(), *((1, 9) if self.latent_table else ())]

    def table_metrics(self) -> tuple[str, ...]:
        """The readouts' columns, then Table 1's (``mu_avg2``, ``mu_avg10``, ``mu5_top1``)."""
        return (*self._columns(), *_TABLE1_COLUMNS)


def evaluate_encoder(
    encoder: nn.Module,
    *,
    train: Split,
    test: Split,
    linear: bool = True,
    linear_C: float = 1.0,
    knn: bool = True,
    knn_k: int = 200,
    knn_temperature: float = 0.1,
    mean_classifier: bool = True,
    kwise: tuple[int, ...] | list[int] = (1,),
    kwise_tasks: int = 500,
    mean_shots: tuple[int, ...] | list[int] = (),
    linear_shots: tuple[int, ...] | list[int] = (),
    shot_draws: int = 5,
    latent_table: bool = False,
    batch_size: int = 512,
    seed: int = 0,
) -> EvalResult:
    """Evaluate ``encoder``'s representation ``h`` (first output) on ``test`` after fitting on ``train``.

    Returns metrics named ``linear_top1``, ``knn_top1``, ``knn_top5``, ``mean_top1``,
    ``kwise{k}_top1`` and ``mean{k}shot_top1`` (the enabled ones), each in [0, 1]. The last is Arora
    et al.'s μ-k (ICML 2019, Table 1): the mean classifier with each class mean taken from ``k``
    training samples drawn with ``seed`` (all of a class's samples when it has fewer).
    ``linear{k}shot_top1`` is the linear readout fitted on ``k`` labels per class, averaged over
    ``shot_draws`` seeded class-balanced draws (SimCLR's few-label evaluation, Chen et al., ICML
    2020, §6; :func:`~hardneg.evaluate.few_labels.few_label_linear_accuracy`).
    ``latent_table`` adds Arora et al.'s Table 1 grid
    (:func:`~hardneg.evaluate.latent_table.latent_class_table`: ``tr_avg2`` … ``mu5_top10``).
    """
    from hardneg.evaluate import (
        LinearReadout,
        MeanClassifier,
        WeightedKNN,
        average_kwise_accuracy,
        extract_features,
    )
    from hardneg.evaluate.few_labels import few_label_linear_accuracy, few_shot_indices

    start = time.perf_counter()
    keep = train.labels >= 0  # unlabelled items cannot fit a classifier
    with torch.random.fork_rng(devices=[]):
        train_h = extract_features(encoder, split_inputs(train)[keep], batch_size=batch_size)
        test_h = extract_features(encoder, split_inputs(test), batch_size=batch_size)
    y_train = train.labels[keep].numpy()
    y_test = test.labels.numpy()
    metrics: dict[str, float] = {}
    if linear:
        metrics["linear_top1"] = float(LinearReadout(C=linear_C).fit(train_h, y_train).score(test_h, y_test))
    for k in linear_shots:
        fewer = few_label_linear_accuracy(train_h, y_train, test_h, y_test, shots=int(k), draws=shot_draws,
                                          seed=seed, C=linear_C)
        metrics[f"linear{k}shot_top1"] = fewer.accuracy
    if knn:
        model = WeightedKNN(k=knn_k, temperature=knn_temperature).fit(train_h, y_train)
        metrics["knn_top1"] = float(model.score(test_h, y_test))
        n_classes = len(np.unique(y_train))
        metrics["knn_top5"] = float(model.top_k_accuracy(test_h, y_test, top=min(5, n_classes)))
    if mean_classifier:
        # one representation for both mean-classifier metrics: L2-normalised features, the
        # geometry the contrastive loss trains (so avg-(k+1) accuracy >= the C-way accuracy)
        mc = MeanClassifier(normalize=True).fit(train_h, y_train)
        metrics["mean_top1"] = float(mc.score(test_h, y_test))
        train_n = torch.nn.functional.normalize(train_h.float(), dim=1).numpy()
        test_n = torch.nn.functional.normalize(test_h.float(), dim=1).numpy()
        for k in kwise:
            res = average_kwise_accuracy(
                train_n, y_train, k=int(k), num_tasks=kwise_tasks, seed=seed,
                test_features=test_n, test_labels=y_test,
            )
            metrics[f"kwise{k}_top1"] = float(res.accuracy)
        for k in mean_shots:
            few = few_shot_indices(y_train, int(k), seed=seed)
            mk = MeanClassifier(normalize=True).fit(train_h[few], y_train[few])
            metrics[f"mean{k}shot_top1"] = float(mk.score(test_h, y_test))
    if latent_table:
        from hardneg.evaluate.latent_table import latent_class_table

        n_classes = len(np.unique(y_train))
        metrics.update(latent_class_table(
            train_h, y_train, test_h, y_test, ks=[k for k in (1, 9) if k < n_classes],
            tops=[r for r in (1, 10) if r <= n_classes], num_tasks=kwise_tasks, seed=seed,
            linear_C=linear_C,
        ))
    return EvalResult(metrics=metrics, train_features=train_h, test_features=test_h,
                      seconds=time.perf_counter() - start)
