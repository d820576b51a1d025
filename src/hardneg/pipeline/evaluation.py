"""Evaluation of a trained backbone on frozen features (HCL seed ``001`` §5.1; Arora et al.).

The backbone ``f`` runs in eval mode (BatchNorm running statistics) on un-augmented images (or
the vectors of the latent-class simulator);
representations ``h`` of the training split fit the classifiers, the test split scores them:

* linear readout (logistic regression on standardised ``h``), on all labels and, where asked, on a
  few labels per class (averaged over seeded draws),
* weighted kNN (k = 200, t = 0.1; top-1 and top-5),
* mean classifier (``argmax_c μ_cᵀ h``, L2-normalised features) and the average
  (k+1)-way accuracy of Arora et al. (Def. 2.2).
"""

from __future__ import annotations

import time

import numpy as np
import torch
from torch import nn

from hardneg.data.vectors import Split, split_inputs
from hardneg.modalities.base import EvalResult

__all__ = ["EvalResult", "evaluate_encoder"]


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
    keep = train.labels >= 0  # unlabelled images (STL-10) cannot fit a classifier
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
