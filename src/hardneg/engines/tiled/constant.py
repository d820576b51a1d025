"""Constant candidates: the anchors' gradient of a streamed log-sum-exp accumulated in its forward pass.

When the candidates carry no gradient (MoCo's queue: detached keys of earlier steps), the
gradient of

    L_e,i = log Σ_j e^{a_e s_ij},    s_ij = ⟨x_i, y_j⟩,

with respect to the anchors is a softmax-weighted mean of the candidates,

    ∂L_e,i / ∂x_i = a_e · G_e,i,    G_e,i = Σ_j e^{a_e s_ij − L_e,i} y_j,

which needs no upstream gradient: it can be summed tile by tile while the forward pass has the
tile's weights in hand, and the backward pass is one (A, E)·(E, A, d) contraction. The recomputing
backward of :func:`~hardneg.engines.tiled.lse.tiled_lse` needs a second matrix product per tile to rebuild
the logits; here each tile costs one product for the logits and one for the weighted sum (E of
them for E exponents, stacked into one product): for InfoNCE (E = 1) two products per tile
instead of three — the matmul floor of a forward and backward pass — and for hard negatives
(E = 2: ``1 + β`` and ``β``) three, as before, without the backward's element-wise passes.

The forward pass is :mod:`hardneg.engines.tiled.rowshift`'s fixed per-row shift ``σ_i`` (no running
maximum), so a term ``e^{k_e (a s_ij − σ_i)}`` is final when it is made and

    G_e,i = Σ_j e^{k_e (a s_ij − σ_i)} y_j / S_e,i,    S_e,i = Σ_j e^{k_e (a s_ij − σ_i)}.

Used (:func:`accumulation`) only where it is exact and cheaper: the anchors need a gradient and
the candidates none, no entry is masked, one shift is safe for every tile and no tile needs an
exponent floor (:class:`~hardneg.engines.tiled.lse.TilePlan`), the exponents are one base and its integer
multiples (:func:`~hardneg.engines.tiled.rowshift.row_shift`), at most two of them (a third, the ``2β``
of the effective sample size, carries no gradient) and the tiles are not compiled. Otherwise
:func:`~hardneg.engines.tiled.lse.tiled_lse` keeps its recomputing backward.
"""

from __future__ import annotations

import torch
from torch import Tensor

from hardneg.engines.tiled.rowshift import RowShift, row_shift
from hardneg.engines.tiled.stream import Scratch, exp_, ipow, tiles

__all__ = ["accumulated_gradient", "accumulation", "forward_accumulated"]

MAX_EXPONENTS = 2  # one weighted sum per exponent: a third (2β, diagnostics only) would be wasted


def accumulation(
    exponents: tuple[float, ...],
    *,
    wanted: bool,
    num_candidates: int,
    clean: bool,
    shared_shift: bool,
    risky: bool,
    compiled: bool,
) -> RowShift | None:
    """The :class:`~hardneg.engines.tiled.rowshift.RowShift` of a call whose anchors' gradient is
    accumulated in the forward pass, or ``None`` for the recomputing backward.

    Args:
        exponents: the exponents ``a_e`` of the log-sum-exp.
        wanted: the anchors need a gradient and the candidates none (read before the
            ``autograd.Function`` runs: inside it, grad mode is off).
        num_candidates: N (≥ 1 needed: an empty row has no softmax).
        clean: no entry of any tile is masked (:attr:`~hardneg.engines.tiled.lse.TilePlan.masked` is empty).
        shared_shift: one fixed shift per row is safe (:class:`~hardneg.engines.tiled.lse.TilePlan`).
        risky: an exponent argument may fall below the exponent floor.
        compiled: the tiles are fused by ``torch.compile`` (kept on its own path).

    Shapes:
        no tensor in or out (settings and the plan's facts; a RowShift of integer exponents).

    References:
        Dao, Fu, Ermon, Rudra and Ré, "FlashAttention", NeurIPS 2022, Algorithm 1 (a softmax-weighted
        sum accumulated with its normaliser); Robinson, Chuang, Sra and Jegelka, ICLR 2021, eq. (4)
        (the two exponents ``1 + β`` and ``β`` of hard negatives).

    Example:
        >>> kw = dict(num_candidates=8, clean=True, shared_shift=True, risky=False, compiled=False)
        >>> accumulation((6.0, 1.0), wanted=True, **kw)
        RowShift(base=1, multiples=((6, 0),))
        >>> accumulation((1.0,), wanted=False, **kw) is None
        True
    """
    if not wanted or compiled or risky or not clean or not shared_shift or num_candidates < 1:
        return None
    if not 1 <= len(exponents) <= MAX_EXPONENTS or min(exponents) <= 0:
        return None
    return row_shift(exponents)


def forward_accumulated(
    anchors: Tensor,
    candidates: Tensor,
    exponents: tuple[float, ...],
    shape: RowShift,
    *,
    y_norm: float,
    tile: int,
) -> tuple[Tensor, Tensor, Tensor]:
    """``(L, N, G)``: the log-sum-exps, the valid counts and the normalised weighted sums.

    Args:
        anchors: the anchors ``x`` (already divided by the temperature).
        candidates: the candidates ``y`` (no gradient).
        exponents: ``a_e``, one base and its integer multiples (``shape``).
        shape: the exponents' :class:`~hardneg.engines.tiled.rowshift.RowShift`.
        y_norm: ``max_j ‖y_j‖`` (the plan's one host read).
        tile: the side of a tile.

    Shapes:
        ``anchors`` (A, d), ``candidates`` (N, d) → ``L`` (A, E), ``N`` (A,) int64 (all N: no
        entry is masked) and ``G`` (E, A, d).

    References:
        Milakov and Gimelshein, "Online normalizer calculation for softmax", arXiv:1805.02867,
        2018 (the streamed normaliser); Dao et al., "FlashAttention", NeurIPS 2022, Algorithm 1
        (the weighted sum of the values accumulated with the normaliser, here with a fixed shift).

    Example:
        >>> x, y = torch.randn(3, 4), torch.randn(5, 4)
        >>> lse, n, g = forward_accumulated(x, y, (1.0,), row_shift((1.0,)),
        ...                                 y_norm=float(y.norm(dim=1).max()), tile=2)
        >>> s = x @ y.T
        >>> torch.allclose(lse[:, 0], s.logsumexp(1), atol=1e-5)
        True
        >>> torch.allclose(g[0], s.softmax(1) @ y, atol=1e-5)
        True
    """
    a_n, n_n, n_e = anchors.shape[0], candidates.shape[0], len(exponents)
    a = exponents[shape.base]
    bound = torch.linalg.vector_norm(anchors, dim=1) * y_norm  # ≥ max_j s_ij: the fixed "maximum"
    sigma = bound * a
    scaled = anchors if a == 1.0 else anchors * a
    sums = anchors.new_empty(a_n, n_e)
    grads = anchors.new_empty(n_e, a_n, anchors.shape[1])
    cols = tiles(n_n, tile)
    work = Scratch()
    for r0, r1 in tiles(a_n, tile):
        rows = r1 - r0
        x_blk, shift = scaled[r0:r1], sigma[r0:r1, None]
        parts = anchors.new_empty(len(cols), n_e, rows)  # each tile's row sums, added at the end
        acc = anchors.new_zeros(n_e * rows, anchors.shape[1])  # Σ_j e^{k_e (a s_ij − σ_i)} y_j
        for bj, (c0, c1) in enumerate(cols):
            y_blk = candidates[c0:c1]
            w = work.get("w", n_e * rows, c1 - c0, anchors).view(n_e, rows, c1 - c0)
            base = torch.mm(x_blk, y_blk.T, out=w[shape.base]).sub_(shift)
            exp_(base)  # e^{a s − σ} ≤ 1, above the floor (the plan's shared shift)
            torch.sum(base, dim=1, out=parts[bj, shape.base])
            for k, e in shape.multiples:
                torch.sum(ipow(base, k, w[e]), dim=1, out=parts[bj, e])
            acc.addmm_(w.view(n_e * rows, c1 - c0), y_blk)  # every exponent's weighted sum: one product
        s = parts.sum(dim=0)  # (E, R)
        sums[r0:r1] = s.T
        grads[:, r0:r1] = acc.view(n_e, rows, -1) / s[:, :, None]
    a_vec = torch.tensor(exponents, dtype=anchors.dtype, device=anchors.device)
    lse = bound[:, None] * a_vec + sums.log()  # L_e = k_e σ + log S_e
    counts = torch.full((a_n,), n_n, dtype=torch.int64, device=anchors.device)
    return lse, counts, grads


def accumulated_gradient(grad: Tensor, grads: Tensor, exponents: tuple[float, ...]) -> Tensor:
    """``∇x_i = Σ_e g_e,i · a_e · G_e,i`` from the upstream gradient of ``L`` and the forward's ``G``.

    Args:
        grad: the upstream gradient ``∂loss/∂L`` (zero where ``L`` was not used).
        grads: ``G`` of :func:`forward_accumulated` (``∂L_e,i/∂x_i = a_e G_e,i``).
        exponents: ``a_e``.

    Shapes:
        ``grad`` (A, E), ``grads`` (E, A, d) → (A, d).

    References:
        Milakov and Gimelshein, arXiv:1805.02867, 2018 (the log-sum-exp's gradient is the softmax:
        ``∂/∂x_i log Σ_j e^{a ⟨x_i, y_j⟩} = a Σ_j softmax_j(a s_i) y_j``).

    Example:
        >>> g = torch.ones(2, 1); G = torch.ones(1, 2, 3)
        >>> accumulated_gradient(g, G, (2.0,)).tolist()
        [[2.0, 2.0, 2.0], [2.0, 2.0, 2.0]]
    """
    coef = grad * torch.tensor(exponents, dtype=grad.dtype, device=grad.device)
    return torch.einsum("ae,ead->ad", coef, grads)
