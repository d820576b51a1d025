"""Step 2 of the loss engine: negative distributions — which negatives, with what weight.

Calling a distribution on :class:`~hardneg.scores.Scores` gives a :class:`WeightedScores`: the
scores it samples from and log importance weights with mean one over each anchor's valid
candidates (see :mod:`hardneg.negatives.base`). Each distribution's math is a pure function
(:func:`hard_log_weights`, :func:`ot_log_weights`, :func:`subsample_mask`,
:func:`collision_free_mask`); mask-changing wrappers (:class:`Subsample`, :class:`CollisionFree`)
compose with any distribution through ``base=``. A distribution states how an engine without
the (A, N) matrix computes it through :meth:`NegativeDistribution.tile_weights`
(:class:`TileWeights`, :mod:`hardneg.negatives.tiling`).
"""

from hardneg.negatives.base import NegativeDistribution, normalize_log_weights
from hardneg.negatives.hard import (
    Hard,
    beta_for_ess,
    ess_fraction,
    hard_log_weighted_sum,
    hard_log_weights,
    rescaled_logits,
)
from hardneg.negatives.oracle import CollisionFree, collision_free_mask
from hardneg.negatives.ot import OptimalTransport, ground_cost, ot_log_kernel, ot_log_weights
from hardneg.negatives.sinkhorn import SinkhornResult, sinkhorn_log
from hardneg.negatives.subsample import Subsample, subsample_mask
from hardneg.negatives.tiling import SinkhornTiles, TileWeights
from hardneg.negatives.uniform import Uniform
from hardneg.negatives.weighted import WeightedScores
from hardneg.negatives.wrapper import MaskWrapper

__all__ = [
    "CollisionFree",
    "Hard",
    "MaskWrapper",
    "NegativeDistribution",
    "OptimalTransport",
    "SinkhornResult",
    "SinkhornTiles",
    "Subsample",
    "TileWeights",
    "Uniform",
    "WeightedScores",
    "beta_for_ess",
    "collision_free_mask",
    "ess_fraction",
    "ground_cost",
    "hard_log_weighted_sum",
    "hard_log_weights",
    "normalize_log_weights",
    "ot_log_kernel",
    "ot_log_weights",
    "rescaled_logits",
    "sinkhorn_log",
    "subsample_mask",
]
