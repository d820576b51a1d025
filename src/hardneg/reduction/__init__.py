"""Step 4 of the loss engine: reduction of per-anchor losses and per-batch diagnostics."""

from hardneg.reduction.diagnostics import effective_sample_size, negative_diagnostics
from hardneg.reduction.output import LossOutput
from hardneg.reduction.reduce import REDUCTIONS, check_reduction, reduce

__all__ = [
    "REDUCTIONS",
    "LossOutput",
    "check_reduction",
    "effective_sample_size",
    "negative_diagnostics",
    "reduce",
]
