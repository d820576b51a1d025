"""Groups mean what they say (issue 33, items 2, 4 and 9; issue 34, item 6; issue 44, item 4).

A strategy name or grid label is one folder name inside the group folder; a grid over what the group
sets itself (``seed``), duplicate values and empty groups are errors; an interrupted group counts
the runs complete on disk; with ``--resume`` the group decides in its own process which runs are
reused, and starts no worker when every run is.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hardneg.cli import app
from hardneg.config import ConfigError
from hardneg.pipeline import workers
from hardneg.pipeline.config import load_config
from hardneg.pipeline.groups import GroupInterrupted, check_group, run_group
from hardneg.pipeline.workers import Interrupted

from .helpers import tiny

BASE = tiny("eval.figures=false", "eval.linear=false", "eval.knn=false")
TWO = ("compare.strategies=[{name: simclr, overrides: {}}, {name: hard, overrides: "
       "{loss.negatives: {name: hard, beta: 1.0}}}]")
GROUP = [*BASE, "compare.seeds=[0]", TWO]


def _one_error(result) -> str:  # type: ignore[no-untyped-def]
    assert result.exit_code == 2, (result.exit_code, result.stdout, result.stderr, result.exception)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    return lines[0]


@pytest.mark.parametrize("name", ["../../escaped", "./simclr", "a/b", ".", "..", "", "a\\b", "a\0b",
                                  "é" * 128])
def test_a_strategy_name_is_one_folder_name(name: str) -> None:
    cfg = load_config("digits_compare", [*BASE, TWO])
    cfg.compare.strategies[1].name = name
    with pytest.raises(ConfigError) as err:
        check_group(cfg, "compare")
    message = str(err.value)
    assert message.startswith("invalid value for 'compare.strategies[1].name': must be one folder name")
    assert message.endswith(f"got {name!r}")


def test_an_escaping_strategy_writes_and_deletes_nothing(tmp_path: Path) -> None:
    escaped = tmp_path / "escaped" / "seed0"
    escaped.mkdir(parents=True)
    (escaped / "keep.txt").write_text("not the group's")
    root = tmp_path / "a" / "c"
    strategies = ("compare.strategies=[{name: simclr, overrides: {}}, {name: ../../escaped, overrides: "
                  "{loss.negatives: {name: hard, beta: 1.0}}}]")
    args = ["compare", "digits_compare", *BASE, "compare.seeds=[0]", strategies, "--out", str(root), "-q"]
    line = _one_error(CliRunner().invoke(app, args))
    assert line == ("error: invalid value for 'compare.strategies[1].name': must be one folder name (not "
                    "empty, '.' or '..', no '/', '\\' or NUL, at most 255 bytes), got '../../escaped'")
    assert not root.exists() and (escaped / "keep.txt").read_text() == "not the group's"


@pytest.mark.parametrize("name", ["results.csv", "compare.yaml", "sweep.yaml", "table.csv", "table.md",
                                  "results.json", "summary.md", "figures", ".hardneg-group", "Results.CSV",
                                  ".seed0.lock", ".results.csv.ab12.tmp"])
def test_a_strategy_is_not_named_after_a_file_of_the_group(name: str) -> None:
    """Issue 44: a strategy named ``results.csv`` trained every run, then failed writing the table."""
    cfg = load_config("digits_compare", [*BASE, TWO])
    cfg.compare.strategies[1].name = name
    with pytest.raises(ConfigError) as err:
        check_group(cfg, "compare")
    message = str(err.value)
    assert message.startswith("invalid value for 'compare.strategies[1].name': the group's own files take "
                              "that name in its folder; must be a folder name other than .hardneg-group, "
                              "compare.yaml, figures, results.csv"), message
    assert message.endswith(f"got {name!r}")


def test_the_cli_refuses_a_strategy_named_results_csv_before_training(tmp_path: Path) -> None:
    strategies = ("compare.strategies=[{name: simclr, overrides: {}}, {name: results.csv, overrides: "
                  "{loss.negatives: {name: hard, beta: 1.0}}}]")
    root = tmp_path / "c"
    args = ["compare", "digits_compare", *BASE, "compare.seeds=[0]", strategies, "--out", str(root), "-q"]
    line = _one_error(CliRunner().invoke(app, args))
    assert line.startswith("error: invalid value for 'compare.strategies[1].name': the group's own files")
    assert not root.exists()  # nothing trained, nothing written


def test_strategy_names_are_distinct_folders_after_normalisation() -> None:
    cfg = load_config("digits_compare", [*BASE, TWO])
    cfg.compare.strategies[1].name = "SimCLR"
    with pytest.raises(ConfigError, match=r"'compare.strategies': names must be distinct folder names, got "
                                          r"'simclr' and 'SimCLR'"):
        check_group(cfg, "compare")


@pytest.mark.parametrize(("override", "message"), [
    ("compare.strategies=[]",
     "invalid value for 'compare.strategies': must name at least one strategy, got []"),
    ("compare.strategies=[{name: a, overrides: {}}, {name: b, overrides: {loss.temperature: 0.5}}]",
     "invalid value for 'compare.strategies': 'a' and 'b' give the same run"),
    ("compare.strategies=[{name: a, overrides: {seed: 3}}]",
     "invalid key in 'compare.strategies[0].overrides': 'seed' is set by the group in each run (every run's "
     "seed comes from compare.seeds"),
])
def test_compare_groups_that_would_not_mean_what_they_say(override: str, message: str) -> None:
    cfg = load_config("digits_compare", [*BASE, "loss.temperature=0.5", override])
    with pytest.raises(ConfigError) as err:
        check_group(cfg, "compare")
    assert str(err.value).startswith(message), str(err.value)


@pytest.mark.parametrize(("override", "message"), [
    ("sweep.grid={seed: [1, 2]}",
     "invalid key in 'sweep.grid': 'seed' is set by the group in each run (every run's seed comes from "
     "sweep.seeds: list the seeds there), got seed=[1, 2]"),
    ("sweep.grid={loss.temperature: [1, 1.0]}",
     "invalid value for 'sweep.grid.loss.temperature': 1 and 1.0 give the same run (equal once validated), "
     "got [1, 1.0]"),
    ("sweep.grid={}", "invalid value for 'sweep.grid': must hold at least one key and its values, got {}"),
    ("sweep.grid={sweep.seeds: [[0], [1]]}",
     "invalid key in 'sweep.grid': 'sweep.seeds' is a setting of the group"),
])
def test_sweep_groups_that_would_not_mean_what_they_say(override: str, message: str) -> None:
    cfg = load_config("digits_compare", [*BASE, override])
    with pytest.raises(ConfigError) as err:
        check_group(cfg, "sweep")
    assert str(err.value).startswith(message), str(err.value)


def test_the_cli_refuses_a_sweep_over_seed_before_writing(tmp_path: Path) -> None:
    line = _one_error(CliRunner().invoke(app, ["sweep", "digits_compare", *BASE, "sweep.grid={seed: [1, 2]}",
                                               "sweep.seeds=[0]", "--out", str(tmp_path / "s"), "-q"]))
    assert "'seed' is set by the group in each run" in line
    assert not (tmp_path / "s").exists()


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A compare of two strategies x one seed, trained once."""
    root = tmp_path_factory.mktemp("group") / "c"
    run_group(load_config("digits_compare", GROUP), "compare", root, quiet=True)
    return root


@pytest.mark.slow
def test_a_reusable_group_starts_no_worker(
    finished: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "c"
    shutil.copytree(finished, root)

    def no_worker(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise AssertionError("a worker was started for a finished run")

    monkeypatch.setattr(workers, "run_supervised", no_worker)
    monkeypatch.setattr("multiprocessing.get_context", no_worker)
    lines: list[str] = []
    cfg = load_config("digits_compare", [*GROUP, "compare.workers=2"])
    result = run_group(cfg, "compare", root, resume=True, echo=lines.append)
    assert [r.eval for r in result.runs["hard"]] == [
        r.eval for r in run_group(cfg, "compare", finished, resume=True, quiet=True).runs["hard"]]
    assert [line.endswith("(reused)") for line in lines[1:]] == [True, True], lines


@pytest.mark.slow
def test_an_interrupted_group_counts_the_runs_finished_on_disk(
    finished: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "c"

    def worker_finished_then_interrupted(fn, jobs, **kwargs):  # type: ignore[no-untyped-def]
        shutil.copytree(finished / "simclr" / "seed0", root / "simclr" / "seed0", dirs_exist_ok=True)
        raise Interrupted([None] * len(jobs))  # the worker finished the run but could not answer

    monkeypatch.setattr(workers, "run_supervised", worker_finished_then_interrupted)
    with pytest.raises(GroupInterrupted) as stop:
        run_group(load_config("digits_compare", GROUP), "compare", root, quiet=True)
    assert (stop.value.done, stop.value.total) == (1, 2)
    assert list(stop.value.result.runs) == ["simclr"]
    assert "interrupted after 1 of 2 runs" in (root / "summary.md").read_text()
