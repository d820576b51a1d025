"""Masked log-sum-exp, the hot path of every NCE objective: ATen's for small matrices, else fused.

Autograd through ``logsumexp(x.masked_fill(~mask, -inf))`` keeps several (A, N) temporaries and
spends several passes over them; the fused functions make one exponentiation pass forward and
one pass backward, and save a single (A, N) buffer per exponent. Below
:attr:`~hardneg._numerics.thresholds.Thresholds.dense_lse_max`
entries, with every row known to hold a valid entry (``nonempty``), ATen's own ``logsumexp`` of
the masked matrix is used instead: fewer dispatched operators and no Python autograd node, which
is what decides the cost of a call at small batches.

**The tilted pair** ``u_i = lse_j(a x_ij) − lse_j(b x_ij)`` (hard negatives: ``a = 1 + β``,
``b = β``; Robinson et al., ICLR 2021, eq. (4)) has the gradient ``a·softmax(a x) − b·softmax(b x)``,
a difference of two nearly equal terms once ``b > a − b`` (β > 1): each softmax rounded to float32
and then subtracted loses ``β·ε`` (1e-4 relative at β = 1000), and forming ``a x`` before the row
maximum is subtracted loses more (the product rounded at the scale ``a·|x|``). In that regime
(:func:`cancels`) every engine computes it in one cancellation-free form (:func:`tilted_pair`,
:func:`pair_terms`, :func:`pair_coefficients`): with ``d = x − max_j x`` at unit scale,
``w = e^{b d}``, ``q = e^{(a−b) d} − 1`` (``expm1``), ``S = Σ w`` and ``D = Σ w q ≤ 0``,

    u = (a − b) max_j x + log1p(D / S),    ∂u/∂x_j = w_j (α + γ q_j),
    α = ((a − b) − b D/S) / (S + D),        γ = a / (S + D),

where every sum adds terms of one sign (``S + D = Σ e^{a d} ≥ 1`` is accurate because
``S/(S + D) ≤ N^{(a−b)/a}``, Hölder's power-mean inequality).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import torch
from torch import Tensor
from torch.autograd.function import once_differentiable

from hardneg._numerics.constants import cached_tensors, constant
from hardneg._numerics.thresholds import THRESHOLDS

__all__ = [
    "TiltedPair",
    "cancels",
    "masked_logsumexp",
    "masked_tilted_lse",
    "pair_coefficients",
    "pair_terms",
    "tilt_pair",
    "tilted_pair",
    "tilted_pair_grad",
]



def _exp_sum(d: Tensor, scale: float, *, inplace: bool) -> tuple[Tensor, Tensor]:
    """``E = exp(scale·d)`` (in place on ``d`` when allowed) and its row sums."""
    if inplace:
        e = d.mul_(scale) if scale != 1.0 else d
    else:
        e = d * scale
    e.exp_()
    return e, e.sum(dim=1)


class _MaskedTiltedLSE(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, x: Tensor, mask: Tensor, a: float, b: float) -> Tensor:
        xm = torch.where(mask, x, float("-inf"))  # one pass; no inverted-mask temporary
        m = xm.amax(dim=1)
        m = torch.where(torch.isfinite(m), m, torch.zeros_like(m))
        d = xm.sub_(m[:, None])  # x − m, −inf on masked entries; one buffer reused below
        out = a * m
        if b != 0.0:
            e2, s2 = _exp_sum(d, b, inplace=False)
            out = out - (b * m + s2.log())
        e1, s1 = _exp_sum(d, a, inplace=True)
        out = out + s1.log()
        if b != 0.0:
            ctx.save_for_backward(e1, s1, e2, s2)
        else:
            ctx.save_for_backward(e1, s1)
        ctx.a, ctx.b = a, b
        return out

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad: Tensor) -> tuple[Tensor | None, None, None, None]:
        if ctx.b != 0.0:
            e1, s1, e2, s2 = ctx.saved_tensors
            gx = e1 * _coefficient(grad, ctx.a, s1)[:, None]
            gx.addcmul_(e2, _coefficient(grad, ctx.b, s2)[:, None], value=-1.0)
        else:
            e1, s1 = ctx.saved_tensors
            gx = e1 * _coefficient(grad, ctx.a, s1)[:, None]
        return gx, None, None, None


def cancels(a: float, b: float) -> bool:
    """Whether the gradient ``a·softmax(a x) − b·softmax(b x)`` of ``lse(a x) − lse(b x)`` is a
    difference of nearly equal terms, ``b > a − b > 0`` (hard negatives' ``1 + β`` and ``β``:
    β > 1): then it is computed in the cancellation-free form of :func:`tilted_pair`.

    Args:
        a: the larger tilt.
        b: the smaller tilt.

    Shapes:
        none (two numbers).

    References:
        Robinson, Chuang, Sra, Jegelka, ICLR 2021, §3, eq. (4) (the tilts 1 + β and β);
        Higham, *Accuracy and Stability of Numerical Algorithms*, SIAM, 2002, §1.7 (cancellation).

    Example:
        >>> cancels(2.0, 1.0), cancels(1001.0, 1000.0)
        (False, True)
    """
    return b > a - b > 0.0


def pair_terms(
    d: Tensor, b: float, c: float, *, floor: float | None = None, out: Tensor | None = None
) -> tuple[Tensor, Tensor]:
    """``(w, q) = (e^{b d}, e^{c d} − 1)`` of row-shifted logits ``d ≤ 0`` (−inf off the mask: 0 and
    −1); ``d`` is overwritten by ``q``. ``floor``: the smallest argument of ``e^{b d}`` (a CPU's
    fast exponential, :func:`hardneg.engines.tiled.stream.exp_floor`), or ``None``.

    Args:
        d: ``x − m`` with ``m`` each row's maximum (or a running maximum), at unit scale.
        b: the smaller tilt.
        c: ``a − b`` > 0.
        floor: see above.
        out: a buffer of ``d``'s shape for ``w`` (a new tensor when ``None``).

    Shapes:
        ``d`` (R, C) → two (R, C).

    References:
        Robinson, Chuang, Sra, Jegelka, ICLR 2021, eq. (4) (``e^{a d} = w (1 + q)``); Higham,
        SIAM, 2002, §1.14.1 (``expm1``).

    Example:
        >>> w, q = pair_terms(torch.tensor([[0.0, -1.0]]), 2.0, 1.0)
        >>> w.tolist(), [round(v, 4) for v in q[0].tolist()]
        ([[1.0, 0.1353352814912796]], [0.0, -0.6321])
    """
    w = torch.mul(d, b, out=out) if out is not None else torch.mul(d, b)
    w = (w.clamp_(min=floor) if floor is not None else w).exp_()
    q = d.mul_(c).expm1_() if c != 1.0 else d.expm1_()
    return w, q


def pair_coefficients(
    grad: Tensor, s: Tensor, dsum: Tensor, a: float, b: float, *, nonempty: bool = True
) -> tuple[Tensor, Tensor]:
    """``(α, γ)`` per row: ``grad_i · ∂u_i/∂x_ij = w_ij (α_i + γ_i q_ij)`` (:func:`tilted_pair`), from
    the row sums ``S = Σ w`` and ``D = Σ w q`` (both relative to the same row shift). Rows without
    a valid entry (``S = 0``) get 0 unless ``nonempty``.

    Args:
        grad: the upstream gradient of ``u``.
        s: ``S``.
        dsum: ``D`` (≤ 0).
        a: the larger tilt.
        b: the smaller tilt.
        nonempty: every row holds a valid entry.

    Shapes:
        all (R,) → two (R,).

    References:
        Robinson, Chuang, Sra, Jegelka, ICLR 2021, eq. (4), differentiated (module docstring).

    Example:
        >>> alpha, gamma = pair_coefficients(torch.ones(1), torch.ones(1), torch.zeros(1), 3.0, 2.0)
        >>> alpha.tolist(), gamma.tolist()  # one entry: ∂u/∂x = a − b = 1 (q = 0)
        ([1.0], [3.0])
    """
    c = a - b
    s_a = s + dsum
    scaled = grad / s_a
    alpha = torch.addcmul(constant(c, s), dsum / s, constant(-b, s)).mul_(scaled)  # c − b D/S ≥ c
    gamma = scaled.mul_(a)
    if not nonempty:
        empty = s <= 0
        alpha, gamma = alpha.masked_fill(empty, 0.0), gamma.masked_fill(empty, 0.0)
    return alpha, gamma


class TiltedPair(NamedTuple):
    """What the gradient of :func:`tilted_pair` reads: ``w``, ``q`` (A, N), ``S``, ``D`` (A,)."""

    w: Tensor
    q: Tensor
    s: Tensor
    dsum: Tensor


def tilted_pair(xm: Tensor, a: float, b: float, *, nonempty: bool = True) -> tuple[Tensor, TiltedPair]:
    r"""``u_i = lse_j(a x_ij) − lse_j(b x_ij)`` over each row (``xm``: −inf off the mask) in the
    cancellation-free form of the module docstring, and what its gradient reads
    (:func:`tilted_pair_grad`). For ``b > a − b`` (:func:`cancels`); exact algebra for any
    ``a > b > 0``. Rows without a valid entry give NaN unless ``nonempty`` (then there are none).

    Args:
        xm: the logits with −inf off the mask.
        a: the larger tilt.
        b: the smaller tilt (> 0).
        nonempty: every row holds a valid entry (no guard against an all −inf row).

    Shapes:
        ``xm`` (A, N) → ``u`` (A,) and a :class:`TiltedPair`.

    References:
        Robinson, Chuang, Sra, Jegelka, *Contrastive Learning with Hard Negative Samples*,
        ICLR 2021, §3, eq. (4) (``log Σ_j w_ij e^{s_ij} = u_i + log N_i``); Higham, SIAM, 2002,
        §1.7 and §1.14.1 (cancellation, ``expm1`` and ``log1p``).

    Example:
        >>> x = torch.tensor([[0.0, -0.01, -2.0]], dtype=torch.float64)
        >>> u, _ = tilted_pair(x, 1001.0, 1000.0)
        >>> want = torch.logsumexp(1001.0 * x, 1) - torch.logsumexp(1000.0 * x, 1)
        >>> bool(torch.allclose(u, want, rtol=1e-12))
        True
    """
    m = xm.amax(dim=1, keepdim=True)
    if not nonempty:
        m = torch.where(torch.isfinite(m), m, 0.0)
    w, q = pair_terms(xm - m, b, a - b)
    s = w.sum(dim=1)
    dsum = torch.linalg.vecdot(w, q)  # Σ_j w q ≤ 0: one pass
    u = torch.addcmul(torch.log1p(dsum / s), m.view(-1), constant(a - b, m))
    return u, TiltedPair(w, q, s, dsum)


def tilted_pair_grad(grad: Tensor, saved: TiltedPair, a: float, b: float, *, nonempty: bool = True) -> Tensor:
    """``grad_i · ∂u_i/∂x_ij`` of :func:`tilted_pair`, ``w ⊙ (α + γ q)`` (:func:`pair_coefficients`);
    0 off the mask.

    Args:
        grad: the upstream gradient of ``u``.
        saved: :func:`tilted_pair`'s second output.
        a: the larger tilt.
        b: the smaller tilt.
        nonempty: as in :func:`tilted_pair`.

    Shapes:
        ``grad`` (A,) → (A, N).

    References:
        Robinson, Chuang, Sra, Jegelka, ICLR 2021, eq. (4), differentiated (module docstring).

    Example:
        >>> x = torch.tensor([[0.0, -0.01, -2.0]], dtype=torch.float64, requires_grad=True)
        >>> u, saved = tilted_pair(x.detach(), 1001.0, 1000.0)
        >>> want = torch.autograd.grad(torch.logsumexp(1001 * x, 1) - torch.logsumexp(1000 * x, 1), x)[0]
        >>> bool(torch.allclose(tilted_pair_grad(torch.ones(1, dtype=x.dtype), saved, 1001.0, 1000.0), want))
        True
    """
    alpha, gamma = pair_coefficients(grad, saved.s, saved.dsum, a, b, nonempty=nonempty)
    return torch.addcmul(alpha[:, None], saved.q, gamma[:, None]).mul_(saved.w)


class _TiltedPairLSE(torch.autograd.Function):
    """:func:`tilted_pair` as an autograd node from the logits and the mask (or its additive form)."""

    @staticmethod
    def forward(
        ctx: Any, x: Tensor, mask: Tensor, fill: Tensor | None, a: float, b: float, nonempty: bool
    ) -> Tensor:
        xm = x + fill if fill is not None else torch.where(mask, x, float("-inf"))
        u, saved = tilted_pair(xm, a, b, nonempty=nonempty)
        ctx.save_for_backward(*saved)
        ctx.a, ctx.b, ctx.nonempty = a, b, nonempty
        return u

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad: Tensor) -> tuple[Tensor | None, None, None, None, None, None]:
        saved = TiltedPair(*ctx.saved_tensors)
        grad_x = tilted_pair_grad(grad, saved, ctx.a, ctx.b, nonempty=ctx.nonempty)
        return grad_x, None, None, None, None, None


def _coefficient(grad: Tensor, scale: float, row_sum: Tensor) -> Tensor:
    """``grad · scale / row_sum``, 0 for empty rows (whose row sum is 0)."""
    return torch.where(row_sum > 0, grad * scale / row_sum.clamp_min(torch.finfo(row_sum.dtype).tiny), 0.0)


def _masked(x: Tensor, mask: Tensor, fill: Tensor | None) -> Tensor:
    """``x`` with ``−inf`` off the mask: ``x + fill`` when the additive mask is given (one operator,
    no backward of its own), else ``masked_fill``."""
    return x + fill if fill is not None else x.masked_fill(~mask, float("-inf"))


@cached_tensors(64)
def tilt_pair(a: float, b: float, dtype: torch.dtype, device: torch.device) -> Tensor:
    """``[a, b]`` as a (2, 1, 1) tensor: ``x * tilt_pair(a, b, …)`` is both tilts of an (A, N) ``x``
    at once, each entry the product ``a·x_ij`` (``b·x_ij``) bit for bit. Cached (a β schedule
    keeps its last 64 values); never to be modified in place.

    Args:
        a: the first tilt.
        b: the second tilt.
        dtype: the tensor's dtype.
        device: where it lives.

    Shapes:
        → (2, 1, 1).

    References:
        Robinson, Chuang, Sra, Jegelka, ICLR 2021, §3, eq. (4) (the two tilts 1 + β and β of the
        hard negatives' weighted sum).

    Example:
        >>> x = torch.tensor([[0.5, -1.0]])
        >>> (x * tilt_pair(2.0, 1.0, x.dtype, x.device)).tolist()
        [[[1.0, -2.0]], [[0.5, -1.0]]]
    """
    return torch.tensor([a, b], dtype=dtype, device=device).view(2, 1, 1)


def _scaled(x: Tensor, scale: float) -> Tensor:
    """``scale·x``, without an operator when ``scale`` is 1 (the product is ``x`` exactly)."""
    return x if scale == 1.0 else constant(scale, x) * x


def masked_tilted_lse(
    x: Tensor,
    mask: Tensor,
    a: float,
    b: float = 0.0,
    *,
    nonempty: bool = False,
    fill: Tensor | None = None,
) -> Tensor:
    """``lse_j(a·x_ij) − lse_j(b·x_ij)`` over the valid entries of each row (b = 0: no subtraction).

    With ``a = 1 + β`` and ``b = β`` this is HCL's ``log Σ_j w_ij e^{s_ij} − log N_i`` for
    ``w ∝ e^{β s}`` (see :class:`hardneg.negatives.Hard`). Requires ``a > 0`` and ``b ≥ 0``. With
    ``b > a − b`` (:func:`cancels`; β > 1) the cancellation-free tilted pair of the module
    docstring at every size (:func:`tilted_pair`, one autograd node).

    Args:
        x: the logits.
        mask: True where an entry is valid.
        a: the tilt of the first log-sum-exp (> 0).
        b: the tilt of the subtracted one (≥ 0; 0: none).
        nonempty: every row is known to hold a valid entry; then a matrix of at most
            :attr:`~hardneg._numerics.thresholds.Thresholds.dense_lse_max` entries takes ATen's
            ``logsumexp`` (the same values).
        fill: optional additive form of the mask (0 where valid, ``−inf`` elsewhere), which that
            path adds instead of a ``masked_fill`` (layouts that reuse one mask cache it).

    Shapes: ``x`` (A, N) float, ``mask`` (A, N) bool, ``fill`` (A, N) → (A,). Rows with no valid
    entry give −inf (b = 0) or NaN (b > 0), and no gradient.

    References:
        Robinson, Chuang, Sra, Jegelka, *Contrastive Learning with Hard Negative Samples*,
        ICLR 2021, §3, eq. (4) (the tilted sum); Milakov & Gimelshein, arXiv:1805.02867, 2018
        (the max-shifted normaliser).

    Example:
        >>> x, m = torch.tensor([[0.0, 1.0, 5.0]]), torch.tensor([[True, True, False]])
        >>> want = torch.logsumexp(2 * x[:, :2], 1) - torch.logsumexp(x[:, :2], 1)
        >>> bool(torch.allclose(masked_tilted_lse(x, m, 2.0, 1.0), want))
        True
    """
    tiny = torch.finfo(x.dtype).tiny
    if not a >= tiny:
        raise ValueError(f"a must be >= {tiny} (a normal number of the logits' dtype), got {a!r}")
    if b < 0:
        raise ValueError(f"b must be >= 0, got {b!r}")
    if 0 < b < tiny:  # b·x underflows to 0 in this dtype: lse_j(0·x_ij) = log N_i exactly
        lse_a = masked_tilted_lse(x, mask, a, 0.0, nonempty=nonempty, fill=fill)
        return lse_a - mask.sum(dim=1, dtype=torch.int32).to(x.dtype).log()
    if cancels(a, b):  # the cancellation-free form (module docstring), at every size
        pair: Tensor = _TiltedPairLSE.apply(x, mask, fill, float(a), float(b), bool(nonempty))
        return pair
    if nonempty and x.numel() <= THRESHOLDS.dense_lse_max:
        # small and no empty row: ATen's log-sum-exp, without a Python autograd node
        xm = _masked(x, mask, fill)
        if b == 0.0:
            return torch.logsumexp(_scaled(xm, a), dim=1)
        if torch.compiler.is_compiling():
            return torch.logsumexp(a * xm, dim=1) - torch.logsumexp(b * xm, dim=1)
        # both tilts in one (2, A, N) product and one log-sum-exp call: ATen's CPU logsumexp costs
        # about as much at (2, A, N) as at (A, N); each row's value is the same, bit for bit
        lse_a, lse_b = torch.logsumexp(xm * tilt_pair(a, b, xm.dtype, xm.device), dim=2).unbind(0)
        return lse_a - lse_b
    out: Tensor = _MaskedTiltedLSE.apply(x, mask, float(a), float(b))
    return out


def masked_logsumexp(
    x: Tensor, mask: Tensor, *, nonempty: bool = False, fill: Tensor | None = None
) -> Tensor:
    """``log Σ_{j valid} e^{x_ij}`` per row (:func:`masked_tilted_lse` with ``a = 1``, ``b = 0``;
    ``nonempty`` and ``fill`` as there). Shapes: (A, N), (A, N) bool → (A,)."""
    # the common small call, directly
    if nonempty and fill is not None and x.numel() <= THRESHOLDS.dense_lse_max:
        return torch.logsumexp(x + fill, dim=1)
    return masked_tilted_lse(x, mask, 1.0, 0.0, nonempty=nonempty, fill=fill)
