"""The authors' released graph loss of Robinson et al. (ICLR 2021), switch by switch.

HCL's graph experiments (§5.2, Fig. 3) ran InfoGraph's code (Sun et al., ICLR 2020) with a
``JSD_hard`` measure added. That code differs from the paper's formula (App. B.2 with the
debiasing of Chuang et al., NeurIPS 2020) in four ways, each a switch of
:func:`released_local_global_loss` (all on = the released loss, all off = the paper's formula):

- ``fixed_tau_plus``: τ⁺ is never passed, so the default τ⁺ = 0.5 applies, at β = 0 too (their
  "InfoGraph" baseline doubles the negative term and adds a positive-score penalty);
- ``positive_sign``: the positive term adds ``+τ⁺/(1−τ⁺)·sp(s⁺)`` to the loss where debiasing
  subtracts it;
- ``farthest_tilt``: the weights are ``exp(−2β s / max|s|)``, which up-weights the negatives with
  the *lowest* scores (the farthest), the opposite of ``q_β``;
- ``masked_entries``: the score matrix is multiplied by 0/1 masks instead of being masked, so
  the own-graph column (a zero) enters the weights' row mean and the negative sum, the B − 1
  zeros of the positive mask each add a constant ``−τ⁺/(1−τ⁺)·log 2`` to the positive
  expectation (a batch-size-dependent offset), and the negative sum is divided by A(B − 1).
  With this switch the value's ``log 2`` constants are also the code's (``/(1−τ⁺)`` at β = 0,
  not at β > 0); without it the value is the per-node mean of InfoGraph's form, offset by
  ``2 log 2``.

The default loss of the library is :class:`hardneg.infograph.InfoGraphLoss` (the paper's formula,
debiased with a real τ⁺ and a floor); this function exists so that the published numbers can be
reproduced, and the effect of each difference measured. In the training pipeline it is the step
of a graph run with ``data.graphs.released: true`` (all switches on, β = ``loss.negatives.beta``
for ``hard``, 0 for ``uniform``; :mod:`hardneg.modalities.graphs`).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor

from hardneg._validation import check_beta, check_in_interval
from hardneg.infograph.objective import check_local_global

__all__ = ["RELEASED_SWITCHES", "released_local_global_loss"]

RELEASED_SWITCHES = ("fixed_tau_plus", "positive_sign", "farthest_tilt", "masked_entries")
_LOG2 = math.log(2.0)


def released_local_global_loss(
    local: Tensor,
    global_: Tensor,
    batch: Tensor,
    *,
    beta: float,
    tau_plus: float = 0.5,
    fixed_tau_plus: bool = True,
    positive_sign: bool = True,
    farthest_tilt: bool = True,
    masked_entries: bool = True,
) -> Tensor:
    r"""HCL's released local–global graph loss (measure ``JSD_hard``), each deviation a switch.

    With ``S = l gᵀ`` (A nodes × B graphs), ``s⁺_u = S_{u,G(u)}``, ``c = τ/(1−τ)`` and the tilt
    ``t_uj = ±2β S_uj / max|S|`` (``−`` with ``farthest_tilt``), all switches off gives

        L = mean_u [ sp(−s⁺_u) − log 2 − c·sp(s⁺_u) + Σ_{j≠G(u)} w_uj sp(S_uj) / ((B−1)(1−τ)) − log 2 ],

    ``w_uj = e^{t_uj} / mean_{k≠G(u)} e^{t_uk}``: the paper's debiased hard JSD (Robinson et al.,
    ICLR 2021, App. B.2) offset by ``2 log 2``, without the floor of
    :func:`hardneg.objectives.debiased_softplus_negative`. The switches are described in the
    module docstring; all on (the default) is the released code's value and gradient.

    Args:
        local: node embeddings ``l``.
        global_: graph embeddings ``g``.
        batch: the graph index of each node, in ``[0, B)``.
        beta: concentration β ≥ 0 (β = 0: the code's uniform branch).
        tau_plus: τ⁺ ∈ [0, 1), used only when ``fixed_tau_plus`` is off.
        fixed_tau_plus: τ⁺ = 0.5 whatever ``tau_plus`` (default on, the released code).
        positive_sign: add the positive correction instead of subtracting it (default on).
        farthest_tilt: tilt by ``−2β S / max|S|`` (default on).
        masked_entries: multiply by 0/1 masks instead of masking (default on).

    Shapes:
        ``local`` (A, d), ``global_`` (B, d), ``batch`` (A,) → scalar.

    References:
        Robinson, Chuang, Sra, Jegelka, *Contrastive Learning with Hard Negative Samples*,
        ICLR 2021, §5.2 and App. B.2; Sun, Hoffmann, Verma, Tang, *InfoGraph*, ICLR 2020;
        Chuang et al., *Debiased Contrastive Learning*, NeurIPS 2020, §3.

    Example:
        >>> import torch
        >>> local, global_, batch = torch.randn(5, 4), torch.randn(3, 4), torch.tensor([0, 0, 1, 2, 2])
        >>> released = released_local_global_loss(local, global_, batch, beta=1.0)
        >>> paper = released_local_global_loss(local, global_, batch, beta=1.0, tau_plus=0.1,
        ...                                    fixed_tau_plus=False, positive_sign=False,
        ...                                    farthest_tilt=False, masked_entries=False)
        >>> released.shape, bool(torch.isfinite(paper))
        (torch.Size([]), True)
    """
    b = check_local_global(local, global_, batch)
    beta = check_beta(beta)
    tau = 0.5 if fixed_tau_plus else check_in_interval("tau_plus", tau_plus, low=0.0, high=1.0)
    c = tau / (1.0 - tau)
    a = local.shape[0]
    batch = batch.to(device=local.device, dtype=torch.long)
    s = local @ global_.T
    own = F.one_hot(batch, b).to(torch.bool)
    s_pos = s[torch.arange(a, device=s.device), batch]
    sign = 1.0 if positive_sign else -1.0  # the loss gets sign · c · sp(s⁺)

    # positive expectation E_p = log 2 − sp(−s⁺) − sign·c·sp(s⁺), subtracted from the loss
    e_pos = _LOG2 - F.softplus(-s_pos) - sign * c * F.softplus(s_pos)
    if masked_entries:  # the B − 1 masked zeros: Ep(0) = −sign·c·log 2 each
        e_pos = e_pos - (b - 1) * sign * c * _LOG2

    # negative expectation
    valid = torch.ones_like(own) if masked_entries else ~own
    q = s.masked_fill(own, 0.0)  # with masked_entries the zeros stay in play
    sp_q = F.softplus(q)
    if beta == 0.0:
        if masked_entries:  # (sp(q) − log 2)/(1 − τ) on every entry; the masked zeros give 0
            e_neg = ((sp_q - _LOG2) / (1.0 - tau)).sum() / (a * (b - 1))
        else:
            e_neg = ((sp_q * valid).sum(dim=1) / ((b - 1) * (1.0 - tau)) - _LOG2).mean()
    else:
        scale = q.masked_fill(~valid, 0.0).abs().amax().clamp_min(1e-12)  # = max(max q, |min q|)
        tilt = (-2.0 if farthest_tilt else 2.0) * beta * q / scale
        tilt = tilt.masked_fill(~valid, float("-inf"))
        n_cols = valid.sum(dim=1, keepdim=True).to(s.dtype)
        log_w = tilt - (torch.logsumexp(tilt, dim=1, keepdim=True) - n_cols.log())
        weighted = (log_w.exp() * sp_q).masked_fill(~valid, 0.0)
        if masked_entries:  # Σ (w·sp/(1−τ) − log 2) over all A·B entries, / A(B−1)
            e_neg = (weighted.sum() / (1.0 - tau) - _LOG2 * a * b) / (a * (b - 1))
        else:
            e_neg = (weighted.sum(dim=1) / ((b - 1) * (1.0 - tau)) - _LOG2).mean()
    return e_neg - e_pos.mean()
