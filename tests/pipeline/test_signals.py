"""SIGTERM and SIGHUP stop ``hardneg train`` as Ctrl-C does; an interrupted save keeps the CSV log.

Before: SIGTERM (``kill``, ``timeout``, SLURM, containers) ended ``hardneg train`` with exit code
0, no message and no ``metrics.json``; a checkpoint save cut short by SIGINT or SIGKILL lost the
epoch's row of ``metrics.csv`` for good, and the notice said the run "starts from scratch"
while ``--resume`` continued from ``epoch000.ckpt``; Ctrl-C before the run folder existed exited
silently; resuming a copied run folder printed Lightning's "dirpath has changed" warning.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from typer.testing import CliRunner

from .helpers import cli_env, run_cli, tiny

ROOT = Path(__file__).resolve().parents[2]
ARGS = tiny("train.epochs=2", "eval.every_n_epochs=1", "eval.figures=false", "eval.linear=false")


def _default_hangup() -> None:
    """Give the child SIGHUP's default action: under ``nohup`` (or any parent that ignores it) the
    command rightly leaves an ignored SIGHUP ignored, which is not what these tests send it for."""
    import signal as signals

    signals.signal(signals.SIGHUP, signals.SIG_DFL)


def _inject(signal: str, moment: str, run: Path) -> subprocess.CompletedProcess[str]:
    """``hardneg train`` with ``signal`` sent to itself at ``moment`` (see tests/faults/inject.py)."""
    return subprocess.run(
        [sys.executable, "-m", "tests.faults.inject", signal, moment, "--", "train", "digits", *ARGS,
         "--out", str(run), "-q"],
        cwd=ROOT, env=cli_env(), capture_output=True, text=True, timeout=300, preexec_fn=_default_hangup,
    )


def _resume(run: Path) -> subprocess.CompletedProcess[str]:
    return run_cli(["train", "digits", *ARGS, "--out", str(run), "--resume", "-q"], cwd=run.parent)


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run = tmp_path_factory.mktemp("signals") / "reference"
    done = run_cli(["train", "digits", *ARGS, "--out", str(run), "-q"], cwd=run.parent)
    assert done.returncode == 0, done.stderr
    return run


def _eval(run: Path) -> dict:
    return json.loads((run / "metrics.json").read_text())["eval"]


def _log(run: Path) -> str:
    return (run / "metrics.csv").read_text()


@pytest.mark.slow
def test_sigterm_stops_training_like_ctrl_c_and_the_run_resumes(reference, tmp_path):
    run = tmp_path / "run"
    stopped = _inject("TERM", "step:5", run)  # in the second epoch (4 steps per epoch)
    assert stopped.returncode == 143, stopped.stderr
    last = stopped.stderr.strip().splitlines()[-1]
    assert last.startswith(f"interrupted by SIGTERM: checkpoints in {run / 'checkpoints'} (")
    assert "--resume" in last
    assert last.endswith("(resumes from the last finished epoch; the partial epoch is discarded)")
    assert (run / "checkpoints" / "interrupted.ckpt").is_file()
    assert not (run / "metrics.json").exists()
    resumed = _resume(run)
    assert resumed.returncode == 0, resumed.stderr
    assert _eval(run) == pytest.approx(_eval(reference), abs=1e-9)
    assert _log(run) == _log(reference)


@pytest.mark.slow
def test_sighup_stops_training_with_status_129(tmp_path):
    run = tmp_path / "run"
    stopped = _inject("HUP", "step:1", run)
    assert stopped.returncode == 129, stopped.stderr
    assert "interrupted by SIGHUP during the first epoch: checkpoints in" in stopped.stderr
    assert "starts from scratch (no epoch finished" in stopped.stderr
    assert (run / "checkpoints" / "interrupted.ckpt").is_file()


@pytest.mark.slow
@pytest.mark.parametrize("signal", ["INT", "KILL"])
def test_a_save_cut_short_keeps_the_csv_log_and_the_notice_names_the_checkpoint(reference, tmp_path, signal):
    run = tmp_path / "run"
    stopped = _inject(signal, "save:1", run)  # epoch000.ckpt written, last.ckpt cut short
    assert stopped.returncode == (130 if signal == "INT" else -9), stopped.stderr
    if signal == "INT":
        assert "(epoch000.ckpt = the end of epoch 1, interrupted.ckpt = the moment of interruption, for " \
               "inspection only); continue with" in stopped.stderr
        assert "(resumes from epoch000.ckpt, the end of epoch 1; the partial epoch is discarded)" \
            in stopped.stderr
        assert "starts from scratch" not in stopped.stderr
    resumed = _resume(run)
    assert resumed.returncode == 0, resumed.stderr
    assert f"notice: resuming from '{run / 'checkpoints' / 'epoch000.ckpt'}' (the end of epoch 1)" \
        in resumed.stderr
    assert _log(run) == _log(reference)  # every row, the online kNN row of epoch 1 included
    assert _eval(run) == pytest.approx(_eval(reference), abs=1e-9)


def test_ctrl_c_before_the_run_folder_exists_says_nothing_was_written(tmp_path, monkeypatch):
    from hardneg.cli import app
    from hardneg.pipeline import experiment

    def interrupted(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise KeyboardInterrupt

    monkeypatch.setattr(experiment, "train_run", interrupted)
    run = tmp_path / "never"
    result = CliRunner().invoke(app, ["train", "digits", *ARGS, "--out", str(run), "-q"])
    assert result.exit_code == 130
    assert result.output.strip() == (
        f"interrupted before the run folder '{run}' was created: nothing was written")


@pytest.mark.slow
def test_resuming_a_copied_run_folder_gives_a_notice_not_lightnings_warning(reference, tmp_path, capsys):
    from hardneg.pipeline.config import load_config
    from hardneg.pipeline.experiment import train_run

    copy = tmp_path / "copy"
    shutil.copytree(reference, copy)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = train_run(load_config("digits", ARGS), copy, resume=True, quiet=True)
    assert not [w for w in caught if "dirpath has changed" in str(w.message)]
    notice = "notice: the run folder was moved or copied (its checkpoints were saved in "
    assert notice in capsys.readouterr().err
    assert result is not None and result.eval == pytest.approx(_eval(reference), abs=1e-9)
