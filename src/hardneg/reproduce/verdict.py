"""The verdict of a claim "contender > baseline" from the seed-paired difference and its interval.

:func:`hardneg.reproduce.statistics.judge` is the stricter successor (one-sided and equivalence
tests, Holm's family-wise control, *inconclusive* when the budget could not detect the paper's
effect); this per-claim interval rule stays for the callers that use it.
"""

from __future__ import annotations

import math

from hardneg.pipeline.paired import PairedDifference
from hardneg.reproduce.statistics import NO_VERDICT_ZERO_VARIANCE, spread_is_zero

__all__ = ["VERDICTS", "verdict"]

VERDICTS = ("reproduced", "not reproduced", "contradicted", "not run here", NO_VERDICT_ZERO_VARIANCE)


def verdict(diff: PairedDifference, *, level: float = 0.95) -> str:
    """``reproduced`` when the whole confidence interval of the mean paired difference is above 0,
    ``contradicted`` when it is below 0, ``not reproduced`` otherwise (an interval that holds 0,
    or a single seed: the data do not support the claim). ``no verdict (zero variance)`` when every
    seed gave the same difference (up to rounding, :func:`~hardneg.reproduce.statistics.spread_is_zero`):
    the interval would have zero width, a firm verdict with no measure of the noise.

    >>> verdict(PairedDifference(0.02, 0.005, 5, 5)), verdict(PairedDifference(0.02, 0.05, 3, 5))
    ('reproduced', 'not reproduced')
    >>> verdict(PairedDifference(0.02, 0.0, 3, 3))
    'no verdict (zero variance)'
    """
    if diff.seeds >= 2 and not math.isnan(diff.std) and spread_is_zero(diff.mean, diff.std):
        return NO_VERDICT_ZERO_VARIANCE
    lo, hi = diff.interval(level)
    if math.isnan(lo):
        return "not reproduced"
    if lo > 0:
        return "reproduced"
    if hi < 0:
        return "contradicted"
    return "not reproduced"
