"""The objective interface (step 3 of the loss engine).

An objective reads a :class:`~hardneg.negatives.WeightedScores` — positive logits, candidate
logits, validity mask, the negative distribution's log weights and the memoised weighted
negative sum — and returns one loss per anchor, shape (A,).
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from hardneg._constants import constant
from hardneg.negatives.weighted import WeightedScores

__all__ = ["Objective", "log1mexp"]


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
    near_zero = x > constant(-0.6931471805599453, x)  # a cached 0-dim tensor: hardneg._constants
    return torch.where(near_zero, torch.log(-torch.expm1(x)), torch.log1p(-torch.exp(x)))


class Objective(nn.Module):
    """Base class: ``objective(weighted) -> per-anchor loss (A,)``; ``diagnostics(weighted)`` to log.

    ``row_reducible = True`` declares that the objective reads only ``scores.positive``,
    ``scores.num_valid()``, ``scores.temperature``, ``weighted.log_weighted_sum``,
    ``weighted.mean_of(ramp)`` and ``weighted.max_logit()`` — never the (A, N) logits or
    weights — so the tiled engine (:mod:`hardneg.tiled`) can compute it.
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

    def diagnostics(self, weighted: WeightedScores) -> dict[str, float]:
        """Per-batch facts of this objective (e.g. how often the debiased floor binds); default none."""
        return {}

    def extra_repr(self) -> str:
        return ", ".join(f"{k}={v!r}" for k, v in self._config().items())

    def _config(self) -> dict[str, object]:
        return {}
