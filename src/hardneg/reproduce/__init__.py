"""``hardneg reproduce``: the papers' qualitative claims run as seeded comparisons, with verdicts.

See :mod:`hardneg.reproduce.claims` (what is claimed, where, and the experiment behind it),
:mod:`hardneg.reproduce.statistics` (the claims' tests, Holm's family-wise control fixed in advance, the
minimum detectable effects, the verdicts) and
:mod:`hardneg.reproduce.run` (the runs and the report).
"""

from hardneg.reproduce.claims import Claim, Experiment, Selection
from hardneg.reproduce.design import CLAIMS, EXPERIMENTS
from hardneg.reproduce.statistics import ClaimResult, ClaimTest, judge

__all__ = [
    "CLAIMS",
    "EXPERIMENTS",
    "Claim",
    "ClaimResult",
    "ClaimTest",
    "Experiment",
    "Selection",
    "judge",
]
