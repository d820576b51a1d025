"""What every reader of text files checks about a file: that it is text, and its lines not too long.

A file of sentences that is valid UTF-8 can still be something else: binary data made of ASCII
bytes (NUL bytes, other control characters), or a whole book or data dump on one line. Both used
to be read as "sentences" and failed later — in the tokenizer, after minutes, or not at all. Real
text, on the other hand, holds the odd control character (a joke spelled with ``^G`` bells, an
escape sequence pasted from a terminal) and sometimes starts with a UTF-8 byte-order mark. The
text readers (article TSVs and folders, the NYT file, documents files, SentEval task files) judge
the **file**, not a line:

- a NUL character anywhere is binary data: an error naming the file, the line and the column;
- other control characters (C0 controls and DEL; tab, line and page breaks are text) are binary
  data when they are more than :data:`CONTROL_SHARE` (a tenth) of the file's characters (line
  breaks not counted): an error naming the file, the count and the first line holding one;
  fewer are stray characters, removed with one notice naming the file, the count and that line;
- a line longer than :data:`MAX_LINE_CHARS` characters (a sentence is far shorter; a longer line
  is a file without line breaks, or not a file of sentences) is an error naming the file and line;
- a leading byte-order mark (``U+FEFF``) is dropped;
- bytes that are not UTF-8 are read as latin-1 (older corpora, SentEval's MR, CR, SUBJ, MPQA and
  TREC among them, are latin-1), with one notice naming the file and the first such line
  (:func:`decode_text`, :class:`Latin1Fallback`).

The checks are linear in the size of the text (regular-expression scans without backtracking,
and the line lengths). :func:`clean_text` checks a text read whole, :class:`TextScan` one read
line by line (the verdict on control characters then comes at :meth:`TextScan.finish`).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable

__all__ = [
    "BOM",
    "CONTROL_SHARE",
    "MAX_LINE_CHARS",
    "Latin1Fallback",
    "NotTextError",
    "TextScan",
    "clean_text",
    "decode_text",
    "stderr_notice",
]

MAX_LINE_CHARS = 100_000
"""The most characters a line of a sentence file may hold (about 15 000 words; real sentences, even
whole Wikipedia paragraphs, are far shorter)."""

CONTROL_SHARE = 0.1
"""The largest share of a file's characters (line breaks not counted) that control characters other
than NUL may be before the file is judged binary data rather than text with stray controls."""

BOM = "\ufeff"

_CONTROL = re.compile(r"[\x00-\x08\x0e-\x1f\x7f]")

Report = Callable[[str], None]


class NotTextError(ValueError):
    """A file that is not text: ``str(err)`` reads ``"<where>, line <n>: <reason>"``."""

    def __init__(self, where: object, line: int, reason: str) -> None:
        self.where, self.line, self.reason = where, line, reason
        super().__init__(f"{where}, line {line}: {reason}")


def stderr_notice(message: str) -> None:
    """The default report of the readers: ``notice: <message>`` on stderr."""
    print(f"notice: {message}", file=sys.stderr)


def _latin1_notice(where: object, line: int, lines: int, report: Report | None) -> None:
    which = f"line {line}" if lines == 1 else f"{lines} lines, the first line {line}"
    (report or stderr_notice)(f"{where}: not UTF-8 ({which}); read as latin-1")


def decode_text(data: bytes, where: object, *, report: Report | None = None) -> str:
    """``data`` as UTF-8, or as latin-1 (every byte a character) when it is not valid UTF-8, with one
    notice naming ``where`` and the first line that is not UTF-8.

    Example:
        >>> decode_text("café".encode("latin-1"), "f.txt", report=print)
        f.txt: not UTF-8 (line 1); read as latin-1
        'café'
    """
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        _latin1_notice(where, data[: err.start].count(b"\n") + 1, 1, report)
        return data.decode("latin-1")


class Latin1Fallback:
    """Decode a file line by line: UTF-8, or latin-1 for a line that is not valid UTF-8; one notice
    at :meth:`finish` naming the file, the count of such lines and the first one."""

    def __init__(self, where: object, *, report: Report | None = None) -> None:
        self.where, self.report = where, report
        self.count, self.first = 0, 0

    def decode(self, number: int, raw: bytes) -> str:
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            self.count += 1
            self.first = self.first or number
            return raw.decode("latin-1")

    def finish(self) -> None:
        if self.count:
            _latin1_notice(self.where, self.first, self.count, self.report)


def _too_long(length: int) -> str:
    return (
        f"{length} characters on one line, more than the {MAX_LINE_CHARS} a line of sentences may "
        "hold (hardneg.data.text.lines.MAX_LINE_CHARS): one sentence per line is expected"
    )


def _nul(where: object, line: int, column: int) -> NotTextError:
    return NotTextError(where, line, f"a NUL character at column {column}: binary data, not text")


def _verdict(where: object, controls: int, chars: int, first_line: int, report: Report | None) -> None:
    """Refuse a file of mostly control characters; report the removal of stray ones."""
    if controls > CONTROL_SHARE * chars:
        raise NotTextError(
            where, first_line, f"{controls} control characters among the file's {chars} (more than "
            f"hardneg.data.text.lines.CONTROL_SHARE = {CONTROL_SHARE:g} of them): binary data, not text"
        )
    (report or stderr_notice)(
        f"{where}: removed {controls} control character(s) (C0 controls or DEL), "
        f"the first on line {first_line}"
    )


def clean_text(text: str, where: object, *, report: Report | None = None) -> str:
    """``text`` (a whole file, named ``where`` in messages) without its byte-order mark and stray
    control characters; :class:`NotTextError` (a ``ValueError``) for binary data or an overlong line
    (see the module docstring).

    >>> clean_text("\\ufeffA bell\\x07 rang.\\nFine.\\n", "f.txt", report=print)
    f.txt: removed 1 control character(s) (C0 controls or DEL), the first on line 1
    'A bell rang.\\nFine.\\n'
    >>> clean_text("PK\\x03\\x04\\x00\\x00", "z.txt")
    Traceback (most recent call last):
    ...
    hardneg.data.text.lines.NotTextError: z.txt, line 1: a NUL character at column 5: binary data, not text
    """
    text = text.removeprefix(BOM)
    nul = text.find("\x00")
    if nul >= 0:
        start = text.rfind("\n", 0, nul) + 1
        raise _nul(where, text.count("\n", 0, nul) + 1, nul - start + 1)
    if len(text) > MAX_LINE_CHARS:
        for number, line in enumerate(text.split("\n"), start=1):
            if len(line.rstrip("\r")) > MAX_LINE_CHARS:
                raise NotTextError(where, number, _too_long(len(line.rstrip("\r"))))
    first = _CONTROL.search(text)
    if first is None:
        return text  # the common case: one scan
    cleaned, controls = _CONTROL.subn("", text)
    chars = len(text) - text.count("\n") - text.count("\r")
    _verdict(where, controls, chars, text.count("\n", 0, first.start()) + 1, report)
    return cleaned


class TextScan:
    """The checks of :func:`clean_text` for a file read line by line.

    :meth:`line` drops the byte-order mark of line 1 and the control characters of each line,
    raises at once for a NUL character or an overlong line, and counts; :meth:`finish` (after the
    last line) refuses a file of mostly control characters or reports the stray ones removed.

    >>> scan = TextScan("f.txt", report=print)
    >>> [scan.line(1, "\\ufeffHi\\x07 there"), scan.line(2, "ok")]
    ['Hi there', 'ok']
    >>> scan.finish()
    f.txt: removed 1 control character(s) (C0 controls or DEL), the first on line 1
    """

    def __init__(self, where: object, *, report: Report | None = None) -> None:
        self.where = where
        self.report = report
        self.chars = 0
        self.controls = 0
        self.first_line = 0

    def line(self, number: int, line: str) -> str:
        """``line`` (line ``number``, without its line break) cleaned; see the class docstring."""
        if number == 1:
            line = line.removeprefix(BOM)
        if len(line) > MAX_LINE_CHARS:
            raise NotTextError(self.where, number, _too_long(len(line)))
        self.chars += len(line)
        if _CONTROL.search(line) is None:
            return line
        nul = line.find("\x00")
        if nul >= 0:
            raise _nul(self.where, number, nul + 1)
        line, found = _CONTROL.subn("", line)
        self.controls += found
        self.first_line = self.first_line or number
        return line

    def finish(self) -> None:
        """Refuse binary data, or report the stray control characters removed (once)."""
        if self.controls:
            _verdict(self.where, self.controls, self.chars, self.first_line, self.report)
            self.controls = 0
