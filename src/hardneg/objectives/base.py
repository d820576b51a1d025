"""The objective interface (step 3 of the loss engine).

An objective reads a :class:`~hardneg.negatives.WeightedScores` — positive logits, candidate
logits, validity mask, the negative distribution's log weights and the memoised weighted
negative sum — and returns one loss per anchor, shape (A,).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import torch
from torch import Tensor, nn

from hardneg._numerics.constants import constant
from hardneg.negatives.weighted import WeightedScores

__all__ = ["Objective", "RowForm", "log1mexp"]


def log1mexp(x: Tensor) -> Tensor:
    """``log(1 − e^{x})`` for ``x < 0``, accurate on the whole range (Mächler, 2012: split at −ln 2).

    Inputs ``≥ 0`` are clamped just below zero so that the result (and its gradient) stays
    finite; callers mask those entries out.

    Args:
        x: negative numbers (the log of a probability below one).

    Shapes:
        any shape → the same shape.

    References:
        Mächler, *Accurately Computing log(1 − exp(−|a|)) Assessed by the Rmpfr package*,
        CRAN vignette, 2012 (the split at −ln 2).

    Example:
        >>> import torch
        >>> x = torch.tensor([-1e-20, -0.5], dtype=torch.float64)
        >>> [round(v, 4) for v in log1mexp(x).tolist()], float(torch.log(1 - torch.exp(x[0])))
        ([-46.0517, -0.9328], -inf)
    """
    x = x.clamp(max=-1e-30)
    near_zero = x > constant(-0.6931471805599453, x)  # a cached 0-dim tensor: hardneg._numerics.constants
    return torch.where(near_zero, torch.log(-torch.expm1(x)), torch.log1p(-torch.exp(x)))


@dataclass(frozen=True)
class RowForm:
    r"""The closed form an objective declares on the row statistics ``a_i = log Σ_j w_ij e^{s_ij}``,
    ``s⁺_i`` and ``log N_i`` (one positive per anchor): what a fast route needs to compute it
    without calling the module (:meth:`Objective.row_form`).

    Args:
        kind: ``"nce"``: ``L_i = softplus(a_i − s⁺_i)`` (InfoNCE; van den Oord et al., 2018,
            eq. (4)); ``"debiased"``: ``L_i = softplus(max(log Neg_i, log N_i − 1/t) − s⁺_i)`` with
            the debiased ``Neg_i`` of τ⁺ (Chuang et al., NeurIPS 2020, eq. (6); Robinson et al.,
            ICLR 2021, eq. (3)).
        tau_plus: τ⁺ of ``"debiased"`` (0 for ``"nce"``).
        loss: ``loss(a, s⁺, log N, t) -> (A,)``, the form's value (the objective's own function).

    Shapes:
        ``loss``: four (A,) tensors and a float → (A,).

    References:
        Oord, Li and Vinyals, arXiv:1807.03748, 2018, eq. (4); Chuang, Robinson, Lin, Torralba,
        Jegelka, NeurIPS 2020, eq. (6); Robinson, Chuang, Sra, Jegelka, ICLR 2021, eq. (3).

    Example:
        >>> from hardneg.objectives import InfoNCE
        >>> form = InfoNCE().row_form()
        >>> form.kind, round(float(form.loss(torch.tensor([0.0]), torch.tensor([0.0]), None, 1.0)[0]), 4)
        ('nce', 0.6931)
    """

    kind: str
    tau_plus: float = 0.0
    loss: Callable[..., Tensor] = field(default=None, compare=False, repr=False)  # type: ignore[assignment]

    def __post_init__(self) -> None:
        if self.loss is None:
            object.__setattr__(self, "loss", _nce_loss)


def _nce_loss(lws: Tensor, positive: Tensor, log_n: Tensor | None, temperature: float) -> Tensor:
    """``softplus(a − s⁺)``: InfoNCE on the row statistics (:class:`RowForm` ``"nce"``)."""
    return torch.nn.functional.softplus(lws - positive)


class Objective(nn.Module):
    """Base class: ``objective(weighted) -> per-anchor loss (A,)``; ``diagnostics(weighted)`` to log.

    ``row_reducible = True`` declares that the objective reads only ``scores.positive``,
    ``scores.num_valid()``, ``scores.temperature``, ``weighted.log_weighted_sum``,
    ``weighted.mean_of(ramp)`` and ``weighted.max_logit()`` — never the (A, N) logits or
    weights — so the tiled engine (:mod:`hardneg.engines.tiled`) can compute it.
    :meth:`row_form` declares the closed form on those statistics that a fast route computes.
    ``multi_positive = True`` declares that it is defined for several positives per anchor
    (:attr:`~hardneg.scores.Scores.positive_mask`); the others refuse such scores. No
    constructor arguments.

    Shapes:
        ``weighted`` (:class:`~hardneg.negatives.WeightedScores`, A anchors × N candidates) →
        (A,) loss per anchor.

    References:
        Robinson, Chuang, Sra, Jegelka, *Contrastive Learning with Hard Negative Samples*,
        ICLR 2021, §3 (objectives of positives and importance-weighted negatives).

    Example:
        >>> import torch
        >>> from hardneg.negatives import Hard
        >>> from hardneg.scores import simclr_scores
        >>> class Alignment(Objective):  # ignores the negatives: −s⁺ per anchor
        ...     row_reducible = True
        ...     def forward(self, weighted):
        ...         return -weighted.scores.positive
        >>> scores = simclr_scores(torch.randn(4, 8), torch.randn(4, 8), temperature=0.5)
        >>> Alignment()(Hard(beta=1.0)(scores)).shape
        torch.Size([8])
    """

    row_reducible = False
    multi_positive = False  # True: reads scores.positive as log Σ_m e^{s⁺_m} over M positives correctly

    def forward(self, weighted: WeightedScores) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} must implement forward(weighted)")

    def row_form(self) -> RowForm | None:
        """The closed form of this objective on the row statistics (:class:`RowForm`), or ``None``
        (default): declared by the objective so that a fast route (the small-batch routes of
        :mod:`hardneg.engines.small`, the materialised engine's debiased node) may compute it
        without its class being known. Asked at every call: it may follow mutable settings."""
        return None

    def diagnostics(self, weighted: WeightedScores) -> dict[str, float]:
        """Per-batch facts of this objective (e.g. how often the debiased floor binds); default none."""
        return {}

    def extra_repr(self) -> str:
        return ", ".join(f"{k}={v!r}" for k, v in self._config().items())

    def _config(self) -> dict[str, object]:
        return {}
