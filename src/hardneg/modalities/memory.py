"""Lower bounds of the memory a run needs, as a modality states them (:meth:`Modality.memory`).

Each :class:`MemoryTerm` names what it counts, a lower bound of its bytes and the config keys that
set it; :func:`hardneg.pipeline.resources.check_memory` adds them up before anything is allocated
and refuses a config that cannot fit, naming the largest term's keys.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

__all__ = ["FLOAT", "INDEX", "MemoryTerm", "training_state"]

FLOAT = 4  # bytes of a float32
INDEX = 8  # bytes of an int64 token id


class MemoryTerm(NamedTuple):
    """``nbytes`` (a lower bound) needed for ``what``, set by the config keys ``keys``."""

    what: str
    nbytes: int
    keys: tuple[str, ...]


def training_state(params: int, optimizer: str, what: str, keys: Sequence[str]) -> MemoryTerm:
    """Parameters, their gradients and the optimiser's state: ``params · 4 B · (2 + states)``.

    Adam keeps two moments per parameter, SGD with momentum one (``train.optimizer``).

    >>> training_state(1000, "adam", "an MLP", ["model.width"]).nbytes
    16000
    """
    states = 2 if optimizer in ("adam", "adamw") else 1
    return MemoryTerm(f"{what} ({params:.3g} parameters, their gradients and {optimizer} state)",
                      params * FLOAT * (2 + states), tuple(keys))
