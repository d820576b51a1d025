"""SimCLR's layout on a small batch without the general path's Python: the per-call floor.

At small B a call of :class:`~hardneg.ContrastiveLoss` costs its operators' dispatch and the
Python around them, not arithmetic. The general path builds a :class:`~hardneg.scores.Scores`, a
:class:`~hardneg.negatives.WeightedScores` and calls the distribution and the objective as
modules. Here, for the two settings the papers train most:

- uniform negatives with InfoNCE (NT-Xent; Chen et al., ICML 2020, eq. (1)), B ≤ 128 (a (2B, 2B)
  matrix of at most :data:`~hardneg._lse.DENSE_LSE_MAX` entries): the general path's
  ATen operators in the same order on the same cached constants, one ``log_softmax`` and one
  ``nll_loss`` (:func:`~hardneg.objectives.nce.uniform_cross_entropy`), so values and gradients
  are **bit-identical** to it (tested with ``torch.equal`` over sizes, dtypes and reductions);
- uniform or hard negatives with the debiased objective at a fixed τ⁺ > 0 (Robinson et al.,
  ICLR 2021, eq. (4); Chuang et al., NeurIPS 2020, §3), B ≤ 256
  (:data:`~hardneg.fused_simclr.FUSED_MAX`): the whole loss as **one autograd node
  from the views** with a closed-form backward (:func:`~hardneg.fused_simclr.fused_debiased_loss`),
  equal to the general path up to float rounding (tested against a float64 re-derivation, the
  general path and ``gradcheck``).

Anything else (labels, diagnostics, other distributions or objectives, ``tau_plus="auto"``,
``Hard(rescale=True)`` / ``detach_weights`` / ``target_ess``, hooks on the distribution or the
objective, a traced graph, a batch whose norms need the checked path) takes the general path.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from hardneg._constants import constant
from hardneg._lse import DENSE_LSE_MAX
from hardneg.fused_simclr import FUSED_MAX, fused_debiased_loss
from hardneg.negatives import Hard, Uniform
from hardneg.objectives import Debiased, InfoNCE
from hardneg.objectives.nce import partner_cross_entropy
from hardneg.reduction import LossOutput, reduce
from hardneg.scores.layouts import (
    branch_free_normalised,
    normalised_rows,
    simclr_constants,
)

__all__ = ["SMALL_MAX", "small_route", "small_simclr_loss"]

#: The largest (2B, 2B) matrix any route takes (the fused node's; the cross-entropy's is smaller).
SMALL_MAX = max(FUSED_MAX, DENSE_LSE_MAX)

CROSS_ENTROPY = "cross_entropy"
TILTED_DEBIASED = "tilted_debiased"


def _hooked(module: nn.Module) -> bool:
    """Whether calling ``module`` would run hooks (its own or global forward hooks)."""
    from torch.nn.modules import module as _module

    return bool(
        module._forward_hooks or module._forward_pre_hooks
        or _module._global_forward_hooks or _module._global_forward_pre_hooks
    )


def small_route(
    negatives: nn.Module, objective: nn.Module, dtype: torch.dtype = torch.float32
) -> tuple[str, float, float] | None:
    """``(route, β, τ⁺)`` when a SimCLR call of these settings may take :func:`small_simclr_loss`,
    else ``None``. Read at every call: a β schedule or a reassigned setting is seen at once.

    Args:
        negatives: the loss's negative distribution.
        objective: the loss's objective.
        dtype: the dtype the logits are computed in (a β below its smallest normal number weighs
            uniformly, as :class:`~hardneg.negatives.Hard` decides).

    Shapes:
        none (settings only).

    References:
        Chen, Kornblith, Norouzi and Hinton, ICML 2020, eq. (1); Robinson, Chuang, Sra and
        Jegelka, ICLR 2021, eq. (4).

    Example:
        >>> small_route(Uniform(), InfoNCE())
        ('cross_entropy', 0.0, 0.0)
        >>> small_route(Hard(beta=1.0), Debiased(tau_plus=0.1))
        ('tilted_debiased', 1.0, 0.1)
        >>> small_route(Hard(beta=1.0), InfoNCE()) is None  # hard InfoNCE: the general path
        True
    """
    kind = type(negatives)
    if kind is Uniform:
        beta = 0.0
    elif kind is Hard:
        if negatives.target_ess is not None:  # β re-chosen from the batch in every call
            return None
        beta = negatives.beta
        if beta < torch.finfo(dtype).tiny:
            beta = 0.0  # as Hard.weigh decides: uniform weights
        elif negatives.rescale or negatives.detach_weights:
            return None
    else:
        return None
    if _hooked(negatives) or _hooked(objective):
        return None
    okind = type(objective)
    if okind is InfoNCE and beta == 0.0 and objective.q is None:
        return CROSS_ENTROPY, 0.0, 0.0
    if okind is Debiased and objective.estimator is None and objective.tau_plus > 0.0:
        return TILTED_DEBIASED, beta, objective.tau_plus
    return None


def small_simclr_loss(
    z1: Tensor,
    z2: Tensor,
    b: int,
    route: tuple[str, float, float],
    *,
    dtype: torch.dtype,
    temperature: float,
    validate: bool,
    reduction: str,
) -> LossOutput | None:
    """SimCLR's loss on B views per side through ``route`` (:func:`small_route`), or ``None``
    when the batch needs the general path (a norm out of range, which the general path checks and
    reports; too large a matrix; B < 2).

    The cross-entropy route runs the operators of :func:`~hardneg.scores.layouts.simclr_layout`
    (normalised views, the checked path with ``validate=True``, the branch-free one without) and
    the cross-entropy over the logits; the debiased route is one node from the views
    (:func:`~hardneg.fused_simclr.fused_debiased_loss`), with the same two normalisations.

    Args:
        z1: the first views (checked by the caller: floating, (B, d), same shape and device as z2).
        z2: the second views.
        b: B.
        route: ``(route, β, τ⁺)`` from :func:`small_route`.
        dtype: the compute dtype (:func:`~hardneg.scores.layouts.compute_dtype` of the views'
            promoted dtype, as ``torch.cat`` promotes them).
        temperature: t (checked).
        validate: the one host read of the norms (``False``: the branch-free normalisation).
        reduction: ``"mean"``, ``"sum"`` or ``"none"``.

    Shapes:
        ``z1``, ``z2`` (B, d) → a :class:`~hardneg.reduction.LossOutput` with per-anchor losses
        (2B,), no diagnostics.

    References:
        Chen, Kornblith, Norouzi and Hinton, ICML 2020, eq. (1) and Algorithm 1; Robinson, Chuang,
        Sra and Jegelka, ICLR 2021, eq. (4).

    Example:
        >>> z1, z2 = torch.randn(4, 8), torch.randn(4, 8)
        >>> out = small_simclr_loss(z1, z2, 4, small_route(Uniform(), InfoNCE()), dtype=torch.float32,
        ...                         temperature=0.5, validate=True, reduction="mean")
        >>> from hardneg import ContrastiveLoss
        >>> bool(torch.equal(out.loss, ContrastiveLoss(temperature=0.5)(z1, z2)))
        True
    """
    name, beta, tau_plus = route
    if b < 2 or 4 * b * b > (FUSED_MAX if name == TILTED_DEBIASED else DENSE_LSE_MAX):
        return None
    if name == TILTED_DEBIASED:
        fused = fused_debiased_loss(
            z1, z2, beta=beta, tau_plus=tau_plus, temperature=temperature, dtype=dtype, validate=validate,
            reduction=reduction,
        )
        if fused is None:
            return None  # the general path checks and reports (or rescales) this batch
        return LossOutput(loss=fused[0], per_anchor=fused[1], diagnostics={})
    v = torch.cat([z1, z2], dim=0)
    if validate:
        unit = normalised_rows(v, dtype)  # the general path's one host read
        if unit is None:
            return None  # the general path checks and reports (or rescales) this batch
        v = unit
    else:
        v = v if v.dtype == dtype else v.to(dtype)
        v, _ = branch_free_normalised(v, torch.linalg.vector_norm(v, dim=1, keepdim=True))
    # simclr_layout's logits, the same operators
    vt = v / constant(temperature, v)
    logits = vt @ v.T
    c = simclr_constants(b, dtype, v.device)
    assert c.partner is not None and c.partner_fill is not None  # a small B
    per_anchor = partner_cross_entropy(logits, c.partner_fill, c.partner)
    return LossOutput(loss=reduce(per_anchor, reduction), per_anchor=per_anchor, diagnostics={})
