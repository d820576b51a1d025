"""Objectives: how positives and weighted negatives become a per-anchor loss (step 3)."""

from hardneg.objectives.base import Objective, log1mexp
from hardneg.objectives.bcl import BasicContrastive
from hardneg.objectives.block import block_differences, block_loss, block_means
from hardneg.objectives.debiased import Debiased, debiased_log_negative
from hardneg.objectives.decoupled import Decoupled, decoupled, von_mises_fisher_weights
from hardneg.objectives.hinge import Hinge, hinge_max
from hardneg.objectives.jsd import JensenShannon
from hardneg.objectives.logistic import Logistic, LogisticMPair
from hardneg.objectives.nce import InfoNCE, info_nce
from hardneg.objectives.prior import TauPlusEstimator, mixture_proportion
from hardneg.objectives.triplet import Triplet

__all__ = [
    "BasicContrastive",
    "Debiased",
    "Decoupled",
    "Hinge",
    "InfoNCE",
    "JensenShannon",
    "Logistic",
    "LogisticMPair",
    "Objective",
    "TauPlusEstimator",
    "Triplet",
    "block_differences",
    "block_loss",
    "block_means",
    "debiased_log_negative",
    "decoupled",
    "hinge_max",
    "info_nce",
    "log1mexp",
    "mixture_proportion",
    "von_mises_fisher_weights",
]
