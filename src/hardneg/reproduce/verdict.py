"""The verdict of a claim "contender > baseline" from the seed-paired difference and its interval."""

from __future__ import annotations

import math

from hardneg.pipeline.paired import PairedDifference

__all__ = ["VERDICTS", "verdict"]

VERDICTS = ("reproduced", "not reproduced", "contradicted", "not run here")


def verdict(diff: PairedDifference, *, level: float = 0.95) -> str:
    """``reproduced`` when the whole confidence interval of the mean paired difference is above 0,
    ``contradicted`` when it is below 0, ``not reproduced`` otherwise (an interval that holds 0,
    or a single seed: the data do not support the claim).

    >>> verdict(PairedDifference(0.02, 0.005, 5, 5)), verdict(PairedDifference(0.02, 0.05, 3, 5))
    ('reproduced', 'not reproduced')
    """
    lo, hi = diff.interval(level)
    if math.isnan(lo):
        return "not reproduced"
    if lo > 0:
        return "reproduced"
    if hi < 0:
        return "contradicted"
    return "not reproduced"
