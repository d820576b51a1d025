"""A plain float64 log-domain Sinkhorn in NumPy (Cuturi, NeurIPS 2013), independent of hardneg."""

from __future__ import annotations

import math

import numpy as np


def _logsumexp(x: np.ndarray, axis: int) -> np.ndarray:
    m = np.max(x, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    return np.squeeze(m, axis) + np.log(np.sum(np.exp(x - m), axis=axis))


def reference_coupling(cost: np.ndarray, mask: np.ndarray, eps: float, iters: int = 3000) -> np.ndarray:
    """Plain float64 log-domain Sinkhorn with forbidden entries (cost = +inf), uniform marginals."""
    logk = np.where(mask, -cost / eps, -np.inf)
    a, n = logk.shape
    f, g = np.zeros(a), np.zeros(n)
    for _ in range(iters):
        f = -math.log(a) - _logsumexp(logk + g[None, :], 1)
        g = -math.log(n) - _logsumexp(logk + f[:, None], 0)
    return np.exp(f[:, None] + logk + g[None, :])
