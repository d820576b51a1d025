"""Test-suite configuration.

Under CI (``CI`` set in the environment) hypothesis runs derandomised: the same examples on
every run, so a red CI is always reproducible. Locally it keeps exploring new examples.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

# Triton reads TRITON_INTERPRET when it is first imported, and lightning, torch_geometric and
# sentence-transformers import it while the test modules are collected: set it first, so the
# fused kernels (engine="fused", issue 47) run under the interpreter on a machine without a GPU.
# TRITON_INTERPRET=0 in the environment keeps the compiled kernels (a machine with a GPU).
os.environ.setdefault("TRITON_INTERPRET", "1")

import pytest
from hypothesis import settings

settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
settings.register_profile("dev", deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")


@pytest.fixture
def small_filesystem(tmp_path: Path) -> Iterator[Callable[..., Path]]:
    """Mount small tmpfs filesystems under ``tmp_path`` (a second filesystem, possibly full or read-only).

    ``small_filesystem(size="200k", read_only=False)`` returns the mount point. Skipped with the
    reason where the platform does not allow mounting (not root, no ``mount``, a container
    without the capability); unmounted at teardown.
    """
    mounted: list[Path] = []

    def mount(size: str = "200k", *, read_only: bool = False) -> Path:
        point = tmp_path / f"fs-{uuid.uuid4().hex[:8]}"
        point.mkdir()
        options = f"size={size}" + (",ro" if read_only else "")
        if not hasattr(os, "geteuid") or os.geteuid() != 0:
            pytest.skip("mounting a small tmpfs needs root")
        try:
            done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(point)],
                                  capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.SubprocessError) as err:
            pytest.skip(f"cannot run mount: {err}")
        if done.returncode != 0:
            pytest.skip(f"this platform refuses to mount a tmpfs: {done.stderr.strip()}")
        mounted.append(point)
        return point

    yield mount
    for point in reversed(mounted):
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            subprocess.run(["umount", "-l", str(point)], capture_output=True, timeout=30)
