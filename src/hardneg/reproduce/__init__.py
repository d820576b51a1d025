"""``hardneg reproduce``: the papers' qualitative claims run as seeded comparisons, with verdicts.

See :mod:`hardneg.reproduce.claims` (what is claimed, where, and the experiment behind it),
:mod:`hardneg.reproduce.verdict` (how a paired difference becomes a verdict),
:mod:`hardneg.reproduce.statistics` (the claims' tests, Holm's family-wise control, the verdicts) and
:mod:`hardneg.reproduce.run` (the runs and the report).
"""

from hardneg.reproduce.claims import CLAIMS, EXPERIMENTS, NOT_RUN_HERE, Claim, Experiment
from hardneg.reproduce.statistics import ClaimResult, ClaimTest, judge
from hardneg.reproduce.verdict import verdict

__all__ = [
    "CLAIMS",
    "EXPERIMENTS",
    "NOT_RUN_HERE",
    "Claim",
    "ClaimResult",
    "ClaimTest",
    "Experiment",
    "judge",
    "verdict",
]
