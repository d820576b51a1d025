"""Independent float64 re-derivation of the hard-negative estimator of Robinson et al. (ICLR 2021),
written from the paper (§3 eq. (4), Fig. 13) and a transcription of the authors' ``image/main.py``
— deliberately *not* log-domain and not sharing any code with ``hardneg``: plain loops, direct
``exp``, float64.
"""

from __future__ import annotations

import math

import torch


def hcl_reference_simclr(
    z1: torch.Tensor,
    z2: torch.Tensor,
    *,
    temperature: float,
    tau_plus: float,
    beta: float,
    normalize: bool = True,
    clamp: bool = True,
) -> torch.Tensor:
    """Per-anchor HCL losses (2B,) in SimCLR's layout, as the authors' code computes them.

    For anchor i among the 2B views: pos = exp(<v_i, v_pos>/t), neg_j = exp(<v_i, v_j>/t) over the
    N = 2B - 2 other views, imp = neg**beta, reweight_neg = sum(imp*neg)/mean(imp),
    Ng = (-tau_plus*N*pos + reweight_neg)/(1 - tau_plus), Ng = max(Ng, N*exp(-1/t)),
    loss = -log(pos/(pos + Ng)). ``imp`` is divided by the largest ``neg**beta`` of the row (a
    constant factor, which cancels in ``reweight_neg``), so that β = 1000 does not overflow float64.
    """
    v = torch.cat([z1, z2]).double()
    if normalize:
        v = v / v.norm(dim=1, keepdim=True)
    b = z1.shape[0]
    losses = []
    for i in range(2 * b):
        p = (i + b) % (2 * b)
        pos = torch.exp(torch.dot(v[i], v[p]) / temperature)
        others = torch.ones(2 * b, dtype=torch.bool)
        others[[i, p]] = False
        neg = torch.exp((v @ v[i])[others] / temperature)  # one exp per negative, as in the authors' code
        n = neg.shape[0]
        imp = (neg / neg.max().detach()) ** beta
        reweight_neg = (imp * neg).sum() / imp.mean()
        ng = (-tau_plus * n * pos + reweight_neg) / (1 - tau_plus)
        if clamp:
            ng = torch.clamp(ng, min=n * math.exp(-1 / temperature))
        # −log(pos/(pos+Ng)) written as log1p(Ng/pos): identical, without cancellation at tiny losses
        losses.append(torch.log1p(ng / pos))
    return torch.stack(losses)


def hcl_reference_pairs(
    anchors: torch.Tensor,
    positives: torch.Tensor,
    candidates: torch.Tensor,
    *,
    temperature: float,
    tau_plus: float,
    beta: float,
) -> torch.Tensor:
    """Per-anchor HCL losses (A,) when every candidate is a negative of every anchor (a queue)."""
    a = anchors.double() / anchors.double().norm(dim=1, keepdim=True)
    p = positives.double() / positives.double().norm(dim=1, keepdim=True)
    c = candidates.double() / candidates.double().norm(dim=1, keepdim=True)
    out = []
    for i in range(a.shape[0]):
        pos = torch.exp(torch.dot(a[i], p[i]) / temperature)
        neg = torch.exp(c @ a[i] / temperature)
        n = neg.shape[0]
        imp = neg**beta
        ng = (-tau_plus * n * pos + (imp * neg).sum() / imp.mean()) / (1 - tau_plus)
        ng = torch.clamp(ng, min=n * math.exp(-1 / temperature))
        out.append(torch.log1p(ng / pos))
    return torch.stack(out)


def direct_exp_hcl(
    z1: torch.Tensor, z2: torch.Tensor, t: float, tau_plus: float, beta: float
) -> torch.Tensor:
    """The authors' estimator transcribed with exp of raw logits, in the inputs' dtype."""
    b = z1.shape[0]
    v = torch.cat([z1, z2])
    sim = torch.exp(v @ v.T / t)
    mask = ~torch.eye(2 * b, dtype=torch.bool)
    idx = torch.arange(2 * b)
    mask[idx, (idx + b) % (2 * b)] = False
    neg = sim.masked_select(mask).view(2 * b, -1)
    pos = sim[idx, (idx + b) % (2 * b)]
    n = 2 * b - 2
    imp = (beta * neg.log()).exp()
    reweight = (imp * neg).sum(-1) / imp.mean(-1)
    ng = ((-tau_plus * n * pos + reweight) / (1 - tau_plus)).clamp(min=n * math.exp(-1 / t))
    return (-torch.log(pos / (pos + ng))).mean()
