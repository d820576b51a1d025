"""Block-level steps of the streaming log-sum-exp with several exponents (pure tensor functions).

For a block of logits ``s`` (rows × columns, invalid entries −inf) and exponents ``a_1 … a_E > 0``
the running statistics of a row (or of a column) are one running maximum ``M`` of ``s`` and one
running sum per exponent, ``S_e = Σ e^{a_e (s − M)}``, so that ``L_e = a_e M + log S_e``. One
maximum serves every exponent (the maximum of ``a_e s`` is ``a_e M``), and an exponent that is an
integer multiple ``k`` of another (Robinson et al.'s hard negatives: ``1 + β = kβ`` for β = 1,
0.5, 0.2, 0.1, …, k = 1 + 1/β; the effective sample size's ``2β``) costs a few multiplications
instead of a second exponential: ``Σ e^{k a(s − M)} = Σ (e^{a(s − M)})^k``, the power by
repeated squaring (:func:`ipow`). The backward pass shifts by ``L_e / k`` instead,

    y = e^{a s − L_e/k} ≤ 1,    e^{k a s − L_e} = y^k,    e^{a s − L_a} = y · e^{L_e/k − L_a},

whose factor lies in [N^{−1}, 1] (the power means: ``L_e/k ≤ L_a ≤ L_e/k + log N``), so nothing
overflows. Every exponential has a non-positive argument.

**The tilted pair** (``pair=True``: the first two exponents ``a > b`` with ``b > a − b``, hard
negatives with β > 1, :func:`hardneg._numerics.lse.cancels`): the running sums hold ``D = Σ w q`` in the
place of ``S_a`` (``w = e^{b(s − M)}``, ``q = e^{(a−b)(s − M)} − 1``,
:func:`hardneg._numerics.lse.pair_terms`)
and ``S_a = S_b + D``; a new maximum rebases them with terms of one sign,

    S_b ← e^{bΔ} S_b,    D ← e^{bΔ} (e^{(a−b)Δ} D + (e^{(a−b)Δ} − 1) S_b)     (Δ = M − M' ≤ 0),

and the backward is ``w ⊙ (α + γ q)`` (:func:`hardneg._numerics.lse.pair_coefficients`): the gradient
``a·softmax(a s) − b·softmax(b s)`` without the difference of two rounded softmaxes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import torch
from torch import Tensor

from hardneg._numerics.lse import pair_coefficients, pair_terms

__all__ = [
    "MAX_MULTIPLE",
    "PairPlan",
    "Scratch",
    "absorb_",
    "exp_",
    "exp_floor",
    "finish",
    "grad_apply",
    "grad_block",
    "grad_plan",
    "ipow",
    "multiples",
    "pair_difference",
    "pair_grad_apply",
    "pair_grad_plan",
    "partners",
    "tiles",
]


class Scratch:
    """Tile-sized work buffers reused from one tile to the next, by name.

    A fresh tile-sized allocation on a CPU is new pages from the kernel (a page fault per 4 KiB),
    which costs about as much as an element-wise pass; reusing a few buffers avoids it. A block
    smaller than the first (the last tile of a row or column) gets a view of the same memory.
    """

    def __init__(self) -> None:
        self._buffers: dict[str, Tensor] = {}

    def get(self, name: str, rows: int, cols: int, like: Tensor) -> Tensor:
        """A (rows, cols) contiguous buffer with ``like``'s dtype and device (contents undefined)."""
        n = rows * cols
        buf = self._buffers.get(name)
        if buf is None or buf.numel() < n or buf.dtype != like.dtype or buf.device != like.device:
            buf = torch.empty(n, dtype=like.dtype, device=like.device)
            self._buffers[name] = buf
        return buf[:n].view(rows, cols)

    def like(self, name: str, x: Tensor) -> Tensor:
        return self.get(name, x.shape[0], x.shape[1], x)


def exp_floor(dtype: torch.dtype) -> float:
    """``log(tiny) + 7`` (−80.3 in float32, −701 in float64): the smallest exponent argument kept.

    On a CPU, torch's vectorised exponential leaves its fast path for arguments whose result is
    subnormal, zero or exactly 0 from −inf (measured: 4× slower on masked −inf entries, 14× at
    −200, 40× around −95, for a 1024² tile). Raising the argument to this floor keeps it fast; a
    term it changes weighs at most ``e^{floor} ≈ 1e-35`` of its row's largest term (which is
    1 after the shift), below float32 round-off for any row of fewer than 10²⁷ entries."""
    return math.log(torch.finfo(dtype).tiny) + 7.0


def exp_(x: Tensor, floor: float | None = None) -> Tensor:
    """``e^x`` in place, the argument first raised to ``floor`` when one is given (see
    :func:`exp_floor`; callers pass it only where an argument may fall below it)."""
    return (x.clamp_(min=floor) if floor is not None else x).exp_()


def may_underflow(x: Tensor, y: Tensor, exponents: tuple[float, ...], num: int) -> bool:
    """Whether an exponent argument of the tiles of ``x yᵀ`` (``a(s − M)`` forward, ``a s − L``
    backward) can fall below :func:`exp_floor`, by Cauchy–Schwarz: ``|s| ≤ max‖x‖·max‖y‖ = h``,
    so every argument is at least ``−2 a_max h − log num``."""
    if x.numel() == 0 or y.numel() == 0:
        return False
    nx, ny = torch.stack([torch.linalg.vector_norm(z, dim=1).max() for z in (x, y)]).tolist()  # one read
    h = nx * ny
    return -2.0 * max(exponents) * h - math.log(max(num, 1)) < exp_floor(x.dtype)


def tiles(n: int, tile: int) -> list[tuple[int, int]]:
    """``[(start, stop), …]`` covering ``range(n)`` in steps of ``tile``."""
    return [(s, min(n, s + tile)) for s in range(0, n, tile)]


MAX_MULTIPLE = 16  # beyond this a power by squaring costs about as much as an exponential


def multiples(exponents: tuple[float, ...], active: list[int]) -> dict[int, tuple[int, int]]:
    """``{e: (f, k)}``: the active exponents ``a_e = k · a_f`` (integer ``2 ≤ k ≤ MAX_MULTIPLE``,
    to 1e-14 relative) of an active base ``f`` that is not itself a multiple; each takes the
    smallest ``a_f`` that divides it."""
    return dict(_multiples(tuple(exponents), tuple(active)))


@lru_cache(maxsize=256)
def _multiples(
    exponents: tuple[float, ...], active: tuple[int, ...]
) -> tuple[tuple[int, tuple[int, int]], ...]:
    out: dict[int, tuple[int, int]] = {}
    bases: list[int] = []
    for e in sorted(active, key=lambda i: exponents[i]):
        a = exponents[e]
        for f in bases:
            k = round(a / exponents[f])
            if 2 <= k <= MAX_MULTIPLE and abs(a - k * exponents[f]) <= 1e-14 * a:
                out[e] = (f, k)
                break
        else:
            bases.append(e)
    return tuple(out.items())


def partners(mults: dict[int, tuple[int, int]], f: int) -> list[tuple[int, int]]:
    """``[(k, e), …]`` of the multiples of base ``f``, by increasing ``k``."""
    return sorted((k, e) for e, (g, k) in mults.items() if g == f)


def ipow(x: Tensor, k: int, out: Tensor) -> Tensor:
    """``x^k`` for an integer ``k ≥ 2`` into ``out`` (``x`` unchanged), by squaring in place:
    ``x^k = (x^{⌊k/2⌋})² · x^{k mod 2}``, ⌈log₂ k⌉ to 2⌊log₂ k⌋ element-wise passes (torch's pow
    is a pass for k ≤ 3 but an exp/log for k ≥ 4)."""
    if k <= 3:
        return torch.pow(x, k, out=out)
    ipow(x, k // 2, out).mul_(out)
    return out.mul_(x) if k % 2 else out


def _along(x: Tensor, dim: int) -> Tensor:
    """A per-row (``dim=1``) or per-column (``dim=0``) vector shaped to broadcast over the block."""
    return x[:, None] if dim == 1 else x[None, :]


def absorb_(
    run_max: Tensor,
    run_sum: Tensor,
    s: Tensor,
    exponents: tuple[float, ...],
    *,
    dim: int,
    consume: bool = True,
    scratch: Scratch | None = None,
    floor: float | None = None,
    pair: bool = False,
) -> None:
    """Fold the logits block ``s`` into the running ``(M, S_e)`` of its rows (``dim=1``) or columns
    (``dim=0``): ``run_max`` (R,), ``run_sum`` (R, E), both updated in place. ``s`` is overwritten
    unless ``consume=False`` (one more tile-sized buffer). ``floor``: see :func:`exp_floor`.
    ``pair``: ``run_sum[:, 0]`` holds ``D`` of the tilted pair (module docstring)."""
    m = torch.maximum(run_max, s.amax(dim=dim))
    m_safe = torch.where(torch.isfinite(m), m, 0.0)
    old = torch.where(torch.isfinite(run_max), run_max - m_safe, float("-inf"))  # ≤ 0
    work = scratch if scratch is not None else Scratch()
    shift = _along(m_safe, dim)
    d = s.sub_(shift) if consume else torch.sub(s, shift, out=work.like("d", s))  # ≤ 0; −inf stays −inf
    if pair:
        _absorb_pair(run_sum, d, old, exponents, dim=dim, work=work, floor=floor)
        run_max.copy_(m)
        return
    mults = multiples(exponents, list(range(len(exponents))))
    singles = [e for e in range(len(exponents)) if e not in mults]
    for i, e in enumerate(singles):
        a = exponents[e]
        last = i == len(singles) - 1
        x = (
            exp_(d.mul_(a) if a != 1.0 else d, floor)
            if last
            else exp_(torch.mul(d, a, out=work.like(f"x{i}", d)), floor)
        )
        run_sum[:, e].mul_(torch.exp(a * old)).add_(x.sum(dim=dim))
        for k, e2 in partners(mults, e):  # e^{k a (s − M)} = x^k
            xk = ipow(x, k, work.like("pow", x))
            run_sum[:, e2].mul_(torch.exp(exponents[e2] * old)).add_(xk.sum(dim=dim))
    run_max.copy_(m)


def _absorb_pair(
    run_sum: Tensor,
    d: Tensor,
    old: Tensor,
    exponents: tuple[float, ...],
    *,
    dim: int,
    work: Scratch,
    floor: float | None,
) -> None:
    """:func:`absorb_` of the tilted pair: ``d = s − M'`` (overwritten), ``old = M − M'`` ≤ 0; the
    other exponents as powers of ``w`` where they are integer multiples of ``b`` (the effective
    sample size's ``2b``), else by their own exponential."""
    a, b = exponents[0], exponents[1]
    c = a - b
    mults = multiples(exponents, list(range(1, len(exponents))))
    for e in range(2, len(exponents)):
        if mults.get(e, (None,))[0] != 1:  # not a power of w: its own exponential (d not yet consumed)
            x = exp_(torch.mul(d, exponents[e], out=work.like("x", d)), floor)
            run_sum[:, e].mul_(torch.exp(old * exponents[e])).add_(x.sum(dim=dim))
    scale_b = torch.exp(old * b)  # rebase S_b and D onto the new maximum (module docstring)
    rebased_d = (torch.exp(old * c) * run_sum[:, 0] + torch.expm1(old * c) * run_sum[:, 1]) * scale_b
    w, q = pair_terms(d, b, c, floor=floor, out=work.like("w", d))
    run_sum[:, 0] = rebased_d + torch.linalg.vecdot(w, q, dim=dim)
    run_sum[:, 1].mul_(scale_b).add_(w.sum(dim=dim))
    for k, e in partners(mults, 1):  # e^{k b (s − M)} = w^k
        power = ipow(w, k, work.like("pow", w))
        run_sum[:, e].mul_(torch.exp(old * exponents[e])).add_(power.sum(dim=dim))


def finish(run_max: Tensor, run_sum: Tensor, exponents: tuple[float, ...], *, pair: bool = False) -> Tensor:
    """``L_e = a_e M + log S_e`` (R, E); −inf where no entry was valid. ``pair``: ``run_sum[:, 0]``
    holds ``D`` and ``S_a = S_b + D`` (module docstring)."""
    finite = torch.isfinite(run_max)
    a = torch.tensor(exponents, dtype=run_max.dtype, device=run_max.device)
    m = torch.where(finite, run_max, 0.0)
    if pair:
        run_sum = torch.cat([run_sum[:, :1] + run_sum[:, 1:2], run_sum[:, 1:]], dim=1)
    return torch.where(finite[:, None], m[:, None] * a + run_sum.log(), float("-inf"))


def pair_difference(
    run_max: Tensor, run_sum: Tensor, exponents: tuple[float, ...], *, pair: bool = False
) -> Tensor:
    """``L_0 − L_1`` (R,) from the running statistics without the rounding of the two large ``L``:
    ``(a_0 − a_1) M + log S_0 − log S_1``, or with ``pair`` ``(a − b) M + log1p(D / S_b)``."""
    finite = torch.isfinite(run_max)
    m = torch.where(finite, run_max, 0.0) * (exponents[0] - exponents[1])
    if pair:
        return m + torch.log1p(run_sum[:, 0] / run_sum[:, 1])
    return m + (run_sum[:, 0].log() - run_sum[:, 1].log())


@dataclass(frozen=True)
class _Term:
    """One base exponent ``a`` of :func:`grad_block`: ``y = e^{a s − shift}`` times ``base +
    Σ_k y^{k−1} · factor_k`` (per-row vectors; no multiples: ``shift = L``, ``base = coef``)."""

    a: float
    shift: Tensor
    base: Tensor
    powers: tuple[tuple[int, Tensor], ...]


def grad_plan(lse: Tensor, coef: Tensor, exponents: tuple[float, ...], active: list[int]) -> list[_Term]:
    """The per-row vectors of :func:`grad_block` for rows with log-sum-exps ``lse`` and
    coefficients ``coef`` (R, E), computed once per block of rows instead of once per tile."""
    mults = multiples(exponents, active)
    plan = []
    for e in active:
        if e in mults:
            continue
        more = partners(mults, e)
        if not more:
            plan.append(_Term(exponents[e], lse[:, e], coef[:, e], ()))
            continue
        k_top, top = more[-1]  # shift L_top/k_top: y ≤ 1 and every factor ≤ 1 (module docstring)
        shift = lse[:, top] / k_top
        powers = tuple((k, coef[:, e2] * torch.exp(k * shift - lse[:, e2])) for k, e2 in more)
        plan.append(_Term(exponents[e], shift, coef[:, e] * torch.exp(shift - lse[:, e]), powers))
    return plan


def grad_apply(
    s: Tensor,
    plan: list[_Term],
    *,
    dim: int,
    scratch: Scratch | None = None,
    tag: str = "",
    floor: float | None = None,
) -> Tensor:
    """:func:`grad_block` with its per-row vectors from :func:`grad_plan`."""
    work = scratch if scratch is not None else Scratch()
    g: Tensor | None = None
    for i, term in enumerate(plan):
        p = exp_(torch.add(_along(-term.shift, dim), s, alpha=term.a, out=work.like(f"{tag}p{i}", s)), floor)
        # y ⊙ base + Σ_k y^k ⊙ factor_k: for Robinson et al.'s β = 0.2 (k = 6) the power takes two
        # passes (y³, squared) and the sum two more, against five for y ⊙ (base + y^{k−1} factor)
        powers = [(ipow(p, k, work.like(f"{tag}w{n}", s)), f) for n, (k, f) in enumerate(term.powers)]
        p.mul_(_along(term.base, dim))
        for yk, factor in powers:
            p.addcmul_(yk, _along(factor, dim))
        g = p if g is None else g.add_(p)
    assert g is not None
    if floor is not None:
        # an excluded entry (−inf in ``s``) carries no gradient: its e^{floor}-sized term is set to
        # an exact 0, which also keeps the tile's matrix products off subnormal operands (on a
        # CPU these made the backward of a K-subsampled tile ~20× slower)
        g.masked_fill_(torch.isneginf(s), 0.0)
    return g


@dataclass(frozen=True)
class PairPlan:
    """The per-row vectors of :func:`pair_grad_apply` for a block of rows: the shift ``M``, the
    tilted pair's ``(α, γ)`` (with ``∂/∂L_b``'s ``b/S_b`` in ``α``) and the other active exponents as
    :class:`_Term` on the shifted logits ``s − M`` (``shift = log S_e``)."""

    shift: Tensor
    alpha: Tensor
    gamma: Tensor
    b: float
    c: float
    rest: tuple[_Term, ...]


def pair_grad_plan(
    run_max: Tensor, run_sum: Tensor, grad: Tensor, exponents: tuple[float, ...], active: list[int]
) -> PairPlan:
    """:class:`PairPlan` from the forward's statistics (``run_sum[:, 0]`` is ``D``) and the upstream
    gradient ``grad`` (R, E) of the outputs ``(L_0 − L_1, L_1, L_2, …)``."""
    a, b = exponents[0], exponents[1]
    m = torch.where(torch.isfinite(run_max), run_max, 0.0)
    s_b, dsum = run_sum[:, 1], run_sum[:, 0]
    alpha, gamma = pair_coefficients(grad[:, 0], s_b, dsum, a, b, nonempty=False)
    if 1 in active:  # ∂L_b/∂s = b w / S_b
        alpha = alpha + torch.where(s_b > 0, grad[:, 1] * b / s_b.clamp_min(torch.finfo(s_b.dtype).tiny), 0.0)
    live = run_sum[:, 1] > 0  # rows with a valid entry (the others carry no gradient)
    rest = tuple(
        _Term(
            exponents[e],
            torch.where(live, run_sum[:, e].log(), 0.0),
            torch.where(live, grad[:, e] * exponents[e], 0.0),
            (),
        )
        for e in active
        if e >= 2
    )
    return PairPlan(m, alpha, gamma, b, a - b, rest)


def pair_grad_apply(
    s: Tensor,
    plan: PairPlan,
    *,
    dim: int,
    scratch: Scratch | None = None,
    tag: str = "",
    floor: float | None = None,
) -> Tensor:
    """The gradient of the outputs with respect to the block ``s`` (not modified) for
    :class:`PairPlan`: ``w ⊙ (α + γ q)`` plus ``Σ coef_e e^{a_e (s − M) − log S_e}`` of the other
    exponents. The result lives in ``scratch``'s buffers named after ``tag``."""
    work = scratch if scratch is not None else Scratch()
    d = torch.sub(s, _along(plan.shift, dim), out=work.like(f"{tag}d", s))  # ≤ 0 at unit scale
    extra: Tensor | None = None
    for i, term in enumerate(plan.rest):
        p = exp_(torch.add(_along(-term.shift, dim), d, alpha=term.a, out=work.like(f"{tag}p{i}", s)), floor)
        p.mul_(_along(term.base, dim))
        extra = p if extra is None else extra.add_(p)
    w, q = pair_terms(d, plan.b, plan.c, floor=floor, out=work.like(f"{tag}w", s))
    g = q.mul_(_along(plan.gamma, dim)).add_(_along(plan.alpha, dim)).mul_(w)  # w ⊙ (α + γ q)
    if extra is not None:
        g.add_(extra)
    if floor is not None:
        g.masked_fill_(torch.isneginf(s), 0.0)  # an excluded entry carries no gradient (grad_apply)
    return g


def grad_block(
    s: Tensor,
    lse: Tensor,
    coef: Tensor,
    exponents: tuple[float, ...],
    active: list[int],
    *,
    dim: int,
    scratch: Scratch | None = None,
    tag: str = "",
    floor: float | None = None,
) -> Tensor:
    """``Σ_e coef_e · e^{a_e s − L_e}`` over the block ``s`` (not modified), the gradient of
    ``Σ_e coef_e L_e / a_e`` with respect to ``s``; ``lse``, ``coef`` (R, E) index the rows
    (``dim=1``) or the columns (``dim=0``) of the block. One exponential per entry and base
    exponent (an integer multiple is a power of it). The result lives in ``scratch``'s buffers
    named after ``tag`` (valid until the next call with the same tag)."""
    plan = grad_plan(lse, coef, exponents, active)
    return grad_apply(s, plan, dim=dim, scratch=scratch, tag=tag, floor=floor)
