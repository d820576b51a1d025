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

    Args:
        base: the distribution whose weights are renormalised over the restricted mask (default
            :class:`~hardneg.negatives.Uniform`).

    Shapes:
        ``scores`` (A, N) → :class:`~hardneg.negatives.WeightedScores` (A, N); :meth:`restrict`
        keeps the (A, N) shape and only clears mask entries.

    References:
        Ash, Goel, Krishnamurthy, Misra, *Investigating the Role of Negatives in Contrastive
        Representation Learning*, AISTATS 2022, §4 (negatives restricted per anchor: K drawn,
        collision-free).

    Example:
        >>> import torch
        >>> from hardneg.negatives import Hard, MaskWrapper
        >>> from hardneg.scores import simclr_scores
        >>> class FirstHalf(MaskWrapper):  # only candidates of the first half of the batch
        ...     def restrict(self, scores, *, generator=None):
        ...         keep = scores.mask.clone()
        ...         keep[:, scores.mask.shape[1] // 2:] = False
        ...         return scores.with_mask(keep)
        >>> scores = simclr_scores(torch.randn(4, 8), torch.randn(4, 8), temperature=0.5)
        >>> weighted = FirstHalf(Hard(beta=1.0))(scores)
        >>> int(weighted.scores.mask[:, 4:].sum()), weighted.log_weighted_sum.shape
        (0, torch.Size([8]))
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
