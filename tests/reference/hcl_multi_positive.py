"""HCL's debiased hard objective with M positives, re-derived in float64 from the paper alone.

Robinson, Chuang, Sra, Jegelka, ICLR 2021, §3, eq. (4) with the importance-sampling estimates:

    E_{x⁻∼q_β}[e^{s⁻}] ≈ (1/N) Σ_j e^{(β+1) s_j} / Ẑ_β,    Ẑ_β  = (1/N) Σ_j e^{β s_j}
    E_{v∼q_β⁺}[e^{s_v}] ≈ (1/M) Σ_m e^{(β+1) s⁺_m} / Ẑ⁺_β,  Ẑ⁺_β = (1/M) Σ_m e^{β s⁺_m}
    Neg = max( N (E_{q_β}[e^{s⁻}] − τ⁺ E_{q_β⁺}[e^{s_v}]) / (1 − τ⁺),  N e^{−1/t} )
    L   = −log( Σ_m e^{s⁺_m} / (Σ_m e^{s⁺_m} + Neg) )        (Fig. 13's pos.sum() form)

with logits s = f(x)ᵀf(·)/t. Plain Python floats in loops; no hardneg code.
"""

from __future__ import annotations

import math


def hcl_multi_positive_loss(
    pos: list[float], neg: list[float], *, beta: float, tau_plus: float, temperature: float,
    positive_estimator: str = "importance",
) -> float:
    """One anchor's loss from its positive logits ``pos`` and negative logits ``neg``."""
    n, m = len(neg), len(pos)
    z_neg = sum(math.exp(beta * s) for s in neg) / n
    neg_mean = sum(math.exp((beta + 1) * s) for s in neg) / n / z_neg
    if positive_estimator == "importance":
        z_pos = sum(math.exp(beta * s) for s in pos) / m
        pos_mean = sum(math.exp((beta + 1) * s) for s in pos) / m / z_pos
    else:
        pos_mean = sum(math.exp(s) for s in pos) / m
    big_neg = max(n * (neg_mean - tau_plus * pos_mean) / (1 - tau_plus), n * math.exp(-1 / temperature))
    pos_sum = sum(math.exp(s) for s in pos)
    return -math.log(pos_sum / (pos_sum + big_neg))
