"""SimCLR's layout on a small batch without the general path's Python: the per-call floor.

At small B a call of :class:`~hardneg.ContrastiveLoss` costs its operators' dispatch and the
Python around them, not arithmetic. The general path builds a :class:`~hardneg.scores.Scores`, a
:class:`~hardneg.negatives.WeightedScores` and calls the distribution and the objective as
modules. Here, for the two settings the papers train most:

- uniform negatives with InfoNCE (NT-Xent; Chen et al., ICML 2020, eq. (1)), B ≤ 128 (a (2B, 2B)
  matrix of at most ``THRESHOLDS.dense_lse_max`` entries): the general path's
  ATen operators in the same order on the same cached constants, one ``log_softmax`` and one
  ``nll_loss`` (:func:`~hardneg.objectives.nce.uniform_cross_entropy`), so values and gradients
  are **bit-identical** to it (tested with ``torch.equal`` over sizes, dtypes and reductions);
- any distribution that states an exponential tilt ``w ∝ e^{β s}`` (``tile_weights()``: uniform,
  hard, a user's) with the debiased objective at a fixed τ⁺ > 0 (Robinson et al.,
  ICLR 2021, eq. (4); Chuang et al., NeurIPS 2020, §3), B ≤ 256
  (``THRESHOLDS.fused_max``): the whole loss as **one autograd node
  from the views** with a closed-form backward (:func:`~hardneg.engines.fused_node.fused_debiased_loss`),
  equal to the general path up to float rounding (tested against a float64 re-derivation, the
  general path and ``gradcheck``).

Which route is taken is asked of the components, never their class
(:func:`hardneg.engines.choice.small_route`: the distribution's ``tile_weights()``, the
objective's :meth:`~hardneg.objectives.Objective.row_form`). Anything else (labels, diagnostics,
a distribution without a stated tilt, e.g. ``Hard(rescale=True)``, an objective without a row
form, ``tau_plus="auto"``, hooks on the distribution or the
objective, a traced graph, a batch whose norms need the checked path) takes the general path.
"""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch import Tensor

from hardneg._numerics.constants import constant
from hardneg._numerics.thresholds import THRESHOLDS
from hardneg.engines.fused_node import fused_debiased_loss
from hardneg.objectives.nce import partner_cross_entropy
from hardneg.reduction import LossOutput, reduce
from hardneg.scores.layouts import (
    branch_free_normalised,
    normalised_rows,
    simclr_constants,
)

__all__ = ["CROSS_ENTROPY", "TILTED_DEBIASED", "SmallRoute", "small_simclr_loss"]

CROSS_ENTROPY = "cross_entropy"
TILTED_DEBIASED = "tilted_debiased"


class SmallRoute(NamedTuple):
    """A small-batch route of SimCLR's layout (:mod:`hardneg.engines.small`): ``name``
    (:data:`CROSS_ENTROPY` or :data:`TILTED_DEBIASED`), the tilt β of the negatives' weights and
    the objective's τ⁺."""

    name: str
    beta: float
    tau_plus: float

    @property
    def max_entries(self) -> int:
        """The largest (2B, 2B) matrix this route takes (:data:`THRESHOLDS`)."""
        return THRESHOLDS.fused_max if self.name == TILTED_DEBIASED else THRESHOLDS.dense_lse_max


def small_simclr_loss(
    z1: Tensor,
    z2: Tensor,
    b: int,
    route: SmallRoute,
    *,
    dtype: torch.dtype,
    temperature: float,
    validate: bool,
    reduction: str,
) -> LossOutput | None:
    """SimCLR's loss on B views per side through ``route`` (:func:`hardneg.engines.choice.small_route`), or
    ``None``
    when the batch needs the general path (a norm out of range, which the general path checks and
    reports; too large a matrix; B < 2).

    The cross-entropy route runs the operators of :func:`~hardneg.scores.layouts.simclr_layout`
    (normalised views, the checked path with ``validate=True``, the branch-free one without) and
    the cross-entropy over the logits; the debiased route is one node from the views
    (:func:`~hardneg.engines.fused_node.fused_debiased_loss`), with the same two normalisations.

    Args:
        z1: the first views (checked by the caller: floating, (B, d), same shape and device as z2).
        z2: the second views.
        b: B.
        route: the :class:`SmallRoute` from :func:`hardneg.engines.choice.small_route`.
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
        >>> out = small_simclr_loss(z1, z2, 4, SmallRoute(CROSS_ENTROPY, 0.0, 0.0), dtype=torch.float32,
        ...                         temperature=0.5, validate=True, reduction="mean")
        >>> from hardneg import ContrastiveLoss
        >>> bool(torch.equal(out.loss, ContrastiveLoss(temperature=0.5)(z1, z2)))
        True
    """
    name, beta, tau_plus = route
    if b < 2 or 4 * b * b > route.max_entries:
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
