"""``evaluate`` never replaces a run's results with those of another checkpoint.

Before: ``evaluate A --checkpoint B/checkpoints/last.ckpt`` wrote B's numbers into A's
``metrics.json`` (and ``compare --resume`` reused them); with ``last.ckpt`` and the final epoch's
file damaged, ``evaluate`` replaced the final results with an earlier epoch's while ``summary.md``
still said "final epoch"; ``evaluate DIGITS_RUN --senteval DIR`` ignored ``--senteval``. Now only
the run's own final checkpoint rewrites its results; every other evaluation is appended to the
``evaluations`` list of ``metrics.json``, saying which checkpoint, epoch and step it is.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hardneg.cli import app
from hardneg.pipeline.checkpoints import AtomicCheckpointIO

from .helpers import tiny

EPOCHS = 2
ARGS = tiny(f"train.epochs={EPOCHS}", "eval.figures=false", "eval.linear=false")


def _train(run: Path, *extra: str, keep: Path | None = None) -> Path:
    from hardneg.pipeline.config import load_config
    from hardneg.pipeline.experiment import train_run

    if keep is None:
        train_run(load_config("digits", [*ARGS, *extra]), run, quiet=True)
        return run
    keep.mkdir(parents=True)
    real = AtomicCheckpointIO.save_checkpoint

    def save_and_keep(self, checkpoint, path, storage_options=None):  # type: ignore[no-untyped-def]
        real(self, checkpoint, path, storage_options)
        shutil.copy(path, keep / Path(path).name)  # every epoch's file, before Lightning removes it

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(AtomicCheckpointIO, "save_checkpoint", save_and_keep)
        train_run(load_config("digits", [*ARGS, *extra]), run, quiet=True)
    return run


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("evaluations")
    return {"a": _train(root / "a", keep=root / "kept"), "b": _train(root / "b", "seed=1"),
            "kept": root / "kept"}


def _copy(runs: dict[str, Path], tmp_path: Path) -> Path:
    run = tmp_path / "a"
    shutil.copytree(runs["a"], run)
    return run


def _json(run: Path) -> dict:
    return json.loads((run / "metrics.json").read_text())


def _evaluate(*args: str):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(app, ["evaluate", *args, "--no-figures"])


def test_another_runs_checkpoint_is_added_beside_the_results(runs, tmp_path):
    run = _copy(runs, tmp_path)
    before = _json(run)
    other = runs["b"] / "checkpoints" / "last.ckpt"
    result = _evaluate(str(run), "--checkpoint", str(other))
    assert result.exit_code == 0, result.output
    assert f"{other} is a checkpoint of another run" in result.output
    after = _json(run)
    assert after["eval"] == before["eval"]
    [added] = after["evaluations"]
    assert added["checkpoint"] == str(other) and added["this_run"] is False
    assert added["epochs"] == EPOCHS and added["global_step"] > 0
    assert added["eval"]["knn_top1"] == pytest.approx(_json(runs["b"])["eval"]["knn_top1"], abs=0.2)
    assert added["eval"] != before["eval"]


def test_the_runs_own_final_checkpoint_rewrites_its_results_and_keeps_the_evaluations(runs, tmp_path):
    run = _copy(runs, tmp_path)
    assert _evaluate(str(run), "--checkpoint", str(runs["b"] / "checkpoints" / "last.ckpt")).exit_code == 0
    before = _json(run)
    result = _evaluate(str(run), "--checkpoint", str(run / "checkpoints" / "last.ckpt"))
    assert result.exit_code == 0, result.output
    after = _json(run)
    assert after["eval"] == pytest.approx(before["eval"], abs=1e-9)
    assert after["evaluations"] == before["evaluations"]


def test_an_older_epoch_never_replaces_the_final_results(runs, tmp_path):
    run = _copy(runs, tmp_path)
    folder = run / "checkpoints"
    for name in ("last.ckpt", f"epoch{EPOCHS - 1:03d}.ckpt"):  # the final ones, damaged
        (folder / name).write_bytes((folder / name).read_bytes()[:100])
    shutil.copy(runs["kept"] / "epoch000.ckpt", folder / "epoch000.ckpt")
    before, summary = _json(run), (run / "summary.md").read_text()
    result = _evaluate(str(run))
    assert result.exit_code == 0, result.output
    assert f"{folder / 'epoch000.ckpt'} is epoch 1 of {EPOCHS} of this run, not its final checkpoint" \
        in result.output
    after = _json(run)
    assert after["eval"] == before["eval"] and (run / "summary.md").read_text() == summary
    [added] = after["evaluations"]
    assert (added["epochs"], added["this_run"]) == (1, True)


def test_a_mid_epoch_checkpoint_of_an_unfinished_run_is_printed_not_written(runs, tmp_path):
    run = _copy(runs, tmp_path)
    (run / "metrics.json").unlink()
    result = _evaluate(str(run), "--checkpoint", str(runs["kept"] / "epoch000.ckpt"))
    assert result.exit_code == 0, result.output
    assert "the run has not finished (no metrics.json), so the results are printed, not written" \
        in result.output
    assert not (run / "metrics.json").exists()


def test_senteval_on_a_run_of_images_is_an_error(runs, tmp_path):
    run = _copy(runs, tmp_path)
    before = (run / "metrics.json").read_text()
    result = _evaluate(str(run), "--senteval", str(tmp_path))
    assert result.exit_code == 2
    assert result.output.strip().splitlines()[-1] == (
        f"error: --senteval evaluates runs of sentences; the run '{run}' was trained "
        "on data set 'digits' (images)")
    assert (run / "metrics.json").read_text() == before


def test_zero_training_steps_is_an_error_naming_the_key(tmp_path):
    run = tmp_path / "zero"
    result = CliRunner().invoke(app, ["train", "digits", *ARGS, "trainer.limit_train_batches=0",
                                      "--out", str(run), "-q"])
    assert result.exit_code == 2
    assert "error: invalid key 'trainer.limit_train_batches': it must leave at least one training batch " \
           "per epoch (the loader has 4), got 0" in result.output
    assert not (run / "checkpoints").exists() and not (run / "metrics.json").exists()
