"""Input validation shared by the theory calculators (private).

Every error names the parameter, the constraint and the received value, e.g.
``ValueError("num_classes must be an integer >= 2, got 1")``.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray


def check_int(name: str, value: object, minimum: int) -> int:
    """Return ``value`` as ``int`` if it is an integer ``>= minimum``; raise ``ValueError`` otherwise."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    if int(value) < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def check_real(
    name: str,
    value: object,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
) -> float:
    """Return ``value`` as a finite float inside the given interval; raise ``ValueError`` otherwise."""
    lo_br = "(" if low_open else "["
    hi_br = ")" if high_open else "]"
    lo_s = "-inf" if low is None else f"{low:g}"
    hi_s = "inf" if high is None else f"{high:g}"
    rng = f"a finite real number in {lo_br}{lo_s}, {hi_s}{hi_br}"
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be {rng}, got {value!r}")
    x = float(value)
    if not math.isfinite(x):
        raise ValueError(f"{name} must be {rng}, got {value!r}")
    if low is not None and (x < low or (low_open and x == low)):
        raise ValueError(f"{name} must be {rng}, got {value!r}")
    if high is not None and (x > high or (high_open and x == high)):
        raise ValueError(f"{name} must be {rng}, got {value!r}")
    return x


def check_probs(name: str, probs: Sequence[float] | NDArray[np.floating], atol: float = 1e-9
                ) -> NDArray[np.float64]:
    """Validate a probability vector (1-D, non-negative, finite, sums to 1 within ``atol``)."""
    p = np.asarray(probs, dtype=np.float64)
    if p.ndim != 1 or p.size < 1:
        raise ValueError(f"{name} must be a non-empty 1-D probability vector, got shape {p.shape}")
    if not np.all(np.isfinite(p)) or np.any(p < 0):
        raise ValueError(f"{name} must have finite non-negative entries, got {p.tolist()!r}")
    total = float(p.sum())
    if abs(total - 1.0) > atol:
        raise ValueError(f"{name} must sum to 1 (tolerance {atol:g}), got sum {total!r}")
    return p / total


def resolve_probs(
    num_classes: int | None, class_probs: Sequence[float] | NDArray[np.floating] | None,
    min_classes: int = 1,
) -> NDArray[np.float64]:
    """Return the class prior ρ from ``num_classes`` (uniform) or ``class_probs`` (validated).

    If both are given, ``len(class_probs)`` must equal ``num_classes``.
    """
    if class_probs is None:
        if num_classes is None:
            raise ValueError("num_classes or class_probs must be given, got neither")
        c = check_int("num_classes", num_classes, min_classes)
        return np.full(c, 1.0 / c)
    p = check_probs("class_probs", class_probs)
    if num_classes is not None:
        c = check_int("num_classes", num_classes, min_classes)
        if c != p.size:
            raise ValueError(
                f"num_classes must equal len(class_probs) = {p.size}, got {num_classes!r}"
            )
    if p.size < min_classes:
        raise ValueError(
            f"class_probs must have >= {min_classes} entries, got {p.size}"
        )
    return p


def check_loss(loss: str) -> str:
    """Validate a loss name: ``"hinge"`` or ``"logistic"``."""
    if loss not in ("hinge", "logistic"):
        raise ValueError(f"loss must be 'hinge' or 'logistic', got {loss!r}")
    return loss
