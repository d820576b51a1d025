"""Numerical weighted Tammes solver for HCL problem (7) (Robinson et al. (ICLR 2021) Theorem 4).

max_{v_c ∈ 𝕊^{d−1}/t} Σ_c ρ(c)·min_{c′≠c}‖v_c − v_{c′}‖²       (7)

For C ≤ d+1 and uniform ρ the regular simplex is optimal (see hcl.simplex_separation). For
C > d+1 the problem is open in general; this is a multi-start projected-gradient heuristic
(no optimality certificate). Note that (7) is an *average* nearest-neighbour objective, not
the classical Tammes max-min: for N = 5 on S² the solver finds value 2.025 > 2 (the 90°
Tammes configurations give 2), with min angle ≈ 89.1°. ``objective="maxmin"`` solves the
classical Tammes problem max min_{c≠c′}‖v_c − v_{c′}‖ instead
(known optima on S²: N=4 → 109.4712°, N=5,6 → 90°).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from .arguments import check_int, check_probs, check_real

__all__ = ["TammesResult", "weighted_tammes"]


@dataclass(frozen=True)
class TammesResult:
    """Best configuration found by :func:`weighted_tammes` (points on the sphere of ``radius``)."""

    points: NDArray[np.float64]
    objective: float
    """Σ_c ρ(c) min_{c′≠c}‖v_c − v_{c′}‖² (objective="weighted") or min distance² ("maxmin")."""
    min_distance: float
    """ξ = min_{c≠c′}‖v_c − v_{c′}‖ of the returned configuration."""
    min_angle_deg: float


def _exact_objective(x: NDArray[np.float64], w: NDArray[np.float64], objective: str) -> float:
    d2 = np.sum((x[:, None, :] - x[None, :, :]) ** 2, axis=-1)
    np.fill_diagonal(d2, np.inf)
    if objective == "maxmin":
        return float(d2.min())
    return float(np.sum(w * d2.min(axis=1)))


def _polish(x0: NDArray[np.float64], w: NDArray[np.float64], objective: str
            ) -> NDArray[np.float64]:
    """SLSQP refinement of a configuration on the unit sphere (epigraph formulation)."""
    from scipy.optimize import minimize

    n, d = x0.shape
    iu, ju = np.nonzero(~np.eye(n, dtype=bool))
    if objective == "maxmin":
        keep = iu < ju
        iu, ju = iu[keep], ju[keep]
    sl = iu if objective == "weighted" else np.zeros_like(iu)
    d2 = np.sum((x0[:, None] - x0[None]) ** 2, -1)
    np.fill_diagonal(d2, np.inf)
    s0 = d2.min(axis=1) if objective == "weighted" else np.array([d2.min()])
    z0 = np.concatenate([x0.ravel(), s0])
    coef = w if objective == "weighted" else np.ones(1)

    def fobj(z: NDArray[np.float64]) -> float:
        return -float(coef @ z[n * d:])

    def gobj(z: NDArray[np.float64]) -> NDArray[np.float64]:
        g = np.zeros_like(z)
        g[n * d:] = -coef
        return g

    def fin(z: NDArray[np.float64]) -> NDArray[np.float64]:
        x = z[: n * d].reshape(n, d)
        return np.sum((x[iu] - x[ju]) ** 2, -1) - z[n * d:][sl]

    def jin(z: NDArray[np.float64]) -> NDArray[np.float64]:
        x = z[: n * d].reshape(n, d)
        jac = np.zeros((iu.size, z.size))
        diff = 2.0 * (x[iu] - x[ju])
        rows = np.arange(iu.size)
        for k in range(d):
            jac[rows, iu * d + k] += diff[:, k]
            jac[rows, ju * d + k] -= diff[:, k]
        jac[rows, n * d + sl] = -1.0
        return jac

    def feq(z: NDArray[np.float64]) -> NDArray[np.float64]:
        x = z[: n * d].reshape(n, d)
        return np.sum(x * x, -1) - 1.0

    def jeq(z: NDArray[np.float64]) -> NDArray[np.float64]:
        x = z[: n * d].reshape(n, d)
        jac = np.zeros((n, z.size))
        for i in range(n):
            jac[i, i * d:(i + 1) * d] = 2.0 * x[i]
        return jac

    res = minimize(
        fobj, z0, jac=gobj, method="SLSQP",
        constraints=[{"type": "ineq", "fun": fin, "jac": jin}, {"type": "eq", "fun": feq, "jac": jeq}],
        options={"maxiter": 500, "ftol": 1e-14},
    )
    x = np.asarray(res.x[: n * d]).reshape(n, d)
    return np.asarray(x / np.linalg.norm(x, axis=1, keepdims=True), dtype=np.float64)


def weighted_tammes(
    num_points: int,
    dim: int,
    weights: Sequence[float] | NDArray[np.floating] | None = None,
    radius: float = 1.0,
    objective: str = "weighted",
    restarts: int = 16,
    steps: int = 1500,
    seed: int = 0,
    polish: bool = True,
) -> TammesResult:
    """Multi-start projected gradient ascent (torch, Adam) on a smoothed objective.

    The inner minima are replaced by soft-minima −T·logsumexp(−‖·‖²/T) with T annealed
    geometrically from 0.1 to 1e-5 (unit sphere scale); after each step points are
    projected back onto the sphere. The restart with the best exact objective is then
    polished (``polish=True``, N ≤ 40) by SLSQP on the epigraph form
    max Σ_c ρ(c)s_c s.t. s_c ≤ ‖v_c − v_{c′}‖², ‖v_c‖ = 1 (one slack for "maxmin").
    Source: problem (7) of Robinson et al. (ICLR 2021); the solver is ours (heuristic).
    Validity: N ≥ 2, d ≥ 2, radius > 0, weights a probability vector of length N.
    """
    import torch

    n = check_int("num_points", num_points, 2)
    d = check_int("dim", dim, 2)
    rad = check_real("radius", radius, low=0.0, low_open=True)
    r_ = check_int("restarts", restarts, 1)
    st = check_int("steps", steps, 1)
    if objective not in ("weighted", "maxmin"):
        raise ValueError(f"objective must be 'weighted' or 'maxmin', got {objective!r}")
    w = np.full(n, 1.0 / n) if weights is None else check_probs("weights", weights)
    if w.size != n:
        raise ValueError(f"weights must have num_points = {n} entries, got {w.size}")
    gen = torch.Generator().manual_seed(int(seed))
    x = torch.randn(r_, n, d, generator=gen, dtype=torch.float64)
    x = x / x.norm(dim=-1, keepdim=True)
    x.requires_grad_(True)
    wt = torch.as_tensor(w, dtype=torch.float64)
    opt = torch.optim.Adam([x], lr=0.02)
    eye = torch.eye(n, dtype=torch.bool)
    t_hi, t_lo = 0.1, 1e-5
    for step in range(st):
        frac = step / max(1, st - 1)
        temp = t_hi * (t_lo / t_hi) ** frac
        for g in opt.param_groups:
            g["lr"] = 0.02 * (1.0 - 0.95 * frac)
        d2 = ((x[:, :, None, :] - x[:, None, :, :]) ** 2).sum(-1)
        d2 = d2.masked_fill(eye, math.inf)
        if objective == "maxmin":
            soft = -temp * torch.logsumexp(-d2.reshape(r_, -1) / temp, dim=-1)
        else:
            soft = (wt * (-temp * torch.logsumexp(-d2 / temp, dim=-1))).sum(-1)
        opt.zero_grad()
        (-soft.sum()).backward()
        opt.step()
        with torch.no_grad():
            x /= x.norm(dim=-1, keepdim=True)
    pts = x.detach().numpy()
    scores = [_exact_objective(p, w, objective) for p in pts]
    best = pts[int(np.argmax(scores))]
    if polish and n <= 40:
        polished = _polish(best, w, objective)
        if _exact_objective(polished, w, objective) >= _exact_objective(best, w, objective):
            best = polished
    best = best * rad
    d2 = np.sum((best[:, None, :] - best[None, :, :]) ** 2, axis=-1)
    np.fill_diagonal(d2, np.inf)
    dmin = math.sqrt(float(d2.min()))
    cosang = 1.0 - d2.min() / (2.0 * rad * rad)
    angle = math.degrees(math.acos(max(-1.0, min(1.0, float(cosang)))))
    return TammesResult(best, _exact_objective(best, w, objective), dmin, angle)
