"""The one place for old import paths kept until their removal: a registry and a meta-path alias.

``REGISTRY`` maps an old module path to the module that replaced it and the version that removes
the old path. Importing an old path (or a submodule below it, ``hardneg.tiled.lse``) imports
the new module, binds it under the old name as well, and warns once with a
``DeprecationWarning`` naming the new path and the removal version.

>>> import warnings
>>> with warnings.catch_warnings(record=True) as caught:
...     warnings.simplefilter("always")
...     import hardneg.tiled.lse as old
>>> import hardneg.engines.tiled.lse as new
>>> old is new, "hardneg.engines.tiled.lse" in str(caught[-1].message)
(True, True)
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import types
import warnings
from collections.abc import Sequence

__all__ = ["REGISTRY", "install", "new_name"]

#: old module path → (new module path, the version that removes the old one)
REGISTRY: dict[str, tuple[str, str]] = {
    "hardneg.tiled.choice": ("hardneg.engines.choice", "0.4"),
    "hardneg.tiled.gathered": ("hardneg.engines.gathered", "0.4"),
    "hardneg.tiled": ("hardneg.engines.tiled", "0.4"),
}


def new_name(old: str) -> tuple[str, str] | None:
    """``(new module path, removal version)`` of an old path or of a submodule below one, else ``None``.

    Example:
        >>> new_name("hardneg.tiled.lse"), new_name("hardneg.tiled.choice"), new_name("hardneg.loss")
        (('hardneg.engines.tiled.lse', '0.4'), ('hardneg.engines.choice', '0.4'), None)
    """
    if old in REGISTRY:
        return REGISTRY[old]
    for prefix, (new, version) in REGISTRY.items():
        if old.startswith(prefix + "."):
            return new + old[len(prefix) :], version
    return None


class _Alias(importlib.abc.Loader):
    def __init__(self, new: str) -> None:
        self.new = new

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        return importlib.import_module(self.new)

    def exec_module(self, module: types.ModuleType) -> None:
        """The new module is already executed."""


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: types.ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        found = new_name(fullname)
        if found is None:
            return None
        new, version = found
        warnings.warn(
            f"{fullname} is deprecated and will be removed in hardneg {version}: import {new}",
            DeprecationWarning,
            stacklevel=2,
        )
        module = importlib.import_module(new)
        return importlib.machinery.ModuleSpec(fullname, _Alias(new), is_package=hasattr(module, "__path__"))


def install() -> None:
    """Put the alias finder first on ``sys.meta_path`` (once)."""
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder())
