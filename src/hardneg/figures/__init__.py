"""Every figure of hardneg, written through one writer (:mod:`hardneg.figures._figure`: matplotlib's
Agg canvas, imported only when plotting; PNG written atomically).

- :mod:`~hardneg.figures.similarity`: same- vs different-label cosine histograms (Robinson et al.,
  ICLR 2021, Fig. 5);
- :mod:`~hardneg.figures.hardest`: the hardest negatives of an anchor (their Fig. 12);
- :mod:`~hardneg.figures.curves`: accuracy against a parameter, mean ± std over seeds;
- :mod:`~hardneg.figures.training`: the figures of a run, a comparison and a sweep;
- :mod:`~hardneg.figures.theory`: Ash et al.'s coefficient and example (AISTATS 2022);
- :mod:`~hardneg.figures.claims`: the reproduction report's claims.
"""

from hardneg.figures._figure import new_figure, save_figure
from hardneg.figures.curves import plot_accuracy_curves, summarize_over_seeds
from hardneg.figures.hardest import hardest_negatives, plot_hardest_negatives
from hardneg.figures.similarity import (
    plot_similarity_histograms,
    same_and_different_label_similarities,
)

__all__ = [
    "hardest_negatives",
    "new_figure",
    "plot_accuracy_curves",
    "plot_hardest_negatives",
    "plot_similarity_histograms",
    "same_and_different_label_similarities",
    "save_figure",
    "summarize_over_seeds",
]
