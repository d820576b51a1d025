"""``--resume`` after a real SIGKILL ends with the metrics of an uninterrupted run (CPU, same seed)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
import torch

from hardneg.pipeline.history import read_history

from .helpers import cli_env, run_cli, tiny

EPOCHS = 5
ARGS = tiny(
    f"train.epochs={EPOCHS}",
    "data.train_subset=512",
    "loss.negatives.name=hard",
    "loss.negatives.beta=1.0",
    "loss.objective.name=debiased",
    "loss.objective.tau_plus=0.1",
    "loss.num_negatives=64",
    "data.oracle_positive=true",
    "eval.every_n_epochs=2",
    "eval.figures=false",
    "seed=7",
)


def _metrics(run):
    data = json.loads((run / "metrics.json").read_text())
    return read_history(run / "metrics.csv"), data["eval"], data["online_knn"]


def _assert_same(a, b):
    assert len(a) == len(b)
    for row_a, row_b in zip(a, b):
        assert row_a.keys() == row_b.keys()
        assert row_a == pytest.approx(row_b, rel=0, abs=1e-6)


@pytest.mark.slow
def test_resume_after_sigkill_matches_an_uninterrupted_run(tmp_path):
    reference = tmp_path / "reference"
    done = run_cli(["train", "digits", *ARGS, "--out", str(reference), "-q"], cwd=tmp_path)
    assert done.returncode == 0, done.stderr

    killed = tmp_path / "killed"
    command = [sys.executable, "-m", "hardneg.cli", "train", "digits", *ARGS, "--out", str(killed), "-q"]
    proc = subprocess.Popen(
        command, cwd=tmp_path, env=cli_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    last = killed / "checkpoints" / "last.ckpt"
    deadline = time.monotonic() + 240
    while not last.exists():
        assert proc.poll() is None, f"training exited before its first checkpoint: {proc.stderr.read()}"
        assert time.monotonic() < deadline, "no checkpoint after 240 s"
        time.sleep(0.01)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)
    proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL
    assert not (killed / "metrics.json").exists(), "the run finished before it was killed"
    time.sleep(0.2)
    epoch_at_kill = torch.load(last, weights_only=False)["epoch"]
    assert epoch_at_kill < EPOCHS - 1  # killed with epochs left to train

    resumed = run_cli(["train", "digits", *ARGS, "--out", str(killed), "--resume", "-q"], cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    hist_ref, eval_ref, online_ref = _metrics(reference)
    hist, ev, online = _metrics(killed)
    assert [row["epoch"] for row in hist] == [float(e) for e in range(EPOCHS)]
    _assert_same(hist, hist_ref)
    _assert_same(online, online_ref)
    assert ev == pytest.approx(eval_ref, rel=0, abs=1e-6)
    # and the final weights are the same
    a = torch.load(reference / "checkpoints" / "last.ckpt", weights_only=False)["state_dict"]
    b = torch.load(last, weights_only=False)["state_dict"]
    assert a.keys() == b.keys()
    for key in a:
        torch.testing.assert_close(a[key], b[key], rtol=0, atol=1e-6, msg=key)


@pytest.mark.slow
def test_resume_refuses_a_different_config(tmp_path):
    run = tmp_path / "r"
    args = tiny("eval.figures=false", "eval.linear=false")
    first = run_cli(["train", "digits", *args, "--out", str(run), "-q"], cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    again = run_cli(
        ["train", "digits", *tiny("loss.negatives.beta=0.3"), "--out", str(run), "--resume", "-q"],
        cwd=tmp_path,
    )
    assert again.returncode == 2
    assert "loss.negatives.beta: 1.0 -> 0.3" in again.stderr


@pytest.mark.slow
def test_ctrl_c_saves_an_interrupted_checkpoint_and_explains_resume(tmp_path):
    run = tmp_path / "int"
    command = [
        sys.executable,
        "-m",
        "hardneg.cli",
        "train",
        "digits",
        *tiny("train.epochs=50", "data.train_subset=512"),
        "--out",
        str(run),
        "-q",
    ]
    proc = subprocess.Popen(
        command,
        cwd=tmp_path,
        env=cli_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.monotonic() + 240
    while not (run / "checkpoints" / "last.ckpt").exists():
        assert proc.poll() is None and time.monotonic() < deadline, "no checkpoint"
        time.sleep(0.01)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode != 0
    assert (run / "checkpoints" / "interrupted.ckpt").is_file()
    assert not (run / "metrics.json").exists()
    assert "--resume" in err and "interrupted.ckpt" in err


def test_resume_of_a_finished_run_adds_no_checkpoint_and_keeps_the_log(tmp_path):
    from hardneg.pipeline.config import load_config
    from hardneg.pipeline.experiment import train_run

    cfg = load_config("digits", tiny("train.epochs=2", "eval.figures=false", "eval.linear=false"))
    run = tmp_path / "run"
    first = train_run(cfg, run, quiet=True)
    log = run / "metrics.csv"
    rows = log.read_text().splitlines()
    assert len(rows) == 3  # the header and one row per epoch
    again = train_run(cfg, run, resume=True, quiet=True)
    assert again.eval == pytest.approx(first.eval, abs=1e-9)
    assert sorted(p.name for p in (run / "checkpoints").iterdir()) == ["epoch001.ckpt", "last.ckpt"]
    assert log.read_text().splitlines() == rows


def test_the_thread_count_is_recorded_and_a_different_one_refused_on_resume(tmp_path):
    from hardneg.config import ConfigError
    from hardneg.pipeline.config import load_config
    from hardneg.pipeline.run_folder import prepare_run_dir

    unset = load_config("digits", ["train.threads=null"])
    recorded = prepare_run_dir(unset, tmp_path / "a", resume=False, force=False)
    assert recorded.train.threads == torch.get_num_threads()

    run = tmp_path / "b"
    run.mkdir()
    from hardneg.pipeline.config import dump_yaml

    (run / "config.yaml").write_text(dump_yaml(load_config("digits", ["train.threads=3"])))
    same = prepare_run_dir(unset, run, resume=True, force=False)  # unset: the run's own count
    assert same.train.threads == 3
    with pytest.raises(ConfigError, match=r"'train.threads': the run was trained with 3 thread\(s\), got 1"):
        prepare_run_dir(load_config("digits", ["train.threads=1"]), run, resume=True, force=False)


def test_each_checkpoint_is_saved_after_its_epoch_row_is_on_disk(tmp_path, monkeypatch):
    """A kill right after checkpoint ``e`` must find epoch ``e``'s CSV row on disk (no race)."""
    from typer.testing import CliRunner

    from hardneg.cli import app
    from hardneg.pipeline.checkpoints import AtomicCheckpointIO

    run = tmp_path / "run"
    seen: list[tuple[int, list[int]]] = []
    real_save = AtomicCheckpointIO.save_checkpoint

    def save_checkpoint(self, checkpoint, path, storage_options=None):
        csv_file = run / "metrics.csv"
        epochs = [int(r["epoch"]) for r in read_history(csv_file)] if csv_file.exists() else []
        seen.append((int(checkpoint["epoch"]), epochs))
        return real_save(self, checkpoint, path, storage_options)

    monkeypatch.setattr(AtomicCheckpointIO, "save_checkpoint", save_checkpoint)
    result = CliRunner().invoke(app, ["train", "digits", *tiny("train.epochs=3", "eval.figures=false",
                                                               "eval.linear=false"), "--out", str(run), "-q"])
    assert result.exit_code == 0, result.output
    assert [epoch for epoch, _ in seen] == [0, 0, 1, 1, 2, 2]  # epochNNN.ckpt and last.ckpt per epoch
    for epoch, on_disk in seen:
        assert on_disk == list(range(epoch + 1))
