"""The tiled loss engine: the same losses without the (A, N) score matrix.

:class:`~hardneg.ContrastiveLoss` switches to it when the matrices would exceed its
``memory_budget``; :func:`tiled_loss` is the functional entry point and :func:`tiled_lse` the
streaming log-sum-exp with a recomputing backward underneath. A distribution is tiled when it
states its weights per tile (:mod:`hardneg.negatives.tiling`); :mod:`hardneg.engines.choice`
decides which engine computes a batch.
"""

from hardneg.engines.materialised import materialised_bytes
from hardneg.engines.tiled.engine import check_tileable, tile_for_budget, tiled_loss
from hardneg.engines.tiled.lse import tiled_lse
from hardneg.engines.tiled.mask import TileMask

__all__ = ["TileMask", "check_tileable", "materialised_bytes", "tile_for_budget", "tiled_loss", "tiled_lse"]
