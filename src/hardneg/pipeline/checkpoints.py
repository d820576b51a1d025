"""Checkpoints that survive a kill or a full disk, and choosing the newest intact one.

Lightning's own atomic save writes the checkpoint to a temporary file in ``$TMPDIR`` and moves
it over the target; when the run folder is on another filesystem the move is a copy, so a kill
during the copy or a full disk truncates the previous good file in place. Here every checkpoint
is written by :func:`hardneg._io.atomic_open` instead: a temporary file *in the checkpoint
folder*, fsync'ed, then renamed over the target. A checkpoint file is therefore always either
the previous complete file or the new complete file.

What a SIGKILL can still leave is a hidden ``.<name>.ckpt.<random>.tmp`` file in
``checkpoints/`` (a process cannot clean up after SIGKILL); the next ``--resume``, ``train`` or
``evaluate`` of that run removes it and says so.

On ``--resume`` and ``evaluate`` the run's checkpoints are read and the newest intact one (the
largest global step; ``last.ckpt`` on ties) is used; a damaged file is reported and skipped.
``interrupted.ckpt`` (saved mid-epoch on Ctrl-C or an exception) is for inspection and
``evaluate --checkpoint``; resuming always restarts at an epoch boundary, which is what makes a
resumed run bit-identical to an uninterrupted one on CPU.

A checkpoint is read with ``torch.load(weights_only=True)`` everywhere (``evaluate``, ``--resume``
and Lightning's own restore through :class:`AtomicCheckpointIO`): tensors, numbers, strings,
lists and dicts only. A pickle that would build any other object (``os.system``, a class, a
function) is refused before anything in it runs, with :class:`CheckpointError` naming the file and
the refused global. What hardneg and Lightning save needs nothing more (weights, optimiser
and scheduler states, loop counters, callback states and the per-epoch history are all plain),
so no allow-list of extra types is needed.
"""

from __future__ import annotations

import hashlib
import io
import json
import pickle
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from lightning.fabric.utilities.types import _PATH
from lightning.pytorch.plugins.io import TorchCheckpointIO

from hardneg._io import atomic_open, remove_partial_files

__all__ = [
    "AtomicCheckpointIO",
    "CheckpointError",
    "checkpoint_epochs",
    "checkpoint_files",
    "checkpoint_run_digest",
    "config_digest",
    "load_tensors",
    "newest_intact_checkpoint",
    "read_checkpoint",
    "remove_partial_checkpoints",
]

_EPOCH_FILE = re.compile(r"^epoch(\d+)(?:-v(\d+))?\.ckpt$")


class CheckpointError(ValueError):
    """A file that is not a readable hardneg checkpoint."""


class AtomicCheckpointIO(TorchCheckpointIO):
    """Lightning's ``TorchCheckpointIO`` with the save of :func:`hardneg._io.atomic_open`."""

    def save_checkpoint(
        self, checkpoint: dict[str, Any], path: _PATH, storage_options: Any | None = None
    ) -> None:
        if storage_options is not None:
            raise TypeError(
                f"storage_options is not supported by {type(self).__name__}, got {storage_options!r}"
            )
        buffer = io.BytesIO()  # serialise first: torch's zip writer hides a write's OSError (full disk)
        torch.save(checkpoint, buffer)
        with atomic_open(path) as handle:
            handle.write(buffer.getbuffer())

    def load_checkpoint(
        self, path: _PATH, map_location: Any | None = None, weights_only: bool | None = None
    ) -> dict[str, Any]:
        """Lightning's restore (``fit(ckpt_path=...)``) reads tensors only, whatever it asks for."""
        del weights_only  # always True: a checkpoint is data, never code
        file = Path(str(path))
        if not file.exists():
            raise FileNotFoundError(f"checkpoint not found: '{file}'")
        return load_tensors(file, map_location=map_location if map_location is not None else "cpu")


_REFUSED = re.compile(r"GLOBAL ([\w.]+)|global[s]? ([\w.]+)")


def _refused_globals(file: Path, err: BaseException) -> str:
    """The global(s) the weights-only unpickler refused, read without running the pickle."""
    try:
        names = torch.serialization.get_unsafe_globals_in_checkpoint(file)
    except Exception:  # an unreadable archive: fall back to torch's message
        names = []
    if not names:
        found = _REFUSED.search(str(err))
        names = [next(g for g in found.groups() if g)] if found else ["an object torch does not allow"]
    shown = ", ".join(names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "")
    return f"it holds objects that are not tensors: {shown}"


def load_tensors(file: Path, *, map_location: Any = "cpu") -> Any:
    """``torch.load(file, weights_only=True)``; a pickle of code or other objects is a CheckpointError.

    Raises:
        CheckpointError: ``<file> is not a readable hardneg checkpoint (it holds objects that are
            not tensors: <global>)`` — nothing of the file ran — or another reason it is unreadable.
    """
    try:
        return torch.load(file, map_location=map_location, weights_only=True)
    except (KeyboardInterrupt, MemoryError):
        raise
    except pickle.UnpicklingError as err:
        if "Weights only load failed" in str(err):
            reason = _refused_globals(file, err)
            raise CheckpointError(f"{file} is not a readable hardneg checkpoint ({reason})") from None
        raise CheckpointError(f"{file} is not a readable hardneg checkpoint ({_reason(err)})") from None
    except Exception as err:  # torch.load raises many kinds (EOFError, RuntimeError, ...)
        raise CheckpointError(f"{file} is not a readable hardneg checkpoint ({_reason(err)})") from None


def _reason(err: BaseException) -> str:
    text = " ".join(str(err).split()) or type(err).__name__
    if isinstance(err, EOFError) and "Ran out of input" in text:
        text = "the file is empty or truncated"
    elif isinstance(err, OSError) or "zip archive" in text or "central directory" in text:
        text = f"the file is truncated or corrupted: {text}"
    return text if len(text) <= 160 else text[:157] + "..."


def read_checkpoint(path: str | Path) -> dict[str, Any]:
    """Load a checkpoint on the CPU, or raise :class:`CheckpointError` saying why it cannot be.

    Raises:
        FileNotFoundError: ``path`` does not exist.
        CheckpointError: ``<path> is not a readable hardneg checkpoint (<reason>)`` for an empty,
            truncated or corrupted file, a file that is not a Lightning checkpoint, or one that
            holds anything but tensors and plain data (it is never run: ``weights_only=True``).
    """
    file = Path(path)
    if not file.exists():
        raise FileNotFoundError(f"checkpoint not found: '{file}'")
    if not file.is_file():
        raise CheckpointError(f"{file} is not a readable hardneg checkpoint (not a regular file)")
    with file.open("rb") as handle:
        head = handle.read(4)
    if not head:
        raise CheckpointError(f"{file} is not a readable hardneg checkpoint (the file is empty)")
    if head != b"PK\x03\x04":  # torch.save writes a zip archive
        raise CheckpointError(f"{file} is not a readable hardneg checkpoint (not a torch.save zip archive)")
    state = load_tensors(file)
    if not isinstance(state, dict) or not isinstance(state.get("state_dict"), dict):
        raise CheckpointError(f"{file} is not a readable hardneg checkpoint (it holds no 'state_dict')")
    return state


def checkpoint_files(folder: str | Path) -> list[Path]:
    """The resumable checkpoints of a ``checkpoints/`` folder: ``last.ckpt`` and ``epochNNN*.ckpt``."""
    root = Path(folder)
    if not root.is_dir():
        return []
    found = [p for p in root.iterdir() if p.name == "last.ckpt" or _EPOCH_FILE.match(p.name)]
    return sorted(found, key=lambda p: (p.name != "last.ckpt", p.name))


def newest_intact_checkpoint(
    folder: str | Path, *, report: Callable[[str], None] | None = None, set_aside: bool = False
) -> tuple[Path, dict[str, Any]] | None:
    """The intact checkpoint with the largest global step (``last.ckpt`` first on ties), and its state.

    Damaged files are never loaded: they are skipped with a message to ``report`` (default:
    standard error) naming each one; when the chosen file is not ``last.ckpt`` the message says
    which one is used. ``None`` when there is no intact checkpoint. With ``set_aside`` (a resumed
    run, which holds the folder's lock) a damaged file is renamed to ``<name>.damaged``, so that
    the run's new checkpoints take the usual names instead of Lightning's ``last-v1.ckpt``.
    """
    say = report if report is not None else (lambda msg: print(msg, file=sys.stderr))
    best: tuple[Path, dict[str, Any]] | None = None
    best_step = -1
    damaged: list[str] = []
    for path in checkpoint_files(folder):
        try:
            state = read_checkpoint(path)
        except (CheckpointError, FileNotFoundError) as err:
            if set_aside and path.is_file():
                aside = path.with_name(path.name + ".damaged")
                path.replace(aside)
                damaged.append(f"{err}; set aside as {aside}")
            else:
                damaged.append(f"{err}; skipped")
            continue
        step = int(state.get("global_step", 0))
        if step > best_step:
            best, best_step = (path, state), step
    for line in damaged:
        say(f"warning: {line}")
    if best is not None and damaged:
        say(f"notice: using {best[0]} (epoch {best[1].get('epoch')}, step {best_step})")
    return best


def remove_partial_checkpoints(
    folder: str | Path, *, report: Callable[[str], None] | None = None
) -> list[Path]:
    """Remove the temporary files a SIGKILL during a checkpoint save left in ``folder``."""
    removed = remove_partial_files(folder)
    if removed:
        say = report if report is not None else (lambda msg: print(msg, file=sys.stderr))
        say(f"notice: removed {len(removed)} partial checkpoint file(s) left by an interrupted save "
            f"in '{folder}'")
    return removed


def config_digest(cfg: Any) -> str:
    """sha256 of a run's config without the keys ``--resume`` may change
    (:func:`~hardneg.pipeline.run_folder.resume_free`): the identity of the run that a checkpoint
    records."""
    from hardneg.pipeline.config import flat_config
    from hardneg.pipeline.run_folder import resume_free

    kept = {k: v for k, v in flat_config(cfg).items() if not resume_free(k)}
    return hashlib.sha256(json.dumps(kept, sort_keys=True, default=str).encode()).hexdigest()


def checkpoint_run_digest(state: dict[str, Any]) -> str | None:
    """The config digest a checkpoint records (``None``: saved before hardneg recorded one)."""
    found = state.get("callbacks", {}).get("RunIdentity")
    digest = found.get("config_sha256") if isinstance(found, dict) else None
    return digest if isinstance(digest, str) else None


def checkpoint_epochs(state: dict[str, Any]) -> int:
    """How many epochs a checkpoint's weights finished (a mid-epoch ``interrupted.ckpt``: the
    epochs before the one it interrupted)."""
    history = state.get("hardneg_history")
    if isinstance(history, list):
        return len(history)
    return int(state.get("epoch", -1)) + 1
