"""Memory bounds checked before anything is allocated, and allocation failures that name their keys.

A config such as ``model.layers=1000000`` (InfoGraph's heads grow with the square of the layers)
or ``data.text.max_length=1e9`` would otherwise fill the machine's memory until the kernel kills
the process, or fail deep inside torch with a byte count and no key. Before a run starts,
:func:`check_memory` adds the memory the config certainly needs — each modality's
:meth:`~hardneg.modalities.base.Modality.memory` terms (parameters with their gradients and
optimiser state, one batch of inputs, the data the modality materialises) and the loss's score
matrices — and refuses the config when that exceeds the memory available, naming the largest term,
its estimate and the keys that set it.

The terms are **lower bounds** (activations beyond the obvious ones are not counted), so a refused
config would certainly not fit, and a config that passes may still run out: :func:`stage` turns
such a failure into :class:`OutOfMemory`, naming the stage and the keys that size it.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from hardneg.modalities.memory import FLOAT, MemoryTerm

if TYPE_CHECKING:
    from hardneg.config.schema import RunConfig
    from hardneg.modalities.base import Modality

__all__ = ["OutOfMemory", "available_memory", "check_memory", "format_bytes", "loss_terms", "stage"]

class OutOfMemory(RuntimeError):
    """An allocation failed in a stage of a run; the message names the stage and its keys."""


def format_bytes(n: float) -> str:
    """``1536`` → ``'1.5 KB'`` (powers of 1024).

    >>> format_bytes(3 * 1024**3), format_bytes(2.5e16)
    ('3.0 GB', '22.2 PB')
    """
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if n < 1024:
            return f"{n:.1f} {unit}" if unit != "B" else f"{int(n)} B"
        n /= 1024
    return f"{n:.1f} PB"


def loss_terms(cfg: RunConfig, anchors: int) -> list[MemoryTerm]:
    """The loss's ``(2B, 2B)`` similarity and weight matrices (capped by ``loss.memory_budget``,
    beyond which the tiled engine streams them)."""
    candidates = 2 * anchors
    nbytes = 2 * candidates * candidates * FLOAT  # similarities and their gradient
    return [MemoryTerm(f"the loss's {candidates} x {candidates} score matrices",
                       min(nbytes, cfg.loss.memory_budget), ("train.batch_size", "loss.memory_budget"))]


def available_memory() -> int:
    """Bytes this process may still allocate: the smaller of the system's available memory
    (``MemAvailable``) and the room left under a cgroup limit; ``os.sysconf`` elsewhere."""
    found: list[int] = []
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                found.append(int(line.split()[1]) * 1024)
    except (OSError, ValueError, IndexError):
        pass
    try:
        limit = Path("/sys/fs/cgroup/memory.max").read_text().strip()
        used = Path("/sys/fs/cgroup/memory.current").read_text().strip()
        if limit != "max":
            found.append(max(int(limit) - int(used), 0))
    except (OSError, ValueError):
        pass
    if not found:
        try:
            found.append(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
        except (ValueError, OSError, AttributeError):
            return 2**63
    return min(found)


def check_memory(cfg: RunConfig, modality: Modality, *, available: int | None = None) -> list[MemoryTerm]:
    """Refuse ``cfg`` (``ConfigError``) when the memory it certainly needs exceeds ``available``.

    Returns the terms (largest first) when the config fits. ``available`` defaults to
    :func:`available_memory`.
    """
    from hardneg.config.errors import ConfigError

    terms = sorted([*modality.memory(cfg), *loss_terms(cfg, modality.batch_size(cfg))],
                   key=lambda t: t.nbytes, reverse=True)
    total = sum(t.nbytes for t in terms)
    room = available_memory() if available is None else available
    if total > room:
        from hardneg.pipeline.config import flat_config

        top, flat = terms[0], flat_config(cfg)
        keys = ", ".join(f"{k}={flat.get(k)}" for k in top.keys)
        raise ConfigError(
            f"the run needs at least {format_bytes(total)} of memory but {format_bytes(room)} is "
            f"available; the largest part is {top.what}: {format_bytes(top.nbytes)} (set by {keys}); "
            f"lower {' or '.join(top.keys)}"
        )
    return terms


def _is_allocation_failure(err: BaseException) -> bool:
    text = str(err)
    return isinstance(err, MemoryError) or (
        isinstance(err, RuntimeError)
        and any(s in text for s in ("can't allocate memory", "out of memory", "DefaultCPUAllocator"))
    )


@contextlib.contextmanager
def stage(what: str, cfg: RunConfig, keys: Sequence[str]) -> Iterator[None]:
    """Turn an allocation failure inside the block into :class:`OutOfMemory` naming ``what`` and the
    values of ``cfg`` under ``keys`` (dotted keys or section prefixes such as ``"model"``; unset and
    boolean keys left out). Nothing is computed unless an allocation fails."""
    try:
        yield
    except OutOfMemory:
        raise
    except (MemoryError, RuntimeError) as err:
        if not _is_allocation_failure(err):
            raise
        from hardneg.pipeline.config import flat_config

        detail = " ".join(str(err).split())[:200] or type(err).__name__
        named = [f"{k}={v}" for k, v in flat_config(cfg).items()
                 if any(k == p or k.startswith(f"{p}.") for p in keys)
                 and v is not None and not isinstance(v, bool) and isinstance(v, int | float | str)]
        raise OutOfMemory(
            f"out of memory while {what} ({detail}); the memory of this stage is set by "
            f"{', '.join(named)}"
        ) from None
