"""Atomic writes: usual permissions, nothing half-written on failure."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from hardneg._io import atomic_write_bytes, atomic_write_text


def test_permissions_follow_the_umask(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        p = atomic_write_text(tmp_path / "a.txt", "x")
    finally:
        os.umask(old)
    assert stat.S_IMODE(p.stat().st_mode) == 0o644


def test_failed_write_leaves_previous_content_and_no_temp(tmp_path: Path) -> None:
    target = tmp_path / "b.bin"
    atomic_write_bytes(target, b"old")
    with pytest.raises(TypeError, match="data must be bytes-like, got str"):
        atomic_write_bytes(target, "new")  # type: ignore[arg-type]
    assert target.read_bytes() == b"old"
    assert sorted(q.name for q in tmp_path.iterdir()) == ["b.bin"]


def test_a_folder_that_refuses_the_temporary_file_names_the_target(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tempfile

    def refuse(**kwargs):  # type: ignore[no-untyped-def]
        raise PermissionError(13, "Permission denied", str(tmp_path / ".claims.md.x1y2.tmp"))

    monkeypatch.setattr(tempfile, "mkstemp", refuse)
    with pytest.raises(PermissionError) as err:
        atomic_write_text(tmp_path / "claims.md", "x")
    assert err.value.filename == str(tmp_path / "claims.md")  # not the hidden temporary file
