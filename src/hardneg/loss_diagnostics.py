"""Temporary alias of :mod:`hardneg.reduction` while the pipeline moves (removed before release)."""

from hardneg.reduction import LossOutput, effective_sample_size, negative_diagnostics

__all__ = ["LossOutput", "effective_sample_size", "negative_diagnostics"]
