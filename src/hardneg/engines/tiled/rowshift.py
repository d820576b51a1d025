"""Fixed per-row shifts, folded into the matrix product of a rectangular tile (pure tensor functions).

The streaming log-sum-exp (:mod:`hardneg.engines.tiled.stream`) shifts each row by its running maximum:
per tile a maximum, a subtraction and a rescaling of the running sums. For logits
``s_ij = ⟨x_i, y_j⟩`` a bound is known before the first tile (Cauchy–Schwarz),

    a s_ij ≤ σ_i = a ‖x_i‖ · max_j ‖y_j‖,

and ``σ_i`` is a shift that never changes: the tile ``a s − σ`` is one matrix product (of the
anchors times ``a``) and one in-place subtraction while the tile is in cache (``addmm`` with the
shift as its input measured slower on a CPU: it first copies the shift into the whole output),
and the running sums of a row are plain sums,

    S_e,i = Σ_j e^{k_e (a s_ij − σ_i)},    L_e,i = k_e σ_i + log S_e,i    (a_e = k_e a),

with one exponential for the base exponent ``a`` and powers ``y^k`` for its integer multiples
(Robinson et al., ICLR 2021, eq. 4 with β = 1/(k − 1): ``1 + β = kβ``; the power by squaring, and
for an even ``k`` the row sum as the squared norm of ``y^{k/2}``). Every term lies in
``[e^{−2 k a h}, 1]`` (``h = max‖x‖ · max‖y‖ ≥ |s|``): nothing overflows, and nothing underflows
when ``2 a_max h ≤ B`` (:func:`~hardneg.engines.tiled.pair.safe_band`, 43.7 in float32) — the condition of
the shared shift, decided once per call (:func:`~hardneg.engines.tiled.lse.plan_tiles`); otherwise the
caller streams the running maximum.

The backward pass needs ``G = Σ_e c_e e^{a_e s − L_e}`` (``c_e`` the per-row coefficients of
:func:`~hardneg.engines.tiled.lse.backward_coefficients`) times the other factor of the product. A
per-row factor ``ρ_i`` of ``G`` commutes with it (``(ρ ∘ H) Y = ρ ∘ (H Y)``, ``(ρ ∘ H)ᵀ X = Hᵀ (ρ ∘
X)``), so it is applied to the (R, d) operands and results, not to the tile; the rest goes into
the bias:

- one exponent (InfoNCE): ``G = c · e^{a s − L}``, ``H = e^{a s − L}``, ``ρ = c``;
- a base ``a`` and one multiple ``k a`` (hard negatives), ``f = c_k > 0`` and ``b = c_a e^{L_k/k −
  L_a} ≠ 0`` of one sign ``ε`` on every row with a gradient: with ``y₀ = e^{a s − L_k/k} ≤ 1``,
  ``G = b y₀ + f y₀^k``; scaled by ``λ = (f/|b|)^{1/(k−1)}``, ``y = λ y₀``,

      G = ρ (y + ε y^k),    ρ = b / λ,

  two passes after the exponential for ``k = 6`` (``y³``; ``y + ε (y³)²``) instead of five.
  ``y ≤ λ`` and ``y^k ≤ λ^k``: used when ``k log λ ≤ B`` on every row (checked in the backward's
  one host read, :func:`fold_checks`).

A row without a gradient gets bias −inf and ``ρ = 0``: an exact 0. Anything else (two exponents
that are not multiples, mixed signs, a coefficient 0 on a row with a gradient) returns ``None``
and the caller uses :func:`~hardneg.engines.tiled.stream.grad_apply`.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from hardneg.engines.tiled.pair import safe_band
from hardneg.engines.tiled.stream import Scratch, exp_, ipow, multiples, partners

__all__ = [
    "Fold",
    "RowShift",
    "choose_fold",
    "fixed_sums",
    "fold_checks",
    "fold_tile_",
    "row_shift",
]


@dataclass(frozen=True)
class RowShift:
    """The exponents as one base ``a = exponents[base]`` and its integer multiples ``(k, e)``
    (every other exponent ``a_e = k a``, ``2 ≤ k ≤`` :data:`~hardneg.engines.tiled.stream.MAX_MULTIPLE`)."""

    base: int
    multiples: tuple[tuple[int, int], ...]


def row_shift(exponents: tuple[float, ...]) -> RowShift | None:
    """The :class:`RowShift` of ``exponents``, or ``None`` when two of them are not integer
    multiples of a common base (then the running maximum is needed: one exponential each)."""
    mults = multiples(exponents, list(range(len(exponents))))
    singles = [e for e in range(len(exponents)) if e not in mults]
    if len(singles) != 1:
        return None
    return RowShift(singles[0], tuple(partners(mults, singles[0])))


def _power(y: Tensor, m: int, scratch: Scratch, *, in_place: bool) -> Tensor:
    """``y^m`` (``m ≥ 1``): ``y`` itself for 1, in place for 2 and 3 when allowed (one pass), else
    by squaring into a scratch buffer."""
    if m == 1:
        return y
    if in_place and m <= 3:
        return y.pow_(m)
    return ipow(y, m, scratch.like("pow", y))


def fixed_sums(
    out: Tensor, y: Tensor, shape: RowShift, *, scratch: Scratch, floor: float | None = None
) -> None:
    """Write the row sums of ``e^{k(a s − σ)}`` into ``out`` (E, R), one row per exponent; ``y``
    (R, C) holds ``a s − σ`` (≤ 0; −inf for an invalid entry) on entry and is overwritten."""
    exp_(y, floor)
    torch.sum(y, dim=1, out=out[shape.base])
    last = len(shape.multiples) - 1
    for i, (k, e) in enumerate(shape.multiples):
        if k % 2:
            torch.sum(_power(y, k, scratch, in_place=i == last), dim=1, out=out[e])
        else:  # Σ y^k = ‖y^{k/2}‖²: one read of the half power instead of squaring it first
            half = _power(y, k // 2, scratch, in_place=i == last)
            torch.linalg.vector_norm(half, dim=1, out=out[e]).square_()


def _pair_terms(lse: Tensor, coef: Tensor, base: int, k: int, top: int) -> tuple[Tensor, Tensor, Tensor]:
    """``(L_k / k, f, b)`` per row for the base ``a`` and its multiple ``k a`` (module docstring)."""
    shift = lse[:, top] / k
    return shift, coef[:, top], coef[:, base] * torch.exp(shift - lse[:, base])


def fold_checks(coef: Tensor, lse: Tensor, shape: RowShift | None) -> Tensor:
    """Bool (2M,): for each multiple ``(k, e)`` of ``shape``, whether the pair fold holds on every
    row with a gradient with ``ε = −1`` and with ``ε = +1`` (module docstring); read by the
    caller together with its other flags (one host read)."""
    flags: list[Tensor] = []
    if shape is not None:
        dead = (coef == 0).all(dim=1)
        bound = safe_band(coef.dtype)
        for k, top in shape.multiples:
            _, f, b = _pair_terms(lse, coef, shape.base, k, top)
            fine = (f > 0) & (b != 0) & (k * (f.log() - b.abs().log()) <= (k - 1) * bound)
            flags += [(fine & (b < 0) | dead).all(), (fine & (b > 0) | dead).all()]
    return torch.stack(flags) if flags else coef.new_zeros(0, dtype=torch.bool)


@dataclass(frozen=True)
class Fold:
    """The backward of one call in folded form: the tile is ``t = a s + bias`` (``bias`` (A, 1)),
    ``H = y + ε y^k`` with ``y = e^t`` (``H = y`` without ``k``), and ``G = ρ ∘ H`` (``rho``
    (A, 1))."""

    a: float
    bias: Tensor
    rho: Tensor
    k: int | None = None
    eps: float = 0.0


def choose_fold(
    lse: Tensor,
    coef: Tensor,
    exponents: tuple[float, ...],
    shape: RowShift | None,
    active: list[int],
    flags: list[bool],
) -> Fold | None:
    """The :class:`Fold` of a backward with the active exponents ``active`` and the flags of
    :func:`fold_checks`, or ``None`` (module docstring). No host read."""
    if shape is None:
        return None
    live = coef[:, active] != 0
    dead = ~live.any(dim=1, keepdim=True)
    if len(active) == 1:
        (e,) = active
        return Fold(exponents[e], torch.where(dead, float("-inf"), -lse[:, e : e + 1]), coef[:, e : e + 1])
    for i, (k, top) in enumerate(shape.multiples):
        if sorted(active) != sorted([shape.base, top]):
            continue
        eps = -1.0 if flags[2 * i] else 1.0 if flags[2 * i + 1] else 0.0
        if eps == 0.0:
            return None
        shift, f, b = _pair_terms(lse, coef, shape.base, k, top)
        log_lam = torch.where(dead[:, 0], 0.0, (f.log() - b.abs().log()) / (k - 1))
        bias = torch.where(dead[:, 0], float("-inf"), log_lam - shift)
        rho = torch.where(dead[:, 0], 0.0, b * torch.exp(-log_lam))
        return Fold(exponents[shape.base], bias[:, None], rho[:, None], k, eps)
    return None


def fold_tile_(t: Tensor, fold: Fold, *, spare: Tensor, floor: float | None = None) -> Tensor:
    """``H`` over a tile from ``t = a s + bias`` (R, C), overwritten (:class:`Fold`); ``spare``: a
    buffer of ``t``'s shape for the power (its contents are lost). With a ``floor`` (a tile holding
    invalid entries, −inf in ``t``) those entries get an exact 0."""
    invalid = torch.isneginf(t) if floor is not None else None
    y = exp_(t, floor)
    k = fold.k
    if k is not None:
        if k % 2 == 0:  # y + ε (y^{k/2})²
            w = y if k == 2 else ipow(y, k // 2, spare)
            y.addcmul_(w, w, value=fold.eps)
        else:  # y + ε y · y^{k−1}
            y.addcmul_(y, ipow(y, k - 1, spare), value=fold.eps)
    if invalid is not None:
        y.masked_fill_(invalid, 0.0)
    return y
