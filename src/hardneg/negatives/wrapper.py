"""Mask-changing wrappers: a negative distribution restricted to a subset of each anchor's candidates.

A :class:`MaskWrapper` first lets its ``base`` distribution prepare the scores (so wrappers
compose from the inside out), then changes the validity mask, and finally hands the restricted
scores back to ``base`` for the weights. The weights are therefore ``base``'s weights
renormalised to mean one over the *new* set of valid candidates.
"""

from __future__ import annotations

import torch
from torch import Tensor

from hardneg.negatives.base import NegativeDistribution
from hardneg.negatives.uniform import Uniform
from hardneg.negatives.weighted import WeightedScores
from hardneg.scores import Scores

__all__ = ["MaskWrapper"]


class MaskWrapper(NegativeDistribution):
    """Base class of distributions that restrict the mask of another one (``base``, default uniform).

    Subclasses implement :meth:`restrict` (``Scores -> Scores`` with a smaller mask; random
    restrictions draw from ``generator`` only). ``beta`` is
    forwarded to ``base`` so that schedules such as :class:`~hardneg.schedules.BetaAnnealing` work
    on a wrapped :class:`~hardneg.negatives.Hard`.
    """

    def __init__(self, base: NegativeDistribution | None = None):
        super().__init__()
        if base is not None and not isinstance(base, NegativeDistribution):
            raise TypeError(
                f"base must be a hardneg.negatives.NegativeDistribution or None, got {type(base).__name__}"
            )
        self.base = Uniform() if base is None else base

    def restrict(self, scores: Scores, *, generator: torch.Generator | None = None) -> Scores:
        raise NotImplementedError

    def prepare(self, scores: Scores, *, generator: torch.Generator | None = None) -> Scores:
        return self.restrict(self.base.prepare(scores, generator=generator), generator=generator)

    def log_weights(self, scores: Scores) -> Tensor | None:
        return self.base.log_weights(scores)

    def weigh(self, scores: Scores) -> WeightedScores:
        return self.base.weigh(scores)

    def diagnostics(self, weighted: WeightedScores) -> dict[str, float]:
        return self.base.diagnostics(weighted)

    def tile_refusal(self) -> str:
        """The engines without the (A, N) mask make the masks of :class:`~hardneg.negatives.Subsample`
        and :class:`~hardneg.negatives.CollisionFree` per tile (they split them off, then ask
        ``base``); any other mask change needs the materialised mask."""
        return (
            f"{type(self).__name__} changes the (A, N) mask in prepare(); the tiled engine makes per "
            "tile only the masks of Subsample (outermost) and CollisionFree"
        )

    @property
    def beta(self) -> float:
        if not hasattr(self.base, "beta"):
            raise AttributeError(f"{type(self.base).__name__} has no attribute 'beta'")
        return float(getattr(self.base, "beta"))  # noqa: B009

    @beta.setter
    def beta(self, value: float) -> None:
        if not hasattr(self.base, "beta"):
            raise AttributeError(f"{type(self.base).__name__} has no attribute 'beta' to set")
        setattr(self.base, "beta", value)  # noqa: B010
