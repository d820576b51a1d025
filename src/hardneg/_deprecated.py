"""Every deprecated import path of hardneg, in one place, each with the version that removes it.

- :data:`MODULES`: old dotted module → ``(new module, removal version)``. A meta-path finder
  (:class:`MovedModules`, installed by ``import hardneg``) serves ``import old`` with a module that
  forwards every attribute to the new one, after one ``DeprecationWarning`` naming the new path.
- :data:`NAMES`: old dotted attribute → ``(new module, removal version)``: a package whose
  ``__getattr__`` calls :func:`moved_name` returns the new module's attribute of that name, after a
  ``DeprecationWarning``.

>>> import warnings
>>> with warnings.catch_warnings(record=True) as caught:
...     warnings.simplefilter("always")
...     from hardneg.pipeline.evaluation import evaluate_encoder
>>> evaluate_encoder.__module__
'hardneg.modalities.readouts'
>>> print(caught[0].message)
hardneg.pipeline.evaluation is now hardneg.modalities.readouts; the old path goes in 0.4
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import types
import warnings
from collections.abc import Sequence
from typing import Any

__all__ = ["MODULES", "NAMES", "MovedModules", "install", "moved_name"]

#: old dotted module → (new module, the version that removes the old path)
MODULES: dict[str, tuple[str, str]] = {
    "hardneg.pipeline.evaluation": ("hardneg.modalities.readouts", "0.4"),
}

#: old dotted attribute ``module.name`` → (the module that holds ``name`` now, the removal version)
NAMES: dict[str, tuple[str, str]] = {}


def moved_name(module: str, name: str) -> Any:
    """``name`` from its new module for an access to ``module.name`` listed in :data:`NAMES`,
    after a ``DeprecationWarning``; else the ``AttributeError`` of ``module``."""
    key = f"{module}.{name}"
    if key not in NAMES:
        raise AttributeError(f"module {module!r} has no attribute {name!r}")
    new, version = NAMES[key]
    warnings.warn(f"{key} is now {new}.{name}; the old path goes in {version}", DeprecationWarning,
                  stacklevel=3)
    return getattr(importlib.import_module(new), name)


class _Forward(types.ModuleType):
    """A deprecated module: every attribute is the new module's."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):  # the import system's questions are about this module
            raise AttributeError(name)
        return getattr(importlib.import_module(self.__dict__["_new"]), name)

    def __dir__(self) -> list[str]:
        return dir(importlib.import_module(self.__dict__["_new"]))


class MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds and loads the old module paths of :data:`MODULES` (before the file system is searched)."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: types.ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in MODULES:
            return None
        return importlib.machinery.ModuleSpec(fullname, self, is_package=False)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        module = _Forward(spec.name)
        module.__dict__["_new"] = MODULES[spec.name][0]
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        new, version = MODULES[module.__name__]
        warnings.warn(f"{module.__name__} is now {new}; the old path goes in {version}",
                      DeprecationWarning, stacklevel=2)
        module.__doc__ = f"Deprecated: {new} (removed in {version})."
        importlib.import_module(new)


_FINDER = MovedModules()


def install() -> None:
    """Put the finder first on ``sys.meta_path`` (once)."""
    if _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)
