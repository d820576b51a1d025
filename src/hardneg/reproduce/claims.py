"""The papers' claims that ``hardneg reproduce`` tests, stated as their papers state them.

An :class:`Experiment` is one ``hardneg compare`` (a packaged config, its strategies, the overrides
of each budget, the data it needs and the embedded experiment that stands in when that data is not
installed). A :class:`Claim` reads one seed-paired difference ``contender − baseline`` out of it and
tests it as its paper states it: **superiority** (one-sided: the contender scores higher) or
**equivalence** (two one-sided tests within a margin fixed here, in advance), with the paper's own
effect size so that a non-result can say whether the budget could have shown it
(:class:`~hardneg.reproduce.statistics.ClaimTest`). Each claim quotes its source (paper, section,
table or figure); its metric is fixed here, the paper's own first (linear readout for images).

Budgets: ``small`` (the README's ``make run``: minutes on 2 CPU cores, Fashion-MNIST when installed,
scikit-learn's digits otherwise), ``full`` (hours on a CPU) and ``paper`` (the papers' settings:
CIFAR-10/100, STL-10, TU graphs, MoCo-v2; a GPU and the data sets, given with ``--data``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

from hardneg.reproduce.statistics import ClaimTest

__all__ = ["BUDGETS", "Claim", "Experiment", "OptimumShift", "Selection", "Term"]

BUDGETS = ("small", "medium", "full", "paper")


@dataclass(frozen=True)
class Selection:
    """A setting chosen by the paper's rule on independent data, before the claim's runs.

    A paper that reports the best of several settings (Robinson et al., ICLR 2021, §5.2 / Fig. 3:
    the best of β ∈ {1, 2, 10} per graph data set) chose on the accuracy it reports. Choosing on
    the claim's own test accuracy here would bias the contrast upward (the largest of three noisy
    arms exceeds its mean under the null), so the rule — the highest mean ``metric`` over seeds,
    ties to the first candidate — is applied to runs on an independent draw of the data: the
    experiment's budget overrides updated by ``budgets[budget]`` (e.g. another seed of the
    synthetic family, other training seeds). The chosen candidate's overrides then replace
    ``strategy``'s in the claim's runs. A budget without an entry keeps ``strategy`` as written.

    Example:
        >>> s = Selection("hard", {"b1": {}, "b2": {}}, "svm_cv", {})
        >>> s.choose({"b1": 0.70, "b2": 0.72})
        'b2'
        >>> s.choose({"b1": 0.72, "b2": 0.72})
        'b1'
    """

    strategy: str
    candidates: dict[str, dict[str, Any]]
    metric: str
    budgets: dict[str, dict[str, Any]]

    def choose(self, means: dict[str, float]) -> str:
        """The candidate with the largest mean (the first listed on a tie)."""
        missing = sorted(set(self.candidates) - set(means))
        if missing:
            raise ValueError(f"selection of {self.strategy!r}: no {self.metric} for candidates {missing}")
        top = max(means[name] for name in self.candidates)
        return next(name for name in self.candidates if means[name] == top)


@dataclass(frozen=True)
class Experiment:
    """A comparison: ``config`` + ``strategies`` (name → dotted overrides), per-budget overrides.

    ``needs``: the data set (``data.dataset`` name) that must be installed, ``None`` for embedded
    data; ``fallback``: the experiment run instead when it is not (the report says which ran).
    ``metrics``: the claims' metric → the metric this experiment reports in its place (fixed here,
    in advance, with the reason in ``setting``), e.g. the few-label linear readout where the
    all-label one is at the ceiling. ``selection``: a strategy whose setting the paper's rule picks
    on independent data before the experiment runs (:class:`Selection`).
    """

    id: str
    config: str
    strategies: dict[str, dict[str, Any]]
    budgets: dict[str, dict[str, Any]]
    setting: str
    needs: str | None = None
    fallback: str | None = None
    metrics: dict[str, str] = field(default_factory=dict)
    install: str = ""  # how to install ``needs`` (said by the report when the fallback ran)
    selection: Selection | None = None  # a strategy's setting chosen on independent data first


@dataclass(frozen=True)
class Term:
    """``weight × metric`` of the run of ``strategy`` (one seed); a claim's statistic sums its terms."""

    strategy: str
    metric: str
    weight: float


@dataclass(frozen=True)
class OptimumShift:
    """Per seed, how far the best K moves from ``low`` to ``high`` classes, in doublings of K.

    ``low`` / ``high``: the grid of one number of classes, ``(strategy, K)`` pairs. Of one seed's
    accuracies on the grid, the best K is the argmax (ties: the smaller K); the statistic is
    ``log2 K*(high) − log2 K*(low)`` (Ash et al., AISTATS 2022, §4, Fig. 3 (left): "the optimal
    choice of K ... slowly increases as C increases"; the theory's optimum K* ≈ C, Remark 2).
    """

    metric: str
    low: tuple[tuple[str, int], ...]
    high: tuple[tuple[str, int], ...]

    @property
    def strategies(self) -> tuple[str, ...]:
        """Every strategy of both grids."""
        return tuple(name for name, _ in (*self.low, *self.high))

    @staticmethod
    def best(values: dict[str, float], grid: tuple[tuple[str, int], ...]) -> int:
        """The K of ``grid`` with the largest value (the smaller K on a tie).

        >>> OptimumShift.best({"a": 0.5, "b": 0.7, "c": 0.7}, (("a", 1), ("b", 4), ("c", 16)))
        4
        """
        top = max(values[name] for name, _ in grid)
        return min(k for name, k in grid if values[name] == top)

    def value(self, values: dict[str, float]) -> float:
        """``log2 K*(high) − log2 K*(low)`` of one seed's ``values`` (strategy → metric)."""
        return math.log2(self.best(values, self.high)) - math.log2(self.best(values, self.low))


@dataclass(frozen=True)
class Claim:
    """``contender`` vs ``baseline`` on ``metric`` in ``experiment``, tested as ``test`` says.

    ``quote``: the paper's words; ``source``: paper, section, table or figure (and the number the
    effect size is read from). ``pilot_sd``: the design's SD of the per-seed statistic (metric units)
    per experiment that may run it (the experiment or its fallback), from which the minimum
    detectable effect is computed before any run; ``design``: where that SD (and an equivalence
    margin) comes from. ``theorem``: a check of a theorem on measured quantities (a bound), reported
    in its own section, outside the claims' Holm family and their count. The statistic tested is,
    per seed, ``contender − baseline`` on
    ``metric``, or, when ``terms`` are given, the contrast ``Σ weight × metric(strategy)`` (e.g. an
    interaction of two factors, or a bound minus the loss it bounds); ``unit``: ``"points"`` for
    accuracies (reported ×100), ``"bits"`` for losses in base 2, ``"doublings"`` for ``shift``
    claims (the statistic is :class:`OptimumShift`'s, not a sum of terms).
    """

    id: str
    text: str
    quote: str
    source: str
    experiment: str
    baseline: str
    contender: str
    metric: str
    test: ClaimTest
    budgets: tuple[str, ...] = field(default=("small", "full"))
    terms: tuple[Term, ...] = ()
    unit: str = "points"
    pilot_sd: dict[str, float] = field(default_factory=dict)
    design: str = ""
    theorem: bool = False
    shift: OptimumShift | None = None
    delta: dict[str, Any] = field(default_factory=dict)  # the paper's effect: value, source, arms, range, why
    question: str | None = None  # "effect" (is there one at this scale?) or "size" (is it the paper's?)
    pilot_mean: float | None = None  # the pilot's mean statistic (design files' pilot results)

    @property
    def contrast(self) -> tuple[Term, ...]:
        """The terms of the statistic (default: ``+contender − baseline`` on ``metric``)."""
        return self.terms or (Term(self.contender, self.metric, 1.0), Term(self.baseline, self.metric, -1.0))

    def measured_in(self, experiment: Experiment) -> Claim:
        """This claim with its metrics as ``experiment`` reports them (:attr:`Experiment.metrics`)."""
        if not experiment.metrics:
            return self
        swap = experiment.metrics
        return replace(self, metric=swap.get(self.metric, self.metric),
                       terms=tuple(replace(t, metric=swap.get(t.metric, t.metric)) for t in self.terms))

    def design_test(self, experiment: str) -> ClaimTest:
        """The claim's test with the pilot SD of ``experiment`` (the one that ran; ``None``: none)."""
        return replace(self.test, pilot_sd=self.pilot_sd.get(experiment))


def _trend(metric: str, levels: dict[str, float]) -> tuple[Term, ...]:
    """The least-squares slope of ``metric`` on the levels, as a contrast: weights
    ``(x − x̄) / Σ(x − x̄)²`` (strategy → level x); how a design's ``terms`` of a trend claim are made.

    >>> [round(t.weight, 4) for t in _trend("m", {"a": 0.0, "b": 1.0, "c": 2.0})]
    [-0.5, 0.0, 0.5]
    """
    mean = sum(levels.values()) / len(levels)
    ss = sum((x - mean) ** 2 for x in levels.values())
    return tuple(Term(name, metric, (x - mean) / ss) for name, x in levels.items())
