"""The run's per-epoch history, ``metrics.csv``: written by one writer, the project's own.

A row per finished epoch: the epoch (from 0), the learning rate, β where the negatives have one,
the mean training loss and the loss's diagnostics (the training module builds the rows, its
checkpoints carry them). :class:`~hardneg.pipeline.callbacks.HistoryWriter` rewrites the file
atomically from those rows

* right before every checkpoint is written (Lightning calls ``on_save_checkpoint`` before the
  file is saved), so checkpoint ``e`` never exists without epoch ``e``'s row on disk;
* when training starts, so after ``--resume`` the file holds exactly the rows of the checkpoint
  resumed from (rows of epochs the checkpoint does not cover are dropped at once);
* when training ends.

It is the only file the history is written to: ``metrics.json`` holds the results (evaluation,
online kNN, timing), and step-level values go to TensorBoard (``logs/tensorboard``) when it is
installed. :func:`read_history` reads the file back (``hardneg compare``, ``evaluate``).
"""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

from hardneg._io import atomic_write_text

__all__ = ["HISTORY_FILE", "csv_text", "read_history", "write_history"]

HISTORY_FILE = "metrics.csv"


def csv_text(rows: list[dict[str, Any]]) -> str:
    """``rows`` as CSV text: the columns are the keys in order of first appearance; a row without a
    key leaves its cell empty.

    Example:
        >>> print(csv_text([{"epoch": 0.0, "loss": 1.5}, {"epoch": 1.0, "loss": 1.25, "beta": 2.0}]), end="")
        epoch,loss,beta
        0.0,1.5,
        1.0,1.25,2.0
    """
    keys: list[str] = []
    for r in rows:
        keys += [k for k in r if k not in keys]
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=keys, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return buf.getvalue()


def write_history(path: str | Path, rows: list[dict[str, float]]) -> None:
    """Replace ``path`` atomically with the CSV of ``rows`` (floats are written exactly: ``repr``)."""
    atomic_write_text(path, csv_text(rows))


def read_history(path: str | Path) -> list[dict[str, float]]:
    """The rows of a history file as written by :func:`write_history` (an empty cell: key absent).

    Floats round-trip exactly (``float(repr(x)) == x``), so the rows equal the ones written.

    Example:
        >>> import tempfile, pathlib
        >>> with tempfile.TemporaryDirectory() as d:
        ...     path = pathlib.Path(d) / "metrics.csv"
        ...     write_history(path, [{"epoch": 0.0, "loss": 0.1}, {"epoch": 1.0, "loss": 1 / 3}])
        ...     read_history(path)[1]["loss"] == 1 / 3
        True
    """
    with open(path, newline="", encoding="utf-8") as handle:
        return [{k: float(v) for k, v in row.items() if k is not None and v not in ("", None)}
                for row in csv.DictReader(handle)]
