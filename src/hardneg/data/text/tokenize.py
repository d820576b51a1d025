"""Sentence splitting and word tokenisation with NLTK, needing no downloaded model.

Ash et al. (AISTATS 2022, §4) tokenise with NLTK's English word tokenizer; its word step is the
Penn Treebank tokenizer (``nltk.tokenize.TreebankWordTokenizer``), which needs no data files. NLTK's
pretrained Punkt models are a download, so sentences are split by an *untrained*
``PunktSentenceTokenizer`` told a short list of common English abbreviations (it then does not
split after "Dr." or "e.g."; rarer abbreviations may still end a sentence). Tokens are lower-cased.
Word tokenising takes time linear in the text's length, whatever the text (see :func:`word_tokenize`).
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import lru_cache
from typing import Any

__all__ = ["ABBREVIATIONS", "PIECE_CHARS", "split_sentences", "word_tokenize"]

PIECE_CHARS = 10_000
"""The most characters the Treebank tokenizer is given at once (:func:`word_tokenize` cuts longer text)."""

ABBREVIATIONS = frozenset(
    {"dr", "mr", "mrs", "ms", "prof", "st", "jr", "sr", "vs", "etc", "e.g", "i.e", "no", "fig", "u.s",
     "inc", "ltd", "co", "corp", "gen", "gov", "sen", "rep", "mt", "jan", "feb", "mar", "apr", "jun",
     "jul", "aug", "sep", "sept", "oct", "nov", "dec"}
)


@lru_cache(maxsize=1)
def _word_tokenizer() -> Any:
    from nltk.tokenize import TreebankWordTokenizer

    return TreebankWordTokenizer()


@lru_cache(maxsize=1)
def _sentence_tokenizer() -> Any:
    from nltk.tokenize.punkt import PunktParameters, PunktSentenceTokenizer

    params = PunktParameters()
    params.abbrev_types = set(ABBREVIATIONS)
    return PunktSentenceTokenizer(params)


def _pieces(text: str, size: int = PIECE_CHARS) -> Iterator[str]:
    """``text`` cut into pieces of at most ``size`` characters, at the last whitespace before each
    limit (a run of ``size`` characters without whitespace is cut where it reaches the limit)."""
    start = 0
    while len(text) - start > size:
        cut = max(text.rfind(c, start + 1, start + size) for c in " \t\n\r")
        cut = cut if cut > start else start + size
        yield text[start:cut]
        start = cut
    yield text[start:]


def word_tokenize(sentence: str, *, lower: bool = True) -> list[str]:
    """Treebank tokens of one sentence, lower-cased by default.

    Time is linear in the length of ``sentence``: a text longer than :data:`PIECE_CHARS` is
    tokenised in pieces of at most that many characters cut at whitespace (so no regular expression
    of the tokenizer ever runs on more, and NLTK's regex time-out is never reached); a ``.`` ending
    a piece is then split off as a sentence-final one.

    >>> word_tokenize("The cat's mat isn't red.")
    ['the', 'cat', "'s", 'mat', 'is', "n't", 'red', '.']
    """
    if not isinstance(sentence, str):
        raise ValueError(f"sentence must be a str, got {type(sentence).__name__}")
    tokenizer = _word_tokenizer()
    tokens = [t for piece in _pieces(sentence) for t in tokenizer.tokenize(piece)]
    return [t.lower() for t in tokens] if lower else tokens


def split_sentences(text: str) -> list[str]:
    """Sentences of a paragraph (untrained Punkt + common abbreviations), stripped, none empty.

    >>> split_sentences("Dr. Smith went home. He was tired! Was he?")
    ['Dr. Smith went home.', 'He was tired!', 'Was he?']
    """
    if not isinstance(text, str):
        raise ValueError(f"text must be a str, got {type(text).__name__}")
    return [s.strip() for s in _sentence_tokenizer().tokenize(text) if s.strip()]
