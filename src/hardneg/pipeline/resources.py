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

Besides the modality's terms: MoCo's queue (``moco.queue_size`` keys of ``model.projection_dim``
floats) and its scores, and — checked on their own, since they come after training — the sampled
tasks of the k-wise evaluation (``eval.kwise_tasks``). A group with ``compare.workers`` /
``sweep.workers`` parallel runs needs the largest run's memory once per worker
(:func:`check_group_memory`), and ``train.threads`` may not exceed
:data:`THREADS_PER_CPU` times the machine's CPUs (:func:`check_threads`).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from hardneg.modalities.memory import FLOAT, INDEX, MemoryTerm

if TYPE_CHECKING:
    from hardneg.config.schema import RunConfig
    from hardneg.modalities.base import Modality

__all__ = [
    "THREADS_PER_CPU",
    "OutOfMemory",
    "available_memory",
    "check_group_memory",
    "check_memory",
    "check_threads",
    "evaluation_terms",
    "format_bytes",
    "loss_terms",
    "memory_terms",
    "queue_terms",
    "stage",
]

THREADS_PER_CPU = 4
"""``train.threads`` may be at most this many times the machine's CPUs (a run of a larger machine
can still be reproduced bit for bit: CPU results depend on the thread count)."""

_NUMPY_ARRAY = 112  # bytes of a numpy array object without its data (64-bit CPython)

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


def queue_terms(cfg: RunConfig, anchors: int) -> list[MemoryTerm]:
    """``train.mode=moco``: the queue (``moco.queue_size`` keys of ``model.projection_dim`` floats
    and their labels) and the ``(B, queue)`` scores with their gradient (capped by
    ``loss.memory_budget``)."""
    from hardneg.config.schema import MocoConfig

    if cfg.train.mode != "moco" or not isinstance(cfg.moco, MocoConfig):
        return []
    size, dim = cfg.moco.queue_size, getattr(cfg.model, "projection_dim", 0)  # encoders with a head
    scores = min(2 * anchors * size * FLOAT, cfg.loss.memory_budget)
    return [MemoryTerm(f"the MoCo queue of {size} keys of dimension {dim}", size * (dim * FLOAT + INDEX),
                       ("moco.queue_size", "model.projection_dim")),
            MemoryTerm(f"the loss's {anchors} x {size} scores against the queue", scores,
                       ("moco.queue_size", "train.batch_size"))]


def evaluation_terms(cfg: RunConfig, modality: Modality) -> list[MemoryTerm]:
    """The engine's k-wise evaluation (the task sizes its ``eval`` section samples,
    :meth:`~hardneg.modalities.readouts.ReadoutEval.sampled_task_sizes`): ``eval.kwise_tasks``
    sampled tasks, each a numpy array of ``k + 1`` class indices (none for a modality with its own
    evaluation)."""
    from hardneg.modalities.readouts import ReadoutEval

    e = cfg.eval
    if modality.evaluates_itself or not isinstance(e, ReadoutEval):
        return []
    ks = e.sampled_task_sizes()
    if not ks:
        return []
    k = max(ks)
    return [MemoryTerm(f"the {e.kwise_tasks} sampled {k + 1}-way tasks of the k-wise evaluation",
                       e.kwise_tasks * (_NUMPY_ARRAY + (k + 1) * INDEX), ("eval.kwise_tasks", "eval.kwise"))]


def memory_terms(cfg: RunConfig, modality: Modality) -> list[MemoryTerm]:
    """The memory of training ``cfg`` (largest first): the modality's terms, the loss's and MoCo's."""
    anchors = modality.batch_size(cfg)
    terms = [*modality.memory(cfg), *loss_terms(cfg, anchors), *queue_terms(cfg, anchors)]
    return sorted(terms, key=lambda t: t.nbytes, reverse=True)


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


def _refuse(what: str, terms: list[MemoryTerm], room: int, cfg: RunConfig, times: str = "") -> None:
    """``ConfigError`` naming the largest term, its estimate, its keys and the memory available."""
    from hardneg.config.errors import ConfigError
    from hardneg.pipeline.config import flat_config

    top, flat = max(terms, key=lambda t: t.nbytes), flat_config(cfg)
    keys = ", ".join(f"{k}={flat.get(k)}" for k in top.keys)
    total = sum(t.nbytes for t in terms)
    raise ConfigError(
        f"{what} needs at least {format_bytes(total)} of memory{times} but {format_bytes(room)} is "
        f"available; the largest part is {top.what}: {format_bytes(top.nbytes)} (set by {keys}); "
        f"lower {' or '.join(top.keys)}"
    )


def check_threads(cfg: RunConfig, cpus: int | None = None) -> None:
    """Refuse ``train.threads`` above :data:`THREADS_PER_CPU` times the machine's CPUs
    (``cpus``, default ``os.cpu_count()``) with a ``ConfigError`` naming the key and the count."""
    from hardneg.config.errors import ConfigError

    threads, cpus = cfg.train.threads, cpus or os.cpu_count() or 1
    if threads is not None and threads > THREADS_PER_CPU * cpus:
        raise ConfigError(
            f"invalid value for 'train.threads': at most {THREADS_PER_CPU} x the {cpus} CPUs of this "
            f"machine ({THREADS_PER_CPU * cpus}), got {threads}"
        )


def check_memory(cfg: RunConfig, modality: Modality, *, available: int | None = None) -> list[MemoryTerm]:
    """Refuse ``cfg`` (``ConfigError``) when the memory it certainly needs exceeds ``available``:
    the training's terms (:func:`memory_terms`), then the evaluation's (:func:`evaluation_terms`);
    also checks ``train.threads`` (:func:`check_threads`).

    Returns the training's terms (largest first) when the config fits. ``available`` defaults to
    :func:`available_memory`.
    """
    check_threads(cfg)
    terms = memory_terms(cfg, modality)
    room = available_memory() if available is None else available
    if sum(t.nbytes for t in terms) > room:
        _refuse("the run", terms, room, cfg)
    evaluation = evaluation_terms(cfg, modality)
    if sum(t.nbytes for t in evaluation) > room:
        _refuse("the evaluation", evaluation, room, cfg)
    return terms


def check_group_memory(
    configs: Sequence[RunConfig], workers: int, key: str, *, available: int | None = None
) -> None:
    """Refuse a group whose runs cannot fit: each run on its own (:func:`check_memory`), and the
    ``min(workers, runs)`` runs trained at once — the largest run's estimate once per worker —
    against ``available`` (default :func:`available_memory`), naming ``key`` (``compare.workers``
    or ``sweep.workers``)."""
    from hardneg.config.errors import ConfigError
    from hardneg.modalities import get_modality

    room = available_memory() if available is None else available
    totals = [sum(t.nbytes for t in check_memory(c, get_modality(c.data.dataset), available=room))
              for c in configs]
    parallel = min(workers, len(configs))
    if parallel > 1 and parallel * max(totals) > room:
        fit = max(1, room // max(max(totals), 1))
        raise ConfigError(
            f"invalid value for '{key}': {parallel} runs at once need at least "
            f"{format_bytes(parallel * max(totals))} of memory ({format_bytes(max(totals))} per run) but "
            f"{format_bytes(room)} is available; at most {fit} fit, got {key}={workers}"
        )


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
