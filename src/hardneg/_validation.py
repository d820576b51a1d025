"""Input checks shared by the loss engine.

Every message names the parameter, the constraint and the value received (scikit-learn's
convention), so that a user reading a traceback knows what to change.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

__all__ = [
    "BETA_MAX",
    "TEMPERATURE_RANGE",
    "NonFiniteError",
    "check_beta",
    "check_embeddings",
    "check_finite_tensor",
    "check_in_interval",
    "check_positive",
    "check_rows_nonempty",
    "check_same_device",
    "check_temperature",
]

# Outside these ranges float32 logits overflow or lose every significant digit (1/t, (1+β)·s).
TEMPERATURE_RANGE = (1e-4, 1e4)
BETA_MAX = 1e6

_FLOAT_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


class NonFiniteError(ValueError):
    """A tensor that must be finite holds NaN or Inf (in training: the run has diverged, or its data
    is not finite)."""


def check_positive(name: str, value: float, *, strict: bool = True) -> float:
    """Return ``float(value)`` if it is a finite number > 0 (or >= 0 when ``strict=False``)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a real number, got {value!r} of type {type(value).__name__}")
    v = float(value)
    ok = v > 0 if strict else v >= 0
    if not ok or not math.isfinite(v):
        bound = "> 0" if strict else ">= 0"
        raise ValueError(f"{name} must be a finite number {bound}, got {value!r}")
    return v


def check_in_interval(
    name: str, value: float, *, low: float, high: float, closed_high: bool = False
) -> float:
    """Return ``float(value)`` if ``low <= value < high`` (``<= high`` when ``closed_high``)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a real number, got {value!r} of type {type(value).__name__}")
    v = float(value)
    ok = low <= v <= high if closed_high else low <= v < high
    if not ok:
        right = "]" if closed_high else ")"
        raise ValueError(f"{name} must lie in [{low}, {high}{right}, got {value!r}")
    return v


def check_finite_tensor(name: str, x: Tensor) -> None:
    """Raise :class:`NonFiniteError` (a ``ValueError``) if ``x`` holds NaN or Inf.

    A NaN or an Inf entry makes the sum non-finite, so a finite sum (one reduction, no copy)
    proves every entry finite; only a non-finite sum (a bad entry, or finite entries whose sum
    overflows) pays for the entry-wise test, which on a 65536 × 128 queue takes four passes.
    """
    if x.numel() and bool(torch.isfinite(x.sum())):
        return
    if not bool(torch.isfinite(x).all()):
        bad = int((~torch.isfinite(x)).sum())
        raise NonFiniteError(f"{name} must be finite, got {bad} non-finite entries (NaN or Inf)")


def check_rows_nonempty(counts: Tensor) -> None:
    """Raise ``ValueError`` if some anchor has no valid negative (``counts`` (A,): the N_i).

    One host read; inside ``torch.compile`` a ``torch._assert_async`` instead (no graph break).
    """
    if torch.compiler.is_compiling():
        torch._assert_async((counts > 0).all(), "every anchor needs at least one valid negative")
        return
    if bool((counts == 0).any()):
        raise ValueError("every anchor needs at least one valid negative; some rows of mask are empty")


def check_embeddings(name: str, x: object, *, check_finite: bool = True) -> Tensor:
    """Check that ``x`` is a floating (n, d) tensor and return it.

    Raises ``TypeError`` for a non-tensor or a non-floating dtype and ``ValueError`` for a wrong
    number of dimensions, an empty tensor or non-finite entries.
    """
    if not isinstance(x, Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if x.dtype not in _FLOAT_DTYPES:
        raise TypeError(
            f"{name} must have a floating dtype (one of float16, bfloat16, float32, float64), got {x.dtype}"
        )
    if x.dim() != 2:
        raise ValueError(f"{name} must have shape (n, d), got shape {tuple(x.shape)}")
    if x.shape[0] == 0 or x.shape[1] == 0:
        raise ValueError(f"{name} must be non-empty, got shape {tuple(x.shape)}")
    if check_finite:
        check_finite_tensor(name, x)
    return x


def check_same_device(**tensors: Tensor) -> None:
    """Raise ``ValueError`` unless all tensors live on one device."""
    devices = {k: t.device for k, t in tensors.items()}
    if len(set(devices.values())) > 1:
        listing = ", ".join(f"{k} on {v}" for k, v in devices.items())
        raise ValueError(f"all inputs must be on the same device, got {listing}")


def check_temperature(value: float) -> float:
    """Return the temperature as a float if it lies in :data:`TEMPERATURE_RANGE` (``[1e-4, 1e4]``).

    Below 1e-4 the logits ``cos/t`` of unit vectors exceed 1e4 and the smallest representable
    temperatures make ``1/t`` overflow (t = 1e-39 gave NaN, t = 1e-38 inf); above 1e4 every
    logit rounds to the same value. No paper uses a temperature outside [0.01, 1].
    """
    t = check_positive("temperature", value)
    low, high = TEMPERATURE_RANGE
    if not low <= t <= high:
        raise ValueError(f"temperature must lie in [{low:g}, {high:g}], got {value!r}")
    return t


def check_beta(value: float) -> float:
    """Return β as a float if ``0 <= β <= BETA_MAX`` (1e6; larger tilts overflow ``(1+β)·s``)."""
    b = check_positive("beta", value, strict=False)
    if b > BETA_MAX:
        raise ValueError(
            f"beta must lie in [0, {BETA_MAX:g}] (larger tilts overflow (1+beta)*logits), got {value!r}"
        )
    return b
