"""Uniform negatives: every valid candidate has weight one (SimCLR, the debiased loss)."""

from __future__ import annotations

from torch import Tensor

from hardneg.negatives.base import NegativeDistribution
from hardneg.negatives.tiling import TileWeights
from hardneg.negatives.weighted import WeightedScores
from hardneg.scores import Scores

__all__ = ["Uniform"]


class Uniform(NegativeDistribution):
    """``q(c_j | a_i) = p(c_j)``: ``ℓ_ij = 0`` on valid candidates.

    With :class:`~hardneg.objectives.InfoNCE` this is SimCLR's NT-Xent (Chen et al., ICML 2020);
    with :class:`~hardneg.objectives.Debiased` it is the debiased loss of Chuang et al.
    (NeurIPS 2020), i.e. Robinson et al. (ICLR 2021), eq. (4) with β = 0. Tiles as the tilt
    β = 0 (:meth:`tile_weights`); its weights are per anchor (the gathered engine takes it).
    No constructor arguments.

    Shapes:
        ``scores`` (A, N) → :class:`~hardneg.negatives.WeightedScores` (A, N) with uniform
        weights (``log_weights`` is ``None``; ``log Σ_{j valid} e^{s_ij}`` (A,)).

    References:
        Chen, Kornblith, Norouzi, Hinton, *A Simple Framework for Contrastive Learning of Visual
        Representations*, ICML 2020 (NT-Xent); Chuang, Robinson, Lin, Torralba, Jegelka,
        *Debiased Contrastive Learning*, NeurIPS 2020, §3; Robinson, Chuang, Sra, Jegelka,
        ICLR 2021, eq. (4) with β = 0.

    Example:
        >>> import torch
        >>> from hardneg import ContrastiveLoss
        >>> from hardneg.negatives import Uniform
        >>> simclr = ContrastiveLoss(temperature=0.5, negatives=Uniform())
        >>> loss = simclr(torch.randn(8, 16), torch.randn(8, 16))
        >>> loss.shape, bool(torch.isfinite(loss))
        (torch.Size([]), True)
    """

    per_anchor_weights = True

    def log_weights(self, scores: Scores) -> Tensor | None:
        return None

    def weigh(self, scores: Scores) -> WeightedScores:
        return WeightedScores(scores, source=self)

    def tile_weights(self) -> TileWeights:
        """``TileWeights(tilt=0)``: every valid candidate weighs one."""
        return TileWeights(tilt=0.0)
