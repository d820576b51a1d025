r"""Entropic-OT negatives without the (A, N) matrix: a streamed Sinkhorn (log potentials) and loss.

Jiang, Ishwar, Aeron, "Hard negative sampling via regularized optimal transport for contrastive
representation learning" (arXiv:2111.03169), §VI, eq. (5)–(7) and Lemma 3. With log kernel
``K = −C/ε`` (−inf off the mask), uniform marginals ``a = 1/A'``, ``b = 1/N'`` over the active
rows and columns, the coupling is ``P_ij = e^{f_i + K_ij + g_j}`` and the negatives of anchor i
are weighted by ``w_ij = N_i P(j | i)``:

    ℓ_ij = log w_ij = K_ij + g_j − r_i + log N_i,    r_i = log Σ_{k valid} e^{K_ik + g_k},

exactly as :func:`hardneg.negatives.ot.ot_log_weights` computes them on the materialised
matrix. The potentials are vectors ((A,) and (N,)); every Sinkhorn iteration is one sweep over
row strips of the kernel, recomputed from the embeddings (:func:`tiled_sinkhorn`), so memory is
O((A + N)·d + strip) with a strip of ``max(tile², 64·N)`` entries at most. The loss then needs,
per anchor, only

    log Σ_j w_ij e^{s_ij} = log Σ_j e^{s_ij + K_ij + g_j} − r_i + log N_i,

streamed with a recomputing backward (:func:`ot_weighted_lse`). As in the materialised
:class:`~hardneg.negatives.OptimalTransport` (``differentiable=False``, its default, the
authors' choice: their coupling is solved in numpy), the coupling is a constant: gradients flow
through ``s_ij`` only, never through the Sinkhorn iterations. ``differentiable=True`` (unrolled
iterations) is not streamed: the materialised engine computes it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Protocol

import torch
from torch import Tensor

from hardneg._validation import check_rows_nonempty
from hardneg.engines.tiled.mask import TileMask
from hardneg.negatives.ot import COSTS
from hardneg.negatives.tiling import SinkhornTiles
from hardneg.negatives.weighted import WeightedScores
from hardneg.objectives.base import Objective
from hardneg.objectives.hinge import Hinge
from hardneg.objectives.triplet import Triplet
from hardneg.reduction import LossOutput, reduce
from hardneg.reduction.diagnostics import positive_cosine
from hardneg.scores import Scores

__all__ = [
    "OTKernel",
    "TiledSinkhornResult",
    "check_ot_objective",
    "ot_weighted_lse",
    "strip_rows",
    "tiled_ot_loss",
    "tiled_sinkhorn",
]


class KernelSettings(Protocol):
    """What :meth:`OTKernel.of` reads: a :class:`~hardneg.negatives.SinkhornTiles` (the tiling
    protocol's statement) or an :class:`~hardneg.negatives.OptimalTransport` itself."""

    @property
    def epsilon(self) -> float: ...
    @property
    def cost(self) -> object: ...
    @property
    def kappa(self) -> float: ...


@dataclass(frozen=True)
class OTKernel:
    r"""How a block of the log kernel ``K = −C/ε`` is made from a block of dot products.

    ``dot_ij = a_i · c_j`` of the prepared embeddings (the logits are ``s = dot/t``). Exactly as
    :func:`hardneg.negatives.ot.ot_log_kernel` (Jiang et al., §VI; the constant ``−2/ε`` dropped):

    - ``"sqeuclidean"``, all norms within 1e-5 of 1: ``K = 2 dot/ε``;
    - ``"sqeuclidean"`` otherwise: ``K = clamp(2 dot / (ε max(‖a_i‖‖c_j‖, 1e-12)), ±2/ε)``;
    - ``"exp"``: ``K = −exp(2 − 2cos − κ)/ε`` with ``cos = clamp(dot / max(‖a_i‖‖c_j‖, 1e-12), ±1)``.

    Attributes: ``epsilon``, ``cost``, ``kappa``, ``unit`` (whether the fast first branch
    applies), ``anchor_norms`` (A,), ``candidate_norms`` (N,).
    """

    epsilon: float
    cost: str
    kappa: float
    unit: bool
    anchor_norms: Tensor
    candidate_norms: Tensor

    @staticmethod
    def of(negatives: KernelSettings, anchor_norms: Tensor, candidate_norms: Tensor) -> OTKernel:
        """The kernel rule of a distribution for these (detached) norms (one host read)."""
        if not isinstance(negatives.cost, str) or negatives.cost not in COSTS:
            raise ValueError(
                f"the tiled engine supports OptimalTransport costs {COSTS}, got cost={negatives.cost!r}; "
                "raise memory_budget to materialise the score matrix"
            )
        unit = False
        if negatives.cost == "sqeuclidean":
            dev = torch.stack([(anchor_norms - 1).abs().amax(), (candidate_norms - 1).abs().amax()])
            unit = bool((dev < 1e-5).all())
        return OTKernel(
            negatives.epsilon, negatives.cost, negatives.kappa, unit, anchor_norms, candidate_norms
        )

    def block_(self, dot: Tensor, r0: int, r1: int, c0: int, c1: int) -> Tensor:
        """``K`` of anchors ``r0:r1`` × candidates ``c0:c1`` from their dot products, in place."""
        if self.unit:
            return dot.mul_(2.0 / self.epsilon)
        denom = (self.anchor_norms[r0:r1, None] * self.candidate_norms[None, c0:c1]).clamp_min(1e-12)
        if self.cost == "sqeuclidean":
            bound = 2.0 / self.epsilon
            return dot.mul_(2.0 / self.epsilon).div_(denom).clamp_(-bound, bound)
        cos = dot.div_(denom).clamp_(-1.0, 1.0)
        return cos.mul_(-2.0).add_(2.0 - self.kappa).exp_().mul_(-1.0 / self.epsilon)


def strip_rows(num_anchors: int, num_candidates: int, tile: int) -> int:
    """Rows per strip: ``tile²/N`` rows (a strip of at most ``tile²`` entries), but at least
    ``min(tile, 64)`` (a skinnier matrix product reads the candidates once per few rows)."""
    rows = max(tile * tile // max(num_candidates, 1), min(tile, 64), 1)
    return min(rows, max(num_anchors, 1))


def _strips(n: int, rows: int) -> list[tuple[int, int]]:
    return [(s, min(n, s + rows)) for s in range(0, n, rows)]


class _Strips:
    r"""Strips ``e^{x·s_ij + K_ij + g_j − h_i}`` (masked entries 0) of one batch, recomputed.

    For the unit-norm squared-Euclidean kernel the exponent is one matrix product of augmented
    operands, ``[(x/t + 2/ε) a_i, −h_i, 1] · [c_j, 1, g_j]`` (the operands are O((A + N)·d)),
    then one exponential pass; other kernels make ``K`` from the dot products first
    (:class:`OTKernel`). ``g`` must be finite (any value on columns without a valid entry).
    """

    def __init__(
        self,
        anchors: Tensor,
        candidates: Tensor,
        rule: TileMask,
        kernel: OTKernel,
        temperature: float,
        rows: int,
    ) -> None:
        self.a, self.c, self.rule, self.kernel, self.t = anchors, candidates, rule, kernel, temperature
        self.ct = candidates.t()
        self._c_aug: Tensor | None = None
        self._g: Tensor | None = None
        self.strips = _strips(anchors.shape[0], rows)
        self.n = candidates.shape[0]

    def exponent(self, r0: int, r1: int, x: float, g: Tensor, h: Tensor) -> Tensor:
        """``x·s + K + g − h`` of anchors ``r0:r1`` (a new (rows, N) strip), −inf off the mask."""
        if self.kernel.unit:
            if self._g is not g:  # [c_j, 1, g_j], once per potential
                ones = self.c.new_ones(self.n, 1)
                self._c_aug, self._g = torch.cat([self.c, ones, g[:, None]], dim=1), g
            assert self._c_aug is not None
            ai = self.a[r0:r1]
            scale = x / self.t + 2.0 / self.kernel.epsilon
            a_aug = torch.cat([ai * scale, -h[r0:r1, None], ai.new_ones(r1 - r0, 1)], dim=1)
            y = a_aug @ self._c_aug.t()
        else:
            dot = self.a[r0:r1] @ self.ct
            y = self.kernel.block_(dot.clone() if x else dot, r0, r1, 0, self.n)
            if x:
                y.add_(dot, alpha=x / self.t)
            y.add_(g).sub_(h[r0:r1, None])
        self.counts = self.rule.fill_invalid_(y, r0, r1, 0, self.n)
        return y


def _exp_sum_ok(total: Tensor, active: Tensor, terms: int, dtype: torch.dtype) -> Tensor:
    """Whether sums of ``terms`` exponentials shifted by a bound are exact to round-off: finite
    and at least ``terms · √tiny / eps`` (an underflowed term is below √tiny of its share)."""
    fi = torch.finfo(dtype)
    floor = terms * math.sqrt(fi.tiny) / fi.eps
    return (~active | (torch.isfinite(total) & (total >= floor))).all()


def _column_activity(rule: TileMask, strips: _Strips, a_n: int, n_n: int) -> Tensor:
    """Which candidates are a valid negative of at least one anchor (N,) bool."""
    if rule.exclusions_only:
        ex = rule.excluded.sort(dim=1).values
        dup = torch.zeros_like(ex, dtype=torch.bool)
        dup[:, 1:] = ex[:, 1:] == ex[:, :-1]
        keep = (ex >= 0) & ~dup
        return torch.bincount(ex[keep], minlength=n_n)[:n_n] < a_n
    out = torch.zeros(n_n, dtype=torch.bool, device=rule.excluded.device)
    for r0, r1 in strips.strips:
        out |= rule.block(r0, r1, 0, n_n).any(dim=0)
    return out


def _kernel_bound(kernel: OTKernel, anchors: Tensor, candidates: Tensor) -> Tensor:
    """An upper bound of ``max_j K_ij`` per anchor (A,), the first sweep's shift."""
    if kernel.cost == "exp":
        return anchors.new_full((anchors.shape[0],), -math.exp(-kernel.kappa) / kernel.epsilon)
    if kernel.unit:
        cmax = torch.linalg.vector_norm(candidates, dim=1).amax()
        return torch.linalg.vector_norm(anchors, dim=1) * cmax * (2.0 / kernel.epsilon)
    return anchors.new_full((anchors.shape[0],), 2.0 / kernel.epsilon)


def _log_sweep(strips: _Strips, g: Tensor) -> tuple[Tensor, Tensor]:
    """One exact log-domain sweep: ``r_i = lse_j(K_ij + g_j)`` and ``lse_i(K_ij − r_i)`` (the
    fallback of :func:`tiled_sinkhorn` when a shifted exponential sum would lose precision)."""
    zero = strips.a.new_zeros(strips.a.shape[0])
    r = strips.a.new_empty(strips.a.shape[0])
    col = strips.a.new_full((strips.n,), float("-inf"))
    for r0, r1 in strips.strips:
        y = strips.exponent(r0, r1, 0.0, g, zero)
        ri = torch.logsumexp(y, dim=1)
        r[r0:r1] = ri
        fi = torch.where(torch.isfinite(ri), -ri, float("-inf"))
        col = torch.logaddexp(col, torch.logsumexp(y.add_(fi[:, None]), dim=0))
    return r, torch.where(torch.isfinite(col), col - g, float("-inf"))


@dataclass(frozen=True)
class TiledSinkhornResult:
    r"""Converged potentials of :func:`tiled_sinkhorn` (all detached).

    ``g`` (N,): the column potential (−inf on inactive columns); ``row_lse`` (A,):
    ``r_i = log Σ_j e^{K_ij + g_j}`` (0 on inactive rows); ``counts`` (A,) int64: valid
    candidates per anchor ``N_i``; ``iterations``, ``marginal_error``, ``converged`` as in
    :class:`~hardneg.negatives.SinkhornResult`; ``log_sweeps``: sweeps redone in the log domain.
    """

    g: Tensor
    row_lse: Tensor
    counts: Tensor
    iterations: int
    marginal_error: float
    converged: bool
    log_sweeps: int = 0


def tiled_sinkhorn(
    anchors: Tensor,
    candidates: Tensor,
    rule: TileMask,
    kernel: OTKernel,
    *,
    tol: float = 1e-6,
    max_iter: int = 1000,
    method: str = "stabilized",
    tile: int = 1024,
) -> TiledSinkhornResult:
    r"""Sinkhorn on the streamed kernel ``K_ij = kernel(a_i · c_j)`` (masked by ``rule``), no (A, N) buffer.

    Jiang et al. (arXiv:2111.03169), eq. (5)–(7), Lemma 3; Cuturi (NeurIPS 2013). With
    ``f = log a − r`` the iterations are

        r_i ← log Σ_j e^{K_ij + g_j},    g_j ← log b − log a − log Σ_i e^{K_ij − r_i},

    the same sequence as :func:`~hardneg.negatives.sinkhorn_log` (both methods) from ``g = 0``,
    stopping at the first iterate whose row-marginal L1 error ``Σ_i a_i |e^{r_i^{new} − r_i} − 1|``
    is ≤ ``tol`` (or after as many updates as ``method`` allows for ``max_iter``). One iteration is
    one sweep over row strips (:func:`strip_rows`), one matrix product and one exponential per
    entry: with the previous ``r`` as shift (Schmitzer's absorption, SIAM J. Sci. Comput. 2019;
    the first sweep shifts by a bound of ``max_j K_ij``) the strip ``E = e^{K + g − r^{old}}`` gives
    ``r = r^{old} + log Σ_j E_ij`` and, weighted by ``e^{r^{old} − r}``, the column sums
    ``Σ_i e^{K_ij + g_j − r_i}``. A sweep whose sums could have lost terms to underflow
    (:func:`_exp_sum_ok`) is redone with exact log-sum-exps. Inactive rows/columns (no valid
    entry) are left out of the marginals, as in :func:`~hardneg.negatives.ot_log_weights`. No
    gradient is recorded; one host read per iteration.

    Shapes: ``anchors`` (A, d), ``candidates`` (N, d) (prepared embeddings) → potentials (N,), (A,).
    """
    a_n, n_n = anchors.shape[0], candidates.shape[0]
    cap = max_iter if method == "stabilized" else max_iter + 1
    neg_inf = float("-inf")
    with torch.no_grad():
        strips = _Strips(anchors.detach(), candidates.detach(), rule, kernel, 1.0, strip_rows(a_n, n_n, tile))
        a = strips.a
        g = a.new_zeros(n_n)
        shift = _kernel_bound(kernel, a, strips.c)
        counts = torch.zeros(a_n, dtype=torch.int64, device=a.device)
        active_cols = _column_activity(rule, strips, a_n, n_n)
        log_a = log_b = 0.0
        active_rows = torch.ones(a_n, dtype=torch.bool, device=a.device)
        err = math.inf
        sweep = log_sweeps = 0
        for sweep in range(1, cap + 1):
            rs = a.new_empty(a_n)
            cs = a.new_zeros(n_n)
            for r0, r1 in strips.strips:
                y = strips.exponent(r0, r1, 0.0, g, shift).exp_()
                if sweep == 1:
                    counts[r0:r1] = strips.counts
                s = y.sum(dim=1)
                rs[r0:r1] = s
                cs.addmv_(y.t(), torch.where(s > 0, 1.0 / s, 0.0))  # Σ_i e^{K_ij + g_j − r_i}
            if sweep == 1:
                active_rows = counts > 0
                log_a = -math.log(max(int(active_rows.sum()), 1))
                log_b = -math.log(max(int(active_cols.sum()), 1))
            ok = torch.stack([
                _exp_sum_ok(rs, active_rows, n_n, a.dtype),
                _exp_sum_ok(cs, active_cols, a_n, a.dtype),
            ]).all()
            r = shift + rs.log()
            dev = torch.where(active_rows, torch.expm1(r - shift).abs(), 0.0).sum() * math.exp(log_a)
            flags = torch.stack([ok.to(dev.dtype), dev]).tolist()  # the iteration's one host read
            if not flags[0]:
                log_sweeps += 1
                r, lcol = _log_sweep(strips, g)
                dev_t = torch.where(active_rows, torch.expm1(r - shift).abs(), 0.0).sum() * math.exp(log_a)
                flags[1] = float(dev_t)
            else:
                lcol = cs.log() - g
            err = flags[1] if sweep > 1 else math.inf
            if err <= tol or sweep == cap:
                break
            shift = torch.where(active_rows, r, 0.0)
            g = torch.where(active_cols, (log_b - log_a) - lcol, 0.0)  # any finite value off the mask
        row_lse = torch.where(active_rows, r, 0.0)
    iterations = sweep if method == "stabilized" else sweep - 1
    g = torch.where(active_cols, g, neg_inf)
    return TiledSinkhornResult(g, row_lse, counts, iterations, err, err <= tol, log_sweeps)


class _WeightedLSE(torch.autograd.Function):
    """``L_i = log Σ_j e^{s_ij + K_ij + g_j}`` with ``K`` and ``g`` constants (streamed)."""

    @staticmethod
    def forward(
        ctx: Any,
        anchors: Tensor,
        candidates: Tensor,
        g: Tensor,
        shift: Tensor,
        active: Tensor,
        strips: _Strips,
    ) -> Tensor:
        a_n = anchors.shape[0]
        total = anchors.new_empty(a_n)
        for r0, r1 in strips.strips:
            total[r0:r1] = strips.exponent(r0, r1, 1.0, g, shift).exp_().sum(dim=1)
        if bool(_exp_sum_ok(total, active, strips.n, anchors.dtype)):
            out = torch.where(active, shift + total.log(), float("-inf"))
        else:  # exact log-sum-exps (a shift far above a row's largest term)
            zero = anchors.new_zeros(a_n)
            out = torch.cat(
                [torch.logsumexp(strips.exponent(r0, r1, 1.0, g, zero), dim=1) for r0, r1 in strips.strips]
            )
        ctx.save_for_backward(g, out)
        ctx.strips = strips
        return out

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple[Tensor | None, ...]:
        g, out = ctx.saved_tensors
        strips: _Strips = ctx.strips
        a, c = strips.a, strips.c
        ga = torch.zeros_like(a) if ctx.needs_input_grad[0] else None
        gc = torch.zeros_like(c) if ctx.needs_input_grad[1] else None
        finite = torch.isfinite(out)
        coef = torch.where(finite, grad, 0.0) / strips.t  # ∂L_i/∂dot_ij = e^{s + K + g − L_i} / t
        shift = torch.where(finite, out, 0.0)
        for r0, r1 in strips.strips:
            p = strips.exponent(r0, r1, 1.0, g, shift).exp_()  # ≤ 1
            if ga is not None:
                ga[r0:r1] = (p @ c).mul_(coef[r0:r1, None])
            if gc is not None:
                gc.addmm_(p.t(), a[r0:r1] * coef[r0:r1, None])
        return ga, gc, None, None, None, None


def ot_weighted_lse(
    anchors: Tensor,
    candidates: Tensor,
    potentials: TiledSinkhornResult,
    rule: TileMask,
    kernel: OTKernel,
    *,
    temperature: float,
    tile: int = 1024,
) -> Tensor:
    r"""``log Σ_j w_ij e^{s_ij}`` per anchor (A,) with the OT weights of ``potentials``, streamed.

    ``w_ij = e^{ℓ_ij}``, ``ℓ_ij = K_ij + g_j − r_i + log N_i`` (Jiang et al., arXiv:2111.03169,
    Lemma 3; module docstring), so the sum is ``log Σ_j e^{s_ij + K_ij + g_j} − r_i + log N_i``
    with ``s_ij = a_i · c_j / t``. The weights are constants: the gradient is
    ``∂/∂s_ij = e^{s_ij + ℓ_ij − L_i}``, recomputed strip by strip in the backward pass (memory
    O((A + N)·d + strip)), never through the Sinkhorn iterations — the materialised
    :class:`~hardneg.negatives.OptimalTransport` with ``differentiable=False``. The forward
    shifts row i by ``r_i + max‖a‖‖c‖/t ≥ max_j (s_ij + K_ij + g_j)`` (exact log-sum-exps if a
    sum would lose terms to underflow), the backward by the result: every exponent is ≤ 0.

    Shapes: ``anchors`` (A, d), ``candidates`` (N, d) → (A,).
    """
    a_n, n_n = anchors.shape[0], candidates.shape[0]
    strips = _Strips(anchors, candidates, rule, kernel, temperature, strip_rows(a_n, n_n, tile))
    with torch.no_grad():
        bound = (
            torch.linalg.vector_norm(anchors, dim=1) * torch.linalg.vector_norm(candidates, dim=1).amax()
        ) / temperature
        active = potentials.counts > 0
        shift = torch.where(active, potentials.row_lse + bound, 0.0)
    g = torch.where(torch.isfinite(potentials.g), potentials.g, 0.0)  # inactive columns: all masked
    lse = _WeightedLSE.apply(anchors, candidates, g, shift, active, strips)
    return lse - potentials.row_lse + potentials.counts.to(lse.dtype).log()


def check_ot_objective(objective: Objective) -> None:
    """Raise ``ValueError`` unless ``objective`` reads only ``log Σ_j w_ij e^{s_ij}``, ``s⁺_i`` and
    ``N_i`` — all that :func:`tiled_ot_loss` streams (the hinge/triplet family's weighted means
    would need the coupling's weights per tile)."""
    if isinstance(objective, (Hinge, Triplet)) or not getattr(objective, "row_reducible", False):
        raise ValueError(
            "the tiled engine (batches beyond memory_budget) computes OptimalTransport negatives with "
            "an objective that reads log Σ_j w_ij e^{s_ij}; got "
            f"objective={objective!r} (OT tiles with every row-reducible objective but Hinge and Triplet: "
            "hardneg.engines.capabilities.capability_table()). "
            "Raise memory_budget to materialise the score matrix"
        )


def _unsupported() -> Tensor:
    raise ValueError(
        "the tiled engine never forms the (A, N) OT weights; use an objective that reads only "
        "log Σ_j w_ij e^{s_ij} (InfoNCE, Debiased, ...: hardneg.engines.capabilities), or raise memory_budget"
    )


def tiled_ot_loss(
    anchors: Tensor,
    positives: Tensor,
    candidates: Tensor,
    *,
    negatives: SinkhornTiles,
    objective: Objective,
    rule: TileMask,
    temperature: float,
    anchor_norms: Tensor,
    positive_norms: Tensor,
    candidate_norms: Tensor,
    reduction: str = "mean",
    tile: int = 1024,
    anchor_labels: Tensor | None = None,
    candidate_labels: Tensor | None = None,
    diagnostics: bool = False,
    validate: bool = True,
    source: str = "",
) -> LossOutput:
    r"""The loss with entropic-OT negatives (Jiang et al., arXiv:2111.03169, §VI) at O((A + N)·d) memory.

    :func:`tiled_sinkhorn` solves the coupling (detached), :func:`ot_weighted_lse` streams
    ``log Σ_j w_ij e^{s_ij}``, and the objective reads it with ``s⁺_i`` and ``N_i`` — the values
    and gradients of the materialised engine with the same ``negatives`` (``differentiable=False``).
    Warns (``RuntimeWarning``) as the materialised path does when Sinkhorn stops at ``max_iter``.

    Shapes: ``anchors``, ``positives`` (A, d), ``candidates`` (N, d) prepared (normalised if asked,
    compute dtype); norms (A,), (A,), (N,) detached; ``rule`` the validity mask of the batch.
    """
    check_ot_objective(objective)
    kernel = OTKernel.of(negatives, anchor_norms, candidate_norms)
    res = tiled_sinkhorn(
        anchors, candidates, rule, kernel, tol=negatives.tol, max_iter=negatives.max_iter,
        method=negatives.method, tile=tile,
    )
    if not res.converged:
        negatives.warn_not_converged()
    if validate:
        check_rows_nonempty(res.counts)
    lws = ot_weighted_lse(anchors, candidates, res, rule, kernel, temperature=temperature, tile=tile)
    positive = (anchors * positives).sum(dim=1) / temperature
    info = {
        "ot_iterations": float(res.iterations),
        "ot_marginal_error": float(res.marginal_error),
        "ot_converged": 1.0 if res.converged else 0.0,
    }
    scores = Scores.streamed(
        positive,
        temperature=temperature,
        anchor_norms=anchor_norms,
        positive_norms=positive_norms,
        candidate_norms=candidate_norms,
        valid_counts=res.counts,
        anchor_labels=anchor_labels,
        candidate_labels=candidate_labels,
    )
    weighted = WeightedScores(
        scores,
        log_weights=_unsupported,
        log_weighted_sum=lws,
        info=info,
        source=source or repr(negatives),
        mean_of=lambda ramp: _unsupported(),
        max_logit=_unsupported,
    )
    per_anchor = objective(weighted)
    diag: dict[str, float] = {}
    if diagnostics:
        with torch.no_grad():
            diag = {
                "num_negatives": float(res.counts.to(anchors.dtype).mean()),
                "pos_cosine": float(positive_cosine(scores).mean()),
                "tiled": 1.0,
                **info,
            }
            diag.update({str(k): float(v) for k, v in objective.diagnostics(weighted).items()})
        diag["loss"] = float(per_anchor.detach().mean())
    return LossOutput(loss=reduce(per_anchor, reduction), per_anchor=per_anchor, diagnostics=diag)
