"""Resume means "from the last finished epoch": a Ctrl-C inside an epoch is discarded, never resumed
mid-epoch; a damaged checkpoint is never loaded; a run folder has one writer (an OS lock naming its
holder's PID)."""

from __future__ import annotations

import json
import os
import shutil
import warnings
from pathlib import Path

import lightning as L
import pytest
import torch

from hardneg.pipeline import experiment
from hardneg.pipeline.config import load_config
from hardneg.pipeline.experiment import evaluate_run, train_run
from hardneg.pipeline.run_folder import NotOurs, RunLocked, run_lock
from tests.pipeline.helpers import tiny

ARGS = tiny("train.epochs=2", "eval.figures=false", "eval.knn=false", "eval.linear=false",
            "train.threads=1")
OUTPUTS = ("metrics.csv", "features.npz", "eval.csv")


class _CtrlC(L.Callback):
    """Raise KeyboardInterrupt (what Ctrl-C raises) at batch ``batch`` of epoch ``epoch``."""

    def __init__(self, epoch: int, batch: int) -> None:
        self.epoch, self.batch = epoch, batch

    def on_train_batch_start(self, trainer: L.Trainer, module: L.LightningModule, batch: object,
                             batch_idx: int) -> None:
        if trainer.current_epoch == self.epoch and batch_idx == self.batch:
            raise KeyboardInterrupt


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An uninterrupted run of ``ARGS``."""
    run = tmp_path_factory.mktemp("reference") / "run"
    train_run(load_config("digits", ARGS), run, quiet=True)
    return run


def _interrupted(monkeypatch: pytest.MonkeyPatch, cfg, run: Path, epoch: int, batch: int) -> None:  # type: ignore[no-untyped-def]
    build = experiment.build_module

    def with_ctrl_c(*args, **kwargs):  # type: ignore[no-untyped-def]
        module, callbacks = build(*args, **kwargs)
        return module, [*callbacks, _CtrlC(epoch, batch)]

    with monkeypatch.context() as m:
        m.setattr(experiment, "build_module", with_ctrl_c)
        with pytest.raises((KeyboardInterrupt, SystemExit)):
            train_run(cfg, run, quiet=True)


def _assert_same_outputs(run: Path, reference: Path) -> None:
    """Bit for bit: the per-epoch metrics, the test features, the evaluation and the weights."""
    for name in OUTPUTS:
        assert (run / name).read_bytes() == (reference / name).read_bytes(), name
    a = torch.load(reference / "checkpoints" / "last.ckpt", weights_only=False)["state_dict"]
    b = torch.load(run / "checkpoints" / "last.ckpt", weights_only=False)["state_dict"]
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


@pytest.mark.parametrize(("epoch", "batch"), [(0, 1), (1, 1)])
def test_ctrl_c_inside_an_epoch_then_resume_equals_the_uninterrupted_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], reference: Path,
    epoch: int, batch: int,
) -> None:
    cfg = load_config("digits", ARGS)
    run = tmp_path / "interrupted"
    _interrupted(monkeypatch, cfg, run, epoch, batch)
    folder = run / "checkpoints"
    assert (folder / "interrupted.ckpt").is_file()  # kept for inspection only
    assert (folder / "last.ckpt").is_file() == (epoch > 0)
    capsys.readouterr()
    with warnings.catch_warnings(record=True) as caught:  # Lightning warns when it resumes mid-epoch
        warnings.simplefilter("always")
        train_run(cfg, run, resume=True, quiet=True)
    mid_epoch = ("ckpt_path", "before the epoch ended")  # Lightning's "last" and mid-epoch resume warnings
    assert not [w for w in caught if any(text in str(w.message) for text in mid_epoch)]
    _assert_same_outputs(run, reference)
    err = capsys.readouterr().err
    partial = f"the partial epoch in '{folder / 'interrupted.ckpt'}' (saved mid-epoch) is discarded"
    if epoch == 0:
        assert f"notice: no intact epoch checkpoint in '{folder}'; starting from scratch; {partial}" in err
    else:
        assert f"notice: resuming from '{folder / 'last.ckpt'}' (the end of epoch 1); {partial}" in err


def test_a_damaged_last_checkpoint_is_never_loaded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], reference: Path
) -> None:
    cfg = load_config("digits", ARGS)
    # last.ckpt damaged: resume falls back to the newest intact epoch checkpoint and names both
    run = tmp_path / "last"
    shutil.copytree(reference, run)
    (run / "metrics.json").unlink()
    last, epoch1 = run / "checkpoints" / "last.ckpt", run / "checkpoints" / "epoch001.ckpt"
    last.write_bytes(b"not a checkpoint")
    capsys.readouterr()
    train_run(cfg, run, resume=True, quiet=True)
    err = capsys.readouterr().err
    assert f"warning: {last} is not a readable hardneg checkpoint" in err
    assert f"; set aside as {last}.damaged" in err  # kept for inspection, out of resume's way
    assert f"notice: resuming from '{epoch1}' (the end of epoch 2)" in err
    assert (run / "metrics.json").is_file()
    assert sorted(p.name for p in last.parent.iterdir()) == ["epoch001.ckpt", "last.ckpt.damaged"]
    # every checkpoint damaged (and Ctrl-C left interrupted.ckpt): from scratch, really, and it ends
    # as the uninterrupted run; the damaged last.ckpt is not loaded behind the notice's back
    run = tmp_path / "all"
    _interrupted(monkeypatch, cfg, run, 1, 1)
    for path in (run / "checkpoints").iterdir():
        if path.name != "interrupted.ckpt":
            path.write_bytes(b"")
    capsys.readouterr()
    train_run(cfg, run, resume=True, quiet=True)
    err = capsys.readouterr().err
    assert f"warning: {run / 'checkpoints' / 'last.ckpt'} is not a readable hardneg checkpoint" in err
    assert f"notice: no intact epoch checkpoint in '{run / 'checkpoints'}'; starting from scratch" in err
    _assert_same_outputs(run, reference)
    assert sorted(p.name for p in (run / "checkpoints").iterdir()) == [
        "epoch000.ckpt.damaged", "epoch001.ckpt", "interrupted.ckpt", "last.ckpt", "last.ckpt.damaged"]


def test_a_second_writer_is_refused_naming_the_holder(tmp_path: Path) -> None:
    cfg = load_config("digits", ARGS)
    run = tmp_path / "run"
    run.mkdir()
    (run / "keep.txt").write_text("another run's file")
    with run_lock(run):  # this process plays the other writer
        for kwargs in ({}, {"force": True}, {"resume": True}):
            with pytest.raises(RunLocked, match=rf"PID {os.getpid()}\b"):
                train_run(cfg, run, quiet=True, **kwargs)
    assert sorted(p.name for p in run.iterdir()) == ["keep.txt"]  # --force deleted nothing
    with pytest.raises(NotOurs, match=r"keep\.txt"):  # released, but not a run folder hardneg made
        train_run(cfg, run, quiet=True, force=True)
    assert sorted(p.name for p in run.iterdir()) == ["keep.txt"]


def test_evaluate_writes_only_under_the_lock(tmp_path: Path, reference: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(reference, run)
    partial = run / "checkpoints" / ".last.ckpt.x1y2.tmp"  # as if the holder were saving right now
    partial.write_bytes(b"partial")
    before = {p.name: p.read_bytes() for p in run.iterdir() if p.is_file()}
    with run_lock(run):
        with pytest.raises(RunLocked, match=rf"PID {os.getpid()}\b"):
            evaluate_run(run, figures_on=False)
        again = evaluate_run(run, figures_on=False, write=False)  # reading needs no lock
    assert partial.is_file()  # the holder's save in progress was left alone
    assert {p.name: p.read_bytes() for p in run.iterdir() if p.is_file()} == before
    assert again.eval == json.loads((reference / "metrics.json").read_text())["eval"]
    evaluate_run(run, figures_on=False)
    assert not partial.exists()
