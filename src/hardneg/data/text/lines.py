"""What every reader of sentence files checks about a line: that it is text, and not too long.

A file of sentences that is valid UTF-8 can still be something else: binary data made of ASCII
bytes (NUL bytes, other control characters), or a whole book or data dump on one line. Both used
to be read as "sentences" and failed later — in the tokenizer, after minutes, or not at all.
The text readers (article TSVs and folders, the NYT file, documents files, SentEval task files)
refuse such a line with an error naming the file and the line:

- a line longer than :data:`MAX_LINE_CHARS` characters (a sentence is far shorter; a longer line
  is a file without line breaks, or not a file of sentences);
- a line holding a NUL character, or of which more than a tenth of the characters are other
  control characters (C0 controls and DEL; tab, line and page breaks are allowed): binary data.

The checks are linear in the size of the text (one regular-expression scan without backtracking,
and the line lengths).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["MAX_LINE_CHARS", "first_bad_line", "line_problem"]

MAX_LINE_CHARS = 100_000
"""The most characters a line of a sentence file may hold (about 15 000 words; real sentences, even
whole Wikipedia paragraphs, are far shorter)."""

_CONTROL = re.compile(r"[\x00-\x08\x0e-\x1f\x7f]")
_CONTROL_SHARE = 0.1


def line_problem(line: str) -> str | None:
    """Why ``line`` is not a line of text (too long, or binary data), or ``None`` when it is.

    >>> line_problem("A fine sentence.") is None
    True
    >>> line_problem("PK\\x03\\x04\\x00\\x00")
    'a NUL character at column 5: binary data, not text'
    """
    if len(line) > MAX_LINE_CHARS:
        return (
            f"{len(line)} characters on one line, more than the {MAX_LINE_CHARS} a line of sentences may "
            "hold (hardneg.data.text.lines.MAX_LINE_CHARS): one sentence per line is expected"
        )
    if _CONTROL.search(line) is None:
        return None
    nul = line.find("\x00")
    if nul >= 0:
        return f"a NUL character at column {nul + 1}: binary data, not text"
    controls = len(_CONTROL.findall(line))
    if controls > _CONTROL_SHARE * len(line):
        return f"{controls} control characters among {len(line)}: binary data, not text"
    return None


def first_bad_line(lines: Sequence[str], text: str | None = None) -> tuple[int, str] | None:
    """``(1-based line number, problem)`` of the first line of ``lines`` that :func:`line_problem`
    refuses, or ``None``. ``text`` (the lines joined, when at hand) makes the common case one scan."""
    longest = max(map(len, lines), default=0)
    if text is not None and longest <= MAX_LINE_CHARS and _CONTROL.search(text) is None:
        return None  # the common case: no control character anywhere, no long line
    for number, line in enumerate(lines, start=1):
        problem = line_problem(line)
        if problem is not None:
            return number, problem
    return None
