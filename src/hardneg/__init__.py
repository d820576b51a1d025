"""hardneg: contrastive learning in which the distribution of negatives is what you control.

The loss engine (``scores`` → ``negatives`` → ``objectives`` → ``loss``) imports nothing but
torch; pipelines, evaluation, theory and the CLI sit on top.
"""

from hardneg import distributed, functional, negatives, objectives, queue, reduction
from hardneg.loss import ContrastiveLoss
from hardneg.reduction import LossOutput
from hardneg.schedules import BetaAnnealing, annealed_beta
from hardneg.scores import Scores, pair_scores, simclr_scores

__version__ = "0.1.0"

__all__ = [
    "BetaAnnealing",
    "ContrastiveLoss",
    "LossOutput",
    "Scores",
    "__version__",
    "annealed_beta",
    "distributed",
    "functional",
    "negatives",
    "objectives",
    "pair_scores",
    "queue",
    "reduction",
    "simclr_scores",
]
