"""Conversion of numpy / torch inputs to numpy arrays for the estimators."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["as_features", "as_labels"]


def _to_numpy(x: Any) -> np.ndarray:
    if hasattr(x, "detach") and hasattr(x, "cpu"):  # torch.Tensor without importing torch
        x = x.detach().cpu()
        if str(x.dtype) in ("torch.bfloat16", "torch.float16"):
            x = x.float()
        return x.numpy()
    return np.asarray(x)


def as_features(x: Any, *, name: str = "X") -> np.ndarray:
    """``(N, d)`` float array from numpy / torch / lists; higher ranks are flattened."""
    arr = _to_numpy(x)
    if arr.ndim == 1 or arr.ndim == 0:
        raise ValueError(f"{name} must have shape (N, d), got shape {arr.shape}")
    arr = arr.reshape(arr.shape[0], -1)
    if not np.issubdtype(arr.dtype, np.floating):
        arr = arr.astype(np.float64)
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must contain only finite values (found NaN or inf)")
    return arr


def as_labels(y: Any, *, n: int, name: str = "y") -> np.ndarray:
    """``(N,)`` label array; checks the length matches the features."""
    arr = _to_numpy(y).reshape(-1)
    if arr.shape[0] != n:
        raise ValueError(f"{name} must have shape ({n},) to match the features, got {arr.shape}")
    return arr
