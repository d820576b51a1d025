"""K negatives per anchor, decoupled from the batch size (Ash et al., AISTATS 2022, §4)."""

from __future__ import annotations

import torch

from hardneg.negatives.base import NegativeDistribution
from hardneg.negatives.keys import counter_keys, draw_seed
from hardneg.negatives.wrapper import MaskWrapper
from hardneg.scores import Scores

__all__ = ["Subsample", "subsample_mask"]


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

    Every row draws independently: counter-based keys ``key(seed, i, j)``
    (:func:`~hardneg.negatives.keys.counter_keys`, unique within a row) on the valid entries, −1
    on the invalid ones, and the K largest keys are kept — a uniformly random K-subset of the
    row's valid entries — by thresholding at each row's (N − K + 1)-th smallest key, so the memory
    is one (A, N) key matrix whatever K is; embeddings are never gathered. Because a key depends
    only on ``(seed, i, j)``, a tiled computation draws the same subsets. ``seed`` is drawn from
    ``generator`` when not given.

    Shapes: ``mask`` (A, N) bool → (A, N) bool with exactly K True entries per row.

    Raises ``ValueError`` if some row has fewer than K valid entries.
    """
    _check_num_negatives(num_negatives)
    available = int(mask.sum(dim=1, dtype=torch.int32).min()) if mask.shape[0] > 0 else 0
    if num_negatives > available:
        raise ValueError(
            "num_negatives must be <= the number of valid candidates of every anchor "
            f"(here min_i N_i = {available} of {mask.shape[1]} candidates), got num_negatives={num_negatives}"
        )
    if seed is None:
        seed = draw_seed(generator, device=mask.device if generator is not None else "cpu")
    a, n = mask.shape
    keys = counter_keys(seed, torch.arange(a, device=mask.device), torch.arange(n, device=mask.device))
    keys = keys.masked_fill_(~mask, -1)
    # keep the keys >= each row's (N − K + 1)-th smallest: O(A) extra memory, whatever K is
    threshold = keys.kthvalue(n - num_negatives + 1, dim=1).values
    return keys >= threshold[:, None]


class Subsample(MaskWrapper):
    r"""K negatives per anchor, sampled uniformly without replacement from its valid candidates.

    Ash et al. (AISTATS 2022), §4 ("data reuse"): the other views of the batch are each anchor's
    *candidate set*, and a fixed number K of negatives is drawn from it **independently for each
    anchor**, so that K and the batch size B can be varied separately. The draw only changes the
    validity mask (memory O(A × N), never an (A, K, d) copy); the ``base`` distribution (default
    uniform) then weights the K survivors, its weights renormalised to mean one over them —
    e.g. ``Subsample(num_negatives=64, base=Hard(beta=1.0))`` is HCL reweighting over 64 uniformly
    drawn negatives. ``base`` prepares first (e.g. :class:`~hardneg.negatives.CollisionFree`
    inside: K collision-free negatives).

    A fresh subset is drawn on every call to :meth:`prepare` (once per loss evaluation) from the
    ``generator`` passed to the loss call (e.g. ``loss(z1, z2, generator=g)``); without one, from
    the constructor's ``generator``, and without that from torch's global generator. Training
    loops that must be reproducible (and resumable) pass a per-step generator. **Per rank** under
    DDP: each process draws the K negatives of its own anchors from the generator it is given
    (independent draws need per-rank generators, e.g. :func:`hardneg.seeding.step_generator`
    with the rank); see :mod:`hardneg.distributed`.

    When to choose it: to study or tune the number of negatives K independently of B (the
    collision–coverage trade-off of Ash et al. suggests K of the order of the number of
    classes), or to cut the cost of a weighting that scales with the number of negatives.

    Args:
        num_negatives: K ≥ 1; must not exceed any anchor's number of valid candidates
            (2B − 2 in SimCLR's layout).
        base: the distribution over the K survivors (default :class:`~hardneg.negatives.Uniform`).
        generator: default ``torch.Generator`` (on the logits' device) when a call passes none.
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

    def restrict(self, scores: Scores, *, generator: torch.Generator | None = None) -> Scores:
        g = generator if generator is not None else self.generator
        return scores.with_mask(subsample_mask(scores.mask, self.num_negatives, generator=g))

    def _config(self) -> dict[str, object]:
        return {"num_negatives": self.num_negatives}
