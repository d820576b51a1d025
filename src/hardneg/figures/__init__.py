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

from __future__ import annotations

from hardneg._lazy import lazy_names

# imported on first use: a run that draws no figure never loads matplotlib, scikit-learn or pandas
_WHERE = {
    "hardest_negatives": "hardneg.figures.hardest",
    "new_figure": "hardneg.figures._figure",
    "plot_accuracy_curves": "hardneg.figures.curves",
    "plot_hardest_negatives": "hardneg.figures.hardest",
    "plot_similarity_histograms": "hardneg.figures.similarity",
    "same_and_different_label_similarities": "hardneg.figures.similarity",
    "save_figure": "hardneg.figures._figure",
    "summarize_over_seeds": "hardneg.figures.curves",
}

__all__ = sorted(_WHERE)

__getattr__, __dir__ = lazy_names(globals(), _WHERE)
