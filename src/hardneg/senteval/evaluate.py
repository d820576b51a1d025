"""SentEval's transfer protocol: a logistic regression on frozen sentence features.

SentEval (Conneau & Kiela, LREC 2018) scores an encoder ``encode(sentences) -> (N, D)`` with a
simple classifier trained on top of the frozen features; Logeswaran & Lee (ICLR 2018,
quick-thoughts) report it on ``[f(s); g(s)]``, the concatenation of their two encoders, which
the caller builds inside ``encode`` (nothing here builds or trains a model). Per task shape:

* **binary tasks** (MR, CR, SUBJ, MPQA): stratified ``folds``-fold cross-validation
  (``StratifiedKFold(shuffle=True, random_state=seed)``); on the training part of each fold the
  L2 penalty ``C`` is chosen from the grid (SentEval's: ``2⁻², …, 2³``) by an inner stratified
  ``inner_folds``-fold
  cross-validation (accuracy; ties go to the smaller ``C``), refitted on the whole training part,
  and scored on the test fold. Reported: mean test accuracy over folds ± its standard deviation
  (population, ``ddof = 0``), in %. This is
  :func:`hardneg.evaluate.cross_validated_accuracy` with ``readout="logistic"``.
* **TREC** (train / test): ``C`` chosen from the grid (SentEval's: ``2⁻¹, …, 2⁵``) by a
  stratified ``inner_folds``-fold cross-validation on the training set, refitted on it, test
  accuracy reported.
* **MSRP** (pairs, train / test): features of a pair ``(u, v)`` are ``[|u − v|; u ∗ v]``
  (SentEval's), then as TREC; test accuracy and F1 of the paraphrase class (label 1) reported.

The classifier is :class:`hardneg.evaluate.LinearReadout`: ``StandardScaler`` fitted on the
training data of each fit, then scikit-learn's ``LogisticRegression`` (L-BFGS, 1 000 iterations,
multinomial for TREC). With the defaults (``folds = inner_folds = 10``, ``c_grid=None``) the
protocol is SentEval's scikit-learn path run with ``kfold=10`` (SentEval uses ``kfold`` for both
the outer and the inner split, and the two grids above); the differences, all deliberate, are:
features are standardised (``standardize=False`` turns it off; standardising lets one ``C`` grid
fit encoders of any scale), the splits are seeded by ``seed`` (SentEval fixes 1111), the readout
is scikit-learn's current multinomial L-BFGS (SentEval's era defaulted to one-vs-rest liblinear),
and ties between grid values go to the first (smaller) ``C`` as in SentEval's ``argmax``.
ConvergenceWarnings of the largest ``C`` are expected and silenced.

``threads=1`` runs the fits with single-threaded BLAS (``threadpoolctl``): on a few shared cores
the many small L-BFGS fits are several times faster that way (a TREC fit on 256 features took
0.3–0.6 s single-threaded, 2–9 s with two threads on 2 busy cores).
"""

from __future__ import annotations

import contextlib
import math
import os
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from hardneg.data.folds import nested_cv_problem
from hardneg.evaluate import LinearReadout, cross_validated_readouts
from hardneg.evaluate.arrays import as_features
from hardneg.senteval.errors import SentEvalFormatError, TooFewExamplesError
from hardneg.senteval.readers import find_tasks, read_task, resolve_task_name, task_files
from hardneg.senteval.tasks import TASK_NAMES, BinaryTask, PairTask, PoolTask, SplitTask, Task

__all__ = [
    "DEFAULT_C_GRID",
    "TRAIN_TEST_C_GRID",
    "Encoder",
    "SentEvalEvaluator",
    "TaskResult",
    "evaluate_folder",
    "pair_features",
    "results_table",
]

# SentEval's grids for scikit-learn: InnerKFoldClassifier (binary tasks) and KFoldClassifier (TREC, MRPC)
DEFAULT_C_GRID: tuple[float, ...] = tuple(2.0**t for t in range(-2, 4))  # 0.25 .. 8
TRAIN_TEST_C_GRID: tuple[float, ...] = tuple(2.0**t for t in range(-1, 6))  # 0.5 .. 32
Encoder = Callable[[list[str]], Any]  # sentences -> (N, D) array (numpy or torch)


@dataclass(frozen=True)
class TaskResult:
    """The score of one task.

    Attributes:
        task: the task name.
        accuracy: test accuracy in % (mean over folds for the cross-validated tasks).
        std: standard deviation of the fold accuracies in % (``ddof = 0``); ``None`` for train / test.
        f1: F1 of class 1 (paraphrase) in % for MSRP, else ``None``.
        n: examples scored (all of them for cross-validation, the test set otherwise).
        best_C: the ``C`` chosen by the inner cross-validation, one per outer fold (or one).
        protocol: ``"10-fold CV"`` or ``"train/test"``.
    """

    task: str
    accuracy: float
    std: float | None
    f1: float | None
    n: int
    best_C: tuple[float, ...]
    protocol: str

    def __str__(self) -> str:
        score = f"{self.accuracy:.2f}" + (f" ± {self.std:.2f}" if self.std is not None else "")
        f1 = f", F1 {self.f1:.2f}" if self.f1 is not None else ""
        return f"{self.task}: {score}{f1} ({self.protocol}, n={self.n})"


def pair_features(u: Any, v: Any) -> np.ndarray:
    """SentEval's features of sentence pairs: ``[|u − v|; u ∗ v]``, shape ``(N, 2D)``.

    Example:
        >>> pair_features(np.array([[1.0, 2.0]]), np.array([[3.0, -1.0]]))
        array([[ 2.,  3.,  3., -2.]])
    """
    a = as_features(u, name="u")
    b = as_features(v, name="v")
    if a.shape != b.shape:
        raise ValueError(f"u and v must have the same shape, got {a.shape} and {b.shape}")
    return np.concatenate([np.abs(a - b), a * b], axis=1)


def _check_int(name: str, value: Any, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}, got {value!r}")
    return int(value)


def _check_grid(grid: Any) -> tuple[float, ...]:
    if isinstance(grid, str | bytes) or not isinstance(grid, Sequence | np.ndarray) or len(grid) == 0:
        raise ValueError(f"c_grid must be a non-empty sequence of positive floats, got {grid!r}")
    values = []
    for c in grid:
        numeric = not isinstance(c, bool) and isinstance(c, int | float | np.number)
        if not (numeric and math.isfinite(c) and c > 0):
            raise ValueError(f"c_grid must hold positive finite floats, got {c!r}")
        values.append(float(c))
    return tuple(values)


class SentEvalEvaluator:
    """Score frozen sentence features on SentEval tasks (Conneau & Kiela, LREC 2018).

    Args:
        folds: outer folds of the binary tasks (SentEval: 10).
        inner_folds: folds of the inner search for ``C`` (SentEval: the same 10).
        c_grid: candidate L2 penalties ``C`` for every task; ``None`` = SentEval's grid of the task
            (:data:`DEFAULT_C_GRID` ``2⁻², …, 2³`` for the cross-validated binary tasks,
            :data:`TRAIN_TEST_C_GRID` ``2⁻¹, …, 2⁵`` for TREC and MSRP).
        seed: ``random_state`` of the outer and inner stratified splits.
        standardize: standardise features inside every fit (scaler fitted on its training data).
        threads: BLAS / OpenMP threads of the classifier fits (``threadpoolctl``); ``None`` leaves
            them as they are. ``encode`` always runs outside the limit.

    Example:
        >>> rng = np.random.default_rng(0)
        >>> task = BinaryTask(name="toy", sentences=[f"s{i}" for i in range(40)], labels=[0, 1] * 20)
        >>> encode = lambda s: np.c_[task.labels[[int(x[1:]) for x in s]], rng.normal(size=(len(s), 2))]
        >>> str(SentEvalEvaluator(folds=4, inner_folds=3, threads=1).evaluate(task, encode))
        'toy: 100.00 ± 0.00 (4-fold CV, n=40)'
    """

    def __init__(self, *, folds: int = 10, inner_folds: int = 10, c_grid: Sequence[float] | None = None,
                 seed: int = 0, standardize: bool = True, threads: int | None = None) -> None:
        self.folds = _check_int("folds", folds, 2)
        self.inner_folds = _check_int("inner_folds", inner_folds, 2)
        self.c_grid = None if c_grid is None else _check_grid(c_grid)
        self.seed = _check_int("seed", seed, 0)
        if not isinstance(standardize, bool | np.bool_):
            raise ValueError(f"standardize must be a bool, got {standardize!r}")
        self.standardize = bool(standardize)
        self.threads = None if threads is None else _check_int("threads", threads, 1)

    @contextlib.contextmanager
    def _limits(self) -> Iterator[None]:
        if self.threads is None:
            yield
            return
        from threadpoolctl import threadpool_limits

        with threadpool_limits(limits=self.threads):
            yield

    def __repr__(self) -> str:
        return (f"SentEvalEvaluator(folds={self.folds}, inner_folds={self.inner_folds}, "
                f"c_grid={self.c_grid}, seed={self.seed}, standardize={self.standardize}, "
                f"threads={self.threads})")

    def check_task(self, task: Task, folder: str | os.PathLike[str]) -> None:
        """Raise, before anything is encoded, what scoring ``task`` (read from ``folder``) would raise
        about its labels, naming the task and the file of the class at fault.

        The readout needs two classes in the labels it is fitted on (a :class:`SentEvalFormatError`)
        and, for every class, as many examples as folds: ``folds`` outer and ``inner_folds`` inner
        stratified folds for the binary tasks, ``inner_folds`` on the training part of TREC and MSRP
        (a :class:`TooFewExamplesError`, whose ``count`` and ``needed`` say by how much).
        """
        files = task_files(task.name, folder)
        if isinstance(task, BinaryTask | PoolTask):  # standard: label 1 = the layout's first file
            labels, item, folds, inner = task.labels, "sentence", self.folds, self.inner_folds
            file_of = {1: files[0], 0: files[-1]}
        else:
            labels, item, folds, inner = task.train_labels, "training example", self.inner_folds, None
            file_of = {}
        found = np.unique(labels)
        if found.size < 2:
            only = task.classes[int(found[0])] if found.size else "none"
            raise SentEvalFormatError(
                files[0], f"task {task.name}: every {item} is of class {only}; its readout needs at "
                f"least 2 classes (of {', '.join(task.classes)}), got 1 class")
        problem = nested_cv_problem(labels, folds=folds, inner_folds=inner, seed=self.seed)
        if problem is not None:
            name = task.classes[int(problem.label)]
            where = "" if problem.fold is None else f" in the training part of outer fold {problem.fold}"
            folds_of = "folds" if inner is not None and problem.fold is None else "inner folds (choice of C)"
            raise TooFewExamplesError(
                file_of.get(int(problem.label), files[0]),
                f"task {task.name}: {problem.count} {item}(s) of class {name!r}{where}, fewer than the "
                f"{problem.needed} stratified {folds_of}", count=problem.count, needed=problem.needed)

    def evaluate(self, task: Task, encode: Encoder) -> TaskResult:
        """Encode ``task``'s sentences with ``encode`` and score them by the task's protocol."""
        if isinstance(task, BinaryTask | PoolTask):
            return self.evaluate_binary(task, encode)
        if isinstance(task, SplitTask):
            return self.evaluate_split(task, encode)
        if isinstance(task, PairTask):
            return self.evaluate_pairs(task, encode)
        raise TypeError(
            f"task must be a BinaryTask, PoolTask, SplitTask or PairTask, got {type(task).__name__}"
        )

    def evaluate_binary(self, task: BinaryTask | PoolTask, encode: Encoder) -> TaskResult:
        """Nested stratified cross-validation (``folds`` outer, ``inner_folds`` inner for ``C``)."""
        features = _encode(encode, task.sentences, task.name)
        with self._limits():
            cv = cross_validated_readouts(
                features, task.labels, readouts=("logistic",), folds=self.folds, inner_folds=self.inner_folds,
                Cs=self.c_grid or DEFAULT_C_GRID, seed=self.seed, standardize=self.standardize)["logistic"]
        return TaskResult(task=task.name, accuracy=100 * cv.mean, std=100 * cv.std, f1=None, n=len(task),
                          best_C=cv.chosen_C, protocol=f"{self.folds}-fold CV")

    def fit_readout(self, features: Any, labels: Any) -> LinearReadout:
        """A :class:`~hardneg.evaluate.LinearReadout` whose ``C`` is chosen by inner CV on these data only.

        ``GridSearchCV`` over ``c_grid`` (default :data:`TRAIN_TEST_C_GRID`) with
        ``StratifiedKFold(inner_folds, shuffle=True, random_state=seed)`` and accuracy, refitted on
        all of ``features``; the chosen value is the returned readout's ``C``.
        """
        from sklearn.exceptions import ConvergenceWarning
        from sklearn.model_selection import GridSearchCV, StratifiedKFold

        X = as_features(features, name="features")
        y = np.asarray(labels).reshape(-1)
        classes, counts = np.unique(y, return_counts=True)
        if classes.size < 2:
            raise ValueError(f"the training labels must hold at least 2 classes, got {classes.tolist()}")
        if counts.min() < self.inner_folds:
            raise ValueError(f"inner_folds={self.inner_folds} exceeds the smallest training class count "
                             f"{int(counts.min())} (class {classes[int(np.argmin(counts))]!r})")
        inner = StratifiedKFold(n_splits=self.inner_folds, shuffle=True, random_state=self.seed)
        grid = {"C": list(self.c_grid or TRAIN_TEST_C_GRID)}
        search = GridSearchCV(LinearReadout(standardize=self.standardize), grid, cv=inner, scoring="accuracy",
                              refit=True)
        with warnings.catch_warnings(), self._limits():
            warnings.simplefilter("ignore", ConvergenceWarning)
            search.fit(X, y)
        readout: LinearReadout = search.best_estimator_
        return readout

    def evaluate_split(self, task: SplitTask, encode: Encoder) -> TaskResult:
        """Fit on the training part (``C`` by inner CV on it), report accuracy on the test part."""
        train = _encode(encode, task.train_sentences, f"{task.name} train")
        test = _encode(encode, task.test_sentences, f"{task.name} test")
        _same_width(train, test, task.name)
        readout = self.fit_readout(train, task.train_labels)
        with self._limits():
            accuracy = float(np.mean(readout.predict(test) == task.test_labels))
        return TaskResult(task=task.name, accuracy=100 * accuracy, std=None, f1=None, n=len(task.test_labels),
                          best_C=(float(readout.C),), protocol="train/test")

    def evaluate_pairs(self, task: PairTask, encode: Encoder) -> TaskResult:
        """Pair features ``[|u − v|; u ∗ v]``, fit on train (``C`` by inner CV), accuracy and F1 on test."""
        from sklearn.metrics import f1_score

        parts = {}
        for part in ("train", "test"):
            u = _encode(encode, getattr(task, f"{part}_a"), f"{task.name} {part} #1")
            v = _encode(encode, getattr(task, f"{part}_b"), f"{task.name} {part} #2")
            parts[part] = pair_features(u, v)
        _same_width(parts["train"], parts["test"], task.name)
        readout = self.fit_readout(parts["train"], task.train_labels)
        with self._limits():
            predicted = readout.predict(parts["test"])
        accuracy = float(np.mean(predicted == task.test_labels))
        f1 = float(f1_score(task.test_labels, predicted, pos_label=1, zero_division=0.0))
        return TaskResult(task=task.name, accuracy=100 * accuracy, std=None, f1=100 * f1,
                          n=len(task.test_labels), best_C=(float(readout.C),), protocol="train/test")


def _encode(encode: Encoder, sentences: Sequence[str], what: str) -> np.ndarray:
    out = encode(list(sentences))
    features = as_features(out, name=f"the features of {what}")
    if features.shape[0] != len(sentences):
        raise ValueError(f"encode returned {features.shape[0]} rows for the {len(sentences)} "
                         f"sentences of {what}")
    return features


def _same_width(train: np.ndarray, test: np.ndarray, name: str) -> None:
    if train.shape[1] != test.shape[1]:
        raise ValueError(f"{name}: encode gave {train.shape[1]} features for train "
                         f"but {test.shape[1]} for test")


def evaluate_folder(folder: str | os.PathLike[str], encode: Encoder, *, tasks: Iterable[str] | None = None,
                    evaluator: SentEvalEvaluator | None = None,
                    encoding: str | None = None) -> dict[str, TaskResult]:
    """Score ``encode`` on every SentEval task found in ``folder`` (or on ``tasks``).

    ``folder`` is a SentEval ``data/downstream`` root (``MR/``, ``CR/``, ..., ``MRPC/``), a folder
    written by :func:`~hardneg.senteval.prepare_senteval`, or one folder holding the files of
    several tasks. With ``tasks=None`` every task with at least one of its files present is run
    (a task with only some of its files is an error naming the missing one); a named task must
    be present. Returns ``{task: TaskResult}`` in SentEval's order (MR, CR, SUBJ, MPQA, TREC, MSRP).
    """
    root = Path(folder)
    if not root.is_dir():
        raise ValueError(f"no such folder: {root}")
    if tasks is None:
        names = find_tasks(root)
        if not names:
            raise ValueError(f"{root} holds no SentEval task files ({', '.join(TASK_NAMES)}, or a "
                             "custom task folder; see hardneg.senteval.custom)")
    else:
        items = tasks.split(",") if isinstance(tasks, str) else list(tasks)
        wanted = {resolve_task_name(t, root) for t in items if t.strip()}
        names = [name for name in find_tasks(root) if name in wanted]
        names += sorted(wanted - set(names))  # named but absent: read_task names the missing file
        if not names:
            raise ValueError("tasks is empty")
    evaluator = evaluator if evaluator is not None else SentEvalEvaluator()
    tasks_read = {name: read_task(name, root, encoding=encoding) for name in names}
    for task in tasks_read.values():  # every file and every class count before anything is encoded
        evaluator.check_task(task, root)
    return {name: evaluator.evaluate(task, encode) for name, task in tasks_read.items()}


def results_table(results: dict[str, TaskResult] | Iterable[TaskResult]) -> str:
    """A Markdown table of results in SentEval's layout: one column per task, MSRP as ``acc/F1``."""
    rows = list(results.values()) if isinstance(results, dict) else list(results)
    head = "| " + " | ".join(r.task for r in rows) + " |"
    rule = "|" + "---|" * len(rows)
    cells = [f"{r.accuracy:.1f}" + (f"/{r.f1:.1f}" if r.f1 is not None else "") for r in rows]
    return "\n".join([head, rule, "| " + " | ".join(cells) + " |"])
