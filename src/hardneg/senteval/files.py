"""Reading a SentEval file: its encoding (UTF-8, else latin-1) and its numbered non-blank lines.

Shared by the readers of the standard tasks (:mod:`hardneg.senteval.readers`) and of a user's own
(:mod:`hardneg.senteval.custom`); every problem names the file and the line.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from hardneg.data.text.lines import NotTextError, Report, clean_text
from hardneg.senteval.errors import MissingTaskFileError, SentEvalFormatError
from hardneg.senteval.tasks import LAYOUTS

__all__ = ["raw_lines"]


def _decode(raw: bytes, path: Path, encoding: str | None) -> str:
    if encoding is None:
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            return raw.decode("latin-1")
        return text[1:] if text.startswith("\ufeff") else text
    try:
        return raw.decode(encoding)
    except UnicodeDecodeError as err:
        line = raw[: err.start].count(b"\n") + 1
        raise SentEvalFormatError(path, f"not valid {encoding}: {err.reason} at byte {err.start}",
                                  line=line) from None
    except LookupError:
        raise ValueError(f"unknown encoding {encoding!r}") from None


def raw_lines(path: Path, *, task: str, encoding: str | None,
              report: Report | None = None) -> Iterator[tuple[int, str]]:
    """``(1-based line number, line without its line break)`` of every non-blank line.

    The text is checked whole first (:func:`hardneg.data.text.lines.clean_text`): a byte-order mark
    and stray control characters are dropped (the latter reported through ``report``, default
    stderr); binary data and overlong lines are errors naming the file and the line."""
    if not path.is_file():
        if path.exists():
            raise SentEvalFormatError(path, f"is not a file (task {task} reads it as a file)")
        raise MissingTaskFileError(path, task=task, layout=LAYOUTS.get(task, (path.name,)))
    try:
        text = clean_text(_decode(path.read_bytes(), path, encoding), path, report=report)
    except NotTextError as err:
        raise SentEvalFormatError(path, err.reason, line=err.line) from None
    found = False
    for number, line in enumerate(text.split("\n"), start=1):
        line = line[:-1] if line.endswith("\r") else line
        if line.strip():
            found = True
            yield number, line
    if not found:
        raise SentEvalFormatError(path, "empty file (no non-blank line)")
