"""hardneg: contrastive learning in which the distribution of negatives is what you control.

The loss engine (``scores`` → ``negatives`` → ``objectives`` → ``reduction``, composed by
:class:`ContrastiveLoss`) imports nothing but torch; pipelines, evaluation, theory and the CLI
sit on top. Names are imported on first use, so ``import hardneg`` (and the ``hardneg`` command's
``--help``) does not load torch until a loss is actually needed.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from hardneg._deprecated import install as _install_moved_modules

__version__ = "0.3.0"
_install_moved_modules()  # old module paths (hardneg._deprecated.MODULES: hardneg.tiled, ...) warn until 0.4

_WHERE = {
    "BetaAnnealing": "hardneg.schedules",
    "ContrastiveLoss": "hardneg.loss",
    "LossOutput": "hardneg.reduction",
    "Scores": "hardneg.scores",
    "annealed_beta": "hardneg.schedules",
    "pair_scores": "hardneg.scores",
    "simclr_scores": "hardneg.scores",
}
_SUBMODULES = (
    "distributed",
    "engines",
    "functional",
    "gradcache",
    "negatives",
    "objectives",
    "queue",
    "reduction",
    "tiled",  # deprecated: hardneg.engines.tiled (hardneg._deprecated), removed in 0.4
)

__all__ = [
    "BetaAnnealing",
    "ContrastiveLoss",
    "LossOutput",
    "Scores",
    "__version__",
    "annealed_beta",
    "distributed",
    "engines",
    "functional",
    "gradcache",
    "negatives",
    "objectives",
    "pair_scores",
    "queue",
    "reduction",
    "simclr_scores",
]

if TYPE_CHECKING:  # pragma: no cover - static analysers see the eager imports
    from hardneg import distributed, engines, functional, gradcache, negatives, objectives, queue, reduction
    from hardneg.loss import ContrastiveLoss
    from hardneg.reduction import LossOutput
    from hardneg.schedules import BetaAnnealing, annealed_beta
    from hardneg.scores import Scores, pair_scores, simclr_scores


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        value = getattr(importlib.import_module(_WHERE[name]), name)
    elif name in _SUBMODULES:
        value = importlib.import_module(f"hardneg.{name}")
    else:
        raise AttributeError(f"module 'hardneg' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The public names (``__all__``) and the module's dunders: no helper of this file."""
    return sorted({n for n in globals() if n.startswith("__") and n.endswith("__")} | set(__all__))
