"""Errors of the command line in its own words: the option a user typed (``--classes``), never the
library's name for the parameter behind it (``num_classes``)."""

from __future__ import annotations

import re
from typing import Any

import typer
import typer.main

__all__ = ["HELP", "describe", "in_option_words", "option_names"]

#: The help options of every ``hardneg`` command and sub-command (click inherits them downwards).
HELP = {"help_option_names": ["-h", "--help"]}

# a parameter name as the library writes it: lower case with underscores, not part of a dotted key
_NAME = re.compile(r"(?<![\w.'-])[a-z]+(?:_[a-z]+)+(?![\w.])")


def describe(err: BaseException) -> str:
    """One line for a failure the user can cause; an ``OSError`` names its path and the reason."""
    if isinstance(err, OSError) and err.strerror:
        where = f": '{err.filename}'" if err.filename is not None else ""
        return f"{err.strerror}{where}"
    return " ".join(str(err).split()) or type(err).__name__


def option_names(app: typer.Typer) -> dict[str, str]:
    """``{parameter: option}`` over the commands of ``app`` (``classes`` → ``--classes``,
    ``min_words`` → ``--min-words``), read from the commands themselves; a parameter that is a
    different option in two commands is left out (no guess)."""
    found: dict[str, set[str]] = {}

    def walk(command: Any) -> None:
        for sub in getattr(command, "commands", {}).values():
            walk(sub)
        for param in getattr(command, "params", []):
            long = [o for o in param.opts if o.startswith("--")]
            if long and param.name:
                found.setdefault(param.name, set()).add(long[0])

    walk(typer.main.get_command(app))
    return {name: next(iter(opts)) for name, opts in found.items() if len(opts) == 1}


def in_option_words(message: str, app: typer.Typer) -> str:
    """``message`` with the library's parameter names replaced by ``app``'s options: a message that
    starts with one (``num_classes must be an integer >= 2, got -3``) becomes ``invalid value for
    '--classes': must be an integer >= 2, got -3``; a library name ``num_x`` is the option of ``x``."""
    options = option_names(app)

    def option(name: str) -> str | None:
        return options.get(name) or options.get(name.removeprefix("num_"))

    head, sep, rest = message.partition(" must ")
    if sep and " " not in head and option(head):
        message = f"invalid value for '{option(head)}': must {rest}"
    return _NAME.sub(lambda m: option(m.group(0)) or m.group(0), message)
