"""Matplotlib plumbing shared by the figures: Agg backend, atomic PNG writes."""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import Any

from hardneg._io import atomic_write_bytes
from hardneg._packages import extra_error

__all__ = ["new_figure", "save_figure"]


def new_figure(*args: Any, **kwargs: Any) -> tuple[Any, Any]:
    """``plt.subplots`` on a non-interactive canvas (no display, thread-friendly).

    matplotlib is imported here, not at module import, so ``hardneg`` imports without it.
    """
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ModuleNotFoundError as err:  # pragma: no cover - depends on the installation
        raise extra_error(err, "hardneg.figures") from err
    fig = Figure(figsize=kwargs.pop("figsize", None), layout=kwargs.pop("layout", None))
    FigureCanvasAgg(fig)
    axes = fig.subplots(*args, **kwargs)
    return fig, axes


def save_figure(
    fig: Any, path: str | os.PathLike[str], *, dpi: int = 120, bbox_inches: str | None = None
) -> Path:
    """Render ``fig`` to PNG in memory, write it atomically to ``path``, and close it.

    Every figure of hardneg (diagnostics, training runs, theory) is written through here.
    """
    buffer = io.BytesIO()
    try:
        fig.savefig(buffer, format="png", dpi=dpi, bbox_inches=bbox_inches)
    finally:
        _close(fig)
    return atomic_write_bytes(path, buffer.getvalue())


def _close(fig: Any) -> None:
    """Release a pyplot-managed figure (a plain ``Figure`` needs nothing)."""
    import sys

    plt = sys.modules.get("matplotlib.pyplot")
    if plt is not None:
        plt.close(fig)
