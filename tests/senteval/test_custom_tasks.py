"""A user's own SentEval tasks (hardneg.senteval.custom) and ``hardneg evaluate --senteval DIR``:
the tasks found in DIR (or --tasks), results written beside the run's own, never over them."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from hardneg.cli import app
from hardneg.senteval.custom import custom_tasks, read_custom_task
from hardneg.senteval.errors import SentEvalFormatError
from hardneg.senteval.readers import find_tasks, read_task, resolve_task_name
from hardneg.senteval.tasks import BinaryTask, PoolTask, SplitTask

WORDS = {"ham": "hello friend meeting lunch", "spam": "win prize money click",
         "news": "vote city rain report"}


def _lines(classes: list[str], per_class: int, seed: int = 0) -> str:
    rng = np.random.default_rng(seed)
    return "".join(f"{c}\t{' '.join(rng.choice(WORDS[c].split(), size=4))}\n"
                   for c in classes for _ in range(per_class))


def _custom_folder(root: Path) -> Path:
    (root / "spam").mkdir(parents=True)
    (root / "spam" / "data.tsv").write_text(_lines(["ham", "spam"], 8), encoding="utf-8")
    (root / "topics").mkdir()
    (root / "topics" / "train.tsv").write_text(_lines(["ham", "news", "spam"], 8), encoding="utf-8")
    (root / "topics" / "test.tsv").write_text(_lines(["ham", "news", "spam"], 3, seed=1), encoding="utf-8")
    (root / "notes").mkdir()  # a folder without a task's files is not a task
    return root


def test_custom_tasks_are_found_and_read_in_their_shapes(tmp_path: Path) -> None:
    root = _custom_folder(tmp_path / "se")
    assert custom_tasks(root) == ["spam", "topics"] and find_tasks(root) == ["spam", "topics"]
    spam = read_task("spam", root)
    assert isinstance(spam, BinaryTask) and spam.classes == ("ham", "spam") and len(spam) == 16
    topics = read_task("topics", root)
    assert isinstance(topics, SplitTask) and topics.classes == ("ham", "news", "spam")
    assert np.bincount(topics.test_labels).tolist() == [3, 3, 3]
    (root / "three").mkdir()
    (root / "three" / "data.tsv").write_text(_lines(["ham", "news", "spam"], 4), encoding="utf-8")
    assert isinstance(read_custom_task("three", root), PoolTask)
    assert resolve_task_name("mr", root) == "MR" and resolve_task_name("spam", root) == "spam"


def test_bad_custom_tasks_name_the_file_and_line(tmp_path: Path) -> None:
    root = tmp_path / "se"
    (root / "bad").mkdir(parents=True)
    (root / "bad" / "data.tsv").write_text("ham\thello there\nno tab on this line\n", encoding="utf-8")
    with pytest.raises(SentEvalFormatError, match=r"data.tsv.*line 2.*label<TAB>sentence"):
        read_task("bad", root)
    (root / "one").mkdir()
    (root / "one" / "data.tsv").write_text("ham\thello\nham\tthere\n", encoding="utf-8")
    with pytest.raises(SentEvalFormatError, match=r"task one: every sentence is of class ham"):
        read_task("one", root)
    with pytest.raises(ValueError, match=r"unknown SentEval task 'nope'.*holding data.tsv"):
        resolve_task_name("nope", root)


def test_evaluate_senteval_adds_the_folder_s_tasks_beside_the_run_s_results(tmp_path: Path) -> None:
    from tests.text.test_quickthoughts import TINY, _corpus, _senteval

    corpus = _corpus(tmp_path / "corpus.txt")
    run = tmp_path / "run"
    mr = _senteval(tmp_path / "mr")
    trained = CliRunner().invoke(app, ["train", "sentences", *TINY, f"data.root={corpus}",
                                       f"eval.senteval={mr}", "--out", str(run), "-q"])
    assert trained.exit_code == 0, trained.output
    own = json.loads((run / "metrics.json").read_text())["eval"]
    assert set(own) == {"mr_acc"}

    custom = _custom_folder(tmp_path / "custom")
    first = CliRunner().invoke(app, ["evaluate", str(run), "--senteval", str(custom)])
    assert first.exit_code == 0, first.output
    assert "spam_acc=" in first.output and "topics_acc=" in first.output
    second = CliRunner().invoke(app, ["evaluate", str(run), "--senteval", str(custom), "--tasks", "spam"])
    assert second.exit_code == 0, second.output
    metrics = json.loads((run / "metrics.json").read_text())
    assert metrics["eval"] == own  # the run's own results are kept
    assert [sorted(e["eval"]) for e in metrics["evaluations"]] == [["spam_acc", "topics_acc"], ["spam_acc"]]
    assert metrics["evaluations"][1]["overrides"] == {"eval.senteval": str(custom),
                                                      "eval.senteval_tasks": ["spam"]}
    unknown = CliRunner().invoke(app, ["evaluate", str(run), "--senteval", str(custom), "--tasks", "nope"])
    assert unknown.exit_code == 2 and "unknown SentEval task 'nope'" in unknown.output
