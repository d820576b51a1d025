"""Sentences labelled by their article, read from the two on-disk layouts users have.

- **TSV**: one ``article_id<TAB>sentence`` per line (UTF-8, else latin-1); the article id is any
  string.
- **Folder**: one text file per article (``<article>.txt``), one sentence per line.

An article is a latent class in the sense of Arora et al. (ICML 2019, §2, §8): two sentences of
one article form a positive pair. Blank lines are skipped (documented, not an error); a line of a
TSV without a tab or an empty sentence after a tab are errors naming the file and the line, and
so are binary data and lines longer than
:data:`~hardneg.data.text.lines.MAX_LINE_CHARS` (:mod:`hardneg.data.text.lines`). Articles are
numbered 0..C−1 in order of first appearance (TSV) or by sorted file name (folder), so the same
files always give the same labels. A file that is not valid UTF-8 is read as latin-1, with a notice
naming it (:func:`~hardneg.data.text.lines.decode_text`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hardneg._io import atomic_write_text
from hardneg.data.text.lines import Report

__all__ = ["ArticleCorpus", "read_article_folder", "read_article_tsv", "write_article_tsv"]


@dataclass(frozen=True)
class ArticleCorpus:
    """``sentences[i]`` belongs to article ``labels[i]`` (0..C−1), named ``articles[labels[i]]``."""

    sentences: list[str]
    labels: np.ndarray
    articles: tuple[str, ...]
    name: str = "articles"

    def __post_init__(self) -> None:
        if len(self.sentences) != len(self.labels):
            raise ValueError(
                "sentences and labels must have the same length, "
                f"got {len(self.sentences)} and {len(self.labels)}"
            )
        if len(self.labels) and (self.labels.min() < 0 or self.labels.max() >= len(self.articles)):
            raise ValueError(f"labels must lie in [0, {len(self.articles)}), the article indices")

    def __len__(self) -> int:
        return len(self.sentences)

    @property
    def num_articles(self) -> int:
        return len(self.articles)

    def sentences_per_article(self) -> np.ndarray:
        """(C,) sentence count of each article."""
        return np.bincount(self.labels, minlength=len(self.articles))

    def subset(self, indices: Sequence[int] | np.ndarray) -> ArticleCorpus:
        """The sentences at ``indices`` (same article numbering)."""
        idx = np.asarray(indices, dtype=np.int64)
        sentences = [self.sentences[int(i)] for i in idx]
        return ArticleCorpus(sentences, self.labels[idx], self.articles, self.name)


def _lines(path: Path, *, report: Report | None = None) -> list[str]:
    """The lines of a text file (UTF-8, else latin-1), without its byte-order mark and stray control
    characters (both reported once through ``report``, default stderr); binary data and overlong
    lines are errors naming the file and the line (:mod:`hardneg.data.text.lines`)."""
    from hardneg.data.text.lines import clean_text, decode_text

    return clean_text(decode_text(path.read_bytes(), path, report=report), path, report=report).splitlines()


def _labelled(sentences: list[str], ids: list[str], name: str) -> ArticleCorpus:
    order: dict[str, int] = {}
    for a in ids:
        order.setdefault(a, len(order))
    labels = np.array([order[a] for a in ids], dtype=np.int64)
    return ArticleCorpus(sentences, labels, tuple(order), name)


def read_article_tsv(path: str | Path, *, name: str | None = None) -> ArticleCorpus:
    """Read ``article_id<TAB>sentence`` lines (see the module docstring for the rules)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no article TSV at '{path}' (expected lines 'article_id<TAB>sentence')")
    sentences: list[str] = []
    ids: list[str] = []
    for number, line in enumerate(_lines(path), start=1):
        if not line.strip():
            continue
        article, tab, sentence = line.partition("\t")
        if not tab:
            raise ValueError(f"{path}, line {number}: expected 'article_id<TAB>sentence', found no tab")
        if not article.strip() or not sentence.strip():
            raise ValueError(f"{path}, line {number}: empty article id or sentence")
        ids.append(article.strip())
        sentences.append(sentence.strip())
    if not sentences:
        raise ValueError(f"{path}: no sentences (expected lines 'article_id<TAB>sentence')")
    return _labelled(sentences, ids, name or path.stem)


def read_article_folder(folder: str | Path, *, name: str | None = None) -> ArticleCorpus:
    """Read one ``<article>.txt`` per article, one sentence per line (sorted by file name)."""
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"no article folder at '{folder}' (expected <article>.txt files)")
    files = sorted(p for p in folder.iterdir() if p.suffix == ".txt" and p.is_file())
    if not files:
        raise ValueError(f"{folder}: no <article>.txt files")
    sentences: list[str] = []
    ids: list[str] = []
    for path in files:
        for line in _lines(path):
            if line.strip():
                sentences.append(line.strip())
                ids.append(path.stem)
    if not sentences:
        raise ValueError(f"{folder}: the article files hold no sentences")
    return _labelled(sentences, ids, name or folder.name)


def write_article_tsv(corpus: ArticleCorpus, path: str | Path) -> Path:
    """Write ``corpus`` as an article TSV, atomically; tabs and line breaks in sentences become spaces."""
    lines = []
    for sentence, label in zip(corpus.sentences, corpus.labels.tolist()):
        clean = " ".join(sentence.replace("\t", " ").split())
        article = " ".join(corpus.articles[label].replace("\t", " ").split())
        lines.append(f"{article}\t{clean}")
    return atomic_write_text(Path(path), "\n".join(lines) + "\n")
