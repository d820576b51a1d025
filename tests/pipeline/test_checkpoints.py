"""Checkpoints survive a kill -9 during the save and a full disk, on a second filesystem too.

Before: Lightning saved to a temporary file in ``$TMPDIR`` and moved it over the target, a copy
across filesystems: a kill during the copy left ``last.ckpt`` at 0 bytes, a full disk left it
truncated, and ``--resume`` / ``evaluate`` failed for good.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from hardneg.pipeline import checkpoints
from hardneg.pipeline.checkpoints import (
    AtomicCheckpointIO,
    CheckpointError,
    checkpoint_files,
    newest_intact_checkpoint,
    read_checkpoint,
    remove_partial_checkpoints,
)

from .helpers import cli_env, run_cli, tiny


def _state(value: float, *, step: int = 1, numel: int = 16) -> dict:
    return {"state_dict": {"w": torch.full((numel,), value)}, "global_step": step, "epoch": step}


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


def test_save_replaces_the_file_whole_and_leaves_no_temporary(tmp_path):
    io = AtomicCheckpointIO()
    target = tmp_path / "ckpts" / "last.ckpt"
    io.save_checkpoint(_state(1.0), target)
    io.save_checkpoint(_state(2.0, step=2), target)
    assert read_checkpoint(target)["state_dict"]["w"][0].item() == 2.0
    assert _leftovers(target.parent) == []
    with pytest.raises(TypeError, match="storage_options"):
        io.save_checkpoint(_state(1.0), target, storage_options={"a": 1})


def test_a_failed_save_keeps_the_previous_file_and_names_it(tmp_path, monkeypatch):
    io = AtomicCheckpointIO()
    target = tmp_path / "last.ckpt"
    io.save_checkpoint(_state(1.0), target)

    real_open = checkpoints.atomic_open

    class FullDisk:
        def __init__(self, handle):
            self.handle = handle

        def write(self, data):  # writes part of the file, then the disk is full
            self.handle.write(bytes(data)[:1000])
            raise OSError(28, "No space left on device")

    @contextlib.contextmanager
    def full_open(path):
        with real_open(path) as handle:
            yield FullDisk(handle)

    monkeypatch.setattr(checkpoints, "atomic_open", full_open)
    with pytest.raises(OSError, match=r"No space left on device.*last\.ckpt") as info:
        io.save_checkpoint(_state(2.0), target)
    assert info.value.errno == 28 and info.value.filename == str(target)
    monkeypatch.undo()
    assert read_checkpoint(target)["state_dict"]["w"][0].item() == 1.0
    assert _leftovers(tmp_path) == []


def test_unreadable_checkpoints_are_named_with_a_reason(tmp_path):
    good = tmp_path / "good.ckpt"
    torch.save(_state(1.0, numel=5000), good)
    cases = {
        "empty.ckpt": (b"", r"the file is empty"),
        "truncated.ckpt": (good.read_bytes()[:4000], r"truncated or corrupted"),
        "text.ckpt": (b"hello\n", r"not a torch.save zip archive"),
    }
    for name, (data, reason) in cases.items():
        path = tmp_path / name
        path.write_bytes(data)
        expected = rf"^{re.escape(str(path))} is not a readable hardneg checkpoint \(.*{reason}"
        with pytest.raises(CheckpointError, match=expected):
            read_checkpoint(path)
    foreign = tmp_path / "foreign.ckpt"
    torch.save({"weights": 1}, foreign)
    with pytest.raises(CheckpointError, match=r"holds no 'state_dict'"):
        read_checkpoint(foreign)
    with pytest.raises(CheckpointError, match="not a regular file"):
        read_checkpoint(tmp_path)
    with pytest.raises(FileNotFoundError, match="checkpoint not found"):
        read_checkpoint(tmp_path / "missing.ckpt")


def test_the_newest_intact_checkpoint_is_chosen_and_damage_is_reported(tmp_path):
    torch.save(_state(3.0, step=30), tmp_path / "epoch002.ckpt")
    torch.save(_state(2.0, step=20), tmp_path / "epoch001.ckpt")
    (tmp_path / "last.ckpt").write_bytes(b"")  # truncated by an old-style save
    torch.save(_state(9.0, step=99), tmp_path / "interrupted.ckpt")  # mid-epoch: never resumed from
    (tmp_path / "notes.txt").write_text("x")
    assert [p.name for p in checkpoint_files(tmp_path)] == ["last.ckpt", "epoch001.ckpt", "epoch002.ckpt"]
    messages: list[str] = []
    path, state = newest_intact_checkpoint(tmp_path, report=messages.append)
    assert path.name == "epoch002.ckpt" and state["global_step"] == 30
    assert messages[0].startswith(f"warning: {tmp_path / 'last.ckpt'} is not a readable hardneg checkpoint")
    assert messages[1] == f"notice: using {tmp_path / 'epoch002.ckpt'} (epoch 30, step 30)"
    # on a tie last.ckpt wins, and nothing is reported when nothing is damaged
    torch.save(_state(3.0, step=30), tmp_path / "last.ckpt")
    messages.clear()
    assert newest_intact_checkpoint(tmp_path, report=messages.append)[0].name == "last.ckpt"
    assert messages == []
    assert newest_intact_checkpoint(tmp_path / "nowhere", report=messages.append) is None


def test_partial_files_left_by_a_kill_are_removed(tmp_path):
    (tmp_path / ".last.ckpt.abc123.tmp").write_bytes(b"partial")
    (tmp_path / "last.ckpt").write_bytes(b"keep")
    messages: list[str] = []
    removed = remove_partial_checkpoints(tmp_path, report=messages.append)
    assert [p.name for p in removed] == [".last.ckpt.abc123.tmp"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["last.ckpt"]
    assert "removed 1 partial checkpoint file(s)" in messages[0]


_KILL_DURING_SAVE = textwrap.dedent(
    """
    import sys, time, torch
    from hardneg.pipeline.checkpoints import AtomicCheckpointIO

    target = sys.argv[1]
    import hardneg.pipeline.checkpoints as checkpoints
    real_open = checkpoints.atomic_open

    class Slow:  # the real bytes, with a pause in the middle of the file
        def __init__(self, handle):
            self.handle = handle

        def write(self, data):
            data = bytes(data)
            self.handle.write(data[: len(data) // 2])
            self.handle.flush()
            print("mid-save", flush=True)
            time.sleep(60)
            self.handle.write(data[len(data) // 2 :])

    import contextlib

    @contextlib.contextmanager
    def slow_open(path):
        with real_open(path) as handle:
            yield Slow(handle)

    checkpoints.atomic_open = slow_open
    AtomicCheckpointIO().save_checkpoint({"state_dict": {"w": torch.full((20000,), 2.0)}}, target)
    """
)


def _kill_during_save(target: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-c", _KILL_DURING_SAVE, str(target)], stdout=subprocess.PIPE,
                            text=True, env=cli_env())
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "mid-save"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)
    proc.stdout.close()
    assert proc.returncode == -signal.SIGKILL


@pytest.mark.slow
@pytest.mark.parametrize("where", ["same filesystem", "second filesystem"])
def test_kill_9_during_the_save_keeps_the_previous_checkpoint(tmp_path, small_filesystem, where):
    folder = (small_filesystem("4m") if where == "second filesystem" else tmp_path) / "checkpoints"
    target = folder / "last.ckpt"
    AtomicCheckpointIO().save_checkpoint({"state_dict": {"w": torch.full((20000,), 1.0)}}, target)
    _kill_during_save(target)
    assert read_checkpoint(target)["state_dict"]["w"][0].item() == 1.0  # the previous file, whole
    assert len(_leftovers(folder)) == 1  # the killed writer's temporary file, in this folder only
    remove_partial_checkpoints(folder, report=lambda _: None)
    assert _leftovers(folder) == []


def test_a_full_disk_keeps_the_previous_checkpoint(small_filesystem):
    folder = small_filesystem("160k") / "checkpoints"
    target = folder / "last.ckpt"
    AtomicCheckpointIO().save_checkpoint({"state_dict": {"w": torch.full((25000,), 1.0)}}, target)  # ~100 kB
    with pytest.raises(OSError, match="No space left on device") as info:
        AtomicCheckpointIO().save_checkpoint({"state_dict": {"w": torch.full((25000,), 2.0)}}, target)
    assert info.value.errno == 28
    assert read_checkpoint(target)["state_dict"]["w"][0].item() == 1.0
    assert _leftovers(folder) == []


TRAIN = tiny("train.epochs=3", "eval.figures=false", "eval.linear=false", "eval.knn=false")


@pytest.mark.slow
def test_training_on_a_full_disk_fails_in_one_line_and_resumes_elsewhere(small_filesystem, tmp_path):
    """A run folder on a 200 kB filesystem: the third checkpoint does not fit."""
    run = small_filesystem("200k") / "run"
    empty_tmp = tmp_path / "tmp"
    empty_tmp.mkdir()
    env = {**cli_env(), "TMPDIR": str(empty_tmp)}
    done = subprocess.run([sys.executable, "-m", "hardneg.cli", "train", "digits", *TRAIN, "--out", str(run),
                           "-q"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 2, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "No space left on device" in errors[0] and str(run) in errors[0], done.stderr
    assert "Traceback" not in done.stderr
    assert list(empty_tmp.iterdir()) == []  # nothing written to $TMPDIR
    folder = run / "checkpoints"
    assert _leftovers(folder) == []
    for path in checkpoint_files(folder):  # whatever was written is whole
        read_checkpoint(path)
    assert checkpoint_files(folder), "no checkpoint fitted at all; the filesystem is too small for the test"


@pytest.mark.slow
def test_resume_and_evaluate_fall_back_to_the_newest_intact_checkpoint(tmp_path):
    run = tmp_path / "run"
    args = tiny("train.epochs=2", "eval.figures=false", "eval.kwise=[1]")
    first = run_cli(["train", "digits", *args, "--out", str(run), "-q"], cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    expected = first.stdout.strip()
    (run / "checkpoints" / "last.ckpt").write_bytes(b"")
    (run / "checkpoints" / ".last.ckpt.x1y2.tmp").write_bytes(b"partial")
    again = run_cli(["evaluate", str(run), "--no-figures"], cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert again.stdout.strip() == expected
    last = run / "checkpoints" / "last.ckpt"
    assert f"warning: {last} is not a readable hardneg checkpoint" in again.stderr
    assert f"notice: using {run / 'checkpoints' / 'epoch001.ckpt'}" in again.stderr
    assert "removed 1 partial checkpoint file(s)" in again.stderr
    explicit = run_cli(["evaluate", str(run), "--checkpoint", str(last)], cwd=tmp_path)
    assert explicit.returncode == 2
    assert explicit.stderr.strip() == (
        f"error: {run / 'checkpoints' / 'last.ckpt'} is not a readable hardneg checkpoint "
        f"(the file is empty)"
    )
    resumed = run_cli(["train", "digits", *args, "--out", str(run), "--resume", "-q"], cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout.strip() == expected
    assert f"set aside as {last}.damaged" in resumed.stderr  # resume renames what it cannot load
    assert sorted(p.name for p in (run / "checkpoints").iterdir()) == ["epoch001.ckpt", "last.ckpt.damaged"]
