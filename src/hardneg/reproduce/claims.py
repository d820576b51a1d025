"""The papers' qualitative claims that ``hardneg reproduce`` runs, and the experiments behind them.

An :class:`Experiment` is one ``hardneg compare`` (a packaged config, its strategies, and the
overrides of each budget); a :class:`Claim` reads one paired difference out of it — "``contender``
scores higher than ``baseline`` on ``metric``" — with its source in the papers. Claims whose
setting cannot run on a CPU in this budget (the papers' CIFAR / STL-10 / TU runs) are listed with
the config a user with the data and a GPU would run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["BUDGETS", "CLAIMS", "EXPERIMENTS", "NOT_RUN_HERE", "Claim", "Experiment", "NotRunHere"]

BUDGETS = ("small", "full")


@dataclass(frozen=True)
class Experiment:
    """A comparison: ``config`` + ``strategies`` (name → dotted overrides), per-budget overrides."""

    id: str
    config: str
    strategies: dict[str, dict[str, Any]]
    budgets: dict[str, dict[str, Any]]
    setting: str
    needs: str | None = None  # a data set that must be installed (None: embedded data)


@dataclass(frozen=True)
class Claim:
    """"``contender`` > ``baseline`` on ``metric``" in ``experiment``, as the ``source`` states it."""

    id: str
    text: str
    source: str
    experiment: str
    baseline: str
    contender: str
    metric: str
    budgets: tuple[str, ...] = field(default=BUDGETS)


@dataclass(frozen=True)
class NotRunHere:
    """A claim whose setting needs data or hardware this run does not have."""

    id: str
    text: str
    source: str
    command: str


_DEBIASED: dict[str, Any] = {"name": "debiased", "tau_plus": 0.1}
_DIGITS: dict[str, dict[str, Any]] = {
    "simclr": {"loss.negatives": {"name": "uniform"}, "loss.objective": {"name": "infonce"}},
    "debiased": {"loss.negatives": {"name": "uniform"}, "loss.objective": _DEBIASED},
    "hard": {"loss.negatives": {"name": "hard", "beta": 1.0}, "loss.objective": _DEBIASED},
    "ot": {"loss.negatives": {"name": "ot", "epsilon": 0.5}, "loss.objective": {"name": "infonce"}},
}
_LATENT: dict[str, dict[str, Any]] = {
    "uniform": {"loss.negatives": {"name": "uniform"}, "loss.objective": _DEBIASED},
    "hard": {"loss.negatives": {"name": "hard", "beta": 1.0}, "loss.objective": _DEBIASED},
    "collision-free": {"loss.negatives": {"name": "uniform"}, "loss.objective": {"name": "infonce"},
                       "loss.collision_free": True},
    "infonce": {"loss.negatives": {"name": "uniform"}, "loss.objective": {"name": "infonce"}},
}
_GRAPHS: dict[str, dict[str, Any]] = {
    "infograph": {"loss.negatives": {"name": "uniform"}},
    "hard": {"loss.negatives": {"name": "hard", "beta": 1.0, "rescale": True}},
}
_SMALL_FIGS: dict[str, Any] = {"eval.every_n_epochs": 0, "compare.workers": 2}

EXPERIMENTS: dict[str, Experiment] = {
    e.id: e
    for e in (
        Experiment(
            id="digits",
            config="digits_compare",
            strategies=_DIGITS,
            budgets={
                "small": {"train.epochs": 20, "compare.seeds": [0, 1, 2], **_SMALL_FIGS},
                "full": {"train.epochs": 80, "compare.seeds": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]},
            },
            setting="scikit-learn digits, SmallCNN, SimCLR views, batch 256",
        ),
        Experiment(
            id="latent",
            config="latent_classes",
            strategies=_LATENT,
            budgets={
                "small": {"train.epochs": 10, "compare.seeds": [0, 1, 2, 3, 4], **_SMALL_FIGS},
                "full": {"train.epochs": 30, "compare.seeds": list(range(10)), "compare.workers": 2},
            },
            setting="Arora et al.'s latent-class model: 10 classes, true positives, MLP, batch 256",
        ),
        Experiment(
            id="graphs",
            config="graphs_compare",
            strategies=_GRAPHS,
            budgets={
                "small": {"train.epochs": 10, "data.graphs.num_graphs": 400, "compare.seeds": [0, 1, 2],
                          "eval.cv_folds": 5, "eval.logistic": False, "compare.workers": 2},
                "full": {"train.epochs": 20, "compare.seeds": list(range(10)), "compare.workers": 2},
            },
            setting="embedded motif graphs, GIN 3x32, SVM readout in stratified CV",
        ),
        Experiment(
            id="fashion_mnist",
            config="fashion_mnist",
            strategies={k: _DIGITS[k] for k in ("simclr", "debiased", "hard")},
            budgets={"full": {"train.epochs": 20, "compare.seeds": [0, 1, 2], "compare.workers": 1,
                              "eval.every_n_epochs": 0}},
            setting="Fashion-MNIST 60k/10k, SmallCNN (stride-2 stem), SimCLR views",
            needs="fashion_mnist",
        ),
    )
}

CLAIMS: tuple[Claim, ...] = (
    Claim("debiasing-helps", "Debiasing with the class prior tau+ = 0.1 improves on SimCLR.",
          "Chuang et al. (NeurIPS 2020), Table 1; Robinson et al. (ICLR 2021), Table 1",
          "digits", "simclr", "debiased", "linear_top1"),
    Claim("hard-beats-simclr", "Hard negatives (beta = 1, tau+ = 0.1) improve on SimCLR.",
          "Robinson et al. (ICLR 2021), Table 1", "digits", "simclr", "hard", "linear_top1"),
    Claim("hard-beats-debiased", "Hard negatives improve on debiasing alone (beta = 1 vs beta = 0).",
          "Robinson et al. (ICLR 2021), Table 1 / Fig. 4 (left)", "digits", "debiased", "hard",
          "linear_top1"),
    Claim("ot-beats-hard", "Entropic-OT negatives improve on HCL's hard negatives.",
          "Jiang, Ishwar, Aeron (arXiv:2111.03169), Table 1", "digits", "hard", "ot", "linear_top1"),
    Claim("hard-helps-true-positives", "With true positives, hard negatives (beta = 1) beat uniform ones.",
          "Robinson et al. (ICLR 2021), Fig. 4 (middle)", "latent", "uniform", "hard", "mean_top1"),
    Claim("collision-free-helps",
          "Removing same-class negatives (collision-free) improves the representation.",
          "Ash et al. (AISTATS 2022), §4; Arora et al. (ICML 2019), §6", "latent", "infonce",
          "collision-free", "mean_top1"),
    Claim("hard-beats-infograph", "Hard negatives improve InfoGraph's graph representations.",
          "Robinson et al. (ICLR 2021), §5.2 / Fig. 3", "graphs", "infograph", "hard", "svm_cv"),
    Claim("hard-beats-simclr-fmnist", "Hard negatives improve on SimCLR on a real 10-class image set.",
          "Robinson et al. (ICLR 2021), Table 1", "fashion_mnist", "simclr", "hard", "linear_top1",
          budgets=("full",)),
)

NOT_RUN_HERE: tuple[NotRunHere, ...] = (
    NotRunHere("hcl-table1-cifar10", "Hard negatives improve SimCLR by ~2-3 points on CIFAR-10/100, STL-10.",
               "Robinson et al. (ICLR 2021), Table 1",
               "hardneg compare paper/cifar10_compare data.root=DIR (GPU, 400 epochs)"),
    NotRunHere("hcl-moco", "Hard negatives improve MoCo-v2.", "Robinson et al. (ICLR 2021), App. C.1",
               "hardneg train paper/cifar10_moco_hard data.root=DIR (GPU)"),
    NotRunHere("hcl-fig3-tu", "Hard negatives beat InfoGraph on 6 of 8 TU graph sets.",
               "Robinson et al. (ICLR 2021), Fig. 3",
               "hardneg sweep paper/graphs_tu_<NAME> data.root=DIR (TU files)"),
)
