"""Every failure a user can cause ends with one ``error:`` line naming the path or key, exit code 2.

In-process through typer's runner (fast); the subprocess tests of kill -9 and full disks are in
``tests/pipeline/test_checkpoints.py``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

from hardneg.cli import app

from ..pipeline.helpers import tiny

QUICK = tiny("eval.figures=false", "eval.linear=false", "eval.knn=false", "eval.mean_classifier=false")


def _invoke(*args: str):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(app, list(args))


def _one_error(result) -> str:  # type: ignore[no-untyped-def]
    """The single ``error:`` line of a failed command (and no traceback)."""
    assert result.exit_code == 2, (result.exit_code, result.stdout, result.stderr, result.exception)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    return lines[0]


def test_out_naming_a_regular_file(tmp_path: Path) -> None:
    target = tmp_path / "a-file"
    target.write_text("x")
    line = _one_error(_invoke("train", "digits", *QUICK, "--out", str(target)))
    assert line == f"error: Not a directory (the output folder is a file): '{target}'"


def test_out_under_a_regular_file(tmp_path: Path) -> None:
    target = tmp_path / "a-file"
    target.write_text("x")
    line = _one_error(_invoke("train", "digits", *QUICK, "--out", str(target / "run")))
    assert line.startswith("error: Not a directory: ") and str(target) in line


def test_a_read_only_filesystem(small_filesystem) -> None:  # type: ignore[no-untyped-def]
    run = small_filesystem("1m", read_only=True) / "run"
    line = _one_error(_invoke("train", "digits", *QUICK, "--out", str(run)))
    assert line.startswith("error: Read-only file system: ") and str(run) in line


def test_a_non_utf8_config(tmp_path: Path) -> None:
    config = tmp_path / "latin1.yaml"
    config.write_bytes("name: caf\xe9\n".encode("latin-1"))
    line = _one_error(_invoke("train", str(config)))
    assert f"'{config}' is not UTF-8 text" in line


@pytest.mark.parametrize(
    ("override", "expected"),
    [
        ("train.epochs=" + "9" * 400, r"'train.epochs': must be <= 10000000"),
        ("seed=4294967296", r"'seed': must be <= 4294967295, got 4294967296"),
        ("train.lr=1e-3x", r"'train.lr'"),
    ],
)
def test_out_of_range_values_name_the_key(tmp_path: Path, override: str, expected: str) -> None:
    line = _one_error(_invoke("train", "digits", override, "--out", str(tmp_path / "r")))
    assert re.search(expected, line), line
    assert len(line) < 400


def test_compare_with_no_seeds(tmp_path: Path) -> None:
    line = _one_error(_invoke("compare", "digits_compare", "compare.seeds=[]", "--out", str(tmp_path / "c")))
    assert "'compare.seeds': must not be empty" in line


def test_evaluating_a_checkpoint_of_another_model(tmp_path: Path) -> None:
    run = tmp_path / "run"
    first = _invoke("train", "digits", *QUICK, "--out", str(run), "-q")
    assert first.exit_code == 0, first.stderr
    foreign = tmp_path / "other.ckpt"
    torch.save({"state_dict": {"layer.weight": torch.zeros(3)}}, foreign)
    line = _one_error(_invoke("evaluate", str(run), "--checkpoint", str(foreign)))
    assert line.startswith(f"error: {foreign} is not a readable hardneg checkpoint of this run")
    missing = tmp_path / "missing.ckpt"
    assert _one_error(_invoke("evaluate", str(run), "--checkpoint", str(missing))) == (
        f"error: checkpoint not found: '{missing}'"
    )


def test_the_interruption_message_names_only_files_that_exist(tmp_path: Path) -> None:
    from hardneg.cli import _interrupted_message

    run = tmp_path / "run"
    assert "before the first checkpoint" in _interrupted_message("digits", run)
    (run / "checkpoints").mkdir(parents=True)
    (run / "checkpoints" / "last.ckpt").write_bytes(b"x")
    message = _interrupted_message("digits", run)  # e.g. Ctrl-C during the final evaluation
    assert "last.ckpt = the last finished epoch" in message and "interrupted.ckpt" not in message
    assert f"--resume --out {run}" in message
    (run / "checkpoints" / "interrupted.ckpt").write_bytes(b"x")
    assert "interrupted.ckpt = the moment of interruption" in _interrupted_message("digits", run)
    assert "(resumes from the last finished epoch; the partial epoch is discarded)" in message


def test_the_interruption_message_of_the_first_epoch_says_resume_starts_from_scratch(tmp_path: Path) -> None:
    from hardneg.cli import _interrupted_message

    run = tmp_path / "run"
    (run / "checkpoints").mkdir(parents=True)
    (run / "checkpoints" / "interrupted.ckpt").write_bytes(b"x")
    message = _interrupted_message("digits", run)
    assert message.startswith("interrupted during the first epoch")
    assert "interrupted.ckpt = the moment of interruption, for inspection only" in message
    assert f"--resume --out {run}` starts from scratch (no epoch finished" in message


def test_a_folder_another_process_writes_is_refused_and_kept(tmp_path: Path) -> None:
    import os

    from hardneg.pipeline.run_folder import run_lock

    run = tmp_path / "run"
    (run / "checkpoints").mkdir(parents=True)
    (run / "checkpoints" / "last.ckpt").write_bytes(b"the other run's checkpoint")
    (run / "config.yaml").write_text("name: other\n")
    with run_lock(run):  # the test process plays the other writer
        for flags in (["--force"], ["--resume"], []):
            line = _one_error(_invoke("train", "digits", *QUICK, "--out", str(run), "-q", *flags))
            assert line.startswith(f"error: run folder '{run}' is being written by another hardneg process "
                                   f"(PID {os.getpid()})"), line
        line = _one_error(_invoke("evaluate", str(run)))
        assert f"(PID {os.getpid()})" in line
    assert (run / "checkpoints" / "last.ckpt").read_bytes() == b"the other run's checkpoint"
    assert sorted(p.name for p in run.rglob("*")) == ["checkpoints", "config.yaml", "last.ckpt"]


@pytest.mark.slow
def test_a_diverging_run_is_one_error_line_with_the_epoch_the_loss_and_advice(tmp_path: Path) -> None:
    line = _one_error(_invoke("train", "digits", *QUICK, "train.lr=1e12", "train.optimizer=sgd",
                              "--out", str(tmp_path / "run"), "-q"))
    assert re.match(r"error: training diverged at epoch 1, batch \d+ \(after \d+ optimiser steps\): .*; "
                    r"the last finite loss was \S+ \(epoch 1, batch \d+\)\. Try a lower train\.lr "
                    r"\(now 1e\+12\), train\.optimizer=adam or train\.gradient_clip_norm=1\.0$", line), line


def test_a_data_root_of_the_wrong_kind_is_named_before_a_run_folder_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 44: ``data.root=/`` for a TSV corpus was hashed file by file, then blamed on the run folder."""
    monkeypatch.chdir(tmp_path)
    line = _one_error(_invoke("train", "articles", "data.text.source=tsv", "data.root=/", "-q"))
    assert line == ("error: invalid value for 'data.root': data.text.source='tsv' reads a file of "
                    "'article_id<TAB>sentence' lines, got '/', which is a folder")
    assert list(tmp_path.iterdir()) == []  # no run folder, no lock file
    corpus = tmp_path / "corpus.tsv"
    corpus.write_text("a\tsentence one\n")
    line = _one_error(_invoke("train", "articles", "data.text.source=folder", f"data.root={corpus}"))
    assert line.endswith(f"reads a folder of <article>.txt files, got '{corpus}', which is not a folder")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["corpus.tsv"]


def test_a_data_file_that_cannot_be_read_is_named_not_the_run_folder() -> None:
    from hardneg.pipeline.provenance import file_digest

    unreadable = Path("/proc/self/mem")  # a file whose read fails (EIO at offset 0)
    if not unreadable.is_file():
        pytest.skip("needs Linux's /proc")
    with pytest.raises(OSError) as err:
        file_digest(unreadable)
    assert err.value.filename == str(unreadable)
