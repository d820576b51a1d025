"""Every deprecated import path of hardneg, in one place, each with the version that removes it.

- :data:`MODULES`: old dotted module → ``(new module, removal version)``. A meta-path finder
  (:class:`MovedModules`, put first on ``sys.meta_path`` by :func:`install`, which ``import
  hardneg`` calls) serves ``import old`` with a module whose public names (the new module's
  ``__all__``) are the new module's, each access after one ``DeprecationWarning`` at the caller's
  line naming the new path. An old package's entry covers its submodules too
  (``hardneg.tiled.lse`` → ``hardneg.engines.tiled.lse``); a submodule that moved elsewhere has an
  entry of its own (``hardneg.tiled.choice`` → ``hardneg.engines.choice``), see :func:`new_name`.
- :data:`NAMES`: old dotted attribute → ``(new module, removal version)``: a module whose
  ``__getattr__`` calls :func:`moved_name` returns the new module's attribute of that name, after a
  ``DeprecationWarning``.

Other deprecations live with what they concern: the 0.2 modality plug-ins' adapter
(:mod:`hardneg.modalities.base`, refused from 0.4) and the old ``data.dataset`` names a modality
still serves (its ``dataset_aliases``).

>>> import warnings
>>> with warnings.catch_warnings(record=True) as caught:
...     warnings.simplefilter("always")
...     from hardneg.pipeline.evaluation import evaluate_encoder
...     from hardneg.tiled.lse import tiled_lse
>>> evaluate_encoder.__module__, tiled_lse.__module__
('hardneg.modalities.readouts', 'hardneg.engines.tiled.lse')
>>> for part in str(caught[0].message).split("; "):
...     print(part)
hardneg.pipeline.evaluation is now hardneg.modalities.readouts
the old path goes in 0.4 (import evaluate_encoder from hardneg.modalities.readouts)
>>> "hardneg.tiled.lse is now hardneg.engines.tiled.lse" in str(caught[1].message)
True
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import types
import warnings
from collections.abc import Sequence
from typing import Any

__all__ = ["MODULES", "NAMES", "MovedModules", "install", "moved_name", "new_name"]

#: old dotted module → (new module, the version that removes the old path); a package's entry
#: covers its submodules unless one has an entry of its own (:func:`new_name`)
MODULES: dict[str, tuple[str, str]] = {
    # 0.2's package of InfoGraph's losses: ``graphs`` names the graph modality only
    "hardneg.graphs": ("hardneg.infograph", "0.4"),
    "hardneg.graphs.objective": ("hardneg.infograph.objective", "0.4"),
    "hardneg.graphs.released": ("hardneg.infograph.released", "0.4"),
    # the engine's readouts belong to the modalities that use them
    "hardneg.pipeline.evaluation": ("hardneg.modalities.readouts", "0.4"),
    # every route of the loss lives in hardneg.engines (the chooser beside the engines it picks)
    "hardneg.tiled": ("hardneg.engines.tiled", "0.4"),
    "hardneg.tiled.choice": ("hardneg.engines.choice", "0.4"),
    "hardneg.tiled.gathered": ("hardneg.engines.gathered", "0.4"),
}

_CONFIG = ("CompareConfig", "ConfigError", "DataSection", "EvalSection", "LossConfig", "MocoConfig",
           "MocoSection", "ModelSection", "RunConfig", "SweepConfig", "TrainConfig")

#: old dotted attribute ``module.name`` → (the module that holds ``name`` now, the removal version)
NAMES: dict[str, tuple[str, str]] = {
    # the config vocabulary has one import path, hardneg.config
    **{f"hardneg.pipeline.config.{name}": ("hardneg.config", "0.4") for name in _CONFIG},
    **{f"hardneg.modalities.{name}": ("hardneg.config", "0.4") for name in ("DataSection", "EvalSection")},
    # a modality registers through hardneg.modalities only
    "hardneg.pipeline.register_modality": ("hardneg.modalities", "0.4"),
}


def new_name(old: str) -> tuple[str, str] | None:
    """``(new module, removal version)`` of an old module path of :data:`MODULES` or of a submodule
    below one (the longest listed prefix wins), else ``None``.

    Example:
        >>> new_name("hardneg.tiled.lse"), new_name("hardneg.tiled.choice"), new_name("hardneg.loss")
        (('hardneg.engines.tiled.lse', '0.4'), ('hardneg.engines.choice', '0.4'), None)
    """
    if old in MODULES:
        return MODULES[old]
    prefixes = [p for p in MODULES if old.startswith(p + ".")]
    if not prefixes:
        return None
    prefix = max(prefixes, key=len)
    new, version = MODULES[prefix]
    return new + old[len(prefix) :], version


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


def _is_submodule(package: str, name: str) -> bool:
    try:
        return importlib.util.find_spec(f"{package}.{name}") is not None
    except (ImportError, ValueError):
        return False


class _Forward(types.ModuleType):
    """A deprecated module: its public names are the new module's, each access with a warning;
    a submodule of the new package is served under the old path (itself deprecated)."""

    def __getattr__(self, name: str) -> Any:
        old = self.__dict__["__name__"]
        new, version = self.__dict__["_moved_to"]
        module = importlib.import_module(new)
        if name.startswith("__"):
            raise AttributeError(f"module {old!r} has no attribute {name!r}")
        if name not in getattr(module, "__all__", ()):
            if hasattr(module, "__path__") and not name.startswith("_") and _is_submodule(new, name):
                return importlib.import_module(f"{old}.{name}")
            raise AttributeError(f"module {old!r} has no attribute {name!r}")
        warnings.warn(f"{old} is now {new}; the old path goes in {version} (import {name} from {new})",
                      DeprecationWarning, stacklevel=2)
        return getattr(module, name)

    def __dir__(self) -> list[str]:
        return sorted(set(getattr(importlib.import_module(self.__dict__["_moved_to"][0]), "__all__", ())))


class MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds and loads the old module paths of :data:`MODULES` (before the file system is searched)."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: types.ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        found = new_name(fullname)
        if found is None:
            return None
        new = found[0]
        package = any(old.startswith(fullname + ".") for old in MODULES)
        if not package:  # an old package's submodule: a package if its new module is one
            try:
                spec = importlib.util.find_spec(new)
            except (ImportError, ValueError):
                return None
            if spec is None:
                return None  # no such module under the new path either: the usual ModuleNotFoundError
            package = spec.submodule_search_locations is not None
        return importlib.machinery.ModuleSpec(fullname, self, is_package=package)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        module = _Forward(spec.name)
        found = new_name(spec.name)
        assert found is not None  # find_spec answered for this name only
        module.__dict__["_moved_to"] = found
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        new, version = module.__dict__["_moved_to"]
        module.__doc__ = f"Deprecated: the old path of {new} (removed in {version})."
        module.__dict__["__all__"] = list(getattr(importlib.import_module(new), "__all__", ()))


_FINDER = MovedModules()


def install() -> None:
    """Put the finder first on ``sys.meta_path`` (once)."""
    if _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)
