"""Independent float64 re-derivations of the hard-negative estimator of Robinson et al. (ICLR 2021),
written from the paper (§3 eq. (4), Fig. 13) and a transcription of the authors' ``image/main.py``
— deliberately *not* log-domain and not sharing any code with ``hardneg``: direct ``exp``, float64.

Each estimator comes twice: as tensor operations over all anchors at once (``hcl_reference_simclr``,
``hcl_reference_pairs``: what the tests call, fast at B = 64), and as the plain per-anchor loop it
was first written as (``*_loop``), kept as a slow cross-check of the vectorised form on small
batches (``tests/reference/test_hcl.py``).
"""

from __future__ import annotations

import math

import torch


def _partner_and_negatives(v: torch.Tensor, temperature: float) -> tuple[torch.Tensor, torch.Tensor]:
    """SimCLR's layout over the 2B views ``v``: ``pos`` (2B,) = exp(<v_i, v_{i±B}>/t) and ``neg``
    (2B, 2B − 2) = exp(<v_i, v_j>/t) over the other views j ∉ {i, i ± B}, in the order of j."""
    n2 = v.shape[0]
    b = n2 // 2
    idx = torch.arange(n2)
    partner = (idx + b) % n2
    sim = torch.exp(v @ v.T / temperature)  # one exp per pair, as in the authors' code
    others = ~torch.eye(n2, dtype=torch.bool)
    others[idx, partner] = False
    return sim[idx, partner], sim[others].view(n2, n2 - 2)


def _hcl_from_exp(
    pos: torch.Tensor,
    neg: torch.Tensor,
    *,
    temperature: float,
    tau_plus: float,
    beta: float,
    clamp: bool = True,
    scale: bool = False,
) -> torch.Tensor:
    """Per-row HCL losses from the exponentiated positive (R,) and negatives (R, N); ``scale``
    divides ``imp`` by its row's largest ``neg**beta`` (cancels in ``reweight_neg``)."""
    n = neg.shape[1]
    base = neg / neg.amax(dim=1, keepdim=True).detach() if scale else neg
    imp = base**beta
    reweight_neg = (imp * neg).sum(dim=1) / imp.mean(dim=1)
    ng = (-tau_plus * n * pos + reweight_neg) / (1 - tau_plus)
    if clamp:
        ng = torch.clamp(ng, min=n * math.exp(-1 / temperature))
    # −log(pos/(pos+Ng)) written as log1p(Ng/pos): identical, without cancellation at tiny losses
    return torch.log1p(ng / pos)


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
    All 2B anchors at once; ``hcl_reference_simclr_loop`` is the same, anchor by anchor.
    """
    v = torch.cat([z1, z2]).double()
    if normalize:
        v = v / v.norm(dim=1, keepdim=True)
    pos, neg = _partner_and_negatives(v, temperature)
    return _hcl_from_exp(pos, neg, temperature=temperature, tau_plus=tau_plus, beta=beta,
                         clamp=clamp, scale=True)


def hcl_reference_pairs(
    anchors: torch.Tensor,
    positives: torch.Tensor,
    candidates: torch.Tensor,
    *,
    temperature: float,
    tau_plus: float,
    beta: float,
) -> torch.Tensor:
    """Per-anchor HCL losses (A,) when every candidate is a negative of every anchor (a queue).

    All A anchors at once; ``hcl_reference_pairs_loop`` is the same, anchor by anchor.
    """
    a = anchors.double() / anchors.double().norm(dim=1, keepdim=True)
    p = positives.double() / positives.double().norm(dim=1, keepdim=True)
    c = candidates.double() / candidates.double().norm(dim=1, keepdim=True)
    pos = torch.exp((a * p).sum(dim=1) / temperature)
    neg = torch.exp(a @ c.T / temperature)
    return _hcl_from_exp(pos, neg, temperature=temperature, tau_plus=tau_plus, beta=beta)


def hcl_reference_simclr_loop(
    z1: torch.Tensor,
    z2: torch.Tensor,
    *,
    temperature: float,
    tau_plus: float,
    beta: float,
    normalize: bool = True,
    clamp: bool = True,
) -> torch.Tensor:
    """``hcl_reference_simclr`` anchor by anchor, in plain loops (slow: a cross-check on small B)."""
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
        losses.append(torch.log1p(ng / pos))
    return torch.stack(losses)


def hcl_reference_pairs_loop(
    anchors: torch.Tensor,
    positives: torch.Tensor,
    candidates: torch.Tensor,
    *,
    temperature: float,
    tau_plus: float,
    beta: float,
) -> torch.Tensor:
    """``hcl_reference_pairs`` anchor by anchor, in a plain loop (slow: a cross-check)."""
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
