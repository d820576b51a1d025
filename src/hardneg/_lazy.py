"""Names of a package imported on first use (PEP 562), so that importing the package stays cheap.

When the module behind a name needs an optional package that is not installed, the
``ModuleNotFoundError`` names the pip extra that installs it (:func:`hardneg._packages.extra_error`).

>>> import types
>>> pkg = types.ModuleType("pkg")
>>> pkg.__getattr__, pkg.__dir__ = lazy_names(vars(pkg), {"sqrt": "math"})
>>> pkg.__getattr__("sqrt")(4.0)
2.0
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, MutableMapping
from typing import Any

from hardneg._packages import extra_error

__all__ = ["lazy_names"]


def lazy_names(
    namespace: MutableMapping[str, Any], where: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` of a package whose name ``n`` lives in module ``where[n]``.

    A module path starting with ``.`` is relative to the package (``namespace["__name__"]``). The
    first access imports the module and caches the value in ``namespace``.
    """
    package = str(namespace.get("__name__", ""))

    def __getattr__(name: str) -> Any:
        if name not in where:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module = where[name]
        try:
            imported = importlib.import_module(package + module if module.startswith(".") else module)
        except ModuleNotFoundError as err:
            restated = extra_error(err, f"{package}.{name}")
            if restated is err:
                raise
            raise restated from err
        value = getattr(imported, name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(where))

    return __getattr__, __dir__
