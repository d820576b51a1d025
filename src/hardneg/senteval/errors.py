"""Errors of the SentEval readers and of the offline preparation: they name the file and the line."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["MissingTaskFileError", "SentEvalFormatError", "TooFewExamplesError"]


class SentEvalFormatError(ValueError):
    """A task file that cannot be read as its SentEval layout.

    ``str(err)`` reads ``"<path>: line <n>: <what is wrong>"`` (``"<path>: <what>"`` for a problem of
    the whole file, such as an empty file).

    Attributes:
        path: the offending file.
        line: the 1-based line number, or ``None`` for a problem of the whole file.
        reason: what is wrong, without the location.
    """

    def __init__(self, path: str | os.PathLike[str], reason: str, *, line: int | None = None) -> None:
        self.path = Path(path)
        self.line = line
        self.reason = reason
        where = f"{self.path}: line {line}" if line is not None else f"{self.path}"
        super().__init__(f"{where}: {reason}")


class MissingTaskFileError(SentEvalFormatError):
    """A file of a task's layout is absent (``path`` names it, ``task`` names the task)."""

    def __init__(self, path: str | os.PathLike[str], *, task: str, layout: tuple[str, ...]) -> None:
        self.task = task
        super().__init__(path, f"missing file of task {task} (its SentEval layout is {', '.join(layout)})")


class TooFewExamplesError(SentEvalFormatError):
    """A class of a task has fewer examples than the protocol's folds need (``path`` holds that class).

    ``count`` is what the data give and ``needed`` what the folds need: more folds than ``count``
    is the setting to change (or the data).
    """

    def __init__(self, path: str | os.PathLike[str], reason: str, *, count: int, needed: int) -> None:
        self.count = count
        self.needed = needed
        super().__init__(path, reason)
