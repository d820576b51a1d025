"""Warnings shown at the user's line: the first frame outside hardneg and the libraries that call it.

``warnings.warn``'s fixed ``stacklevel`` counts frames, and the number of frames between a warning
raised deep in the loss core and the user's call differs with the layout, the engine, the
``nn.Module`` call machinery and the adapter the loss was called through. :func:`warn` instead walks
the stack to the first frame whose file lies outside hardneg, torch and the packages registered
with :func:`skip_package` (the libraries whose loss interfaces the adapters implement, which call
hardneg from their own frames), and attributes the warning to it. (Python 3.12's
``skip_file_prefixes`` does the same; hardneg supports 3.11.)
"""

from __future__ import annotations

import importlib.util
import os
import sys
import warnings
from pathlib import Path

__all__ = ["skip_package", "user_stacklevel", "warn"]

_SKIPPED: list[str] = []


def skip_package(name: str) -> None:
    """Attribute hardneg's warnings to frames outside the installed package ``name`` too (an
    adapter registers the library that calls its loss, e.g. ``"pytorch_metric_learning"``); a
    package that is not installed is ignored. Nothing is imported."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):  # a broken installation, or a module without a spec
        spec = None
    for folder in (spec.submodule_search_locations or []) if spec is not None else []:
        path = os.path.join(Path(folder).resolve(), "")  # with the trailing separator
        if path not in _SKIPPED:
            _SKIPPED.append(path)


skip_package("hardneg")
skip_package("torch")


def _skipped(filename: str) -> bool:
    """Whether a frame's file lies in a skipped package (``<stdin>``, ``<doctest …>``: the user's)."""
    prefixes = tuple(_SKIPPED)
    return filename.startswith(prefixes) or (
        not filename.startswith("<") and str(Path(filename).resolve()).startswith(prefixes)
    )


def user_stacklevel() -> int:
    """The ``stacklevel`` that makes ``warnings.warn``, called by the caller of this function, point
    at the user's line: the first frame outside hardneg, torch and the registered packages (the
    outermost frame if there is none)."""
    frame = sys._getframe(2)  # stacklevel 2 of the function that warns: its caller
    level = 2
    while frame.f_back is not None and _skipped(frame.f_code.co_filename):
        frame, level = frame.f_back, level + 1
    return level


def warn(message: str, category: type[Warning] = UserWarning) -> None:
    """``warnings.warn(message, category)`` at the user's line (see the module)."""
    warnings.warn(message, category, stacklevel=user_stacklevel())
