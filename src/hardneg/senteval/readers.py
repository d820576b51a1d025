"""Readers of the SentEval task files, in the layouts the tasks are distributed in.

SentEval (Conneau & Kiela, LREC 2018) keeps each task in a folder of ``data/downstream/``:

==========  ==================================================  =====================================
task        files                                               one line is
==========  ==================================================  =====================================
MR          ``rt-polarity.pos``, ``rt-polarity.neg``            a sentence
CR          ``custrev.pos``, ``custrev.neg``                    a sentence
SUBJ        ``subj.objective``, ``subj.subjective``             a sentence
MPQA        ``mpqa.pos``, ``mpqa.neg``                          a phrase
TREC        ``train_5500.label``, ``TREC_10.label``             ``COARSE:fine question words``
MSRP        ``msr_paraphrase_train.txt``,                       ``Quality<TAB>#1 ID<TAB>#2 ID<TAB>``
            ``msr_paraphrase_test.txt`` (folder ``MRPC``)       ``#1 String<TAB>#2 String``
==========  ==================================================  =====================================

Rules shared by every reader:

* **Encoding.** A file that is valid UTF-8 is read as UTF-8 (a leading byte-order mark is dropped);
  any other file is read as latin-1, the encoding SentEval uses for MR, CR, SUBJ, MPQA and TREC
  (the original distributions are latin-1). The choice is per file. Reading *everything* as
  latin-1, as SentEval does, would garble the UTF-8 files that :func:`~hardneg.senteval.prepare_senteval`
  writes (``’`` would become ``â\\x80\\x99``); ``encoding="latin-1"`` forces SentEval's behaviour.
* **Lines** end at ``\\n`` (a ``\\r`` before it is dropped). SentEval's binary loader uses
  ``str.splitlines``, which also breaks at ``\\x85`` (cp1252's "…" read as latin-1), ``\\x0b``,
  ``\\x0c``, ``\\x1c``–``\\x1e``; here those stay inside their line, as whitespace.
* **Binary data and overlong lines** are errors: a line holding a NUL character or mostly control
  characters, or longer than :data:`~hardneg.data.text.lines.MAX_LINE_CHARS` characters.
* **Blank lines** (only whitespace) are skipped silently (SentEval keeps one in a binary task as an
  empty sentence and fails on one in TREC or MSRP); a file without any non-blank line is an error.
* **Whitespace** inside a sentence is normalised to single spaces and stripped at both ends (SentEval
  splits every sentence on whitespace, so nothing is lost).
* Every error is a :class:`~hardneg.senteval.errors.SentEvalFormatError` (a ``ValueError``) whose
  message starts with ``<file>: line <n>:``; a missing file raises its subclass
  :class:`~hardneg.senteval.errors.MissingTaskFileError` naming the file and the task's layout.

:func:`read_task` takes either the task's own folder or a SentEval ``data/downstream`` root holding
a ``<TASK>`` sub-folder (``MRPC`` for MSRP), so ``read_task("MR", "downstream")`` and
``read_task("MR", "downstream/MR")`` read the same files.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from hardneg.senteval.errors import SentEvalFormatError
from hardneg.senteval.files import raw_lines
from hardneg.senteval.tasks import (
    BINARY_CLASSES,
    BINARY_TASKS,
    LAYOUTS,
    MSRP_CLASSES,
    SENTEVAL_FOLDERS,
    TASK_NAMES,
    TREC_CLASSES,
    BinaryTask,
    PairTask,
    SplitTask,
    Task,
)

__all__ = [
    "MSRP_HEADER",
    "canonical_task_name",
    "find_tasks",
    "missing_task_files",
    "parse_trec_line",
    "raw_lines",
    "read_binary_task",
    "read_lines",
    "read_msrp",
    "read_task",
    "read_trec",
    "resolve_task_name",
    "task_files",
    "task_folder",
    "task_present",
]

MSRP_HEADER = ("Quality", "#1 ID", "#2 ID", "#1 String", "#2 String")
_ALIASES = {"MRPC": "MSRP"}


def canonical_task_name(name: str) -> str:
    """``name`` upper-cased and checked (``"MRPC"`` is accepted for ``"MSRP"``)."""
    if not isinstance(name, str):
        raise ValueError(f"a task name must be a str, got {type(name).__name__}")
    upper = _ALIASES.get(name.strip().upper(), name.strip().upper())
    if upper not in TASK_NAMES:
        raise ValueError(f"unknown SentEval task {name!r}: expected one of {', '.join(TASK_NAMES)}")
    return upper


def task_folder(name: str, folder: str | os.PathLike[str]) -> Path:
    """The folder holding ``name``'s files: ``folder/<TASK>`` (or ``folder/MRPC`` for MSRP) when
    that sub-folder exists (a SentEval ``data/downstream`` root), else ``folder`` itself."""
    name = canonical_task_name(name)
    root = Path(folder)
    for sub in dict.fromkeys((name, SENTEVAL_FOLDERS[name])):
        if (root / sub).is_dir():
            return root / sub
    return root


def task_files(name: str, folder: str | os.PathLike[str]) -> tuple[Path, ...]:
    """The files of ``name``'s layout, in :data:`LAYOUTS` order, where :func:`read_task` looks for them
    (a custom task's: ``data.tsv``, or ``train.tsv`` and ``test.tsv``)."""
    from hardneg.senteval.custom import custom_files

    custom = custom_files(name, folder) if name not in TASK_NAMES else ()
    if custom:
        return custom
    name = canonical_task_name(name)
    where = task_folder(name, folder)
    return tuple(where / file for file in LAYOUTS[name])


def missing_task_files(name: str, folder: str | os.PathLike[str]) -> list[Path]:
    """The files of ``name``'s layout that are not files in ``folder`` (or its task sub-folder)."""
    return [path for path in task_files(name, folder) if not path.is_file()]


def task_present(name: str, folder: str | os.PathLike[str]) -> bool:
    """Whether any file of ``name``'s layout exists (in ``folder`` or its task sub-folder)."""
    from hardneg.senteval.custom import is_custom_task

    if name not in TASK_NAMES and is_custom_task(name, folder):
        return True
    name = canonical_task_name(name)
    where = task_folder(name, folder)
    return any((where / file).exists() for file in LAYOUTS[name])


def read_lines(path: str | os.PathLike[str], *, task: str = "SentEval",
               encoding: str | None = None) -> list[str]:
    """The non-blank lines of a one-sentence-per-line file, whitespace-normalised.

    Args:
        path: the file.
        task: the task it belongs to (only used in error messages).
        encoding: ``None`` = UTF-8, or latin-1 when the file is not valid UTF-8; or a codec name.

    Example:
        >>> import tempfile, pathlib
        >>> with tempfile.TemporaryDirectory() as d:
        ...     p = pathlib.Path(d) / "rt-polarity.pos"
        ...     _ = p.write_bytes(b"a  fine film .\\r\\n\\n caf\\xe9 culture .\\n")
        ...     read_lines(p)
        ['a fine film .', 'café culture .']
    """
    return [" ".join(line.split()) for _, line in raw_lines(Path(path), task=task, encoding=encoding)]


def read_binary_task(name: str, folder: str | os.PathLike[str], *, encoding: str | None = None) -> BinaryTask:
    """MR, CR, SUBJ or MPQA from its two files (label 1 = first file of :data:`LAYOUTS`).

    The sentences of label 1 come first, as in SentEval (``pos`` for MR / CR / MPQA, ``objective``
    for SUBJ).
    """
    name = canonical_task_name(name)
    if name not in BINARY_TASKS:
        raise ValueError(f"{name} is not a binary task ({', '.join(BINARY_TASKS)})")
    where = task_folder(name, folder)
    first, second = LAYOUTS[name]
    ones = read_lines(where / first, task=name, encoding=encoding)
    zeros = read_lines(where / second, task=name, encoding=encoding)
    labels = np.r_[np.ones(len(ones), np.int64), np.zeros(len(zeros), np.int64)]
    return BinaryTask(name=name, sentences=(*ones, *zeros), labels=labels, classes=BINARY_CLASSES[name])


def parse_trec_line(line: str, *, path: str | os.PathLike[str] = "TREC", line_number: int | None = None
                    ) -> tuple[str, str, str]:
    """``(coarse, fine, question)`` of one TREC line ``COARSE:fine question words``.

    Raises :class:`SentEvalFormatError` naming ``path`` and ``line_number`` when the line has no
    ``COARSE:fine`` label, an unknown coarse class (not one of ``ABBR DESC ENTY HUM LOC NUM``), an
    empty fine class or no question.

    Example:
        >>> parse_trec_line("HUM:ind Who wrote  Hamlet ?")
        ('HUM', 'ind', 'Who wrote Hamlet ?')
    """
    words = line.split(None, 1)
    if not words:
        raise SentEvalFormatError(path, "blank line where a TREC question was expected", line=line_number)
    label = words[0]
    coarse, colon, fine = label.partition(":")
    if not colon:
        raise SentEvalFormatError(
            path, f"expected a label COARSE:fine (e.g. 'HUM:ind') before the question, got {label!r}",
            line=line_number)
    if coarse not in TREC_CLASSES:
        raise SentEvalFormatError(
            path, f"unknown coarse class {coarse!r} (expected one of {', '.join(TREC_CLASSES)})",
            line=line_number)
    if not fine:
        raise SentEvalFormatError(path, f"empty fine class in label {label!r}", line=line_number)
    if len(words) < 2:
        raise SentEvalFormatError(path, f"no question after the label {label!r}", line=line_number)
    return coarse, fine, " ".join(words[1].split())


def _read_trec_file(path: Path, *, encoding: str | None) -> tuple[list[str], list[int]]:
    sentences, labels = [], []
    for number, line in raw_lines(path, task="TREC", encoding=encoding):
        coarse, _, question = parse_trec_line(line, path=path, line_number=number)
        sentences.append(question)
        labels.append(TREC_CLASSES.index(coarse))
    return sentences, labels


def read_trec(folder: str | os.PathLike[str], *, encoding: str | None = None) -> SplitTask:
    """TREC question classification (Li & Roth, COLING 2002): 6 coarse classes, train / test files.

    The label of a question is its coarse class (the part before ``:``), numbered as in SentEval:
    ``ABBR, DESC, ENTY, HUM, LOC, NUM`` = 0..5; the question is the rest of the line.
    """
    where = task_folder("TREC", folder)
    train_file, test_file = LAYOUTS["TREC"]
    train_x, train_y = _read_trec_file(where / train_file, encoding=encoding)
    test_x, test_y = _read_trec_file(where / test_file, encoding=encoding)
    return SplitTask(name="TREC", train_sentences=tuple(train_x), train_labels=np.asarray(train_y, np.int64),
                     test_sentences=tuple(test_x), test_labels=np.asarray(test_y, np.int64),
                     classes=TREC_CLASSES)


def _read_msrp_file(path: Path, *, encoding: str | None) -> tuple[list[str], list[str], list[int]]:
    first_a, second_b, labels = [], [], []
    lines = raw_lines(path, task="MSRP", encoding=encoding)
    number, header = next(lines)
    fields = tuple(f.strip() for f in header.removeprefix("\N{LATIN SMALL LETTER I WITH DIAERESIS}\xbb\xbf")
                   .split("\t"))  # a UTF-8 byte-order mark read as latin-1
    if fields != MSRP_HEADER:
        raise SentEvalFormatError(
            path, f"expected the header line {'<TAB>'.join(MSRP_HEADER)!r}, got {header.strip()[:80]!r}",
            line=number)
    for number, line in lines:
        fields = tuple(line.split("\t"))
        if len(fields) != len(MSRP_HEADER):
            raise SentEvalFormatError(
                path, f"expected {len(MSRP_HEADER)} tab-separated columns "
                f"({', '.join(MSRP_HEADER)}), got {len(fields)}", line=number)
        quality = fields[0].strip()
        if quality not in ("0", "1"):
            raise SentEvalFormatError(path, f"Quality must be 0 or 1, got {quality!r}", line=number)
        a, b = (" ".join(s.split()) for s in fields[3:])
        if not a or not b:
            raise SentEvalFormatError(path, f"empty {'#1' if not a else '#2'} String", line=number)
        first_a.append(a)
        second_b.append(b)
        labels.append(int(quality))
    if not labels:
        raise SentEvalFormatError(path, "no sentence pair after the header line")
    return first_a, second_b, labels


def read_msrp(folder: str | os.PathLike[str], *, encoding: str | None = None) -> PairTask:
    """MSRP paraphrase pairs (Dolan et al., COLING 2004): header line, then 5 tab-separated columns.

    ``Quality`` (1 = paraphrase, 0 = not) is the label; the IDs are checked for presence only.
    """
    where = task_folder("MSRP", folder)
    train_file, test_file = LAYOUTS["MSRP"]
    train_a, train_b, train_y = _read_msrp_file(where / train_file, encoding=encoding)
    test_a, test_b, test_y = _read_msrp_file(where / test_file, encoding=encoding)
    return PairTask(name="MSRP", train_a=tuple(train_a), train_b=tuple(train_b),
                    train_labels=np.asarray(train_y, np.int64), test_a=tuple(test_a), test_b=tuple(test_b),
                    test_labels=np.asarray(test_y, np.int64), classes=MSRP_CLASSES)


def resolve_task_name(name: str, folder: str | os.PathLike[str] | None) -> str:
    """A standard task's canonical name, or ``name`` itself when ``folder/name`` holds a custom task
    (:mod:`hardneg.senteval.custom`); ``ValueError`` naming both kinds otherwise."""
    from hardneg.senteval.custom import POOL_FILE, SPLIT_FILES, is_custom_task

    try:
        return canonical_task_name(name)
    except ValueError:
        if folder is not None and isinstance(name, str) and is_custom_task(name.strip(), folder):
            return name.strip()
        where = f"{folder}/{name}/" if folder is not None else f"<eval.senteval>/{name}/"
        raise ValueError(
            f"unknown SentEval task {name!r}: expected one of {', '.join(TASK_NAMES)}, or a folder "
            f"{where} holding {POOL_FILE} (or {' and '.join(SPLIT_FILES)}) of 'label<TAB>sentence' lines"
        ) from None


def find_tasks(folder: str | os.PathLike[str]) -> list[str]:
    """Every task of ``folder``: the standard ones present (SentEval's order), then the custom ones."""
    from hardneg.senteval.custom import custom_tasks

    return [n for n in TASK_NAMES if task_present(n, folder)] + custom_tasks(folder)


def read_task(name: str, folder: str | os.PathLike[str], *, encoding: str | None = None) -> Task:
    """Read SentEval task ``name`` (``MR``, ``CR``, ``SUBJ``, ``MPQA``, ``TREC``, ``MSRP``) from ``folder``.

    ``folder`` is the task's own folder or a SentEval ``data/downstream`` root with a ``<TASK>``
    sub-folder (see :func:`task_folder`). Returns a :class:`BinaryTask` (MR, CR, SUBJ, MPQA), a
    :class:`SplitTask` (TREC) or a :class:`PairTask` (MSRP).
    """
    name = resolve_task_name(name, folder)
    if name not in TASK_NAMES:
        from hardneg.senteval.custom import read_custom_task

        return read_custom_task(name, folder, encoding=encoding)
    if name == "TREC":
        return read_trec(folder, encoding=encoding)
    if name == "MSRP":
        return read_msrp(folder, encoding=encoding)
    return read_binary_task(name, folder, encoding=encoding)
