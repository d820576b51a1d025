"""K negatives per anchor, decoupled from the batch size (Ash et al., AISTATS 2022, §4)."""

from __future__ import annotations

import torch

from hardneg.negatives.base import NegativeDistribution
from hardneg.negatives.draw import check_available, draw_ranks, index_mask, mask_index
from hardneg.negatives.keys import draw_seed
from hardneg.negatives.oracle import CollisionFree
from hardneg.negatives.wrapper import MaskWrapper
from hardneg.scores import Scores, count_valid

__all__ = ["Subsample", "identity_unwrapped", "split_subsample", "subsample_mask"]


def _check_num_negatives(num_negatives: int) -> int:
    if isinstance(num_negatives, bool) or not isinstance(num_negatives, int):
        raise TypeError(
            f"num_negatives must be an int >= 1, got {num_negatives!r} of type {type(num_negatives).__name__}"
        )
    if num_negatives < 1:
        raise ValueError(f"num_negatives must be an int >= 1, got {num_negatives}")
    return num_negatives


def subsample_mask(
    mask: torch.Tensor,
    num_negatives: int,
    *,
    generator: torch.Generator | None = None,
    seed: int | None = None,
) -> torch.Tensor:
    """Keep ``K = num_negatives`` valid entries per row, uniformly without replacement.

    Every row draws independently: K distinct ranks in ``[0, M_i)`` (``M_i`` the row's valid
    entries) by Floyd's algorithm from counter-based random numbers of ``(seed, i)``
    (:func:`~hardneg.negatives.draw.draw_ranks`), rank r mapped to the row's r-th valid entry in
    index order (:func:`~hardneg.negatives.draw.mask_index`), and the indices scattered into a new
    mask. A row's subset depends only on ``(seed, i, M_i, K)`` and the valid set, so the tiled and
    the gathered engines, which map ranks without the mask, draw the same subsets. When
    ``K = M_i`` for every row the draw is the identity and ``mask`` itself is returned. ``seed`` is
    drawn from ``generator`` when not given (one draw per call, identity or not).

    Raises ``ValueError`` if some row has fewer than K valid entries.

    Args:
        mask: each anchor's valid candidates.
        num_negatives: K ≥ 1, at most every row's number of valid entries.
        generator: draws ``seed`` when it is not given (default: torch's global generator).
        seed: the seed of the counter-based draw (overrides ``generator``).

    Shapes:
        ``mask`` (A, N) bool → (A, N) bool with exactly K True entries per row.

    References:
        Ash, Goel, Krishnamurthy, Misra, AISTATS 2022, §4 (K negatives per anchor); Bentley,
        Floyd, "Programming pearls: a sample of brilliance", CACM 30(9), 1987 (the draw).

    Example:
        >>> import torch
        >>> kept = subsample_mask(torch.ones(3, 6, dtype=torch.bool), 2, seed=0)
        >>> kept.sum(dim=1)
        tensor([2, 2, 2])
    """
    _check_num_negatives(num_negatives)
    counts = count_valid(mask)
    low, high = check_available(num_negatives, counts, mask.shape[1])
    if seed is None:
        seed = draw_seed(generator, device=mask.device if generator is not None else "cpu")
    if low == high == num_negatives or mask.shape[0] == 0:
        return mask
    ranks = draw_ranks(seed, counts, num_negatives, mask.shape[1])
    return index_mask(mask_index(ranks, mask), mask.shape[1])


def split_subsample(negatives: NegativeDistribution) -> tuple[NegativeDistribution, Subsample | None, bool]:
    """``(base, subsample, collision_free)`` of ``Subsample(CollisionFree(base))`` and its sub-forms.

    The engines that draw the K negatives without the (A, N) mask (tiled, gathered) accept at most
    one :class:`Subsample`, outside an optional :class:`~hardneg.negatives.CollisionFree` (the
    collision-free restriction first, then the draw among what is left); ``ValueError`` otherwise.
    """
    sub: Subsample | None = None
    collision_free = False
    dist = negatives
    while isinstance(dist, (Subsample, CollisionFree)):
        if isinstance(dist, Subsample):
            if sub is not None or collision_free:
                raise ValueError("the tiled engine supports one Subsample outside an optional CollisionFree")
            sub = dist
        else:
            collision_free = True
        dist = dist.base
    return dist, sub, collision_free


def identity_unwrapped(negatives: NegativeDistribution, num_valid: int | None) -> NegativeDistribution:
    """``negatives`` without an outermost :class:`Subsample` whose K is at least ``num_valid``, the
    most valid candidates an anchor has (such a draw keeps every valid candidate, or raises)."""
    if isinstance(negatives, Subsample) and num_valid is not None and negatives.num_negatives >= num_valid:
        return negatives.base
    return negatives


class Subsample(MaskWrapper):
    r"""K negatives per anchor, sampled uniformly without replacement from its valid candidates.

    Ash et al. (AISTATS 2022), §4 ("data reuse"): the other views of the batch are each anchor's
    *candidate set*, and a fixed number K of negatives is drawn from it **independently for each
    anchor**, so that K and the batch size B can be varied separately. With ``S_i`` the K drawn
    candidates of anchor i and ``w_ij`` the ``base`` distribution's weights renormalised to mean
    one over ``S_i`` (default uniform, ``w = 1``), the negative term is

    .. math:: \mathrm{Neg}_i = \sum_{j \in S_i} w_{ij}\, e^{s_{ij}}, \qquad
              P(S_i = S) = 1 / \binom{M_i}{K} \text{ for every K-subset } S,

    e.g. ``Subsample(num_negatives=64, base=Hard(beta=1.0))`` is HCL reweighting over 64
    uniformly drawn negatives. ``base`` prepares first (e.g.
    :class:`~hardneg.negatives.CollisionFree` inside: K collision-free negatives).

    **The draw** (:mod:`hardneg.negatives.draw`): K distinct ranks in ``[0, M_i)`` by R. Floyd's
    algorithm (Bentley & Floyd, "Programming pearls: a sample of brilliance", CACM 30(9), 1987),
    vectorised over anchors, from counter-based random numbers ``hash(seed, i, s)`` (splitmix64,
    39 random bits per step, :mod:`hardneg.negatives.keys`), O(A·K) numbers and at most O(A·K²)
    compares (for K² > 8N the K smallest of per-rank keys, O(A·N)); rank r is the anchor's r-th
    valid candidate in index order — in closed form for SimCLR's and the pair layout, by one
    ``searchsorted`` over the classes for collision-free negatives, by a row cumsum for an
    explicit mask. A row's subset depends only on ``(seed, i)`` and its valid set, so **every
    engine draws the same subsets** for the same seed (a run is reproducible whichever engine
    computes it). K = M_i for every anchor (K = 2B − 2 in SimCLR's layout) is the identity: no
    draw, the loss without ``Subsample``.

    **Which path** (:meth:`hardneg.ContrastiveLoss.engine_for`): in SimCLR's and the pair layout
    (hence also :class:`~hardneg.queue.QueueLoss`) with a ``base`` whose weights are per anchor
    (``per_anchor_weights``: Uniform, Hard), the gathered
    engine (:mod:`hardneg.engines.gathered`) computes only the A·K drawn logits — O(A·K·d), about
    0.1–0.5× SimCLR's full loss on a CPU — when ``GATHER_CROSSOVER · K ≤ N``
    (:data:`hardneg.engines.tiled.engine.GATHER_CROSSOVER`, 8 on a CPU); otherwise the draw changes the
    (A, N) validity mask of the materialised or tiled engine (cost of the full loss, A·N·d).
    :meth:`~hardneg.ContrastiveLoss.multi_positive` and :meth:`~hardneg.ContrastiveLoss.compute`
    always take the mask path.

    A fresh subset is drawn on every call to :meth:`prepare` (once per loss evaluation) from the
    ``generator`` passed to the loss call (e.g. ``loss(z1, z2, generator=g)``); without one, from
    the constructor's ``generator``, and without that from torch's global generator. Training
    loops that must be reproducible (and resumable) pass a per-step generator. **Per rank** under
    DDP: each process draws the K negatives of its own anchors from the generator it is given
    (independent draws need per-rank generators, e.g. :func:`hardneg.seeding.step_generator`
    with the rank); see :mod:`hardneg.distributed`. The subsets drawn for a seed differ from
    hardneg 0.1's (which ranked per-candidate keys).

    When to choose it: to study or tune the number of negatives K independently of B (the
    collision–coverage trade-off of Ash et al. suggests K of the order of the number of
    classes), or to cut the cost of the loss (K ≪ N: the gathered engine).

    Args:
        num_negatives: K ≥ 1; must not exceed any anchor's number of valid candidates
            (2B − 2 in SimCLR's layout).
        base: the distribution over the K survivors (default :class:`~hardneg.negatives.Uniform`).
        generator: default ``torch.Generator`` (on the logits' device) when a call passes none.

    Shapes:
        ``scores`` (A, N) → :class:`~hardneg.negatives.WeightedScores` (A, N) whose mask keeps K
        valid candidates per anchor (:func:`subsample_mask`).

    References:
        Ash, Goel, Krishnamurthy, Misra, *Investigating the Role of Negatives in Contrastive
        Representation Learning*, AISTATS 2022, §4; Bentley, Floyd, "Programming pearls: a sample
        of brilliance", CACM 30(9), 1987.

    Example:
        >>> import torch
        >>> from hardneg import ContrastiveLoss
        >>> from hardneg.negatives import Hard, Subsample
        >>> k4 = ContrastiveLoss(temperature=0.5, negatives=Subsample(num_negatives=4, base=Hard(beta=1.0)))
        >>> g = torch.Generator().manual_seed(0)
        >>> loss = k4(torch.randn(8, 16), torch.randn(8, 16), generator=g)
        >>> loss.shape, bool(torch.isfinite(loss))
        (torch.Size([]), True)
    """

    def __init__(
        self,
        *,
        num_negatives: int,
        base: NegativeDistribution | None = None,
        generator: torch.Generator | None = None,
    ):
        super().__init__(base)
        _check_num_negatives(num_negatives)
        if generator is not None and not isinstance(generator, torch.Generator):
            raise TypeError(f"generator must be a torch.Generator or None, got {type(generator).__name__}")
        self.num_negatives = num_negatives
        self.generator = generator

    def draw_seed(self, generator: torch.Generator | None, device: torch.device | str) -> int:
        """The seed of one draw, from the call's ``generator``, else the constructor's, else torch's
        global generator (``device``: the generator's device). Every engine draws it this way, so
        the three engines take the same subsets for the same generator."""
        g = generator if generator is not None else self.generator
        return draw_seed(g, device=device if g is not None else "cpu")

    def restrict(self, scores: Scores, *, generator: torch.Generator | None = None) -> Scores:
        seed = self.draw_seed(generator, scores.mask.device)
        mask = subsample_mask(scores.mask, self.num_negatives, seed=seed)
        return scores if mask is scores.mask else scores.with_mask(mask)

    def _config(self) -> dict[str, object]:
        return {"num_negatives": self.num_negatives}
