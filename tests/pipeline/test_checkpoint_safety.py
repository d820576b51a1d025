"""A checkpoint holds tensors, never code: every place that reads one refuses a pickled call.

Before: ``evaluate --checkpoint FILE``, ``evaluate RUN`` (``last.ckpt``) and ``train --resume``
loaded checkpoints with ``torch.load(weights_only=False)``: a ``.ckpt`` whose pickle calls
``os.system`` (or ``builtins.exec``) ran it. Now every read is ``weights_only=True`` and such a
file is refused with an error naming it and the global it wanted.
"""

from __future__ import annotations

import builtins
import os
import shutil
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

from hardneg.cli import app
from hardneg.pipeline.checkpoints import AtomicCheckpointIO, CheckpointError, read_checkpoint

from .helpers import tiny

ARGS = tiny("train.epochs=2", "eval.figures=false", "eval.linear=false")


class _System:
    """Unpickling this calls ``os.system(command)``."""

    def __init__(self, command: str) -> None:
        self.command = command

    def __reduce__(self):  # type: ignore[no-untyped-def]
        return (os.system, (self.command,))


class _Exec:
    """Unpickling this calls ``builtins.exec(code)``."""

    def __init__(self, code: str) -> None:
        self.code = code

    def __reduce__(self):  # type: ignore[no-untyped-def]
        return (builtins.exec, (self.code,))


def _plant(path: Path, sentinel: Path, *, kind: str = "system") -> Path:
    """A Lightning-shaped checkpoint (a torch.save zip) whose pickle creates ``sentinel`` when loaded."""
    payload = (_System(f"touch '{sentinel}'") if kind == "system"
               else _Exec(f"open({str(sentinel)!r}, 'w').close()"))
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"state_dict": {}, "epoch": 1, "global_step": 10**6, "hyper_parameters": payload}, path)
    return path


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from hardneg.pipeline.config import load_config
    from hardneg.pipeline.experiment import train_run

    run = tmp_path_factory.mktemp("safety") / "run"
    train_run(load_config("digits", ARGS), run, quiet=True)
    return run


def _copy(trained: Path, tmp_path: Path) -> Path:
    run = tmp_path / "run"
    shutil.copytree(trained, run)
    return run


@pytest.mark.parametrize("kind", ["system", "exec"])
def test_reading_a_pickled_call_refuses_it_and_runs_nothing(tmp_path, kind):
    sentinel = tmp_path / "SENTINEL"
    evil = _plant(tmp_path / "evil.ckpt", sentinel, kind=kind)
    wanted = "posix.system" if kind == "system" else "builtins.exec"
    with pytest.raises(CheckpointError, match=rf"^{evil} is not a readable hardneg checkpoint \(it holds "
                                              rf"objects that are not tensors: {wanted}\)$"):
        read_checkpoint(evil)
    # Lightning's own restore (trainer.fit(ckpt_path=...)) goes through the CheckpointIO plugin
    with pytest.raises(CheckpointError, match="objects that are not tensors"):
        AtomicCheckpointIO().load_checkpoint(evil, weights_only=False)
    assert not sentinel.exists()


def test_evaluate_checkpoint_refuses_a_pickled_call(trained, tmp_path):
    run = _copy(trained, tmp_path)
    sentinel = tmp_path / "SENTINEL"
    evil = _plant(tmp_path / "elsewhere" / "model.ckpt", sentinel)
    result = CliRunner().invoke(app, ["evaluate", str(run), "--checkpoint", str(evil), "--no-figures"])
    assert result.exit_code == 2
    assert f"error: {evil} is not a readable hardneg checkpoint (it holds objects that are not tensors: " \
           "posix.system)" in result.output
    assert not sentinel.exists()


def test_evaluate_run_skips_a_pickled_call_planted_as_last_ckpt(trained, tmp_path):
    run = _copy(trained, tmp_path)
    sentinel = tmp_path / "SENTINEL"
    _plant(run / "checkpoints" / "last.ckpt", sentinel)
    result = CliRunner().invoke(app, ["evaluate", str(run), "--no-figures"])
    assert result.exit_code == 0, result.output
    assert f"warning: {run / 'checkpoints' / 'last.ckpt'} is not a readable hardneg checkpoint (it holds " \
           "objects that are not tensors: posix.system); skipped" in result.output
    assert not sentinel.exists()


def test_resume_sets_aside_pickled_calls_planted_as_its_checkpoints(trained, tmp_path):
    run = _copy(trained, tmp_path)
    sentinel = tmp_path / "SENTINEL"
    for name in ("last.ckpt", "epoch001.ckpt"):
        _plant(run / "checkpoints" / name, sentinel)
    result = CliRunner().invoke(app, ["train", "digits", *ARGS, "--out", str(run), "--resume", "-q"])
    assert result.exit_code == 0, result.output
    for name in ("last.ckpt", "epoch001.ckpt"):
        path = run / "checkpoints" / name
        assert (f"warning: {path} is not a readable hardneg checkpoint (it holds objects that are not "
                f"tensors: posix.system); set aside as {path}.damaged") in result.output
    assert "starting from scratch" in result.output
    assert not sentinel.exists()
    assert read_checkpoint(run / "checkpoints" / "last.ckpt")["global_step"] > 0  # its own, new ones load
