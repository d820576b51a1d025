"""The ``hardneg`` console script: checks the ``cli`` extra before anything heavy is imported.

``pip install hardneg`` installs the loss engine only (torch, numpy); the command line needs the
``cli`` extra. Without it, every ``hardneg ...`` (``--help`` included) prints one line naming the
extra and exits with status 2 (a usage error, like every other
error a user can cause) instead of a ``ModuleNotFoundError`` traceback. This module imports
the standard library and :mod:`hardneg._packages` only; :mod:`hardneg.cli` (typer) is imported
after the check.
"""

from __future__ import annotations

import sys

from hardneg._packages import require_extra

__all__ = ["main"]


def main() -> None:
    """Console-script entry point (``[project.scripts] hardneg``): the extra check, then
    :func:`hardneg.cli.main`."""
    try:
        require_extra("cli", "the command line")
    except ModuleNotFoundError as err:
        print(f"error: {err}", file=sys.stderr)
        raise SystemExit(2) from None
    from hardneg.cli import main as cli_main

    cli_main()
