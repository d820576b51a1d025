"""Sentences in order: a corpus of documents, one sentence per line, a blank line between documents.

The layout of BookCorpus-style corpora that quick-thoughts trains on (Logeswaran & Lee, ICLR 2018):
UTF-8 text (a line that is not UTF-8 is read as latin-1, with a notice), one sentence per line,
documents separated by one or more blank lines. A sentence's
neighbours in its document are its positives, so order matters and documents must be known.

:func:`iter_documents` streams a file (a large corpus is never held as text), and
:func:`encode_documents` turns it into token ids in two streamed passes — one to count tokens for
the vocabulary, one to write each sentence's ids into a preallocated ``(N, L)`` tensor — so the
corpus is held once, as ids. Documents of a single sentence (no neighbour, no positive) are left
out and counted; sentences that tokenise to nothing are errors naming the file and line.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import Tensor

from hardneg.data.text.lines import Latin1Fallback, Report, TextScan
from hardneg.data.text.vocab import Vocabulary

__all__ = [
    "EncodedDocuments",
    "encode_document_list",
    "encode_documents",
    "iter_documents",
    "write_documents",
]


def iter_documents(path: str | Path, *, report: Report | None = None) -> Iterator[list[tuple[int, str]]]:
    """Documents of ``path`` as lists of ``(line_number, sentence)`` (1-based), streamed.

    A byte-order mark and stray control characters are dropped, and lines that are not UTF-8 are
    read as latin-1 (both reported once through ``report``, default stderr, after the last line).
    Raises ``ValueError`` naming the file and line for binary data
    (:mod:`hardneg.data.text.lines`: judged over the whole file, so raised once it is read) or a
    line longer than :data:`~hardneg.data.text.lines.MAX_LINE_CHARS`, and for a file without any
    sentence.
    """
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"no corpus file at {p}")
    doc: list[tuple[int, str]] = []
    seen = False
    scan = TextScan(p, report=report)
    decoder = Latin1Fallback(p, report=report)
    with p.open("rb") as f:
        for number, raw in enumerate(f, start=1):
            line = scan.line(number, decoder.decode(number, raw).rstrip("\r\n")).strip()
            if line:
                doc.append((number, line))
                seen = True
            elif doc:
                yield doc
                doc = []
    scan.finish()
    decoder.finish()
    if doc:
        yield doc
    if not seen:
        raise ValueError(f"{p}: no sentence (one sentence per line, a blank line between documents)")


@dataclass(frozen=True)
class EncodedDocuments:
    """Token ids of contiguous sentences: ``tokens`` (N, L) int64 (0 = padding), ``documents`` (N,)
    int64 document index of each sentence (non-decreasing), the vocabulary, and what was left out."""

    tokens: Tensor
    documents: Tensor
    vocab: Vocabulary
    dropped_documents: int = 0
    truncated: int = 0

    def __len__(self) -> int:
        return int(self.tokens.shape[0])


def _tokenised(docs: Iterable[list[tuple[int, str]]], path: Path | str) -> Iterator[list[list[str]]]:
    from hardneg.data.text.tokenize import word_tokenize

    for doc in docs:
        out = []
        for number, sentence in doc:
            try:
                tokens = word_tokenize(sentence)
            except (TimeoutError, RecursionError) as err:  # NLTK's regex time-out, or worse
                why = f"{type(err).__name__}: {err}"
                raise ValueError(f"{path}, line {number}: cannot tokenise ({why})") from None
            if not tokens:
                raise ValueError(f"{path}, line {number}: the sentence {sentence!r} has no word token")
            out.append(tokens)
        yield out


def encode_documents(
    path: str | Path, *, min_count: int = 1, max_length: int = 30, vocab: Vocabulary | None = None
) -> EncodedDocuments:
    """Stream ``path`` twice: build the vocabulary (or use ``vocab``), then encode.

    Sentences longer than ``max_length`` tokens are cut (the number cut is reported in
    ``truncated``); documents of one sentence are left out (``dropped_documents``).

    >>> import tempfile, os
    >>> d = tempfile.mkdtemp(); f = os.path.join(d, "c.txt")
    >>> _ = open(f, "w").write("A cat sat.\\nIt purred.\\n\\nAlone here.\\n\\nRain fell.\\nWe ran.\\n")
    >>> enc = encode_documents(f)
    >>> len(enc), enc.documents.tolist(), enc.dropped_documents
    (4, [0, 0, 1, 1], 1)
    """
    p = Path(path)
    passes = iter(range(2))

    def documents() -> Iterator[list[tuple[int, str]]]:  # stray control characters noticed once
        return iter_documents(p, report=None if next(passes, 1) == 0 else _quiet)

    return _encode(documents, p, min_count=min_count, max_length=max_length, vocab=vocab)


def _quiet(message: str) -> None:
    """The report of a second pass over a file: its notices were given by the first."""


def encode_document_list(
    documents: Sequence[Sequence[str]],
    *,
    name: str = "documents",
    min_count: int = 1,
    max_length: int = 30,
    vocab: Vocabulary | None = None,
) -> EncodedDocuments:
    """:func:`encode_documents` for documents already in memory (lists of sentences, in order)."""
    docs = [[(i + 1, s) for i, s in enumerate(doc)] for doc in documents]
    return _encode(lambda: iter(docs), name, min_count=min_count, max_length=max_length, vocab=vocab)


def _encode(
    make_docs: Callable[[], Iterator[list[tuple[int, str]]]],
    name: Path | str,
    *,
    min_count: int,
    max_length: int,
    vocab: Vocabulary | None,
) -> EncodedDocuments:
    if isinstance(max_length, bool) or not isinstance(max_length, int) or max_length < 1:
        raise ValueError(f"max_length must be an int >= 1, got {max_length!r}")
    counts = {"n": 0, "dropped": 0}

    def kept() -> Iterator[list[list[str]]]:
        for doc in _tokenised(make_docs(), name):
            if len(doc) < 2:
                counts["dropped"] += 1
                continue
            yield doc

    if vocab is None:

        def sentences() -> Iterator[list[str]]:
            for doc in kept():
                counts["n"] += len(doc)
                yield from doc

        vocab = Vocabulary.build(sentences(), min_count=min_count)
    else:
        counts["n"] = sum(len(doc) for doc in kept())
    dropped = counts["dropped"]
    if counts["n"] == 0:
        raise ValueError(f"{name}: no document has two sentences (a sentence's positives are its neighbours)")
    tokens = torch.zeros(counts["n"], max_length, dtype=torch.long)
    documents = np.empty(counts["n"], dtype=np.int64)
    row, truncated = 0, 0
    for d, doc in enumerate(kept()):
        for sentence in doc:
            truncated += len(sentence) > max_length
            ids = vocab.encode(sentence[:max_length])
            tokens[row, : len(ids)] = torch.as_tensor(ids, dtype=torch.long)
            documents[row] = d
            row += 1
    return EncodedDocuments(tokens, torch.from_numpy(documents), vocab, dropped, truncated)


def write_documents(documents: Iterable[Iterable[str]], path: str | Path) -> Path:
    """Write documents (iterables of sentences) in the layout :func:`iter_documents` reads, atomically.

    Newlines inside a sentence are replaced by spaces; empty sentences are skipped.
    """
    from hardneg._io import atomic_write_text

    blocks = []
    for doc in documents:
        lines = [" ".join(s.split()) for s in doc]
        lines = [s for s in lines if s]
        if lines:
            blocks.append("\n".join(lines))
    return atomic_write_text(Path(path), "\n\n".join(blocks) + "\n")
