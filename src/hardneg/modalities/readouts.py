"""The engine's readouts of a frozen backbone: their ``eval`` sections and their table columns.

A modality without its own evaluation (:meth:`~hardneg.modalities.base.Modality.evaluate`) is
evaluated by :func:`hardneg.evaluate.evaluate_encoder` on ``encoder(x)[0]``: a linear readout, a
weighted kNN, the mean classifier and its k-wise accuracies (Arora et al., ICML 2019). Its ``eval``
section is :class:`ReadoutEval`; latent-class data (the latent simulator, articles) also reports
Arora et al.'s Table 1 (:class:`ClassTableEval`). Each section hands the readouts its keys
(:meth:`ReadoutEval.readouts`) and names the metrics that ``compare`` / ``sweep`` tables show
(:meth:`ReadoutEval.table_metrics`).

>>> sorted(set(ClassTableEval.model_fields) - set(ReadoutEval.model_fields))
['latent_table']
>>> ReadoutEval().table_metrics()
('linear_top1', 'knn_top1', 'knn_top5', 'mean_top1')
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from hardneg.config.schema import EvalSection

__all__ = ["ClassTableEval", "ReadoutEval"]

PositiveInt = Annotated[int, Field(ge=1)]

# the headline metrics of the readouts, in the order of the tables' columns
_READOUT_COLUMNS = ("linear_top1", "knn_top1", "knn_top5", "mean_top1")
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

    def table_metrics(self) -> tuple[str, ...]:
        """The readouts' columns, then Table 1's (``mu_avg2``, ``mu_avg10``, ``mu5_top1``)."""
        return (*self._columns(), *_TABLE1_COLUMNS)
