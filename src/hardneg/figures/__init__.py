"""Diagnostic figures (PNG, written atomically; matplotlib imported only when plotting)."""

from hardneg.figures._figure import save_figure
from hardneg.figures.curves import plot_accuracy_curves, summarize_over_seeds
from hardneg.figures.hardest import hardest_negatives, plot_hardest_negatives
from hardneg.figures.similarity import (
    plot_similarity_histograms,
    same_and_different_label_similarities,
)

__all__ = [
    "hardest_negatives",
    "plot_accuracy_curves",
    "plot_hardest_negatives",
    "plot_similarity_histograms",
    "same_and_different_label_similarities",
    "save_figure",
    "summarize_over_seeds",
]
