"""The run folder: its layout, the writers of its files, resuming into it.

A run folder holds::

    .hardneg-run           the marker: made by hardneg (kind and version), what --force may delete
    config.yaml            the resolved config (what --resume and `hardneg evaluate` read)
    provenance.json        hashes of the config, the code and data the run read; library versions
    metrics.json           the results: evaluation, online kNN curve, timing
    metrics.csv            per-epoch history (loss and loss diagnostics, β, learning rate): written
                           before every checkpoint (:mod:`hardneg.pipeline.history`)
    eval.csv               evaluation metrics (linear / kNN / mean classifier / k-wise)
    features.npz           test-set backbone features `features` (n, d) float32 and `labels`
                           (n,) int64: the input of `hardneg theory report RUN`
    summary.md             a short human-readable summary
    vocab.json             the vocabulary (text modalities)
    derived.json           metrics `hardneg reproduce` derives from features.npz
    checkpoints/           last.ckpt (every epoch), epochNNN.ckpt, interrupted.ckpt (a damaged
                           one set aside as <name>.damaged)
    logs/tensorboard/      step-level values (when TensorBoard is installed): event files, hparams.yaml
    figures/               cosine histograms, hardest negatives (data with pictures), loss (and kNN) curves

Every file is written atomically (:mod:`hardneg._io`). ``hardneg compare`` and ``hardneg sweep``
use the same writers (:func:`csv_text`, :func:`timing_lines`, :func:`load_result`).

``--force`` deletes these files one by one (:data:`RUN_FILES`, :func:`clear_folder`), and only in a
folder that holds nothing else, in any subfolder: a file hardneg did not write (``logs/notes.txt``,
``figures/paper_fig.pdf``) makes it refuse, naming the file, and nothing is deleted. A run that
failed before training leaves only :data:`START_FILES`; the same command takes such a folder again
without ``--force`` (:func:`failed_start`).
"""

from __future__ import annotations

import contextlib
import errno
import io
import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from hardneg._io import PARTIAL_SUFFIX, atomic_write_bytes, atomic_write_text
from hardneg.config import ConfigError, RunConfig
from hardneg.pipeline.config import flat_config, load_config, with_overrides
from hardneg.pipeline.history import HISTORY_FILE, csv_text, read_history

__all__ = [
    "GROUP_MARKER",
    "RUN_MARKER",
    "FolderLock",
    "NotOurs",
    "RunExists",
    "RunLocked",
    "RunResult",
    "Survey",
    "changed_keys",
    "clear_folder",
    "csv_text",
    "failed_start",
    "forget_failed_start",
    "is_marked",
    "load_result",
    "prepare_run_dir",
    "read_json",
    "reclaim_folder",
    "resume_free",
    "run_dir_for",
    "run_lock",
    "survey",
    "timing_lines",
    "unknown_entries",
    "write_features",
    "write_marker",
    "write_outputs",
]

# Keys that may differ between the saved config and the one given with --resume.
_RESUME_FREE = {"train.progress", "train.threads", "out_dir", "eval"}


def resume_free(key: str) -> bool:
    """Whether the dotted ``key`` may differ between a run's saved config and its ``--resume``
    (``train.progress``, ``train.threads``, ``out_dir``, ``eval.*``): not part of the run's identity."""
    return key in _RESUME_FREE or key.split(".")[0] in _RESUME_FREE


RUN_MARKER = ".hardneg-run"  # written in every run folder hardneg creates: {"kind": "run", "version": ...}
GROUP_MARKER = ".hardneg-group"  # in every compare / sweep folder: {"kind": "compare" | "sweep", ...}
# What hardneg writes in a run folder, folder by folder (the module docstring says what each file
# is): the names of the files of each folder, relative to the run folder ("" is the folder itself).
# --force deletes these files (and atomic writes' temporaries) and nothing else.
RUN_FILES: dict[str, re.Pattern[str]] = {
    "": re.compile(r"\.hardneg-run|config\.yaml|provenance\.json|metrics\.json|metrics\.csv|eval\.csv"
                   r"|features\.npz|summary\.md|vocab\.json"
                   r"|derived\.json"),  # metrics `hardneg reproduce` derives (hardneg.reproduce.derived)
    "checkpoints": re.compile(r"(?:last|epoch\d+|interrupted)(?:-v\d+)?\.ckpt(?:\.damaged)?"),
    "logs": re.compile(r"(?!)"),  # the tensorboard folder only
    "logs/tensorboard": re.compile(r"events\.out\.tfevents\..+|hparams\.yaml"),
    "figures": re.compile(r"(?:cosine_histograms|hardest_negatives|loss|knn_vs_epochs)\.png"),
}
# The top-level names of a group folder (compare / sweep); beside them, one folder per label holding
# ``seed<k>`` run folders and their lock files. A strategy may not be named after one of them.
GROUP_ENTRIES = frozenset({
    GROUP_MARKER, "compare.yaml", "sweep.yaml", "results.csv", "table.csv", "table.md",
    "results.json", "summary.md", "figures",
})
GROUP_FILES: dict[str, re.Pattern[str]] = {
    "": re.compile("|".join(re.escape(name) for name in sorted(GROUP_ENTRIES - {"figures"}))),
    "figures": re.compile(r"(?:accuracy|accuracy_vs_.+|cosine_histograms|knn_vs_epochs)\.png"),
}
# What `hardneg train` writes before training starts (the vocabulary once the data is read): a
# folder holding only these (its marker among them) is a run that failed before training,
# reclaimed without --force.
START_FILES = frozenset({RUN_MARKER, "config.yaml", "provenance.json", "vocab.json"})
_SEED = re.compile(r"seed\d+")
_SEED_LOCK = re.compile(r"\.seed\d+\.lock")


class RunExists(FileExistsError):
    """The run folder already holds a run and neither resume nor force was asked."""


class RunLocked(RunExists):
    """Another live process is writing the run folder (it holds the folder's lock)."""


class NotOurs(RunExists):
    """``--force`` was asked to delete a folder hardneg did not create (or one holding other files)."""


_HELD: dict[Path, int] = {}  # the folders this process holds the write lock of (real path -> count)


def _try_lock(fd: int, how: int) -> bool:
    import fcntl

    try:
        fcntl.flock(fd, how | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _open_folder(folder: Path) -> int | None:
    """A read-only descriptor of ``folder`` to ``flock``, or ``None`` when it cannot be read."""
    try:
        return os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except PermissionError:  # an ancestor this user may not list: nobody deletes it through us
        return None


def _holder(fd: int) -> str:
    return os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"


def _lock_file(real: Path) -> Path:
    return real.parent / f".{real.name}.lock"


def _lock_holder(real: Path) -> str:
    """The PID recorded in the write lock of the folder ``real`` (``"unknown"`` when unreadable)."""
    if real.parent == real:
        return "unknown"
    try:
        fd = os.open(_lock_file(real), os.O_RDONLY)
    except OSError:
        return "unknown"
    try:
        return _holder(fd)
    finally:
        os.close(fd)


def _writer_below(real: Path) -> str:
    """The PID of a hardneg process writing a folder inside ``real``: the holder of a write lock
    (``.<name>.lock``) found inside it, links not followed (``"unknown"`` when none is held)."""
    import fcntl

    for base, _, files in os.walk(real):
        for name in sorted(n for n in files if n.startswith(".") and n.endswith(".lock")):
            try:
                fd = os.open(Path(base) / name, os.O_RDONLY)
            except OSError:
                continue
            try:
                if not _try_lock(fd, fcntl.LOCK_SH):
                    return _holder(fd)
            finally:
                os.close(fd)
    return "unknown"


@dataclass
class FolderLock:
    """The locks :func:`run_lock` holds on one folder: ``path`` as given, ``real`` its resolved path."""

    path: Path
    real: Path
    _tree: int = field(repr=False)

    @contextlib.contextmanager
    def exclusive(self) -> Iterator[None]:
        """Hold the folder's tree lock exclusively: no other hardneg process writes inside it."""
        import fcntl

        if not _try_lock(self._tree, fcntl.LOCK_EX):
            fcntl.flock(self._tree, fcntl.LOCK_SH)  # a failed conversion may have dropped the shared one
            raise RunLocked(
                f"folder '{self.path}' holds a run another hardneg process is writing (PID "
                f"{_writer_below(self.real)}); wait for it to finish or stop it, or use --out DIR for "
                "another folder"
            )
        try:
            yield
        finally:
            fcntl.flock(self._tree, fcntl.LOCK_SH)


@contextlib.contextmanager
def run_lock(run_dir: str | Path) -> Iterator[FolderLock]:
    """Hold the locks of a folder while writing it: one writer per folder, nothing deleted under a
    writer.

    Every lock is an OS file lock (``flock``), released by the OS when its holder exits however it
    dies, and taken without waiting on the folder's resolved path (symlinks resolved: two ``--out``
    naming one folder through a link share its locks):

    - the **write lock**: exclusive, on ``.<name>.lock`` beside the folder (outside it), holding
      the writer's PID; a second writer of the folder gets :class:`RunLocked` naming that PID;
    - the **tree locks**: shared, on the folder itself and on each of its ancestors (their directory
      descriptors: no file is created). Deleting a folder (:func:`clear_folder`, ``--force``)
      converts its own to exclusive, which fails while any writer works at or below it, and
      makes a writer starting below it fail; it also refuses while a writer of an ancestor (a
      ``compare`` or ``sweep`` into a folder above) holds that ancestor's write lock.

    The folder is created (and removed again on exit if it is still empty); the yielded
    :class:`FolderLock` is what :func:`clear_folder` needs. Locks of a shared file system follow its
    ``flock`` semantics; ancestors this user cannot list are not locked.
    """
    import fcntl

    run = Path(run_dir)
    for folder in (run, *run.parents):
        if folder.exists() and not folder.is_dir():
            what = "Not a directory (the output folder is a file)" if folder == run else "Not a directory"
            raise NotADirectoryError(20, what, str(folder))
    real = run.resolve()
    if real.parent == real:
        raise NotOurs(f"'{run}' is the root of the file system, not a folder hardneg may write into")
    fds: list[int] = []
    try:
        try:
            real.parent.mkdir(parents=True, exist_ok=True)
            fds.append(os.open(_lock_file(real), os.O_RDWR | os.O_CREAT, 0o644))
        except OSError as err:  # a read-only or full disk: name the run folder, not the lock file
            raise OSError(err.errno, err.strerror, str(run)) from None
        if not _try_lock(fds[0], fcntl.LOCK_EX):
            raise RunLocked(
                f"run folder '{run}' is being written by another hardneg process (PID {_holder(fds[0])}); "
                "wait for it to finish or stop it, or use --out DIR for another folder"
            )
        os.ftruncate(fds[0], 0)
        os.pwrite(fds[0], f"{os.getpid()}\n".encode(), 0)
        for folder in reversed(real.parents):  # the root first
            fd = _open_folder(folder)
            if fd is None:
                continue
            fds.append(fd)
            if not _try_lock(fd, fcntl.LOCK_SH):
                raise RunLocked(
                    f"folder '{folder}', which holds '{run}', is being deleted by another hardneg process "
                    f"(--force, PID {_lock_holder(folder)}); try again when it is done"
                )
        created = not real.exists()
        try:
            real.mkdir(exist_ok=True)
        except OSError as err:
            raise OSError(err.errno, err.strerror, str(run)) from None
        tree = os.open(real, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        fds.append(tree)
        fcntl.flock(tree, fcntl.LOCK_SH)  # only a writer of this folder (us) converts it
        _HELD[real] = _HELD.get(real, 0) + 1
        try:
            yield FolderLock(run, real, tree)
        finally:
            _HELD[real] -= 1
            if not _HELD[real]:
                del _HELD[real]
            if created and real.is_dir() and not any(real.iterdir()):
                real.rmdir()  # nothing was written: leave no trace
    finally:
        for fd in reversed(fds):
            os.close(fd)  # releases the locks


def write_marker(folder: str | Path, kind: str) -> Path:
    """Mark ``folder`` as made by hardneg: :data:`RUN_MARKER` (``kind="run"``) or
    :data:`GROUP_MARKER` (``"compare"`` / ``"sweep"``), holding the kind and the package version."""
    from hardneg import __version__

    name = RUN_MARKER if kind == "run" else GROUP_MARKER
    return atomic_write_text(Path(folder) / name, json.dumps({"kind": kind, "version": __version__}) + "\n")


def _temporary(name: str) -> bool:
    """A temporary file of an atomic write (:func:`hardneg._io.atomic_open`)."""
    return name.startswith(".") and name.endswith(PARTIAL_SUFFIX)


def is_marked(folder: str | Path, kind: str) -> bool:
    """Whether ``folder`` is a ``kind`` (``"run"`` / ``"group"``) folder made by hardneg: it holds
    the marker, or (made before markers, by hardneg 0.2.0 or earlier) a run's ``config.yaml`` and
    ``provenance.json`` / a group's ``compare.yaml`` or ``sweep.yaml``."""
    root = Path(folder)
    if kind == "run":
        legacy = all(_is_file(root / n) for n in ("config.yaml", "provenance.json"))
        return _is_file(root / RUN_MARKER) or legacy
    return any(_is_file(root / n) for n in (GROUP_MARKER, "compare.yaml", "sweep.yaml"))


def _is_file(path: Path) -> bool:
    return path.is_file() and not path.is_symlink()


@dataclass
class Survey:
    """A folder, file by file: ``files`` hardneg wrote, the ``folders`` holding them (deepest first,
    the surveyed folder itself not included) and the ``foreign`` paths (relative to the surveyed
    folder, sorted) hardneg does not write there."""

    files: list[Path] = field(default_factory=list)
    folders: list[Path] = field(default_factory=list)
    foreign: list[str] = field(default_factory=list)


def survey(folder: str | Path, kind: str) -> Survey:
    """What ``--force`` may delete in ``folder`` as a ``kind`` (``"run"`` / ``"group"``) folder.

    Every file is checked, in every subfolder (links are never followed: a link is foreign): a run
    folder holds :data:`RUN_FILES` in their folders; a group folder :data:`GROUP_FILES` and, in
    each other folder (a label), ``seed<k>`` run folders and their ``.seed<k>.lock`` files; any
    folder may hold the temporaries of atomic writes. A folder that is not marked as hardneg's
    (:func:`is_marked`) is foreign as a whole: all its entries are.
    """
    root, found = Path(folder), Survey()
    if not is_marked(root, kind):
        found.foreign = sorted(e.name for e in root.iterdir())
    elif kind == "run":
        _survey(root, RUN_FILES, found, "")
    else:
        _survey(root, GROUP_FILES, found, "", labels=True)
    return found


def _survey(folder: Path, layout: dict[str, re.Pattern[str]], found: Survey, shown: str, rel: str = "",
            *, labels: bool = False) -> None:
    """Sort the entries of ``folder`` (``rel`` inside the layout's root, ``shown`` before its names in
    messages) into ``found``; with ``labels``, an unknown folder is a group's label folder."""
    for entry in sorted(folder.iterdir()):
        name = f"{rel}{entry.name}"
        if entry.is_symlink():
            found.foreign.append(f"{shown}{name}")
        elif entry.is_dir() and name in layout:
            _survey(entry, layout, found, shown, f"{name}/")
            found.folders.append(entry)
        elif entry.is_dir() and labels and not rel:
            _survey_label(entry, found, f"{shown}{name}/")
        elif entry.is_dir():
            found.foreign.append(f"{shown}{name}")
        elif entry.is_file() and (_temporary(entry.name) or layout[rel.rstrip("/")].fullmatch(entry.name)):
            found.files.append(entry)
        else:
            found.foreign.append(f"{shown}{name}")


def _survey_label(label: Path, found: Survey, shown: str) -> None:
    """A group's label folder: ``seed<k>`` run folders (each surveyed as a run) and their lock files."""
    for member in sorted(label.iterdir()):
        if member.is_symlink():
            found.foreign.append(f"{shown}{member.name}")
        elif member.is_dir() and _SEED.fullmatch(member.name):
            run = survey(member, "run")
            found.files += run.files
            found.folders += [*run.folders, member]
            found.foreign += [f"{shown}{member.name}/{name}" for name in run.foreign]
        elif member.is_file() and _SEED_LOCK.fullmatch(member.name):
            found.files.append(member)
        else:
            found.foreign.append(f"{shown}{member.name}")
    found.folders.append(label)


def unknown_entries(folder: str | Path, kind: str) -> list[str]:
    """What stops ``--force`` from deleting ``folder`` as a ``kind`` (``"run"`` or ``"group"``)
    folder: the paths (relative to ``folder``, in every subfolder) hardneg does not write there, or
    ``[]`` (:func:`survey`). A folder that is not hardneg's reports all its entries."""
    return survey(folder, kind).foreign


def failed_start(folder: str | Path) -> bool:
    """Whether ``folder`` holds a run that stopped before training: its :data:`RUN_MARKER` and
    nothing but :data:`START_FILES` (no checkpoint, no result), so that the same command may
    take the folder again without ``--force``."""
    root = Path(folder)
    if not _is_file(root / RUN_MARKER):
        return False
    found = survey(root, "run")
    return not found.foreign and all(
        _temporary(f.name) or (f.parent == root and f.name in START_FILES) for f in found.files
    )


def _refuse_special(lock: FolderLock) -> None:
    """``--force`` never deletes the file system root, the current folder, the home folder or a
    folder holding one of them."""
    real = lock.real
    special = [("the current folder", Path.cwd().resolve())]
    with contextlib.suppress(RuntimeError, KeyError):  # no home folder known
        special.append(("the home folder", Path.home().resolve()))
    why = "the root of the file system" if real.parent == real else None
    for what, path in special:
        if why is None and real == path:
            why = what
        elif why is None and real in path.parents:
            why = f"a folder holding {what} ({path})"
    if why is not None:
        raise NotOurs(
            f"--force refuses to delete '{lock.path}': it is {why}; use --out DIR for another folder"
        )


def _refuse_writer_above(lock: FolderLock) -> None:
    """No other process holds the write lock of a folder holding this one (a group writing it)."""
    import fcntl

    for folder in lock.real.parents:
        path = _lock_file(folder) if folder.parent != folder else None
        if path is None or folder in _HELD or not path.is_file():
            continue
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError:
            continue
        try:
            if not _try_lock(fd, fcntl.LOCK_SH):
                raise RunLocked(
                    f"--force refuses to delete '{lock.path}': it is inside '{folder}', which another "
                    f"hardneg process is writing (PID {_holder(fd)}); wait for it to finish or stop it"
                )
        finally:
            os.close(fd)


def clear_folder(lock: FolderLock, kind: str) -> None:
    """Empty the locked folder for ``--force``, file by file: only a ``kind`` (``"run"`` /
    ``"group"``) folder hardneg made holding nothing but what hardneg writes, in every subfolder
    (:func:`survey`; else :class:`NotOurs` naming the folder and the files it does not know), never
    the root, the current or the home folder, and only while no other hardneg process writes at,
    below or above it (:class:`RunLocked`). Only the files hardneg wrote are deleted, then the
    folders they leave empty; a file put there meanwhile stays, with its folder. The folder itself
    stays (its lock with it).
    """
    _refuse_special(lock)
    with lock.exclusive():
        _refuse_writer_above(lock)
        found = survey(lock.real, kind)
        if found.foreign:
            unknown = found.foreign
            shown = ", ".join(unknown[:8]) + (f" and {len(unknown) - 8} more" if len(unknown) > 8 else "")
            what = "run" if kind == "run" else "compare / sweep"
            marker = RUN_MARKER if kind == "run" else GROUP_MARKER
            why = (
                f"it holds what a {what} folder made by hardneg does not ({shown})"
                if is_marked(lock.real, kind)
                else f"it is not a {what} folder made by hardneg (no {marker} marker) and holds {shown}"
            )
            raise NotOurs(
                f"--force refuses to delete '{lock.path}': {why}; hardneg deletes only what it wrote: "
                "move them away or use --out DIR for another folder"
            )
        for file in found.files:
            file.unlink(missing_ok=True)
        for folder in found.folders:  # deepest first
            try:
                folder.rmdir()
            except OSError as err:
                if err.errno not in (errno.ENOTEMPTY, errno.EEXIST):
                    raise


def forget_failed_start(lock: FolderLock) -> None:
    """Empty the locked run folder when it holds a run that failed before training
    (:func:`failed_start`), so that nothing blocks the same command; any other folder, and any
    failure to delete (which must not hide the run's own error), leaves it as it is."""
    with contextlib.suppress(OSError):  # RunExists and NotOurs are OSErrors too
        if failed_start(lock.real):
            clear_folder(lock, "run")


def reclaim_folder(folder: Path, kind: str, *, force: bool, lock: FolderLock | None, used: str) -> None:
    """A used ``folder`` (not empty) is refused with :class:`RunExists` saying ``used``, unless
    ``force``, or unless it holds a run that failed before training (:func:`failed_start`): then
    :func:`clear_folder` empties it under ``lock`` (the caller's :func:`run_lock` of ``folder``;
    taken here when ``None``). An empty or new folder passes."""
    if not (folder.exists() and any(folder.iterdir())):
        return
    if not force and not (kind == "run" and failed_start(folder)):
        raise RunExists(used)
    if lock is None:
        with run_lock(folder) as own:
            clear_folder(own, kind)
    else:
        clear_folder(lock, kind)


@dataclass
class RunResult:
    """What a finished run produced (``history`` in ``metrics.csv``, the rest in ``metrics.json``)."""

    run_dir: Path
    history: list[dict[str, float]]
    eval: dict[str, float]
    online: list[dict[str, float]] = field(default_factory=list)
    timing: dict[str, float] = field(default_factory=dict)
    test_features: torch.Tensor | None = field(default=None, repr=False)
    test_labels: torch.Tensor | None = field(default=None, repr=False)

    def to_json(self) -> dict[str, Any]:
        """The content of ``metrics.json`` (the history has its own file, ``metrics.csv``)."""
        return {"eval": self.eval, "online_knn": self.online, "timing": self.timing}


def run_dir_for(cfg: RunConfig, out: str | Path | None = None) -> Path:
    """``out`` if given (``~`` expanded), else ``<cfg.out_dir>/<cfg.name>`` (the config expanded
    ``out_dir``'s): one folder for every writer of the run, Lightning's included."""
    return Path(out).expanduser() if out is not None else Path(cfg.out_dir) / cfg.name


def _check_resume_config(saved: RunConfig, new: RunConfig) -> None:
    a, b = flat_config(saved), flat_config(new)
    diff = [
        k
        for k in sorted(a)
        if a[k] != b.get(k) and not resume_free(k)
    ]
    if diff:
        listing = ", ".join(f"{k}: {a[k]!r} -> {b.get(k)!r}" for k in diff[:8])
        raise ConfigError(
            f"--resume needs the run's own config; these keys differ from the saved config.yaml: {listing}"
        )


def changed_keys(run_dir: str | Path, cfg: RunConfig) -> list[str]:
    """Why a run folder's results are not those of ``cfg`` run today: what makes them stale.

    The keys in which ``cfg`` differs from the recorded ``config.yaml``, then the reasons of
    :func:`~hardneg.pipeline.provenance.stale_provenance`: a missing ``config.yaml`` or
    ``provenance.json``, a config whose text does not match its recorded hash, a changed hardneg
    module the run imported, a changed ``imports:`` module or data file, another library version.
    ``[]`` when all match, or when the folder holds no run at all (nothing to reuse).

    Every key counts (evaluation settings too) except ``train.progress``, ``out_dir`` and a
    ``train.threads`` left unset in ``cfg`` (the run recorded the one it resolved).
    """
    from hardneg.pipeline.provenance import PROVENANCE_FILE, stale_provenance

    run = Path(run_dir)
    saved_path = run / "config.yaml"
    if not any((run / name).exists() for name in ("config.yaml", PROVENANCE_FILE, "metrics.json")):
        return []
    keys: list[str] = []
    if saved_path.is_file():
        try:
            a = flat_config(load_config(saved_path))
        except (ConfigError, OSError, ValueError) as err:
            return [f"config.yaml: unreadable ({err})"]
        b = flat_config(cfg)
        free = {"train.progress", "out_dir"} | ({"train.threads"} if cfg.train.threads is None else set())
        keys = [f"{k}: {a.get(k)!r} -> {b.get(k)!r}" for k in sorted(set(a) | set(b))
                if a.get(k) != b.get(k) and k not in free]
    return keys + stale_provenance(run, cfg)


def _check_resume_threads(saved: RunConfig, new: RunConfig) -> None:
    had, asked = saved.train.threads, new.train.threads
    if had is not None and asked is not None and had != asked:
        raise ConfigError(
            f"'train.threads': the run was trained with {had} thread(s), got {asked}; CPU results depend "
            f"on the thread count, so a resumed run is bit-identical to an uninterrupted one only with "
            f"the same count: leave train.threads out to use the run's {had}, or start a new run"
        )


def prepare_run_dir(
    cfg: RunConfig, run_dir: Path, *, resume: bool, force: bool, lock: FolderLock | None = None
) -> RunConfig:
    """Check and prepare ``run_dir``; returns the config the run uses.

    A new run records its thread count: ``train.threads`` left unset is resolved to the torch
    default of this machine (CPU results depend on it), and marks the folder as hardneg's
    (:data:`RUN_MARKER`). ``resume=True`` continues the saved config (only ``train.progress``,
    ``out_dir`` and ``eval`` may differ); a different explicit ``train.threads`` is refused
    (:class:`ConfigError`), an unset one takes the run's. ``force=True`` empties a used folder only
    when it is a run folder hardneg made and nobody else writes it (:func:`clear_folder`, under
    ``lock``, the caller's :func:`run_lock` of ``run_dir``; taken here when not given).
    """
    saved_path = run_dir / "config.yaml"
    if run_dir.exists() and not run_dir.is_dir():
        raise NotADirectoryError(20, "Not a directory (the output folder is a file)", str(run_dir))
    if resume and saved_path.is_file():
        saved = load_config(saved_path)
        _check_resume_config(saved, cfg)
        _check_resume_threads(saved, cfg)
        threads = saved.train.threads if saved.train.threads is not None else cfg.train.threads
        return _with_threads(
            load_config(saved_path, {"train.progress": cfg.train.progress, "out_dir": cfg.out_dir}), threads
        )
    if not resume:
        reclaim_folder(run_dir, "run", force=force, lock=lock, used=(
            f"run folder '{run_dir}' already holds a run; pass --resume to continue it, "
            f"--force to overwrite it, or --out DIR for another folder"))
    run_dir.mkdir(parents=True, exist_ok=True)
    write_marker(run_dir, "run")
    return _with_threads(cfg, cfg.train.threads)


def _with_threads(cfg: RunConfig, threads: int | None) -> RunConfig:
    resolved = threads if threads is not None else torch.get_num_threads()
    return cfg if cfg.train.threads == resolved else with_overrides(cfg, {"train.threads": resolved})


_PHASES = ("data", "augment", "encoder_forward", "loss_forward", "backward", "optimizer")


def timing_lines(timing: dict[str, float]) -> list[str]:
    """Human-readable breakdown of where the time went."""
    fit = timing.get("fit", 0.0)
    lines = []
    for phase in _PHASES:
        if phase in timing:
            share = 100 * timing[phase] / fit if fit else 0.0
            lines.append(f"{phase:>16}: {timing[phase]:7.2f} s ({share:4.1f}% of fit)")
    if fit:
        other = fit - sum(timing.get(p, 0.0) for p in _PHASES)
        lines.append(f"{'lightning/other':>16}: {other:7.2f} s ({100 * other / fit:4.1f}% of fit)")
    for key in ("setup", "fit", "evaluate", "figures", "total"):
        if key in timing:
            lines.append(f"{key:>16}: {timing[key]:7.2f} s")
    return lines


def write_features(path: str | Path, features: torch.Tensor, labels: torch.Tensor) -> Path:
    """Write ``features.npz`` atomically: ``features`` (n, d) float32, ``labels`` (n,) int64.

    The format :func:`hardneg.theory.measure.load_features` reads, so ``hardneg theory report
    RUN`` puts the measured losses of the run's test representation next to the bounds.
    """
    f = features.detach().cpu().numpy().astype(np.float32)
    y = labels.detach().cpu().numpy().astype(np.int64)
    if f.ndim != 2 or y.shape != (f.shape[0],):
        raise ValueError(f"features must be (n, d) and labels (n,), got {f.shape} and {y.shape}")
    buf = io.BytesIO()
    np.savez(buf, features=f, labels=y)
    return atomic_write_bytes(path, buf.getvalue())


def _component(section: dict[str, Any]) -> str:
    """``hard(beta=1.0, detach_weights=False, ...)``: exactly the resolved parameters of a component."""
    params = ", ".join(f"{k}={v}" for k, v in section.items() if k != "name")
    return f"{section['name']}({params})"


def write_outputs(cfg: RunConfig, result: RunResult) -> None:
    run = result.run_dir
    if result.test_features is not None and result.test_labels is not None:
        write_features(run / "features.npz", result.test_features, result.test_labels)
    atomic_write_text(run / "metrics.json", json.dumps(result.to_json(), indent=2, sort_keys=True))
    eval_rows = [{"metric": k, "value": v} for k, v in result.eval.items()]
    atomic_write_text(run / "eval.csv", csv_text(eval_rows))
    from hardneg.modalities import get_modality

    modality = get_modality(cfg.data.dataset)
    lines = [
        f"# Run `{cfg.name}`",
        "",
        f"- data: {modality.describe(cfg)}; encoder: {cfg.model.encoder}; mode: {cfg.train.mode}",
        f"- loss: {_component(cfg.loss.negatives)} negatives, objective {_component(cfg.loss.objective)}, "
        f"t={cfg.loss.temperature}, K={cfg.loss.num_negatives}, collision_free={cfg.loss.collision_free}"
        f"{', beta annealed' if cfg.loss.anneal.enabled else ''}",
        f"- {cfg.train.epochs} epochs, batch {modality.batch_size(cfg)}, {cfg.train.optimizer} "
        f"lr={cfg.train.lr} wd={cfg.train.weight_decay}, seed {cfg.seed}",
        "",
    ]
    if result.history:
        first, last = result.history[0], result.history[-1]
        lines.append(
            f"Train loss: {first['loss']:.4f} (epoch 1) -> {last['loss']:.4f} (epoch {len(result.history)})"
        )
        diag = ", ".join(
            f"{k}={last[k]:.3f}"
            for k in ("ess_fraction", "pos_cosine", "neg_cosine", "collision_rate")
            if k in last
        )
        if diag:
            lines.append(f"Last-epoch diagnostics: {diag}")
        lines.append("")
    lines += ["| metric | accuracy (%) |", "|---|---|"]
    lines += [f"| {k} | {100 * v:.2f} |" for k, v in result.eval.items()]
    lines += ["", "Accuracies of the final epoch's encoder (no epoch is chosen on test data)."]
    lines += ["", "Time:", "```", *timing_lines(result.timing), "```", ""]
    atomic_write_text(run / "summary.md", "\n".join(lines))


def read_json(path: str | Path) -> Any:
    """The JSON value of the file ``path``; a file that is not JSON (or not UTF-8) is a
    ``ValueError`` naming it, and the file it links to when it is a link."""
    file = Path(path)
    try:
        return json.loads(file.read_text(encoding="utf-8"))
    except ValueError as err:  # json.JSONDecodeError, UnicodeDecodeError
        link = f" (a link to '{file.resolve()}')" if file.is_symlink() else ""
        raise ValueError(f"'{file}'{link} is not a JSON file: {err}") from None


def load_result(run_dir: str | Path) -> RunResult | None:
    """The result of a finished run (``metrics.json`` and ``metrics.csv``), or ``None`` if it did not
    finish. A 0.2 run folder kept its history in ``metrics.json``; it is read from there. A
    ``metrics.json`` that is not a JSON object is a ``ValueError`` naming it."""
    path = Path(run_dir) / "metrics.json"
    if not path.is_file():
        return None
    data = read_json(path)
    if not isinstance(data, dict):
        raise ValueError(f"'{path}' is not the metrics.json of a run: it holds a JSON {type(data).__name__}, "
                         "not an object")
    history_file = Path(run_dir) / HISTORY_FILE
    return RunResult(
        run_dir=Path(run_dir),
        history=read_history(history_file) if history_file.is_file() else data.get("history", []),
        eval=data.get("eval", {}),
        online=data.get("online_knn", []),
        timing=data.get("timing", {}),
    )
