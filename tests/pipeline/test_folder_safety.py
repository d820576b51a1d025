"""A command deletes only what it created (issue 33, item 2; issue 44: file by file, in every subfolder).

``--force`` empties a folder only when it is a run (or group) folder hardneg made and no other
hardneg process writes at, below or above it; the locks follow symlinks; a group never overwrites a
run it did not make. Most checks need no training: they call the folder functions directly.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hardneg.cli import app
from hardneg.pipeline.config import load_config
from hardneg.pipeline.groups import prepare_root
from hardneg.pipeline.run_folder import (
    GROUP_MARKER,
    RUN_MARKER,
    NotOurs,
    RunExists,
    RunLocked,
    clear_folder,
    prepare_run_dir,
    run_lock,
)

from .helpers import cli_env, tiny

QUICK = tiny("eval.figures=false", "eval.linear=false", "eval.knn=false", "eval.mean_classifier=false")


@pytest.fixture
def cfg():  # type: ignore[no-untyped-def]
    return load_config("digits", QUICK)


def _tree(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def _one_error(result) -> str:  # type: ignore[no-untyped-def]
    assert result.exit_code == 2, (result.exit_code, result.stdout, result.stderr, result.exception)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    return lines[0]


def _made_run(folder: Path, *extra: str) -> Path:
    """A run folder as hardneg leaves it (marker, config, results, a checkpoint), plus ``extra`` files."""
    (folder / "checkpoints").mkdir(parents=True)
    for name in ("config.yaml", "provenance.json", "metrics.json", "checkpoints/last.ckpt", *extra):
        (folder / name).write_text(name)
    (folder / RUN_MARKER).write_text(json.dumps({"kind": "run", "version": "0"}))
    return folder


def test_force_on_the_current_folder_deletes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    (tmp_path / "data").mkdir()
    monkeypatch.chdir(tmp_path)
    line = _one_error(CliRunner().invoke(app, ["train", "digits", *QUICK, "--out", ".", "--force", "-q"]))
    assert line == ("error: --force refuses to delete '.': it is the current folder; "
                    "use --out DIR for another folder")
    assert _tree(tmp_path) == ["data", "notes.txt"]


def test_force_never_deletes_the_home_folder_nor_one_holding_the_current_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cfg
) -> None:  # type: ignore[no-untyped-def]
    home = _made_run(tmp_path / "home")  # even when it looks like a run folder
    monkeypatch.setenv("HOME", str(home))
    with pytest.raises(NotOurs, match="it is the home folder"):
        prepare_run_dir(cfg, home, resume=False, force=True)
    inner = home / "checkpoints"
    monkeypatch.chdir(inner)
    with pytest.raises(NotOurs, match=rf"a folder holding the current folder \({inner}\)"):
        prepare_run_dir(cfg, Path(".."), resume=False, force=True)
    assert (home / "config.yaml").is_file() and (inner / "last.ckpt").is_file()
    with pytest.raises(NotOurs, match="root of the file system"):
        prepare_run_dir(cfg, Path("/"), resume=False, force=True)


def test_force_empties_a_run_folder_hardneg_made_and_refuses_one_holding_other_files(
    tmp_path: Path, cfg
) -> None:  # type: ignore[no-untyped-def]
    run = tmp_path / "run"
    prepare_run_dir(cfg, run, resume=False, force=False)  # a new run folder gets the marker
    assert json.loads((run / RUN_MARKER).read_text())["kind"] == "run"
    (run / "metrics.json").write_text("{}")
    (run / "logs").mkdir()
    prepare_run_dir(cfg, run, resume=False, force=True)
    assert _tree(run) == [RUN_MARKER]
    (run / "notes.txt").write_text("the user's")
    (run / "metrics.json").write_text("{}")
    with pytest.raises(NotOurs, match=rf"'{run}': it holds what a run folder made by hardneg does not "
                                      r"\(notes.txt\)"):
        prepare_run_dir(cfg, run, resume=False, force=True)
    assert _tree(run) == [RUN_MARKER, "metrics.json", "notes.txt"]


def test_a_run_folder_of_0_2_without_marker_is_recognised_by_its_config_and_provenance(
    tmp_path: Path, cfg
) -> None:  # type: ignore[no-untyped-def]
    old = _made_run(tmp_path / "old")
    (old / RUN_MARKER).unlink()
    prepare_run_dir(cfg, old, resume=False, force=True)
    assert _tree(old) == [RUN_MARKER]
    other = tmp_path / "other"
    other.mkdir()
    for name in ("config.yaml", "metrics.json"):  # no provenance.json: not a run folder
        (other / name).write_text(name)
    with pytest.raises(NotOurs, match=rf"'{other}': it is not a run folder made by hardneg "
                                      rf"\(no {RUN_MARKER} marker\) and holds config.yaml, metrics.json"):
        prepare_run_dir(cfg, other, resume=False, force=True)
    assert _tree(other) == ["config.yaml", "metrics.json"]


def test_force_on_a_parent_of_a_live_run_is_refused(tmp_path: Path, cfg) -> None:  # type: ignore[no-untyped-def]
    parent = _made_run(tmp_path / "N")  # a run folder hardneg made, so only the lock protects it
    with run_lock(parent / "figures"):  # this process plays the writer of a folder inside it
        with run_lock(parent) as lock, pytest.raises(RunLocked, match=f"'{parent}' holds a run another"):
            clear_folder(lock, "run")
        with pytest.raises(RunLocked):
            prepare_run_dir(cfg, parent, resume=False, force=True)
    assert (parent / "checkpoints" / "last.ckpt").is_file() and (parent / "config.yaml").is_file()


def test_the_cli_refuses_force_on_a_folder_holding_a_live_run(tmp_path: Path) -> None:
    inner = tmp_path / "N" / "inner"
    with run_lock(inner / "run"):
        (inner / "run" / "config.yaml").write_text("the live run's")
        args = ["train", "digits", *QUICK, "--out", str(inner), "--force", "-q"]
        line = _one_error(CliRunner().invoke(app, args))
        assert line.startswith(f"error: folder '{inner}' holds a run another hardneg process is writing")
        assert (inner / "run" / "config.yaml").read_text() == "the live run's"


FORCE_MEMBER = """
import sys
from pathlib import Path
from hardneg.pipeline.config import load_config
from hardneg.pipeline.run_folder import RunLocked, prepare_run_dir
try:
    prepare_run_dir(load_config("digits"), Path(sys.argv[1]), resume=False, force=True)
except RunLocked as err:
    print(err)
"""


@pytest.mark.slow
def test_force_inside_a_live_group_is_refused(tmp_path: Path, cfg) -> None:  # type: ignore[no-untyped-def]
    root = tmp_path / "cc"
    member = _made_run(root / "simclr" / "seed0")
    with run_lock(root):  # this process plays a compare writing cc; another process asks --force
        (root / GROUP_MARKER).write_text("{}")
        done = subprocess.run([sys.executable, "-c", FORCE_MEMBER, str(member)], capture_output=True,
                              text=True, env=cli_env(), timeout=300)
        assert f"it is inside '{root}', which another hardneg process is writing (PID {os.getpid()})" in (
            done.stdout), done.stderr
        with pytest.raises(NotOurs, match=r"simclr': it is not a run folder made by hardneg"):
            prepare_run_dir(cfg, root / "simclr", resume=False, force=True)
    assert (member / "checkpoints" / "last.ckpt").is_file()
    prepare_run_dir(cfg, member, resume=False, force=True)  # the group itself may (its lock is held here)
    assert _tree(member) == [RUN_MARKER]


def test_two_writers_through_a_symlink_share_one_lock(tmp_path: Path, cfg) -> None:  # type: ignore[no-untyped-def]
    from hardneg.pipeline.experiment import train_run

    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "parent").symlink_to(tmp_path)
    (tmp_path / "link").symlink_to(real)  # --out link: the run folder itself through a link
    with run_lock(real):
        for out in (tmp_path / "link", tmp_path / "parent" / "real"):
            for kwargs in ({}, {"force": True}, {"resume": True}):
                with pytest.raises(RunLocked, match=rf"'{out}' is being written .*PID {os.getpid()}\b"):
                    train_run(cfg, out, quiet=True, **kwargs)
    assert _tree(real) == []  # nothing was written


def test_force_empties_a_group_folder_hardneg_made_only(tmp_path: Path, cfg) -> None:  # type: ignore[no-untyped-def]
    root = tmp_path / "group"
    prepare_root(root, cfg, resume=False, force=False, kind="compare")
    assert json.loads((root / GROUP_MARKER).read_text())["kind"] == "compare"
    _made_run(root / "simclr" / "seed0")
    (root / "simclr" / ".seed0.lock").write_text("")
    (root / "results.json").write_text("{}")
    prepare_root(root, cfg, resume=False, force=True, kind="compare")
    assert _tree(root) == [GROUP_MARKER, "compare.yaml"]
    _made_run(root / "hard" / "seed0", "notes.txt")
    (root / "hard" / "draft.md").write_text("the user's")
    with pytest.raises(NotOurs, match=r"does not \(hard/draft.md, hard/seed0/notes.txt\)"):
        prepare_root(root, cfg, resume=False, force=True, kind="compare")
    assert (root / "hard" / "draft.md").is_file()


# Issue 44: --force deletes only what hardneg wrote, file by file, in every subfolder.

def _hardneg_files(folder: Path) -> Path:
    """A run folder holding one of every kind of file hardneg writes, in every subfolder."""
    _made_run(folder, "metrics.csv", "eval.csv", "features.npz", "summary.md", "vocab.json", "derived.json",
              "checkpoints/epoch003.ckpt", "checkpoints/interrupted.ckpt", "checkpoints/last.ckpt.damaged",
              "checkpoints/.last.ckpt.x1y2.tmp")
    (folder / "logs" / "tensorboard").mkdir(parents=True)
    (folder / "figures").mkdir()
    for name in ("logs/tensorboard/events.out.tfevents.1.host.7.0", "logs/tensorboard/hparams.yaml",
                 "figures/loss.png", "figures/cosine_histograms.png"):
        (folder / name).write_text(name)
    return folder


USER_FILES = ["logs/notes.txt", "figures/paper_fig.pdf", "checkpoints/mine.ckpt", "logs/tensorboard/notes.md",
              "figures/old/loss.png"]


@pytest.mark.parametrize("made_by", ["marker", "0.2"])
@pytest.mark.parametrize("user_file", USER_FILES)
def test_a_user_file_anywhere_inside_a_run_folder_makes_force_refuse_naming_it(
    tmp_path: Path, cfg, made_by: str, user_file: str
) -> None:  # type: ignore[no-untyped-def]
    run = _hardneg_files(tmp_path / "run")
    if made_by == "0.2":  # no marker: recognised only when every file in it is one hardneg writes
        (run / RUN_MARKER).unlink()
    (run / user_file).parent.mkdir(parents=True, exist_ok=True)
    (run / user_file).write_text("the user's")
    before = _tree(run)
    shown = user_file.removesuffix("/loss.png")  # a folder hardneg does not make is named as a whole
    with pytest.raises(NotOurs, match=rf"'{run}': it holds what a run folder made by hardneg does not "
                                      rf"\({shown}\)"):
        prepare_run_dir(cfg, run, resume=False, force=True)
    assert _tree(run) == before and (run / user_file).read_text() == "the user's"


def test_force_deletes_every_file_hardneg_wrote_in_every_subfolder(tmp_path: Path, cfg) -> None:  # type: ignore[no-untyped-def]
    run = _hardneg_files(tmp_path / "run")
    prepare_run_dir(cfg, run, resume=False, force=True)
    assert _tree(run) == [RUN_MARKER]


def test_a_link_inside_a_run_folder_is_never_followed_nor_deleted(tmp_path: Path, cfg) -> None:  # type: ignore[no-untyped-def]
    run = _made_run(tmp_path / "run")
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "thesis.tex").write_text("the user's")
    (run / "figures").symlink_to(mine)  # a known name, but a link
    with pytest.raises(NotOurs, match=r"does not \(figures\)"):
        prepare_run_dir(cfg, run, resume=False, force=True)
    assert (run / "figures" / "thesis.tex").read_text() == "the user's"


def test_a_file_put_in_while_force_deletes_survives_with_its_folder(
    tmp_path: Path, cfg, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    from hardneg.pipeline import run_folder

    run = _hardneg_files(tmp_path / "run")
    surveyed = run_folder.survey

    def then_a_user_writes(folder, kind):  # type: ignore[no-untyped-def]
        found = surveyed(folder, kind)
        (run / "figures" / "paper_fig.pdf").write_text("the user's")  # after the check, before deleting
        return found

    monkeypatch.setattr(run_folder, "survey", then_a_user_writes)
    prepare_run_dir(cfg, run, resume=False, force=True)
    assert _tree(run) == [RUN_MARKER, "figures", "figures/paper_fig.pdf"]


@pytest.mark.parametrize("user_file", ["figures/paper_fig.pdf", "hard/seed0/logs/notes.txt",
                                       "hard/seed0/x/y"])
def test_a_user_file_anywhere_inside_a_group_folder_makes_force_refuse_naming_it(
    tmp_path: Path, cfg, user_file: str
) -> None:  # type: ignore[no-untyped-def]
    root = tmp_path / "group"
    prepare_root(root, cfg, resume=False, force=False, kind="compare")
    _hardneg_files(root / "hard" / "seed0")
    (root / "figures").mkdir()
    (root / "figures" / "accuracy_vs_beta.png").write_text("png")
    (root / user_file).parent.mkdir(parents=True, exist_ok=True)
    (root / user_file).write_text("the user's")
    before = _tree(root)
    shown = user_file.removesuffix("/y")
    with pytest.raises(NotOurs, match=rf"does not \({shown}\)"):
        prepare_root(root, cfg, resume=False, force=True, kind="compare")
    assert _tree(root) == before
    (root / user_file).unlink()
    if user_file.endswith("/y"):
        (root / user_file).parent.rmdir()
    prepare_root(root, cfg, resume=False, force=True, kind="compare")
    assert _tree(root) == [GROUP_MARKER, "compare.yaml"]


def test_the_cli_refuses_force_on_a_0_2_shaped_folder_holding_user_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The issue's probe: config.yaml and provenance.json beside a user's logs/ and figures/."""
    monkeypatch.chdir(tmp_path)
    for name, text in (("config.yaml", "a"), ("provenance.json", "{}"), ("logs/notes.txt", "X"),
                       ("figures/paper_fig.pdf", "X")):
        (tmp_path / "sp1" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "sp1" / name).write_text(text)
    before = _tree(tmp_path / "sp1")
    line = _one_error(CliRunner().invoke(app, ["train", "digits", *QUICK, "--out", "sp1", "--force", "-q"]))
    assert line.startswith("error: --force refuses to delete 'sp1': it holds what a run folder made by "
                           "hardneg does not (figures/paper_fig.pdf, logs/notes.txt)"), line
    assert _tree(tmp_path / "sp1") == before


def test_force_on_a_parent_of_a_live_run_names_the_writer_s_pid(tmp_path: Path, cfg) -> None:  # type: ignore[no-untyped-def]
    parent = _made_run(tmp_path / "N")
    with run_lock(parent / "figures"):  # this process plays the writer of a folder inside it
        with run_lock(parent) as lock, pytest.raises(RunLocked, match=rf"writing \(PID {os.getpid()}\)"):
            clear_folder(lock, "run")
    with run_lock(parent) as lock, lock.exclusive():  # this process plays a --force deleting N
        with pytest.raises(RunLocked, match=rf"being deleted by another hardneg process \(--force, PID "
                                            rf"{os.getpid()}\)"):
            with run_lock(parent / "inner"):
                pass


# Issue 44: a run that fails before training leaves nothing that blocks the same command.

def test_a_run_that_failed_before_training_is_taken_again_without_force(tmp_path: Path, cfg) -> None:  # type: ignore[no-untyped-def]
    run = tmp_path / "run"
    prepare_run_dir(cfg, run, resume=False, force=False)  # what a SIGKILL while reading the data leaves
    for name in ("config.yaml", "provenance.json", "vocab.json", ".config.yaml.a1b2.tmp"):
        (run / name).write_text(name)
    prepare_run_dir(cfg, run, resume=False, force=False)
    assert _tree(run) == [RUN_MARKER]
    (run / "config.yaml").write_text("config")
    (run / "checkpoints").mkdir()
    (run / "checkpoints" / "interrupted.ckpt").write_text("a training that started")
    with pytest.raises(RunExists, match="already holds a run"):
        prepare_run_dir(cfg, run, resume=False, force=False)
    assert (run / "checkpoints" / "interrupted.ckpt").is_file()


@pytest.mark.parametrize("existed", [False, True])
def test_a_run_whose_data_fails_leaves_nothing_behind(tmp_path: Path, existed: bool) -> None:
    from hardneg.pipeline.experiment import train_run

    corpus = tmp_path / "one_article.tsv"  # one article: no negatives, refused once read
    corpus.write_text("".join(f"a\tsentence number {i} of the only article\n" for i in range(8)))
    cfg = load_config("articles", ["data.text.source=tsv", f"data.root={corpus}", "train.progress=false"])
    run = tmp_path / "run"
    if existed:
        run.mkdir()
    with pytest.raises(ValueError, match="at least 2 articles"):
        train_run(cfg, run, quiet=True)
    assert (_tree(run) == []) if existed else not run.exists()
    with pytest.raises(ValueError, match="at least 2 articles"):  # again: not "already holds a run"
        train_run(cfg, run, quiet=True)


# Issue 44: `~` is expanded once, by hardneg, so that Lightning and hardneg write one folder.

@pytest.mark.parametrize("where", ["out_dir", "--out"])
def test_a_tilde_in_the_output_folder_gives_one_run_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    home, cwd = tmp_path / "home", tmp_path / "cwd"
    home.mkdir()
    cwd.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(cwd)
    out = ["out_dir=~/runs"] if where == "out_dir" else ["--out", "~/runs/digits"]  # as a quoted '~' arrives
    result = CliRunner().invoke(app, ["train", "digits", *QUICK, *out, "-q"])
    assert result.exit_code == 0, (result.output, result.exception)
    assert _tree(cwd) == []  # no './~'
    written = _tree(home / "runs" / "digits")
    assert {"config.yaml", "checkpoints/last.ckpt", "logs/tensorboard", "metrics.json"} <= set(written)


def test_path_keys_of_a_config_are_expanded_when_it_is_validated(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    assert load_config("digits", ["out_dir=~/runs"]).out_dir == f"{tmp_path}/runs"
    tu = load_config("graphs", ["data.dataset=tu", "data.name=MUTAG", "data.root=~/TU"])
    assert tu.data.root == f"{tmp_path}/TU"  # type: ignore[attr-defined]


def test_a_metrics_json_that_is_not_json_is_named_with_the_file_it_links_to(tmp_path: Path) -> None:
    from hardneg.pipeline.run_folder import load_result

    run = _made_run(tmp_path / "run")
    target = tmp_path / "elsewhere.txt"
    target.write_text("not json")
    (run / "metrics.json").unlink()
    (run / "metrics.json").symlink_to(target)
    with pytest.raises(ValueError, match=rf"^'{run / 'metrics.json'}' \(a link to '{target}'\) is not a JSON "
                                         r"file: Expecting value: line 1 column 1"):
        load_result(run)
