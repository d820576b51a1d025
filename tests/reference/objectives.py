"""Float64 loops of the objectives, written from the papers (no hardneg code).

Jiang et al. (arXiv:2111.03169) eq. (1), §IV, eq. (9); Arora et al. (ICML 2019) Def. 2.3 and
eq. (12); Robinson et al. (ICLR 2021) §3 (tilted weights) and App. B (Jensen–Shannon).
"""

from __future__ import annotations

import math

import torch


def plain_simclr(
    z1: torch.Tensor, z2: torch.Tensor, t: float
) -> tuple[list[float], list[list[float]], list[list[int]]]:
    """SimCLR layout by hand: positive logit, all logits, valid negatives of each of the 2B anchors."""
    v = [x / math.sqrt(float(x @ x)) for x in torch.cat([z1, z2])]
    n, b = len(v), z1.shape[0]
    s = [[float(v[i] @ v[j]) / t for j in range(n)] for i in range(n)]
    pos = [s[i][(i + b) % n] for i in range(n)]
    valid = [[j for j in range(n) if j != i and j != (i + b) % n] for i in range(n)]
    return pos, s, valid


def probabilities(
    kind: str, s: list[list[float]], valid: list[list[int]], beta: float = 0.5
) -> list[dict[int, float]]:
    out = []
    for i, js in enumerate(valid):
        raw = {j: (beta * s[i][j] if kind == "hard" else 0.0) for j in js}
        m = max(raw.values())
        z = sum(math.exp(r - m) for r in raw.values())
        out.append({j: math.exp(r - m) / z for j, r in raw.items()})
    return out


def objective_losses(
    name: str, pos: list[float], s: list[list[float]], q: list[dict[int, float]]
) -> list[float]:
    out = []
    for i, qi in enumerate(q):
        n = len(qi)
        w = {j: n * p for j, p in qi.items()}  # mean-one weights
        sp, si = pos[i], s[i]
        if name == "logistic_mpair":  # Jiang et al. (arXiv:2111.03169) eq. (1), q = 2
            out.append(math.log(1 + 2.0 / n * sum(w[j] * math.exp(si[j] - sp) for j in qi)))
        elif name == "logistic_base2":  # Arora et al. (ICML 2019) Def. 2.3
            out.append(math.log2(1 + sum(w[j] * math.exp(-(sp - si[j])) for j in qi)))
        elif name == "hinge_max":
            out.append(max(0.0, 1.0 + max(-(sp - si[j]) for j in qi)))
        elif name == "hinge_mean":
            out.append(sum(p * max(0.0, 1.0 - (sp - si[j])) for j, p in qi.items()))
        elif name == "triplet":  # Jiang et al. §IV: max(0, 2v + η), η = 0.5
            out.append(sum(p * max(0.0, 2 * (si[j] - sp) + 0.5) for j, p in qi.items()))
        elif name == "triplet_md":
            out.append(max(0.0, 2 * sum(p * (si[j] - sp) for j, p in qi.items()) + 0.5))
        elif name == "bcl":  # Jiang et al. eq. (9)
            out.append(sum(p * si[j] for j, p in qi.items()) - sp)
        elif name == "jsd":  # Robinson et al. (ICLR 2021) App. B
            out.append(
                math.log1p(math.exp(-sp)) + sum(p * math.log1p(math.exp(si[j])) for j, p in qi.items())
            )
        else:
            raise AssertionError(name)
    return out


def block_losses(a: torch.Tensor, p: torch.Tensor, n: torch.Tensor, loss: str, base: float) -> list[float]:
    a, p, n = a.detach(), p.detach(), n.detach()
    out = []
    for i in range(a.shape[0]):
        b = p.shape[1]
        pm = [sum(float(p[i, l, k]) for l in range(b)) / b for k in range(a.shape[1])]
        vs = []
        for m in range(n.shape[1]):
            nm = [sum(float(n[i, m, l, k]) for l in range(b)) / b for k in range(a.shape[1])]
            vs.append(sum(float(a[i, k]) * (pm[k] - nm[k]) for k in range(a.shape[1])))
        if loss == "hinge":
            out.append(max(0.0, 1.0 + max(-v for v in vs)))
        else:
            out.append(math.log(1 + sum(math.exp(-v) for v in vs)) / math.log(base))
    return out
