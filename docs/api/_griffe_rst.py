"""A griffe extension for the API reference: the reST left in hardneg's Google-style docstrings.

The docstrings are Google style ("Args:", "Returns:", "Shapes:") and are also read as plain text
(``help()``, doctests), so they keep two reST habits that Markdown does not know:

* Sphinx roles — ``:class:`~hardneg.scores.Scores``` — become inline code (``Scores``; the full
  dotted path without the ``~``);
* doctest blocks outside an "Examples:" section (which griffe renders itself) — module
  docstrings that open with ``>>>``, "Example:" sections (an admonition to griffe) — become
  fenced ``pycon`` blocks, so that ``>>>`` is not read as nested block quotes nor ``[1.0, 0.5]``
  as a Markdown link.

Only the rendered text changes; the docstrings themselves are untouched. Loaded by mkdocs.yml
(``extensions:`` of the python handler); excluded from the site's pages.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_ROLE = re.compile(r":(?:class|func|meth|mod|attr|data|exc|obj|const):`(~?)([^`]+)`")
_EXAMPLE_HEADER = re.compile(r"^(\s*)Examples:\s*$")


def _role(match: re.Match[str]) -> str:
    short, target = match.group(1), match.group(2).strip()
    if target.startswith("~"):
        short, target = "~", target[1:]
    if short:
        target = target.rsplit(".", 1)[-1]
    return f"`{target}`"


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def fence_doctests(text: str) -> str:
    """Wrap each doctest block that is not inside an "Examples:" section in a ``pycon`` fence.

    A doctest block starts at a line whose first non-blank characters are ``>>>`` and ends at the
    first blank line (or the first line indented less than its prompt).
    """
    lines = text.split("\n")
    out: list[str] = []
    example_indent: int | None = None
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        if example_indent is not None and stripped and _indent(line) <= example_indent:
            example_indent = None
        header = _EXAMPLE_HEADER.match(line)
        if header:
            example_indent = len(header.group(1))
        if example_indent is None and stripped.startswith(">>>"):
            pad = " " * _indent(line)
            block: list[str] = []
            while i < len(lines) and lines[i].strip() and _indent(lines[i]) >= len(pad):
                block.append(lines[i])
                i += 1
            previous = out[-1] if out else ""
            is_header = previous.rstrip().endswith(":") and _indent(previous) < len(pad)
            if previous.strip() and not is_header:  # a fence opens a new paragraph, not a section's body
                out.append("")
            out.extend([f"{pad}```pycon", *block, f"{pad}```"])
            continue
        out.append(line)
        i += 1
    return "\n".join(out)


def markdown_docstring(text: str) -> str:
    """The docstring ``text`` with Sphinx roles as inline code and doctests fenced."""
    return fence_doctests(_ROLE.sub(_role, text))


class ReSTToMarkdown(griffe.Extension):
    """Rewrites every loaded docstring with :func:`markdown_docstring`."""

    def on_object(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = markdown_docstring(obj.docstring.value)
