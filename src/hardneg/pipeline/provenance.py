"""What produced a run: its resolved config, the code it ran, the data it read, the libraries.

Every run folder records ``provenance.json`` beside ``config.yaml``::

    {"config_sha256": "...",                  # sha256 of config.yaml's text
     "hardneg_version": "0.1.0",
     "source_sha256": "...",                  # digest of the "modules" below
     "modules": {"hardneg.loss": "...", ...}, # sha256 of each hardneg module the run imported
     "imports": {"my_pkg.modality": "...",    # digest of each module of the config's `imports:`
                 "my_utils": "..."},          # and of each local module they import, transitively
     "data": {"/abs/path/of/a/file": "..."},  # digest of each data file or folder the run read
     "libraries": {"python": "3.11.7", "torch": "...", "numpy": "...", ...}}

``modules`` lists the :mod:`hardneg` modules loaded when the run ended (what it actually ran), so
an edit of a module the run never imported (``hardneg.theory.tammes`` for an image run) changes
nothing. ``imports`` hashes the file of each module named in the config's ``imports:`` (for a
package, the files of its folder) and, for a module outside the standard library and
site-packages (a plug-in of one's own), the file of every module it imports from outside them,
transitively (:func:`import_files`: a plug-in's own ``utils`` too). ``data`` hashes the files and folders
the modality reports (:meth:`~hardneg.modalities.base.Modality.data_files`); embedded data
(bundled with a library, or generated) has none: its generator settings are the config's keys.

A group (``compare``, ``sweep``, ``reproduce``) reuses a finished run only when
:func:`stale_provenance` finds nothing: ``config.yaml`` and ``provenance.json`` both present, the
recorded ``config_sha256`` equal to the hash of ``config.yaml``'s text, and every recorded digest
and library version equal to today's; otherwise the run is trained again and the reason is named
("data file changed: <path>", "imported module changed: <name> (<file>)", ...).

Files are hashed by streaming 1 MiB chunks; digests are cached by ``(path, size, mtime_ns)`` within
the process, so checking every run of a group hashes each file once.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import os
import platform
import sys
import time
import warnings
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hardneg.config.schema import RunConfig

__all__ = [
    "LIBRARIES",
    "PROVENANCE_FILE",
    "data_digests",
    "file_digest",
    "import_digests",
    "import_files",
    "library_versions",
    "loaded_modules",
    "module_digest",
    "provenance",
    "read_provenance",
    "source_digest",
    "stale_provenance",
    "tree_digest",
]

PROVENANCE_FILE = "provenance.json"
LIBRARIES = ("torch", "numpy", "scikit-learn", "lightning")
"""The distributions whose versions a run records (with python's)."""

_CHUNK = 1 << 20
_MISSING = "missing"
_DIGESTS: dict[tuple[str, int, int], str] = {}
_SETTLED_NS = 2_000_000_000  # a file older than this is cached
_PACKAGE_ROOT = Path(__file__).resolve().parents[1]


def file_digest(path: str | Path) -> str:
    """SHA-256 of a file's bytes, streamed in 1 MiB chunks; cached by ``(path, size, mtime_ns)``
    unless the file changed in the last seconds (a rewrite within the clock's granularity could
    keep its size and time stamp: it is hashed again)."""
    p = Path(path)
    st = p.stat()
    key = (str(p.resolve()), st.st_size, st.st_mtime_ns)
    found = _DIGESTS.get(key)
    if found is None:
        h = hashlib.sha256()
        try:
            with p.open("rb") as f:
                while chunk := f.read(_CHUNK):
                    h.update(chunk)
        except OSError as err:  # a read that fails names no file: name the one being hashed
            raise OSError(err.errno, err.strerror, str(p)) from None
        found = h.hexdigest()
        if time.time_ns() - st.st_mtime_ns > _SETTLED_NS:
            _DIGESTS[key] = found
    return found


def _tree_files(folder: Path) -> list[Path]:
    """The files under ``folder`` (sorted), without ``__pycache__`` folders and ``*.pyc``."""
    out = []
    for base, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        out += [Path(base) / f for f in files if not f.endswith(".pyc")]
    return sorted(out)


def tree_digest(path: str | Path) -> str:
    """A file's :func:`file_digest`; for a folder, the SHA-256 of its files' relative paths and
    digests (sorted), so an added, removed, renamed or edited file changes it; ``"missing"`` when
    nothing is there."""
    p = Path(path)
    if p.is_file():
        return file_digest(p)
    if not p.is_dir():
        return _MISSING
    h = hashlib.sha256()
    for f in _tree_files(p):
        h.update(f.relative_to(p).as_posix().encode() + b"\0" + file_digest(f).encode() + b"\0")
    return h.hexdigest()


@lru_cache(maxsize=1)
def source_digest() -> str:
    """SHA-256 of the package's ``*.py`` and ``*.yaml`` files (relative path and bytes, sorted):
    the code of the whole package (the reproduction report prints it)."""
    h = hashlib.sha256()
    for path in sorted(p for p in _PACKAGE_ROOT.rglob("*") if p.suffix in (".py", ".yaml") and p.is_file()):
        h.update(path.relative_to(_PACKAGE_ROOT).as_posix().encode())
        h.update(b"\0")
        h.update(path.read_bytes())
        h.update(b"\0")
    return h.hexdigest()


@lru_cache(maxsize=4096)
def _module_file(name: str) -> Path:
    """The source file of the :mod:`hardneg` module ``name`` (found without importing it)."""
    rel = _PACKAGE_ROOT.joinpath(*name.split(".")[1:])
    package = rel / "__init__.py"
    return package if package.is_file() else rel.with_suffix(".py")


_MODULE_DIGESTS: dict[str, tuple[int, int, str]] = {}


def module_digest(name: str) -> str:
    """SHA-256 of the source file of the :mod:`hardneg` module ``name`` (``"missing"`` when gone).

    Kept per name with the file's size and time stamp once the file has settled (as
    :func:`file_digest`), so checking the ~150 modules of each of a reproduction's 250 reused runs
    costs one ``stat`` per module, not a path resolution and a lookup."""
    path = _module_file(name)
    try:
        st = path.stat()
    except OSError:
        return _MISSING
    found = _MODULE_DIGESTS.get(name)
    if found is not None and found[:2] == (st.st_size, st.st_mtime_ns):
        return found[2]
    digest = file_digest(path)
    if time.time_ns() - st.st_mtime_ns > _SETTLED_NS:
        _MODULE_DIGESTS[name] = (st.st_size, st.st_mtime_ns, digest)
    return digest


def loaded_modules() -> list[str]:
    """The :mod:`hardneg` modules of this process that come from the package's source files."""
    names = []
    for name, module in list(sys.modules.items()):
        if name == "hardneg" or name.startswith("hardneg."):
            file = getattr(module, "__file__", None)
            if file and Path(file).resolve() == _module_file(name).resolve():
                names.append(name)
    return sorted(names)


def _is_hardneg(name: str) -> bool:
    return name == "hardneg" or name.startswith("hardneg.")


@lru_cache(maxsize=1)
def _library_folders() -> tuple[Path, ...]:
    """The folders of the standard library and of installed distributions (site-packages)."""
    import site
    import sysconfig

    paths = sysconfig.get_paths()
    found = [paths[key] for key in ("stdlib", "platstdlib", "purelib", "platlib") if key in paths]
    found += [*site.getsitepackages(), site.getusersitepackages()]
    return tuple(dict.fromkeys(Path(f).resolve() for f in found))


def _in_libraries(path: Path) -> bool:
    real = path.resolve()
    return any(real == folder or folder in real.parents for folder in _library_folders())


def _located(name: str) -> list[Path]:
    """The file of the module ``name``, or the folder(s) of a package (``[]``: not found)."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return []
    if spec is None:
        return []
    if spec.submodule_search_locations:
        return [Path(f) for f in sorted(spec.submodule_search_locations)]
    return [Path(spec.origin)] if spec.origin and Path(spec.origin).is_file() else []


def _search_path(names: list[str]) -> list[str]:
    """Where the local modules imported by ``names`` are looked for: the folder holding each one's
    top-level package or module, then the entries of ``sys.path`` outside the libraries."""
    folders = []
    for name in names:
        top = _located(name.split(".")[0])
        if top:
            folders.append(top[0].resolve().parent)
    folders += [Path(entry or ".").resolve() for entry in sys.path]
    return [str(f) for f in dict.fromkeys(folders) if f.is_dir() and not _in_libraries(f)]


def _local_imports(names: list[str]) -> dict[str, Path]:
    """Every module the modules ``names`` import, transitively, from outside the standard library,
    site-packages and hardneg: read from their code by :class:`modulefinder.ModuleFinder`, which
    sees every ``import`` statement (those inside functions too), not a module imported by a name
    computed at run time (``importlib.import_module(name)``)."""
    from modulefinder import ModuleFinder

    finder = ModuleFinder(path=_search_path(names), excludes=["hardneg"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a SyntaxWarning of the user's code is not the run's
        for name in names:
            with contextlib.suppress(ImportError, SyntaxError, ValueError):
                finder.import_hook(name)
    found = {}
    for name, module in sorted(finder.modules.items()):
        file = getattr(module, "__file__", None)
        if file and Path(file).is_file() and not _in_libraries(Path(file)):
            found[name] = Path(file)
    return found


def import_files(names: list[str]) -> dict[str, list[Path]]:
    """The files behind a config's ``imports:`` ``names``, by module name: each named module's file
    (a package: its folder; a :mod:`hardneg` module: its source file; ``[]``: not found), then, for
    the named modules outside the standard library and site-packages, the file of every module
    they import from outside them and hardneg, transitively (:func:`_local_imports`; none inside a
    named package's folder, which is hashed whole)."""
    out: dict[str, list[Path]] = {}
    local = []
    for name in names:
        out[name] = [_module_file(name)] if _is_hardneg(name) else _located(name)
        if not _is_hardneg(name) and out[name] and not _in_libraries(out[name][0]):
            local.append(name)
    whole = [f.resolve() for paths in out.values() for f in paths if f.is_dir()]
    for name, file in _local_imports(local).items() if local else ():
        if name not in out and not any(folder in file.resolve().parents for folder in whole):
            out[name] = [file]
    return out


def _import_digest(name: str, paths: list[Path]) -> str:
    if _is_hardneg(name):
        return module_digest(name)  # as in ``modules``
    if not paths:
        return _MISSING
    if len(paths) == 1 and paths[0].is_file():
        return tree_digest(paths[0])
    return hashlib.sha256("\0".join(tree_digest(f) for f in paths).encode()).hexdigest()


def import_digests(names: list[str]) -> dict[str, str]:
    """The digest of each module of :func:`import_files` (a config's ``imports:`` and the local
    modules they import): its file, or for a named package the files of its folder (``"missing"``
    when it is not found). A :mod:`hardneg` module is hashed as in ``modules``."""
    return {name: _import_digest(name, paths) for name, paths in import_files(names).items()}


def data_digests(cfg: RunConfig) -> dict[str, str]:
    """The digest of each data file or folder the run of ``cfg`` reads (absolute path → digest),
    as its modality reports them; ``{}`` for embedded data."""
    from hardneg.modalities import get_modality

    paths = get_modality(cfg.data.dataset).data_files(cfg)
    return {str(Path(p).expanduser().resolve()): tree_digest(Path(p).expanduser()) for p in paths}


@lru_cache(maxsize=1)
def _library_versions() -> tuple[tuple[str, str], ...]:
    from importlib.metadata import PackageNotFoundError, version

    found = [("python", platform.python_version())]
    for dist in LIBRARIES:
        try:
            found.append((dist, version(dist)))
        except PackageNotFoundError:
            found.append((dist, "not installed"))
    return tuple(found)


def library_versions() -> dict[str, str]:
    """Versions of python and of :data:`LIBRARIES` (``"not installed"`` when absent)."""
    return dict(_library_versions())


def _combined(digests: dict[str, str]) -> str:
    return hashlib.sha256(json.dumps(digests, sort_keys=True).encode()).hexdigest()


def provenance(config_text: str, cfg: RunConfig | None = None) -> dict[str, Any]:
    """The provenance of a run whose resolved config is ``config_text`` (the YAML of ``config.yaml``)
    and ``cfg``: config hash, code of the :mod:`hardneg` modules loaded now, ``imports:`` modules,
    data files and library versions (``cfg=None``: no imports and no data)."""
    from hardneg import __version__

    modules = {name: module_digest(name) for name in loaded_modules()}
    return {
        "config_sha256": hashlib.sha256(config_text.encode()).hexdigest(),
        "hardneg_version": __version__,
        "source_sha256": _combined(modules),
        "modules": modules,
        "imports": import_digests(list(cfg.imports)) if cfg is not None else {},
        "data": data_digests(cfg) if cfg is not None else {},
        "libraries": library_versions(),
    }


def read_provenance(run_dir: str | Path) -> dict[str, Any] | None:
    """A run folder's recorded provenance (``None`` when it has none or it is unreadable)."""
    path = Path(run_dir) / PROVENANCE_FILE
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _recorded(saved: dict[str, Any], key: str) -> dict[str, str]:
    value = saved.get(key)
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {}


def _config_reasons(run: Path, saved: dict[str, Any]) -> list[str]:
    path = run / "config.yaml"
    try:
        text = path.read_text()
    except OSError:
        return [f"config.yaml: missing in '{run}' (the run's config is not known)"]
    if saved.get("config_sha256") != hashlib.sha256(text.encode()).hexdigest():
        return ["config.yaml: its text does not match the config_sha256 recorded in provenance.json"]
    return []


def _code_reasons(saved: dict[str, Any]) -> list[str]:
    modules = _recorded(saved, "modules")
    if not modules:
        return ["hardneg code: not recorded (a run written before provenance.json listed its modules)"]
    changed = sorted(name for name, digest in modules.items() if module_digest(name) != digest)
    return [f"hardneg code changed: {name}" for name in changed]


def _imports_reasons(saved: dict[str, Any], cfg: RunConfig) -> list[str]:
    if "imports" not in saved:
        return ["imported modules: not recorded"]
    recorded = _recorded(saved, "imports")
    files = import_files(list(cfg.imports))
    now = {name: _import_digest(name, paths) for name, paths in files.items()}
    reasons = []
    for name in sorted(set(recorded) | set(now)):
        if recorded.get(name) != now.get(name):
            where = (", ".join(map(str, files[name])) or "not found") if name in files else None
            reasons.append(f"imported module changed: {name} ({where or 'no longer imported'})")
    return reasons


def _data_reasons(saved: dict[str, Any], cfg: RunConfig) -> list[str]:
    if "data" not in saved:
        return ["data files: not recorded"]
    recorded = _recorded(saved, "data")
    now = data_digests(cfg)
    return [f"data file changed: {path}" for path in sorted(set(recorded) | set(now))
            if recorded.get(path) != now.get(path)]


def _library_reasons(saved: dict[str, Any]) -> list[str]:
    recorded = _recorded(saved, "libraries")
    return [f"library version changed: {name} {recorded.get(name)} -> {version}"
            for name, version in library_versions().items() if recorded.get(name) != version]


def stale_provenance(run_dir: str | Path, cfg: RunConfig | None = None) -> list[str]:
    """Why a run's recorded results may not be those of ``cfg`` run today: ``[]`` only when
    ``config.yaml`` and ``provenance.json`` both exist, the recorded config hash is that of
    ``config.yaml``'s text, and the recorded code, ``imports:`` modules, data files (``cfg`` given)
    and library versions are today's."""
    run = Path(run_dir)
    saved = read_provenance(run)
    if saved is None:
        return [f"provenance.json: missing or unreadable in '{run}' (what produced the run is not known)"]
    reasons = _config_reasons(run, saved) + _code_reasons(saved)
    if cfg is not None:
        reasons += _imports_reasons(saved, cfg) + _data_reasons(saved, cfg)
    return reasons + _library_reasons(saved)
