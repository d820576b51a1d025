"""A user's own SentEval-style tasks: a folder per task, ``label<TAB>sentence`` per line.

Next to the standard tasks (MR, CR, SUBJ, MPQA, TREC, MSRP) a SentEval folder may hold tasks of
one's own, each in a sub-folder named after the task (letters, digits, ``_`` and ``-``, starting
with a letter; not a standard task's name)::

    DIR/spam/data.tsv                  # a pool scored by stratified cross-validation (as MR)
    DIR/topics/train.tsv, test.tsv     # a fixed split: fit on train, accuracy on test (as TREC)

Every non-blank line is ``label<TAB>sentence``; the labels are any strings, the classes are the
sorted distinct labels (at least 2), and the metric is ``<name>_acc`` (lower-cased name). Labels
are normalised before they are compared: whitespace around them is dropped and numbers equal as
numbers are one class (``1``, `` 1`` and ``1.0`` are class ``1``; ``0.50`` is ``0.5``), with a
notice on stderr naming the spellings merged; two labels that differ only in case (``Pos`` and
``pos``) are ambiguous, an error naming the file, the line and both values. Files
are read with the same checks as the standard tasks (UTF-8 or latin-1, no binary data, bounded
line length; errors name the file and the line).
"""

from __future__ import annotations

import math
import os
import re
import sys
from pathlib import Path

import numpy as np

from hardneg.senteval.errors import SentEvalFormatError
from hardneg.senteval.files import raw_lines
from hardneg.senteval.tasks import TASK_NAMES, BinaryTask, PoolTask, SplitTask

__all__ = [
    "POOL_FILE",
    "SPLIT_FILES",
    "canonical_label",
    "custom_files",
    "custom_tasks",
    "is_custom_task",
    "read_custom_task",
]

POOL_FILE = "data.tsv"
SPLIT_FILES = ("train.tsv", "test.tsv")
_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]*$")


def custom_files(name: str, folder: str | os.PathLike[str]) -> tuple[Path, ...]:
    """The files of custom task ``name`` in ``folder``: ``(data.tsv,)`` or ``(train.tsv, test.tsv)``,
    the layout whose first file exists; ``()`` when ``folder/name`` holds neither."""
    where = Path(folder) / name
    if not _NAME.match(name) or name.upper() in TASK_NAMES or not where.is_dir():
        return ()
    if (where / POOL_FILE).exists():
        return (where / POOL_FILE,)
    if any((where / f).exists() for f in SPLIT_FILES):
        return tuple(where / f for f in SPLIT_FILES)
    return ()


def is_custom_task(name: str, folder: str | os.PathLike[str]) -> bool:
    """Whether ``folder/name`` holds a custom task's files."""
    return bool(custom_files(name, folder))


def custom_tasks(folder: str | os.PathLike[str]) -> list[str]:
    """The custom tasks of ``folder``, sorted by name."""
    root = Path(folder)
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if p.is_dir() and is_custom_task(p.name, root))


def canonical_label(label: str) -> str:
    """``label`` without surrounding whitespace; a finite number as its shortest spelling.

    >>> [canonical_label(s) for s in ("1", " 1", "1.0", "+1", "0.50", "1e3", "pos", "nan")]
    ['1', '1', '1', '1', '0.5', '1000', 'pos', 'nan']
    """
    label = label.strip()
    try:
        value = float(label)
    except ValueError:
        return label
    if not math.isfinite(value):
        return label
    return str(int(value)) if value.is_integer() else repr(value)


class _Labels:
    """The canonical labels of a task's files, and what is ambiguous or merged among them."""

    def __init__(self, task: str) -> None:
        self.task = task
        self.first: dict[str, tuple[str, Path, int]] = {}  # casefold -> (canonical, file, line)
        self.spellings: dict[str, set[str]] = {}  # canonical -> spellings met

    def add(self, raw: str, path: Path, number: int) -> str:
        label = canonical_label(raw)
        seen = self.first.setdefault(label.casefold(), (label, path, number))
        if seen[0] != label:
            where = f"line {seen[2]}" if seen[1] == path else f"{seen[1]}, line {seen[2]}"
            raise SentEvalFormatError(
                path, f"task {self.task}: label {label!r} differs only in case from {seen[0]!r} ({where}): "
                "ambiguous, write every label of a class the same way", line=number)
        self.spellings.setdefault(label, set()).add(raw.strip())
        return label

    def notice_merged(self, where: Path) -> None:
        merged = {c: s for c, s in self.spellings.items() if s != {c}}
        if merged:
            read = "; ".join(f"{', '.join(map(repr, sorted(s)))} as {c!r}" for c, s in sorted(merged.items()))
            print(f"notice: {where}: task {self.task}: labels equal as numbers read as one class: {read}",
                  file=sys.stderr)


def _read_labelled(path: Path, *, task: str, encoding: str | None, labels_of: _Labels
                   ) -> tuple[list[str], list[str]]:
    labels, sentences = [], []
    for number, line in raw_lines(path, task=task, encoding=encoding):
        label, tab, sentence = line.partition("\t")
        if not tab or not label.strip() or not sentence.strip():
            raise SentEvalFormatError(path, "expected 'label<TAB>sentence'", line=number)
        labels.append(labels_of.add(label, path, number))
        sentences.append(" ".join(sentence.split()))
    return labels, sentences


def read_custom_task(
    name: str, folder: str | os.PathLike[str], *, encoding: str | None = None
) -> BinaryTask | PoolTask | SplitTask:
    """Read custom task ``name`` from ``folder`` (see the module docstring for the layout)."""
    files = custom_files(name, folder)
    if not files:
        raise ValueError(f"{Path(folder) / name} holds no custom task ({POOL_FILE}, or "
                         f"{' and '.join(SPLIT_FILES)})")
    labels_of = _Labels(name)
    if len(files) == 1:
        labels, sentences = _read_labelled(files[0], task=name, encoding=encoding, labels_of=labels_of)
        labels_of.notice_merged(files[0])
        classes = tuple(sorted(set(labels)))
        if len(classes) < 2:
            raise SentEvalFormatError(files[0], f"task {name}: every sentence is of class {classes[0]}; "
                                      "its readout needs at least 2 classes, got 1 class")
        y = np.array([classes.index(c) for c in labels], np.int64)
        if len(classes) == 2:
            return BinaryTask(name=name, sentences=sentences, labels=y, classes=(classes[0], classes[1]))
        return PoolTask(name=name, sentences=sentences, labels=y, classes=classes)
    (train_y, train_x), (test_y, test_x) = (
        _read_labelled(f, task=name, encoding=encoding, labels_of=labels_of) for f in files
    )
    labels_of.notice_merged(files[0].parent)
    classes = tuple(sorted(set(train_y) | set(test_y)))
    return SplitTask(
        name=name,
        train_sentences=train_x,
        train_labels=np.array([classes.index(c) for c in train_y], np.int64),
        test_sentences=test_x,
        test_labels=np.array([classes.index(c) for c in test_y], np.int64),
        classes=classes,
    )
