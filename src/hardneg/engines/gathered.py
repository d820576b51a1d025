"""The gathered engine: K-subsampled negatives at O(A·K·d), only the drawn logits are computed.

K negatives per anchor decoupled from the batch size are Ash, Goel, Krishnamurthy, Misra
(AISTATS 2022), §4; the loss over them is the chosen objective unchanged (e.g. Robinson et al.,
ICLR 2021, eq. (4) with hard weights over the K drawn candidates).

With :class:`~hardneg.negatives.Subsample` (K negatives per anchor) the materialised and the
tiled engines score every candidate (A·N·d) and then keep K per row. This engine draws the K
indices first (:meth:`~hardneg.engines.tiled.TileMask.draw`: the same subsets, for the same seed, as
the other two engines) and computes only

    s_ik = ⟨a_i, c_{idx[i, k]}⟩ / t        (A, K),

as a sampled dense–dense product on the sparsity pattern of the indices, whose backward is two
sparse–dense products (nothing of size A·N or A·K·d is formed). The
K logits per anchor become a :class:`~hardneg.scores.Scores` of shape (A, K) with an all-True
mask, on which the inner distribution (any with ``per_anchor_weights = True``: Uniform, Hard(β),
Hard with ``target_ess`` or ``rescale``, a user's distribution that declares it, …) and every
objective run unchanged: the loss equals the materialised one on the
K-subsampled mask, whose other columns carry no weight.

Diagnostics read the drawn candidates' norms and labels per anchor (``neg_cosine``,
``collision_rate``, …); the :class:`~hardneg.scores.Scores` handed to the distribution and the
objective carries no candidate labels (the collision-free restriction is already in the draw)
and NaN candidate norms (a column is a different candidate for each anchor).
"""

from __future__ import annotations

import warnings

import torch
from torch import Tensor
from torch.autograd.function import FunctionCtx, once_differentiable

from hardneg.engines.tiled.mask import TileMask
from hardneg.negatives.base import NegativeDistribution
from hardneg.negatives.subsample import Subsample, split_subsample
from hardneg.objectives.base import Objective
from hardneg.reduction import LossOutput, reduce
from hardneg.reduction.diagnostics import gathered_diagnostics
from hardneg.scores import Scores

__all__ = ["check_gatherable", "gathered_logits", "gathered_loss"]


def check_gatherable(negatives: NegativeDistribution) -> tuple[NegativeDistribution, Subsample, bool]:
    """``(base, subsample, collision_free)`` of ``negatives``
    (:func:`~hardneg.negatives.subsample.split_subsample`) if the gathered engine computes it:
    ``Subsample`` outermost (optionally around :class:`~hardneg.negatives.CollisionFree`) over a
    distribution that declares ``per_anchor_weights = True`` (Uniform, Hard with any options:
    their weights are per anchor, so they read the K drawn logits alone). ``ValueError``
    otherwise (e.g. optimal transport, whose column marginals need the whole (A, N) matrix)."""
    try:
        base, sub, collision_free = split_subsample(negatives)
    except ValueError:
        base, sub, collision_free = negatives, None, False
    if sub is None or not base.per_anchor_weights:
        raise ValueError(
            "the gathered engine needs Subsample(num_negatives=K) outermost (optionally around "
            "CollisionFree) over a distribution whose weights read only the anchor's own row "
            "(per_anchor_weights = True: Uniform, Hard), got "
            f"negatives={negatives!r}; use engine='auto', 'materialised' or 'tiled'"
        )
    return base, sub, collision_free


def _pattern(index: Tensor, num_candidates: int, values: Tensor) -> Tensor:
    """The (A, N) sparse CSR matrix with ``values`` (A, K) at ``index`` (A, K) (sorted per row)."""
    a, k = index.shape
    crow = torch.arange(0, a * k + 1, k, device=index.device)
    with warnings.catch_warnings():  # "sparse CSR support is in beta"
        warnings.simplefilter("ignore", UserWarning)
        return torch.sparse_csr_tensor(
            crow, index.reshape(-1), values.reshape(-1), (a, num_candidates), check_invariants=False
        )


class _GatheredLogits(torch.autograd.Function):
    """``s_ik = ⟨a_i, c_{idx[i, k]}⟩`` as a sampled dense–dense product (SDDMM) on the CSR pattern
    of the indices; backward: ``∂a = G c`` and ``∂c = Gᵀ a`` with ``G`` the (A, N) sparse
    gradient — O(A·K·d) each, nothing of size A·N or A·K·d is formed."""

    @staticmethod
    def forward(ctx: FunctionCtx, anchors: Tensor, candidates: Tensor, index: Tensor) -> Tensor:
        pattern = _pattern(index, candidates.shape[0], anchors.new_zeros(index.shape))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            out = torch.sparse.sampled_addmm(pattern, anchors, candidates.T, beta=0.0)
        ctx.save_for_backward(anchors, candidates, index)
        return out.values().view(index.shape)

    @staticmethod
    @once_differentiable
    def backward(ctx: FunctionCtx, grad: Tensor) -> tuple[Tensor | None, Tensor | None, None]:
        anchors, candidates, index = ctx.saved_tensors  # type: ignore[attr-defined]
        need_a, need_c = ctx.needs_input_grad[0], ctx.needs_input_grad[1]  # type: ignore[attr-defined]
        g = _pattern(index, candidates.shape[0], grad.contiguous())
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            grad_a = g @ candidates if need_a else None
            grad_c = g.t() @ anchors if need_c else None
        return grad_a, grad_c, None


def gathered_logits(anchors: Tensor, candidates: Tensor, index: Tensor) -> Tensor:
    """``s_ik = ⟨a_i, c_{index[i, k]}⟩`` without an (A, N) product: O(A·K·d) work and O(A·K)
    memory, forward and backward (a sampled dense–dense product on the indices' sparsity pattern,
    ``torch.sparse.sampled_addmm``).

    Shapes: ``anchors`` (A, d), ``candidates`` (N, d), ``index`` (A, K) int64, distinct and sorted
    per row → (A, K). Differentiable in ``anchors`` and ``candidates`` (first order).
    """
    out: Tensor = _GatheredLogits.apply(anchors, candidates, index)
    return out


def gathered_loss(
    anchors: Tensor,
    positives: Tensor,
    candidates: Tensor,
    *,
    temperature: float,
    anchor_norms: Tensor,
    positive_norms: Tensor,
    candidate_norms: Tensor,
    excluded: Tensor,
    negatives: NegativeDistribution,
    objective: Objective,
    reduction: str = "mean",
    mask: Tensor | None = None,
    anchor_labels: Tensor | None = None,
    candidate_labels: Tensor | None = None,
    diagnostics: bool = False,
    generator: torch.Generator | None = None,
) -> LossOutput:
    """Steps 2–4 over the K drawn candidates of each anchor only (prepared embeddings).

    Shapes as :func:`~hardneg.engines.tiled.engine.tiled_loss`: ``anchors``, ``positives`` (A, d),
    ``candidates`` (N, d), prepared (compute dtype, normalised if asked); norms (A,), (A,), (N,);
    ``excluded`` (A, E) int64 (−1 = none); ``mask`` optional (A, N) bool; labels (A,), (N,).
    The draw takes its seed from ``generator`` (else the Subsample's own, else torch's global
    one) exactly as the other engines do, so the three engines agree for the same generator.
    """
    base, sub, collision_free = check_gatherable(negatives)
    rule = TileMask(
        num_anchors=anchors.shape[0],
        num_candidates=candidates.shape[0],
        excluded=excluded,
        explicit=mask,
        anchor_labels=anchor_labels,
        candidate_labels=candidate_labels,
        collision_free=collision_free,
    )
    seed = sub.draw_seed(generator, candidates.device)
    index = rule.draw(seed, sub.num_negatives, identity=True)
    assert index is not None
    at = anchors / temperature
    logits = gathered_logits(at, candidates, index)
    a_n, k = index.shape
    scores = Scores(
        positive=(at * positives).sum(dim=1),
        logits=logits,
        mask=torch.ones(a_n, k, dtype=torch.bool, device=logits.device),
        temperature=temperature,
        anchor_norms=anchor_norms,
        positive_norms=positive_norms,
        candidate_norms=torch.full((k,), float("nan"), dtype=logits.dtype, device=logits.device),
        valid_counts=torch.full((a_n,), k, dtype=torch.int32, device=logits.device),
        nonempty=True,
    )
    weighted = base.weigh(base.prepare(scores, generator=generator))
    weighted.source = weighted.source or repr(negatives)
    per_anchor = objective(weighted)
    diag: dict[str, float] = {}
    if diagnostics:
        with torch.no_grad():
            diag = gathered_diagnostics(
                weighted,
                candidate_norms=candidate_norms[index],
                anchor_labels=anchor_labels,
                candidate_labels=None
                if candidate_labels is None
                else candidate_labels.to(index.device)[index],
            )
            diag.update({str(key): float(v) for key, v in negatives.diagnostics(weighted).items()})
            diag.update({str(key): float(v) for key, v in objective.diagnostics(weighted).items()})
            diag["gathered"] = 1.0
        diag["loss"] = float(per_anchor.detach().mean())
    return LossOutput(loss=reduce(per_anchor, reduction), per_anchor=per_anchor, diagnostics=diag)
