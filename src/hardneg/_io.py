"""Atomic file writes: a reader never sees a half-written file.

Every writer in hardneg (figures, metrics, configs) goes through these helpers: the bytes
are written to a temporary file in the *same directory* as the target (so the final rename
stays on one filesystem), flushed and fsync'ed, then moved over the target with
:func:`os.replace`, which is atomic on POSIX and Windows. On any error the temporary file is
removed and the previous content of ``path`` (if any) is left untouched.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

__all__ = ["PARTIAL_SUFFIX", "atomic_open", "atomic_write_bytes", "atomic_write_text", "remove_partial_files"]

PARTIAL_SUFFIX = ".tmp"  # the temporary files of atomic_open: ``.<name>.<random>.tmp``


@contextlib.contextmanager
def atomic_open(path: str | os.PathLike[str]) -> Iterator[BinaryIO]:
    """A binary handle whose bytes replace ``path`` only when the ``with`` block ends cleanly.

    The temporary file is ``.<name>.<random>.tmp`` in the target's folder (so the final
    :func:`os.replace` never crosses a filesystem); it is flushed and fsync'ed before the rename,
    and the folder is fsync'ed after it. On any error, ``KeyboardInterrupt`` included, the
    temporary file is removed and ``path`` keeps its previous content; an ``OSError`` without a
    file name (a full disk during ``write``) is re-raised naming ``path``. Only a SIGKILL during
    the write can leave the temporary file behind (see :func:`remove_partial_files`).

    Example:
        >>> import tempfile, pathlib
        >>> with tempfile.TemporaryDirectory() as d:
        ...     target = pathlib.Path(d) / "x.bin"
        ...     with atomic_open(target) as handle:
        ...         _ = handle.write(b"abc")
        ...     target.read_bytes()
        b'abc'
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=PARTIAL_SUFFIX, dir=target.parent)
    except OSError as err:  # a read-only or full folder: name the file asked for, not the temporary one
        raise type(err)(err.errno, err.strerror, str(target)) from None
    try:
        os.fchmod(fd, 0o666 & ~_umask())  # mkstemp makes 0600; give the usual permissions
        with os.fdopen(fd, "wb") as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp_name, target)
        _fsync_folder(target.parent)
    except BaseException as err:
        try:
            os.unlink(tmp_name)
        except FileNotFoundError:
            pass
        if isinstance(err, OSError) and err.filename is None and err.errno is not None:
            raise OSError(err.errno, err.strerror, str(target)) from err
        raise


def _fsync_folder(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:  # pragma: no cover - platforms without directory handles
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover - some filesystems refuse fsync on folders
        pass
    finally:
        os.close(fd)


def remove_partial_files(folder: str | os.PathLike[str]) -> list[Path]:
    """Delete the temporary files that a SIGKILL during :func:`atomic_open` left in ``folder``.

    Returns the removed paths. Only names made by :func:`atomic_open` (``.<name>.<random>.tmp``)
    are touched.
    """
    root = Path(folder)
    if not root.is_dir():
        return []
    removed = []
    for item in sorted(root.glob(f".*{PARTIAL_SUFFIX}")):
        if item.is_file():
            item.unlink(missing_ok=True)
            removed.append(item)
    return removed


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically (temp file in the same folder + ``os.replace``).

    Parent folders are created when missing. Returns the target path.

    Example:
        >>> import tempfile, pathlib
        >>> with tempfile.TemporaryDirectory() as d:
        ...     p = atomic_write_bytes(pathlib.Path(d) / "sub" / "x.bin", b"abc")
        ...     p.read_bytes(), sorted(q.name for q in p.parent.iterdir())
        (b'abc', ['x.bin'])
    """
    if not isinstance(data, bytes | bytearray | memoryview):
        raise TypeError(f"data must be bytes-like, got {type(data).__name__}")
    with atomic_open(path) as handle:
        handle.write(data)
    return Path(path)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write_text(path: str | os.PathLike[str], text: str, *, encoding: str = "utf-8") -> Path:
    """Write ``text`` to ``path`` atomically; see :func:`atomic_write_bytes`."""
    if not isinstance(text, str):
        raise TypeError(f"text must be str, got {type(text).__name__}")
    return atomic_write_bytes(path, text.encode(encoding))
