"""The SentEval transfer tasks as data: their names, file layouts and the three task shapes.

SentEval (Conneau & Kiela, LREC 2018) scores a frozen sentence encoder on downstream tasks with
a simple classifier on top. Three shapes cover the six tasks read here:

* :class:`BinaryTask` — one pool of sentences with a 0/1 label, scored by 10-fold cross-validation:
  MR (movie-review polarity, Pang & Lee, ACL 2005), CR (product-review polarity, Hu & Liu, KDD
  2004), SUBJ (subjective vs objective, Pang & Lee, ACL 2004), MPQA (opinion polarity of phrases,
  Wiebe et al., Language Resources and Evaluation 2005);
* :class:`SplitTask` — a fixed train / test split with several classes: TREC question types (Li &
  Roth, COLING 2002), 6 coarse classes;
* :class:`PairTask` — sentence pairs with a 0/1 label and a train / test split: MSRP paraphrase
  detection (Dolan et al., COLING 2004).

Labels follow SentEval: positive = 1 / negative = 0 for MR, CR, MPQA; **objective = 1 / subjective
= 0** for SUBJ (SentEval's ``SUBJEval``); paraphrase = 1 for MSRP; TREC's coarse classes are
numbered in SentEval's order ``ABBR, DESC, ENTY, HUM, LOC, NUM`` = 0..5.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = [
    "BINARY_CLASSES",
    "BINARY_TASKS",
    "LAYOUTS",
    "MSRP_CLASSES",
    "SENTEVAL_FOLDERS",
    "TASK_NAMES",
    "TREC_CLASSES",
    "BinaryTask",
    "PairTask",
    "PoolTask",
    "SplitTask",
    "Task",
]

TASK_NAMES: tuple[str, ...] = ("MR", "CR", "SUBJ", "MPQA", "TREC", "MSRP")
BINARY_TASKS: tuple[str, ...] = ("MR", "CR", "SUBJ", "MPQA")

# The files of each task, as SentEval's data/downstream/<folder>/ holds them. For the binary tasks
# the first file holds the sentences of label 1, the second those of label 0.
LAYOUTS: dict[str, tuple[str, str]] = {
    "MR": ("rt-polarity.pos", "rt-polarity.neg"),
    "CR": ("custrev.pos", "custrev.neg"),
    "SUBJ": ("subj.objective", "subj.subjective"),
    "MPQA": ("mpqa.pos", "mpqa.neg"),
    "TREC": ("train_5500.label", "TREC_10.label"),
    "MSRP": ("msr_paraphrase_train.txt", "msr_paraphrase_test.txt"),
}
# SentEval's sub-folder of data/downstream/ for each task (MSRP lives in MRPC/).
SENTEVAL_FOLDERS: dict[str, str] = {name: name for name in TASK_NAMES} | {"MSRP": "MRPC"}

# (name of label 0, name of label 1)
BINARY_CLASSES: dict[str, tuple[str, str]] = {
    "MR": ("negative", "positive"),
    "CR": ("negative", "positive"),
    "SUBJ": ("subjective", "objective"),
    "MPQA": ("negative", "positive"),
}
TREC_CLASSES: tuple[str, ...] = ("ABBR", "DESC", "ENTY", "HUM", "LOC", "NUM")
MSRP_CLASSES: tuple[str, str] = ("not paraphrase", "paraphrase")


def _labels(values: Any, *, n: int, classes: tuple[str, ...], what: str) -> np.ndarray:
    arr = np.array(values, dtype=np.int64).reshape(-1)
    if arr.shape[0] != n:
        raise ValueError(f"{what}: {arr.shape[0]} labels for {n} sentences")
    if arr.size and (arr.min() < 0 or arr.max() >= len(classes)):
        raise ValueError(f"{what}: labels must lie in 0..{len(classes) - 1} (classes {classes}), "
                         f"got {arr.min()}..{arr.max()}")
    arr.flags.writeable = False
    return arr


def _sentences(values: Any, *, what: str) -> tuple[str, ...]:
    out = tuple(values)
    for s in out:
        if not isinstance(s, str):
            raise ValueError(f"{what}: sentences must be str, got {type(s).__name__}")
    return out


def _counts(labels: np.ndarray, classes: tuple[str, ...]) -> str:
    counts = np.bincount(labels, minlength=len(classes))
    return ", ".join(f"{c} {int(k)}" for c, k in zip(classes, counts))


@dataclass(frozen=True, eq=False)
class PoolTask:
    """A pool of sentences with one of several classes, scored by cross-validation: a user's own
    task (``<NAME>/data.tsv``; see :mod:`hardneg.senteval.custom`); :class:`BinaryTask` is its
    two-class case.

    Attributes:
        name: the task name (its folder's name).
        sentences: the sentences.
        labels: ``(N,)`` read-only int64 array of indices into ``classes``.
        classes: the class names (at least 2).
    """

    name: str
    sentences: Sequence[str]
    labels: np.ndarray
    classes: tuple[str, ...]

    def __post_init__(self) -> None:
        classes = tuple(self.classes)
        if len(classes) < 2:
            raise ValueError(f"{self.name}: a task has at least 2 class names, got {classes!r}")
        sentences = _sentences(self.sentences, what=self.name)
        object.__setattr__(self, "classes", classes)
        object.__setattr__(self, "sentences", sentences)
        object.__setattr__(self, "labels", _labels(self.labels, n=len(sentences), classes=classes,
                                                  what=self.name))

    def __len__(self) -> int:
        return len(self.sentences)

    def summary(self) -> str:
        """One line: the task, its size and the count of each class."""
        return f"{self.name}: {len(self)} sentences ({_counts(self.labels, self.classes)})"


@dataclass(frozen=True, eq=False)
class BinaryTask(PoolTask):
    """A pool of sentences with 0/1 labels (MR, CR, SUBJ, MPQA), scored by cross-validation.

    Attributes:
        name: the task name (``"MR"``, ...).
        sentences: the sentences, those of label 1 first (SentEval's order).
        labels: ``(N,)`` read-only int64 array of 0/1.
        classes: (name of label 0, name of label 1); the readers use :data:`BINARY_CLASSES`.

    Example:
        >>> task = BinaryTask(name="MR", sentences=["good", "bad"], labels=[1, 0])
        >>> task.summary(), task.classes
        ('MR: 2 sentences (negative 1, positive 1)', ('negative', 'positive'))
    """

    classes: tuple[str, ...] = ("negative", "positive")

    def __post_init__(self) -> None:
        if len(tuple(self.classes)) != 2:
            raise ValueError(f"{self.name}: a binary task has 2 class names, got {tuple(self.classes)!r}")
        super().__post_init__()


@dataclass(frozen=True, eq=False)
class SplitTask:
    """Sentences with one of several classes and a fixed train / test split (TREC).

    Attributes:
        name: the task name.
        train_sentences, test_sentences: the sentences of each part.
        train_labels, test_labels: read-only int64 arrays of indices into ``classes``.
        classes: the class names (TREC: ``ABBR, DESC, ENTY, HUM, LOC, NUM``).
    """

    name: str
    train_sentences: Sequence[str]
    train_labels: np.ndarray
    test_sentences: Sequence[str]
    test_labels: np.ndarray
    classes: tuple[str, ...] = TREC_CLASSES

    def __post_init__(self) -> None:
        classes = tuple(self.classes)
        for part in ("train", "test"):
            sentences = _sentences(getattr(self, f"{part}_sentences"), what=f"{self.name} {part}")
            labels = _labels(getattr(self, f"{part}_labels"), n=len(sentences), classes=classes,
                             what=f"{self.name} {part}")
            object.__setattr__(self, f"{part}_sentences", sentences)
            object.__setattr__(self, f"{part}_labels", labels)
        object.__setattr__(self, "classes", classes)

    def summary(self) -> str:
        """One line: the task, the size of each part and the count of each class in it."""
        train = _counts(self.train_labels, self.classes)
        test = _counts(self.test_labels, self.classes)
        return (f"{self.name}: train {len(self.train_sentences)} ({train}), "
                f"test {len(self.test_sentences)} ({test})")


@dataclass(frozen=True, eq=False)
class PairTask:
    """Sentence pairs with 0/1 labels and a fixed train / test split (MSRP).

    Attributes:
        name: the task name.
        train_a, train_b, test_a, test_b: the first and the second sentence of each pair.
        train_labels, test_labels: read-only int64 arrays, 1 = paraphrase.
        classes: (name of label 0, name of label 1).
    """

    name: str
    train_a: Sequence[str]
    train_b: Sequence[str]
    train_labels: np.ndarray
    test_a: Sequence[str]
    test_b: Sequence[str]
    test_labels: np.ndarray
    classes: tuple[str, str] = MSRP_CLASSES

    def __post_init__(self) -> None:
        classes = tuple(self.classes)
        for part in ("train", "test"):
            a = _sentences(getattr(self, f"{part}_a"), what=f"{self.name} {part}")
            b = _sentences(getattr(self, f"{part}_b"), what=f"{self.name} {part}")
            if len(a) != len(b):
                raise ValueError(f"{self.name} {part}: {len(a)} first sentences but {len(b)} second ones")
            labels = _labels(getattr(self, f"{part}_labels"), n=len(a), classes=classes,
                             what=f"{self.name} {part}")
            object.__setattr__(self, f"{part}_a", a)
            object.__setattr__(self, f"{part}_b", b)
            object.__setattr__(self, f"{part}_labels", labels)
        object.__setattr__(self, "classes", classes)

    def summary(self) -> str:
        """One line: the task, the pairs of each part and the count of each class in it."""
        return (f"{self.name}: train {len(self.train_a)} pairs ({_counts(self.train_labels, self.classes)}), "
                f"test {len(self.test_a)} pairs ({_counts(self.test_labels, self.classes)})")


Task = BinaryTask | SplitTask | PairTask | PoolTask
