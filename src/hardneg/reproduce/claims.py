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

__all__ = [
    "BUDGETS", "CLAIMS", "EXPERIMENTS", "Claim", "Experiment", "OptimumShift", "Selection", "Term",
    "planned_claims",
]

BUDGETS = ("small", "full", "paper")


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


_DEBIASED: dict[str, Any] = {"name": "debiased", "tau_plus": 0.1}
_INFONCE: dict[str, Any] = {"name": "infonce"}
# Both sides of every image comparison share the objective except where the claim is about it
# (debiasing): hard and OT negatives both with the debiased objective (tau+ = 0.1), as HCL's code
# runs them and as Jiang et al. run theirs in it ("we use their implementation code but replace
# their negative coupling").
_IMAGES: dict[str, dict[str, Any]] = {
    "simclr": {"loss.negatives": {"name": "uniform"}, "loss.objective": _INFONCE},
    "debiased": {"loss.negatives": {"name": "uniform"}, "loss.objective": _DEBIASED},
    "hard": {"loss.negatives": {"name": "hard", "beta": 1.0}, "loss.objective": _DEBIASED},
    # ε = 1 on the cost 2 − 2cos = ‖â − ĉ‖² is ε = 0.5 on Jiang et al.'s ½‖f(x) − f(x⁻)‖² (eq. 7),
    # and tilts like β = 2t/ε = 1 at t = 0.5: as hard as the hard arm
    "ot": {"loss.negatives": {"name": "ot", "epsilon": 1.0}, "loss.objective": _DEBIASED},
    "hard-6": {"loss.negatives": {"name": "hard", "beta": 6.0}, "loss.objective": _DEBIASED},
    # HCL Fig. 4 (right): hard sampling without debiasing (β = 1, τ+ = 0)
    "hard-nodebias": {"loss.negatives": {"name": "hard", "beta": 1.0}, "loss.objective": _INFONCE},
}
_LATENT: dict[str, dict[str, Any]] = {
    "uniform": {"loss.negatives": {"name": "uniform"}, "loss.objective": _DEBIASED},
    "hard-0.5": {"loss.negatives": {"name": "hard", "beta": 0.5}, "loss.objective": _DEBIASED},
    "hard": {"loss.negatives": {"name": "hard", "beta": 1.0}, "loss.objective": _DEBIASED},
    "hard-2": {"loss.negatives": {"name": "hard", "beta": 2.0}, "loss.objective": _DEBIASED},
    "infonce": {"loss.negatives": {"name": "uniform"}, "loss.objective": _INFONCE},
    "collision-free": {"loss.negatives": {"name": "uniform"}, "loss.objective": _INFONCE,
                       "loss.collision_free": True},
}
# Ash et al.'s collision-coverage trade-off: C classes x K negatives (standard negatives, collisions
# kept), K on a doubling grid that holds the theory's optimum of both C (K* = 3-4 at C = 4, 15-16
# at C = 16: `hardneg theory optimal-k C`) and K beyond it
_ASH_K = (1, 2, 4, 8, 16, 32)
_ASH: dict[str, dict[str, Any]] = {
    f"C{c}-K{k}": {"data.latent.num_classes": c, "loss.num_negatives": k} for c in (4, 16) for k in _ASH_K
} | {  # Fig. 3 (right): collision-free negatives at K = 16, for both C
    f"C{c}-K16-cf": {"data.latent.num_classes": c, "loss.num_negatives": 16, "loss.collision_free": True}
    for c in (4, 16)
}
_GRAPHS: dict[str, dict[str, Any]] = {
    "infograph": {"loss.negatives": {"name": "uniform"}},
    "hard": {"loss.negatives": {"name": "hard", "beta": 1.0, "rescale": True}},
}
def _paper_images(tau_plus: float) -> dict[str, dict[str, Any]]:
    """SimCLR, debiased and hard (β = 1) with the class prior HCL used on that data set."""
    debiased = {"name": "debiased", "tau_plus": tau_plus}
    return {"simclr": _IMAGES["simclr"],
            "debiased": {"loss.negatives": {"name": "uniform"}, "loss.objective": debiased},
            "hard": {"loss.negatives": {"name": "hard", "beta": 1.0}, "loss.objective": debiased}}


def _tu(name: str) -> Experiment:
    return Experiment(id=f"tu_{name.lower()}", config=f"paper/graphs_tu_{name}", strategies=_GRAPHS,
                      budgets={"paper": {"compare.seeds": list(range(10)), "compare.workers": 2}},
                      setting=f"TU {name}, GIN 3x32, SVM in 10-fold CV (HCL §5.2, App. D.2); hard at β = 1 "
                              "(one data set: no independent draw to choose β on)", needs="tu")
_GPU: dict[str, Any] = {"train.accelerator": "gpu", "compare.seeds": [0, 1, 2, 3, 4], "compare.workers": 1}
_QUIET: dict[str, Any] = {"eval.every_n_epochs": 0, "eval.figures": False}
# two runs at a time, one thread each: two 2-thread runs on 2 cores took 4x as long
_RUNS: dict[str, Any] = {"compare.workers": 2, "train.threads": 1, **_QUIET}
_SMALL: dict[str, Any] = {"compare.seeds": [0, 1, 2, 3, 4], **_RUNS}
_FULL: dict[str, Any] = {"compare.seeds": list(range(10)), **_RUNS}


# digits: the all-label linear readout is at 98.7-98.9 % (no room for the papers' effects); the
# claims read the linear readout from 5 labels per class (SimCLR 62.7 %, 79.9 %, 89.2 %, 94.1 % at
# 1, 2, 5, 10 labels per class on one 20-epoch run), averaged over 10 seeded draws
_DIGITS_EVAL: dict[str, Any] = {
    "eval.linear_shots": [5], "eval.shot_draws": 10, "eval.kwise": [], "eval.knn": False,
}


def _no_online_knn(budget: dict[str, Any]) -> dict[str, Any]:
    """``budget`` without ``eval.every_n_epochs``: a graph run has no online kNN (not a key of its
    ``eval`` section)."""
    return {k: v for k, v in budget.items() if k != "eval.every_n_epochs"}


EXPERIMENTS: dict[str, Experiment] = {
    e.id: e
    for e in (
        Experiment(
            id="fashion_mnist",
            config="fashion_mnist",
            strategies=_IMAGES,
            budgets={
                # the claims' metric is the linear readout: kNN and k-wise readouts are not computed
                "small": {"train.epochs": 4, "data.train_subset": 2000, "data.test_subset": 2000,
                          "model.width": 16, "eval.kwise": [], "eval.knn": False, **_SMALL},
                "full": {"train.epochs": 20, "data.train_subset": 10000, "compare.seeds": list(range(10)),
                         "compare.workers": 2, **_QUIET},
            },
            setting="Fashion-MNIST (real 28x28 images, 10 classes), SmallCNN, SimCLR views",
            needs="fashion_mnist",
            fallback="digits",
            install="`apt-get install dataset-fashion-mnist` (Debian's package, read from "
                    "/usr/share/datasets/fashion-mnist), or `--data fashion_mnist=DIR` with its four IDX "
                    "files",
        ),
        Experiment(
            id="fashion_mnist_n62",
            config="fashion_mnist",
            # HCL Fig. 2's x-axis: N = 2 (batch − 1) negatives; batch 32 gives N = 62
            strategies={name: {**_IMAGES[name], "train.batch_size": 32} for name in ("simclr", "hard")},
            budgets={"full": {"train.epochs": 20, "data.train_subset": 10000,
                              "compare.seeds": list(range(10)), "compare.workers": 2, **_QUIET}},
            setting="Fashion-MNIST (real 28x28 images, 10 classes), SmallCNN, SimCLR views, batch 32 "
                    "(N = 62 negatives; the other image claims use batch 256, N = 510)",
            needs="fashion_mnist",
            install="`apt-get install dataset-fashion-mnist` (Debian's package, read from "
                    "/usr/share/datasets/fashion-mnist), or `--data fashion_mnist=DIR` with its four IDX "
                    "files",
        ),
        Experiment(
            id="digits",
            config="digits_compare",
            strategies=_IMAGES,
            budgets={
                "small": {"train.epochs": 20, **_DIGITS_EVAL, **_SMALL},
                "full": {"train.epochs": 80, **_DIGITS_EVAL, **_FULL},
            },
            setting="scikit-learn digits (8x8, embedded fallback), SmallCNN, SimCLR views, batch 256; "
                    "linear readout from 5 labels per class (mean of 10 seeded class-balanced draws: "
                    "SimCLR's few-label evaluation, Chen et al., ICML 2020, §6; 5 as Arora et al.'s "
                    "mu-5), since the all-label readout is at 99 %",
            metrics={"linear_top1": "linear5shot_top1"},
        ),
        Experiment(
            id="latent",
            config="latent_classes",
            strategies=_LATENT,
            budgets={
                # two workers, each serving runs until none is left (its start-up paid once)
                "small": {"train.epochs": 10, **_SMALL},
                "full": {"train.epochs": 30, **_FULL},
            },
            setting="Arora et al.'s latent-class model: 10 classes, true positive pairs, MLP, batch 256; "
                    "hard negatives at β = 0 (uniform), 0.5, 1 and 2",
        ),
        Experiment(
            id="ash_tradeoff",
            config="theory_ash_tradeoff",
            strategies=_ASH,
            budgets={
                # 140 runs of a second: two workers, each serving runs until none is left
                "small": {"compare.seeds": list(range(10)), "compare.workers": 2, "eval.figures": False},
                "full": {"train.epochs": 5, "data.latent.train_size": 12800, "compare.seeds": list(range(10)),
                         "compare.workers": 2, "eval.figures": False},
            },
            setting="Arora et al.'s latent-class model, C = 4 or 16 classes, tuples with K = 1, 2, 4, 8, "
                    "16 or 32 negatives drawn from the other items (collisions kept), and K = 16 "
                    "collision-free, MLP, batch 64",
        ),
        Experiment(
            id="graphs",
            config="graphs_compare",
            strategies=_GRAPHS,
            budgets={
                "small": _no_online_knn({
                    "train.epochs": 10, "data.graphs.num_graphs": 400, "compare.seeds": [0, 1, 2, 3, 4],
                    "eval.cv_folds": 5, "eval.logistic": False, "compare.workers": 2, **_QUIET}),
                "full": _no_online_knn({"train.epochs": 20, **_FULL}),
            },
            setting="embedded motif graphs, GIN 3x32, SVM readout in stratified CV",
            selection=Selection(
                "hard", {f"hard-{b:g}": {"loss.negatives": {"name": "hard", "beta": b, "rescale": True}}
                         for b in (1.0, 2.0, 10.0)}, "svm_cv",
                # an independent draw: another seed of the motif family, other training seeds
                {"small": {"data.graphs.seed": 1, "compare.seeds": [100, 101, 102]},
                 "full": {"data.graphs.seed": 1, "compare.seeds": [100, 101, 102, 103, 104]}}),
        ),
        Experiment(
            id="articles_table1",
            config="studies/table1_articles",
            strategies={"unsupervised": {}, "supervised": {"data.text.supervised": True}},
            budgets={"full": {"eval.figures": False}},
            setting="Wikipedia sentences (gensim's 103-article sample), bag of words d = 100, 10 epochs",
        ),
        Experiment(
            id="articles_blocks",
            config="studies/table2_blocks",
            strategies={"b2": {"data.text.block_size": 2}, "b10": {"data.text.block_size": 10}},
            budgets={"full": {"eval.figures": False}},
            setting="Wikipedia sentences (gensim's 103-article sample), CURL block loss, bag of words, "
                    "3 epochs",
        ),
        Experiment(id="cifar100", config="paper/cifar100_hard", strategies=_paper_images(0.05),
                   budgets={"paper": _GPU}, setting="CIFAR-100, ResNet-50, 400 epochs, N = 510 (HCL §5.1)",
                   needs="cifar100"),
        Experiment(id="cifar10", config="paper/cifar10_hard", strategies=_paper_images(0.1),
                   budgets={"paper": _GPU}, setting="CIFAR-10, ResNet-50, 400 epochs, N = 510 (HCL §5.1)",
                   needs="cifar10"),
        Experiment(id="stl10", config="paper/stl10_hard", strategies=_paper_images(0.1),
                   budgets={"paper": _GPU}, setting="STL-10, ResNet-50, 400 epochs, N = 510 (HCL §5.1)",
                   needs="stl10"),
        Experiment(id="moco", config="paper/cifar10_moco_hard",
                   strategies={"moco": {"loss.negatives": {"name": "uniform"}, "loss.objective": _INFONCE},
                               "moco-hard": {"loss.negatives": {"name": "hard", "beta": 0.2},
                                             "loss.objective": _INFONCE}},
                   budgets={"paper": _GPU}, setting="MoCo-v2 on CIFAR-10, queue of 65 536 (HCL App. C.1)",
                   needs="cifar10"),
        Experiment(id="tinyimagenet", config="paper/tinyimagenet_hard", strategies=_paper_images(0.01),
                   budgets={"paper": _GPU}, setting="tinyImageNet, ResNet-50, 400 epochs (HCL Table 1)",
                   needs="tiny_imagenet"),
        _tu("MUTAG"), _tu("ENZYMES"), _tu("REDDIT-BINARY"),
        Experiment(id="bookcorpus", config="paper/quickthoughts_bookcorpus",
                   strategies={"qt": {"loss.negatives": {"name": "uniform"}},
                               "hard-2": {"loss.negatives": {"name": "hard", "beta": 2.0}}},
                   budgets={"paper": {**_GPU, "compare.seeds": [0, 1, 2]}},
                   setting="quick-thoughts on BookCorpus, SentEval MR / CR (HCL §5.3)", needs="bookcorpus"),
    )
}

# The pilot SDs of the designs: the spread of each claim's per-seed statistic measured at the previous
# release (commit e46bdb1, `make run`, README "What it finds"), recovered from its 95 % half-width hw
# (points) at n seeds as SD = hw √n / t_{0.975, n−1}; t_{0.975, 4} = 2.7764451, t_{0.975, 9} = 2.2621572.
_T975 = {4: 2.7764451, 9: 2.2621572}
_PILOT = ("pilot SD from the previous release's small-budget run (commit e46bdb1, README 'What it "
          "finds'): SD = hw √n / t(0.975, n − 1) from its 95 % half-width hw")


_DIGITS_PILOT = (" from the previous stop's run without Fashion-MNIST (commit f40d07b, the digits fallback's "
                 "5-label readout, 5 seeds)")
_PILOT_ASH = ("pilot SD from the previous stop's small-budget run (commit 228e8df, "
              "docs/results/reproduce-small.json, 10 seeds)")


def _sd(half_width_points: float, n: int = 5) -> float:
    """The SD (accuracy units) behind a 95 % half-width in points at ``n`` seeds."""
    return half_width_points / 100 * math.sqrt(n) / _T975[n - 1]


def _trend(metric: str, levels: dict[str, float]) -> tuple[Term, ...]:
    """The least-squares slope of ``metric`` on the levels, as a contrast: weights
    ``(x − x̄) / Σ(x − x̄)²`` (strategy → level x).

    >>> [round(t.weight, 4) for t in _trend("m", {"a": 0.0, "b": 1.0, "c": 2.0})]
    [-0.5, 0.0, 0.5]
    """
    mean = sum(levels.values()) / len(levels)
    ss = sum((x - mean) ** 2 for x in levels.values())
    return tuple(Term(name, metric, (x - mean) / ss) for name, x in levels.items())


_HCL = "Robinson et al. (ICLR 2021)"
_JIANG = "Jiang, Ishwar, Aeron (arXiv:2111.03169)"
_FIG2 = "absolute improvements of 3% and 7.3% over SimCLR on CIFAR100 and STL10"
_FIG3 = ("Hard sampling does as well as InfoGraph in all cases, and better in 6 out of 8 cases ... "
         "for IMDB-B and MUTAG by at least 0.5%")
CLAIMS: tuple[Claim, ...] = (
    Claim("hard-beats-simclr", "Hard negatives (beta = 1, tau+ = 0.1) improve on SimCLR.",
          "The results in Fig. 2 show consistent improvement over SimCLR ... For N = 510 ... we observe "
          + _FIG2,
          f"{_HCL}, §5.1, Fig. 2 (effect: +3.0 points, CIFAR100)", "fashion_mnist", "simclr", "hard",
          "linear_top1", ClaimTest("superiority", paper_effect=0.03),
          pilot_sd={"fashion_mnist": _sd(0.71), "digits": _sd(0.73)},
          design=f"{_PILOT} (Fashion-MNIST: ±0.71; digits' 5-label readout: ±0.73{_DIGITS_PILOT})"),
    Claim("hard-beats-simclr-small-n",
          "Hard negatives (beta = 1, tau+ = 0.1) improve on SimCLR with few negatives too "
          "(N = 62, batch 32).",
          "The results in Fig. 2 show consistent improvement over SimCLR (q = p) ... on STL10 and CIFAR100",
          f"{_HCL}, §5.1, Fig. 2 (accuracy against N = 30 … 510; no effect size stated for small N)",
          "fashion_mnist_n62", "simclr", "hard", "linear_top1", ClaimTest("superiority"),
          budgets=("full",), pilot_sd={"fashion_mnist_n62": _sd(0.71)},
          design=f"{_PILOT}: hard-beats-simclr's (±0.71 at N = 510), assumed to hold at N = 62"),
    Claim("hard-beats-debiased", "Hard negatives improve on debiasing alone (beta = 1 vs beta = 0).",
          "absolute improvements over the best debiased baseline of 1.9% and 3.2%",
          f"{_HCL}, §5.1, Fig. 2 (effect: +1.9 points, CIFAR100)", "fashion_mnist", "debiased", "hard",
          "linear_top1", ClaimTest("superiority", paper_effect=0.019),
          pilot_sd={"fashion_mnist": _sd(0.85), "digits": _sd(0.98)},
          design=f"{_PILOT} (Fashion-MNIST: ±0.85; digits' 5-label readout: ±0.98{_DIGITS_PILOT})"),
    Claim("debiasing-helps", "Debiasing with the class prior tau+ = 0.1 improves on SimCLR.",
          "All improve over the SimCLR baseline.",
          f"{_HCL}, §6.2, Fig. 4 (right), STL10: 84.26 % debiased vs 80.15 % SimCLR (effect +4.1 points)",
          "fashion_mnist", "simclr", "debiased", "linear_top1", ClaimTest("superiority", paper_effect=0.041),
          pilot_sd={"fashion_mnist": _sd(0.60), "digits": _sd(0.49)},
          design=f"{_PILOT} (Fashion-MNIST: ±0.60; digits' 5-label readout: ±0.49{_DIGITS_PILOT})"),
    Claim("hard-without-debiasing-helps",
          "Hard negatives without debiasing (beta = 1, tau+ = 0) improve on SimCLR.",
          "only using hard sampling or only debiasing yields (in this case) similar accuracy. All improve "
          "over the SimCLR baseline.",
          f"{_HCL}, §6.2, Fig. 4 (right), STL10: 84.41 % hard, not debiased vs 80.15 % SimCLR (effect +4.3 "
          "points)", "fashion_mnist", "simclr", "hard-nodebias", "linear_top1",
          ClaimTest("superiority", paper_effect=0.043),
          pilot_sd={"fashion_mnist": _sd(0.71), "digits": _sd(0.78)},
          design=f"{_PILOT}: hard − SimCLR's ±0.71 (Fashion-MNIST), the same contrast without the prior; "
                 f"digits' 5-label readout: ±0.78{_DIGITS_PILOT}"),
    Claim("debiasing-helps-hard",
          "Debiasing improves hard negatives (beta = 1, tau+ = 0.1 vs tau+ = 0).",
          "Best results come from using both simultaneously.",
          f"{_HCL}, §6.2, Fig. 4 (right), STL10: 87.44 % hard and debiased vs 84.41 % hard alone "
          "(effect +3.0 points)", "fashion_mnist", "hard-nodebias", "hard", "linear_top1",
          ClaimTest("superiority", paper_effect=0.030),
          pilot_sd={"fashion_mnist": _sd(0.60), "digits": _sd(0.36)},
          design=f"{_PILOT}: debiased − SimCLR's ±0.60 (Fashion-MNIST), the same change of objective with "
                 f"hard negatives; digits' 5-label readout: ±0.36{_DIGITS_PILOT}"),
    Claim("ot-matches-hard",
          "Entropic-OT negatives perform like HCL's hard negatives (parity, within 0.45 points).",
          "our proposed method ... can indeed match (and sometimes slightly exceed) the state-of-the-art "
          "performance results reported in [12]; ... very similar to that of [12]",
          f"{_JIANG}, §VII, Tables I-III (Debiased NCE rows, OT − HCL: +0.1 STL10, −0.3 CIFAR10, +0.2 "
          "CIFAR100 points)", "fashion_mnist", "hard", "ot",
          "linear_top1", ClaimTest("equivalence", margin=0.0045, paper_effect=-0.003),
          pilot_sd={"fashion_mnist": _sd(1.04), "digits": _sd(0.79)},
          design="margin ±0.45 points: half of HCL's gain over SimCLR (92.1 − 91.2 = 0.9 points) in the "
                 "row where the paper's OT − HCL gap is largest (Table II, CIFAR10, Debiased NCE: −0.3); "
                 "the OT arm at the paper's cost scale, ½‖f(x) − f(x⁻)‖² with ε = 0.5 (eq. 7; here ε = 1 "
                 "on ‖â − ĉ‖² = 2 − 2cos, the same coupling), whose tilt alone is β = t/ε = 1, the hard "
                 "arm's β; "
                 "as in each paper's code, the OT weights are constants in the backward pass and the hard "
                 "weights are not; "
                 f"{_PILOT} (Fashion-MNIST: ±1.04; digits' 5-label readout: ±0.79{_DIGITS_PILOT})"),
    Claim("ot-beats-simclr", "Entropic-OT negatives improve on SimCLR.",
          "Our proposed method clearly improves over the baseline. ... For Debiased NCE loss, the absolute "
          "improvements over SimCLR are 3.2 and 2.0 percentage points on the STL10 and CIFAR100 datasets",
          f"{_JIANG}, §VII, Tables I-III (effect: +2.0 points, CIFAR100, Debiased NCE)", "fashion_mnist",
          "simclr", "ot", "linear_top1", ClaimTest("superiority", paper_effect=0.020),
          pilot_sd={"fashion_mnist": _sd(0.71), "digits": _sd(0.78)},
          design=f"{_PILOT}: hard − SimCLR's ±0.71 (Fashion-MNIST), the OT arm being as hard as the hard arm "
                 f"(ε at the paper's scale, see ot-matches-hard); digits' 5-label readout: "
                 f"±0.78{_DIGITS_PILOT}"),
    Claim("hard-helps-true-positives",
          "With true positive pairs, accuracy increases with the hardness beta (linear trend over "
          "beta = 0, 0.5, 1, 2).",
          "when one uses true positive pairs during training ... the downstream performance monotonically "
          "increases with β", f"{_HCL}, §6.1, Fig. 4 (middle)", "latent", "uniform", "hard-2", "linear_top1",
          ClaimTest("superiority"),
          pilot_sd={"latent": _sd(0.49) / math.sqrt(2 * 2.1875)},
          design=f"{_PILOT} (hard − uniform ±0.49, so an arm's SD is that of the difference / √2, the "
                 "slope's that / √Σ(β − β̄)² = / √2.1875, arms assumed independent); the trend test of a "
                 "monotone claim: per seed, the least-squares slope of accuracy on β over the four arms "
                 "(contrast weights (β − 0.875) / 2.1875; points per unit β)",
          terms=_trend("linear_top1", {"uniform": 0.0, "hard-0.5": 0.5, "hard": 1.0, "hard-2": 2.0})),
    Claim("collision-free-helps", "Removing same-class negatives (collisions) improves the representation.",
          "We observe that artificially removing collisions improves the performance across all values of K",
          "Ash et al. (AISTATS 2022), §4, Fig. 3 (right)", "latent", "infonce", "collision-free", "mean_top1",
          ClaimTest("superiority"), pilot_sd={"latent": _sd(0.35)}, design=f"{_PILOT} (±0.35)"),
    Claim("collision-gap-shrinks-with-classes",
          "Removing collisions helps more with fewer classes: the collision-free gain at K = 16 is larger "
          "with C = 4 classes than with C = 16 (the paired interaction contrast).",
          "artificially removing collisions improves the performance across all values of K; however, the "
          "effect is more significant for smaller values of [C] ... since the probability of collision "
          "decreases rapidly with [C]", "Ash et al. (AISTATS 2022), §4, Fig. 3 (right), mean classifier "
          "(effect not stated in the text)", "ash_tradeoff", "C16-K16", "C4-K16-cf", "mean_top1",
          ClaimTest("superiority"), pilot_sd={"ash_tradeoff": 0.0246},
          design=f"{_PILOT_ASH}: ±2.46 points SD; per seed "
                 "(C4-K16-cf − C4-K16) − (C16-K16-cf − C16-K16); a collision has probability 1/C per "
                 "negative",
          terms=(Term("C4-K16-cf", "mean_top1", 1.0), Term("C4-K16", "mean_top1", -1.0),
                 Term("C16-K16-cf", "mean_top1", -1.0), Term("C16-K16", "mean_top1", 1.0))),
    Claim("large-beta-hurts-augmented",
          "With augmented positive pairs, a large hardness (beta = 6) does worse than beta = 1.",
          "Fig. 4 (left, middle) shows that for vision problems, taking larger β does not necessarily "
          "lead to better representations", f"{_HCL}, §6.1, Fig. 4 (left) (effect not stated in the text)",
          "fashion_mnist", "hard-6", "hard", "linear_top1", ClaimTest("superiority"),
          pilot_sd={"fashion_mnist": _sd(0.95), "digits": _sd(1.21)},
          design=f"{_PILOT} (Fashion-MNIST: ±0.95; digits' 5-label readout: ±1.21{_DIGITS_PILOT})"),
    Claim("optimal-k-grows-with-classes",
          "The optimal number of negatives grows with the number of classes: the best K of a grid "
          "K = 1 ... 32 is larger with C = 16 classes than with C = 4.",
          "we find that the optimal choice of K, indicated by solid black circles, slowly increases as C "
          "increases. Both of these empirical findings support the theoretical predictions",
          "Ash et al. (AISTATS 2022), §4, Fig. 3 (left), mean classifier (effect not stated in the text; "
          "the theory's optimum K* ≈ C, Remark 2: 2 doublings from C = 4 to 16)",
          "ash_tradeoff", "C4", "C16", "best K (log2)", ClaimTest("superiority"), unit="doublings",
          pilot_sd={"ash_tradeoff": 1.25},
          design=f"{_PILOT_ASH}: SD 1.25 doublings; per seed, the argmax "
                 "of accuracy over the K grid at each C, and the difference of their log2 (doublings of K); "
                 "a t-test over the 10 seeds; the bootstrap interval (over seeds) of the argmax of the "
                 "mean curve is printed beside it",
          shift=OptimumShift("mean_top1", low=tuple((f"C4-K{k}", k) for k in _ASH_K),
                             high=tuple((f"C16-K{k}", k) for k in _ASH_K))),
    Claim("accuracy-decays-beyond-optimal-k",
          "Beyond the optimal number of negatives accuracy decays: with C = 4 classes, K = 4 (the theory's "
          "optimum) beats K = 32.",
          "For a given number of classes C, performance improves as K increases and then slowly decays for "
          "larger values of K", "Ash et al. (AISTATS 2022), §4, Fig. 3 (left), mean classifier (effect not "
          "stated in the text: \"slowly decays\"); the same finding as Arora et al. (ICML 2019), §6.2, "
          "Fig. 2 (a, b): \"using a lot of negative examples stops helping after a point\"",
          "ash_tradeoff", "C4-K32", "C4-K4", "mean_top1",
          ClaimTest("superiority"), pilot_sd={"ash_tradeoff": 0.0093},
          design=f"{_PILOT_ASH}: ±0.93 points SD; K = 4 is the theory's optimum "
                 "at C = 4 (K* = 3-4, Remark 2), fixed before any run, not the grid's measured best"),
    Claim("arora-lemma-4-3-holds",
          "The mean classifier's supervised loss is within Arora et al.'s bound: L_sup^mu(f) <= "
          "(L_un(f) - tau) / (1 - tau), measured on held-out features of the trained encoders.",
          "For all f ∈ F, L^μ_sup(f) ≤ (1/(1−τ)) (L_un(f) − τ)",
          "Arora et al. (ICML 2019), §4, Lemma 4.3 (a theorem; logistic loss in bits, empirical class "
          "prior, Gen_M omitted)", "latent", "infonce", "infonce", "lemma_4_3 (bound − measured)",
          ClaimTest("superiority"), unit="bits", theorem=True,
          terms=(Term("infonce", "lemma_4_3_bound", 1.0), Term("infonce", "lemma_4_3_measured", -1.0))),
    Claim("arora-prop-6-2-holds",
          "The mean classifier's supervised loss is within Arora et al.'s block bound: L_sup^mu(f) <= "
          "(L_un^block(f) - tau) / (1 - tau) with blocks of 4 positives and 4 negatives, measured on "
          "held-out features of the trained encoders.",
          "∀f ∈ F, L_sup(f) ≤ (1/(1−τ)) (L^block_un(f) − τ) ≤ (1/(1−τ)) (L_un(f) − τ)",
          "Arora et al. (ICML 2019), §6.3, Prop. 6.2, left inequality (a theorem; eq. 12 with b = 4, "
          "logistic loss in bits, empirical class prior)", "latent", "infonce", "infonce",
          "prop_6_2 (bound − measured)", ClaimTest("superiority"), unit="bits", theorem=True,
          terms=(Term("infonce", "prop_6_2_bound", 1.0), Term("infonce", "lemma_4_3_measured", -1.0))),
    Claim("block-bound-is-tighter",
          "The block loss is the tighter surrogate: Arora et al.'s block bound (b = 4) is below the "
          "pairwise bound of Lemma 4.3 on the same features.",
          "This bound tells us that L^block_un is a better surrogate for L_sup, making it a more "
          "attractive choice than L_un when larger blocks are available.",
          "Arora et al. (ICML 2019), §6.3, Prop. 6.2, right inequality (a theorem: Jensen's inequality "
          "over the blocks)", "latent", "infonce", "infonce", "lemma_4_3 bound − prop_6_2 bound",
          ClaimTest("superiority"), unit="bits", theorem=True,
          terms=(Term("infonce", "lemma_4_3_bound", 1.0), Term("infonce", "prop_6_2_bound", -1.0))),
    Claim("ot-hardness-falls-with-epsilon",
          "The entropic-OT negatives are harder at a smaller epsilon: the coupling-weighted mean cosine of "
          "an anchor's negatives is larger at epsilon = 0.5 than at 2 (the library's scale), measured on "
          "held-out features of the trained OT encoders.",
          "The hardness of negative samples decreases as ϵ increases from zero to infinity.",
          f"{_JIANG}, §VI-A, property 1 (a property of the entropic coupling; ε = 0.25 and 1 at the paper's "
          "cost scale)", "fashion_mnist", "ot", "ot", "ot_hardness (ε 0.5 − ε 2)",
          ClaimTest("superiority"), unit="cosine", theorem=True,
          terms=(Term("ot", "ot_hardness_eps0.5", 1.0), Term("ot", "ot_hardness_eps2", -1.0))),
    Claim("hard-beats-infograph",
          "Hard negatives improve InfoGraph's graph representations (β the best of 1, 2, 10 as in the "
          "paper, chosen on independent runs before the claim's runs).", _FIG3,
          f"{_HCL}, §5.2, Fig. 3 (effect: at least +0.5 points, MUTAG / IMDB-B; the best β of "
          "{1, 2, 10} per data set)", "graphs", "infograph",
          "hard", "svm_cv", ClaimTest("superiority", paper_effect=0.005),
          pilot_sd={"graphs": _sd(1.79)}, design=f"{_PILOT} (±1.79)"),
    Claim("unsup-matches-sup-avg2",
          "On average binary tasks the unsupervised representation's mean classifier is on par with the "
          "supervised one's (within 0.5 points).",
          "Wiki-3029 avg-2 97.8 97.7 97.0 97.3 97.7 96.9 (supervised Tr, μ, μ-5; unsupervised Tr, μ, μ-5)",
          "Arora et al. (ICML 2019), §8.1, Table 1 (μ avg-2: 97.7 both)",
          "articles_table1", "supervised", "unsupervised", "mu_avg2",
          ClaimTest("equivalence", margin=0.005, paper_effect=0.0), budgets=("full",),
          design="margin ±0.5 points: the largest supervised − unsupervised gap the paper reports on "
                 "Wiki-3029 avg-2 (Tr: 97.8 vs 97.3) while calling them comparable; no pilot (the run's "
                 "own SD)"),
    Claim("block-helps",
          "Larger blocks (b = 10 vs b = 2, the CURL block loss) improve average binary accuracy.",
          "In Table 2 we see that for CIFAR-100 and Wiki-3029, increasing block size yields an improvement "
          "in classification accuracy", "Arora et al. (ICML 2019), §8.2, Table 2 (Wiki-3029: 96.6 at "
          "b = 2, 97.7 at b = 10; effect +1.1 points)", "articles_blocks", "b2", "b10", "mu_avg2",
          ClaimTest("superiority", paper_effect=0.011), budgets=("full",)),
    Claim("hard-beats-simclr-cifar100", "Hard negatives improve SimCLR by 3 points on CIFAR-100.", _FIG2,
          f"{_HCL}, §5.1, Fig. 2 (N = 510)", "cifar100", "simclr", "hard", "linear_top1",
          ClaimTest("superiority", paper_effect=0.03), budgets=("paper",)),
    Claim("hard-beats-simclr-stl10", "Hard negatives improve SimCLR by 7.3 points on STL-10.", _FIG2,
          f"{_HCL}, §5.1, Fig. 2 (N = 510)", "stl10", "simclr", "hard", "linear_top1",
          ClaimTest("superiority", paper_effect=0.073), budgets=("paper",)),
    Claim("hard-equals-simclr-cifar10", "On CIFAR-10 at N = 510 hard negatives and SimCLR are on par.",
          "on CIFAR10 there is a slight improvement for smaller N, which disappears at larger N",
          f"{_HCL}, §5.1, Fig. 2", "cifar10", "simclr", "hard", "linear_top1",
          ClaimTest("equivalence", margin=0.015), budgets=("paper",),
          design="margin ±1.5 points: half of the smallest gain of hard over SimCLR that HCL states at "
                 "N = 510 (3.0 points, CIFAR-100); no pilot (the run's own SD)"),
    Claim("hard-improves-moco", "Hard negatives (beta = 0.2) improve MoCo-v2 on CIFAR-10.",
          "MoCo-v2 attains linear readout accuracy of 88.08%, and MoCo-v2 with hard negatives (β = 0.2, "
          "τ+ = 0) attains 88.47%", f"{_HCL}, App. C.1, Fig. 6 (effect +0.39 points)", "moco", "moco",
          "moco-hard", "linear_top1", ClaimTest("superiority", paper_effect=0.0039), budgets=("paper",)),
    Claim("hard-beats-simclr-tinyimagenet", "Hard negatives improve SimCLR by 3.6 points on tinyImageNet.",
          "SimCLR 53.4%, Debiased 53.7%, Hard (β = 1) 57.0%; Top-1 linear readout on tinyImageNet. Class "
          "prior is set to τ+ = 0.01", f"{_HCL}, §5.1, Table 1", "tinyimagenet", "simclr", "hard",
          "linear_top1", ClaimTest("superiority", paper_effect=0.036), budgets=("paper",)),
    Claim("hard-beats-infograph-mutag", "Hard negatives improve InfoGraph on MUTAG.", _FIG3,
          f"{_HCL}, §5.2, Fig. 3 (effect: at least +0.5 points)", "tu_mutag", "infograph", "hard", "svm_cv",
          ClaimTest("superiority", paper_effect=0.005), budgets=("paper",)),
    Claim("hard-beats-infograph-enzymes", "Hard negatives improve InfoGraph on ENZYMES by 3.2 points.",
          "For ENZYMES and REDDIT, hard negative samples improve the accuracy by 3.2% and 2.4%",
          f"{_HCL}, §5.2, Fig. 3", "tu_enzymes", "infograph", "hard", "svm_cv",
          ClaimTest("superiority", paper_effect=0.032), budgets=("paper",)),
    Claim("hard-beats-infograph-reddit", "Hard negatives improve InfoGraph on REDDIT-BINARY by 2.4 points.",
          "For ENZYMES and REDDIT, hard negative samples improve the accuracy by 3.2% and 2.4%",
          f"{_HCL}, §5.2, Fig. 3", "tu_reddit-binary", "infograph", "hard", "svm_cv",
          ClaimTest("superiority", paper_effect=0.024), budgets=("paper",)),
    Claim("hard-beats-qt-cr", "Hard negatives (beta = 2) improve quick-thoughts on CR by 2.3 points.",
          "QT (β = 0, τ+ = 0) ... CR 81.3 ... Hard (β = 2, τ+ = 0) ... CR 83.6", f"{_HCL}, §5.3, Table 2",
          "bookcorpus", "qt", "hard-2", "cr_acc", ClaimTest("superiority", paper_effect=0.023),
          budgets=("paper",)),
)


def planned_claims(budget: str) -> list[Claim]:
    """The Holm family of ``budget``, fixed in advance: every claim of the budget but theorem checks."""
    return [c for c in CLAIMS if budget in c.budgets and not c.theorem]
