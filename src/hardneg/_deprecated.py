"""Every deprecated import path of hardneg, in one place, each with the version that removes it.

- :data:`MODULES`: old dotted module → ``(new module, removal version)``. A meta-path finder
  (:class:`MovedModules`, installed by ``import hardneg``) serves ``import old`` with a module whose
  public names (the new module's ``__all__``) are the new module's, each access after one
  ``DeprecationWarning`` at the caller's line naming the new path; an old package's submodules are
  entries of their own.
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
>>> evaluate_encoder.__module__
'hardneg.modalities.readouts'
>>> for part in str(caught[0].message).split("; "):
...     print(part)
hardneg.pipeline.evaluation is now hardneg.modalities.readouts
the old path goes in 0.4 (import evaluate_encoder from hardneg.modalities.readouts)
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
    # 0.2's package of InfoGraph's losses: ``graphs`` names the graph modality only
    "hardneg.graphs": ("hardneg.infograph", "0.4"),
    "hardneg.graphs.objective": ("hardneg.infograph.objective", "0.4"),
    "hardneg.graphs.released": ("hardneg.infograph.released", "0.4"),
    # the engine's readouts belong to the modalities that use them
    "hardneg.pipeline.evaluation": ("hardneg.modalities.readouts", "0.4"),
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
    """A deprecated module: its public names are the new module's, each access with a warning."""

    def __getattr__(self, name: str) -> Any:
        old = self.__dict__["__name__"]
        new, version = MODULES[old]
        module = importlib.import_module(new)
        if name.startswith("__") or name not in getattr(module, "__all__", ()):
            raise AttributeError(f"module {old!r} has no attribute {name!r}")
        warnings.warn(f"{old} is now {new}; the old path goes in {version} (import {name} from {new})",
                      DeprecationWarning, stacklevel=2)
        return getattr(module, name)

    def __dir__(self) -> list[str]:
        return dir(importlib.import_module(self.__dict__["_new"]))


class MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds and loads the old module paths of :data:`MODULES` (before the file system is searched)."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: types.ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in MODULES:
            return None
        package = any(old.startswith(fullname + ".") for old in MODULES)
        return importlib.machinery.ModuleSpec(fullname, self, is_package=package)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        return _Forward(spec.name)

    def exec_module(self, module: types.ModuleType) -> None:
        new, version = MODULES[module.__name__]
        module.__doc__ = f"Deprecated: the old path of {new} (removed in {version})."
        module.__dict__["__all__"] = list(getattr(importlib.import_module(new), "__all__", ()))


_FINDER = MovedModules()


def install() -> None:
    """Put the finder first on ``sys.meta_path`` (once)."""
    if _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)
