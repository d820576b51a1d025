"""SentEval's protocol: nested CV for binary tasks, train/test for TREC, pair features and F1 for MSRP."""

from __future__ import annotations

import zlib
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pytest
from sklearn.metrics import f1_score
from sklearn.model_selection import GridSearchCV, StratifiedKFold
from threadpoolctl import threadpool_limits

from hardneg.evaluate import LinearReadout
from hardneg.senteval import (
    DEFAULT_C_GRID,
    TRAIN_TEST_C_GRID,
    BinaryTask,
    MissingTaskFileError,
    PairTask,
    SentEvalEvaluator,
    SplitTask,
    TaskResult,
    evaluate_folder,
    pair_features,
    results_table,
)

GRID = (0.01, 0.1, 1.0, 10.0)


def _fast(**kwargs: object) -> SentEvalEvaluator:
    options: dict = {"folds": 4, "inner_folds": 3, "c_grid": GRID, "threads": 1} | kwargs
    return SentEvalEvaluator(**options)


def _lookup(features: np.ndarray, sentences: Sequence[str]) -> Callable[[list[str]], np.ndarray]:
    """An encoder that maps ``sentences[i]`` to row ``i`` of ``features``."""
    index = {s: i for i, s in enumerate(sentences)}
    return lambda batch: features[[index[s] for s in batch]]


def _binary(n: int, labels: np.ndarray) -> BinaryTask:
    return BinaryTask(name="toy", sentences=[f"s{i}" for i in range(n)], labels=labels)


def test_features_linear_in_the_label_score_near_100(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    y = rng.permutation(np.r_[np.zeros(60, np.int64), np.ones(60, np.int64)])
    X = np.c_[y + 0.2 * rng.normal(size=120), rng.normal(size=(120, 4))]
    task = _binary(120, y)
    result = _fast().evaluate(task, _lookup(X, task.sentences))
    assert isinstance(result, TaskResult) and result.task == "toy" and result.n == 120
    assert result.accuracy >= 97 and result.std is not None and result.std <= 5
    assert result.f1 is None and len(result.best_C) == 4 and set(result.best_C) <= set(GRID)
    assert result.protocol == "4-fold CV" and str(result).startswith("toy: ")


def test_random_features_score_near_chance() -> None:
    rng = np.random.default_rng(1)
    y = rng.permutation(np.r_[np.zeros(150, np.int64), np.ones(150, np.int64)])
    X = rng.normal(size=(300, 8))
    task = _binary(300, y)
    result = _fast().evaluate(task, _lookup(X, task.sentences))
    assert abs(result.accuracy - 50) < 8, result


def test_binary_C_comes_from_the_inner_cv_of_each_training_part() -> None:
    rng = np.random.default_rng(2)
    y = np.r_[np.zeros(40, np.int64), np.ones(40, np.int64)]
    X = np.c_[y + rng.normal(size=80), rng.normal(size=(80, 6))]
    task = _binary(80, y)
    evaluator = _fast(seed=3)
    result = evaluator.evaluate(task, _lookup(X, task.sentences))
    outer = StratifiedKFold(n_splits=4, shuffle=True, random_state=3)
    expected = []
    with threadpool_limits(limits=1):
        for train, _ in outer.split(X, y):  # the search sees the training part only
            inner = StratifiedKFold(n_splits=3, shuffle=True, random_state=3)
            search = GridSearchCV(LinearReadout(), {"C": list(GRID)}, scoring="accuracy", cv=inner)
            expected.append(search.fit(X[train], y[train]).best_params_["C"])
    assert result.best_C == tuple(expected)
    assert _fast(seed=3).evaluate(task, _lookup(X, task.sentences)) == result  # deterministic


def _trec_like(rng: np.random.Generator, n_train: int = 90, n_test: int = 30) -> tuple[SplitTask, np.ndarray]:
    y_train = np.arange(n_train) % 3
    y_test = np.arange(n_test) % 3
    labels = np.r_[y_train, y_test]
    X = np.eye(3)[labels] * 2 + 0.3 * rng.normal(size=(n_train + n_test, 3))
    X = np.c_[X, rng.normal(size=(n_train + n_test, 2))]
    task = SplitTask(name="TREC", train_sentences=[f"s{i}" for i in range(n_train)], train_labels=y_train,
                     test_sentences=[f"s{i}" for i in range(n_train, n_train + n_test)], test_labels=y_test,
                     classes=("A", "B", "C"))
    return task, X


def test_split_task_fits_on_train_and_never_sees_the_test_features(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(4)
    task, clean = _trec_like(rng)
    X = clean.copy()
    X[90:, -1] = 1e6  # a marker only the test rows carry
    seen: list[np.ndarray] = []
    real_fit = LinearReadout.fit

    def spy(self: LinearReadout, features: np.ndarray, labels: np.ndarray) -> LinearReadout:
        seen.append(np.asarray(features))
        return real_fit(self, features, labels)

    monkeypatch.setattr(LinearReadout, "fit", spy)
    sentences = (*task.train_sentences, *task.test_sentences)
    result = _fast().evaluate(task, _lookup(X, sentences))
    assert len(seen) == 3 * len(GRID) + 1  # inner folds x grid, then the refit on all of train
    assert all(np.abs(f[:, -1]).max() < 1e5 for f in seen) and max(len(f) for f in seen) == 90
    assert result.protocol == "train/test" and result.n == 30 and result.std is None
    # C depends on the training data only: other test labels change the accuracy, not C
    monkeypatch.setattr(LinearReadout, "fit", real_fit)
    right = _fast().evaluate(task, _lookup(clean, sentences))
    flipped = SplitTask(name="TREC", train_sentences=task.train_sentences, train_labels=task.train_labels,
                        test_sentences=task.test_sentences, test_labels=(task.test_labels + 1) % 3,
                        classes=task.classes)
    wrong = _fast().evaluate(flipped, _lookup(clean, sentences))
    assert wrong.best_C == right.best_C == result.best_C and len(right.best_C) == 1
    assert right.accuracy >= 95 and wrong.accuracy <= 5


def test_split_task_with_class_features_is_accurate() -> None:
    task, X = _trec_like(np.random.default_rng(5))
    result = _fast().evaluate(task, _lookup(X, (*task.train_sentences, *task.test_sentences)))
    assert result.accuracy >= 95


def test_default_grids_are_senteval_grids_of_each_task() -> None:
    task, X = _trec_like(np.random.default_rng(6))
    evaluator = _fast(c_grid=None)
    split = evaluator.evaluate(task, _lookup(X, (*task.train_sentences, *task.test_sentences)))
    assert split.best_C[0] in TRAIN_TEST_C_GRID
    rng = np.random.default_rng(7)
    y = np.arange(60) % 2
    binary = _binary(60, y)
    result = evaluator.evaluate(binary, _lookup(np.c_[y + rng.normal(size=60), rng.normal(size=60)],
                                                binary.sentences))
    assert set(result.best_C) <= set(DEFAULT_C_GRID)


def test_pair_features_are_abs_difference_and_product() -> None:
    u = np.array([[1.0, -2.0, 0.5], [0.0, 3.0, 1.0]])
    v = np.array([[3.0, 2.0, 0.5], [1.0, -1.0, 2.0]])
    f = pair_features(u, v)
    assert f.shape == (2, 6)
    np.testing.assert_allclose(f, [[2, 4, 0, 3, -4, 0.25], [1, 4, 1, 0, -3, 2]])
    with pytest.raises(ValueError, match="same shape"):
        pair_features(u, v[:, :2])


def _vector(sentence: str) -> np.ndarray:
    """A fixed random unit vector per distinct sentence (equal sentences, equal vectors)."""
    rng = np.random.default_rng(zlib.crc32(sentence.encode()))
    x = rng.normal(size=6)
    return x / np.linalg.norm(x)


def test_msrp_accuracy_and_f1_on_a_hand_made_case() -> None:
    # training pairs: paraphrases are identical sentences, the others are different ones
    train_a = [f"t{i}" for i in range(40)]
    train_b = [f"t{i}" if i % 2 else f"u{i}" for i in range(40)]
    train_y = [i % 2 for i in range(40)]
    # test: identical -> predicted paraphrase, different -> predicted not; labels chosen by hand:
    test_a = ["a", "b", "c", "d", "e"]
    test_b = ["a", "b", "x", "y", "z"]
    test_y = [1, 0, 1, 1, 0]  # TP, FP, FN, FN, TN
    task = PairTask(name="MSRP", train_a=train_a, train_b=train_b, train_labels=train_y, test_a=test_a,
                    test_b=test_b, test_labels=test_y)
    calls: list[int] = []

    def encode(batch: list[str]) -> np.ndarray:
        calls.append(len(batch))
        return np.stack([_vector(s) for s in batch])

    evaluator = _fast()
    result = evaluator.evaluate(task, encode)
    assert calls == [40, 40, 5, 5]
    assert result.accuracy == pytest.approx(40.0) and result.f1 == pytest.approx(40.0)  # 2·1 / (2·1 + 1 + 2)
    readout = evaluator.fit_readout(pair_features(encode(train_a), encode(train_b)), task.train_labels)
    predicted = readout.predict(pair_features(encode(test_a), encode(test_b)))
    assert predicted.tolist() == [1, 1, 0, 0, 0]
    assert result.f1 == pytest.approx(100 * f1_score(test_y, predicted))
    assert str(result) == "MSRP: 40.00, F1 40.00 (train/test, n=5)"


def test_bad_encoders_and_settings_are_refused() -> None:
    task = _binary(40, np.arange(40) % 2)
    with pytest.raises(ValueError, match="encode returned 39 rows for the 40 sentences of toy"):
        _fast().evaluate(task, lambda s: np.zeros((len(s) - 1, 2)))
    with pytest.raises(ValueError, match="finite"):
        _fast().evaluate(task, lambda s: np.full((len(s), 2), np.nan))
    with pytest.raises(ValueError, match=r"must have shape \(N, d\)"):
        _fast().evaluate(task, lambda s: np.zeros(len(s)))
    with pytest.raises(ValueError, match="folds must be an int >= 2"):
        SentEvalEvaluator(folds=1)
    with pytest.raises(ValueError, match="c_grid must be a non-empty"):
        SentEvalEvaluator(c_grid=())
    with pytest.raises(ValueError, match="positive finite"):
        SentEvalEvaluator(c_grid=(1.0, -1.0))
    with pytest.raises(ValueError, match="threads must be an int >= 1"):
        SentEvalEvaluator(threads=0)
    with pytest.raises(TypeError, match="BinaryTask, PoolTask, SplitTask or PairTask"):
        _fast().evaluate("MR", lambda s: s)  # type: ignore[arg-type]
    assert SentEvalEvaluator().c_grid is None  # SentEval's grid of each task:
    assert DEFAULT_C_GRID == (0.25, 0.5, 1.0, 2.0, 4.0, 8.0)
    assert TRAIN_TEST_C_GRID == (0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0)
    tiny = SplitTask(name="TREC", train_sentences=["a", "b", "c"], train_labels=[0, 1, 1],
                     test_sentences=["d"], test_labels=[0], classes=("x", "y"))
    with pytest.raises(ValueError, match="inner_folds=3 exceeds the smallest training class count 1"):
        _fast().evaluate(tiny, lambda s: np.ones((len(s), 2)))


def _folder(root: Path) -> None:
    (root / "MR").mkdir(parents=True)
    (root / "MR" / "rt-polarity.pos").write_text("".join(f"good film {i}\n" for i in range(24)))
    (root / "MR" / "rt-polarity.neg").write_text("".join(f"bad film {i}\n" for i in range(24)))
    (root / "TREC").mkdir()
    questions = {"HUM": "Who is person {} ?", "LOC": "Where is place {} ?", "NUM": "How many things {} ?"}
    lines = [f"{c}:x {q.format(i)}\n" for i in range(12) for c, q in questions.items()]
    (root / "TREC" / "train_5500.label").write_text("".join(lines[:27]))
    (root / "TREC" / "TREC_10.label").write_text("".join(lines[27:]))
    header = "Quality\t#1 ID\t#2 ID\t#1 String\t#2 String\n"
    for name, n in (("msr_paraphrase_train.txt", 24), ("msr_paraphrase_test.txt", 6)):
        rows = [f"{i % 2}\t{i}\t{i}\tsame words {i}\t{'same words' if i % 2 else 'other text'} {i}\n"
                for i in range(n)]
        (root / "MRPC").mkdir(exist_ok=True)
        (root / "MRPC" / name).write_text(header + "".join(rows))


def _words(batch: list[str]) -> np.ndarray:
    vocab = ["good", "bad", "who", "where", "how", "same", "words", "other", "text"]
    return np.array([[float(w in s.lower().split()) for w in vocab] for s in batch])


def test_evaluate_folder_runs_the_tasks_present(tmp_path: Path) -> None:
    _folder(tmp_path)
    results = evaluate_folder(tmp_path, _words, evaluator=_fast(folds=3))
    assert list(results) == ["MR", "TREC", "MSRP"]
    assert results["MR"].accuracy == 100 and results["MR"].n == 48
    assert results["TREC"].accuracy == 100 and results["TREC"].n == 9
    assert results["MSRP"].f1 is not None and results["MSRP"].n == 6
    table = results_table(results)
    assert table.splitlines()[0] == "| MR | TREC | MSRP |" and "/" in table.splitlines()[2]
    only = evaluate_folder(tmp_path, _words, tasks="trec", evaluator=_fast())
    assert list(only) == ["TREC"] and only["TREC"] == results["TREC"]
    with pytest.raises(MissingTaskFileError, match=r"mpqa\.pos: missing file of task MPQA"):
        evaluate_folder(tmp_path, _words, tasks=["MPQA"])
    (tmp_path / "MR" / "rt-polarity.neg").unlink()
    with pytest.raises(MissingTaskFileError, match=r"rt-polarity\.neg: missing file of task MR"):
        evaluate_folder(tmp_path, _words, evaluator=_fast(folds=3))
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="holds no SentEval task files"):
        evaluate_folder(tmp_path / "empty", _words)
    with pytest.raises(ValueError, match="no such folder"):
        evaluate_folder(tmp_path / "absent", _words)
