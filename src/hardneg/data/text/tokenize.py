"""Sentence splitting and word tokenisation with NLTK, needing no downloaded model.

Ash et al. (AISTATS 2022, §4) tokenise with NLTK's English word tokenizer; its word step is the
Penn Treebank tokenizer (``nltk.tokenize.TreebankWordTokenizer``), which needs no data files. NLTK's
pretrained Punkt models are a download, so sentences are split by an *untrained*
``PunktSentenceTokenizer`` told a short list of common English abbreviations (it then does not
split after "Dr." or "e.g."; rarer abbreviations may still end a sentence). Tokens are lower-cased.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

__all__ = ["ABBREVIATIONS", "split_sentences", "word_tokenize"]

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


def word_tokenize(sentence: str, *, lower: bool = True) -> list[str]:
    """Treebank tokens of one sentence, lower-cased by default.

    >>> word_tokenize("The cat's mat isn't red.")
    ['the', 'cat', "'s", 'mat', 'is', "n't", 'red', '.']
    """
    if not isinstance(sentence, str):
        raise ValueError(f"sentence must be a str, got {type(sentence).__name__}")
    tokens = _word_tokenizer().tokenize(sentence)
    return [t.lower() for t in tokens] if lower else list(tokens)


def split_sentences(text: str) -> list[str]:
    """Sentences of a paragraph (untrained Punkt + common abbreviations), stripped, none empty.

    >>> split_sentences("Dr. Smith went home. He was tired! Was he?")
    ['Dr. Smith went home.', 'He was tired!', 'Was he?']
    """
    if not isinstance(text, str):
        raise ValueError(f"text must be a str, got {type(text).__name__}")
    return [s.strip() for s in _sentence_tokenizer().tokenize(text) if s.strip()]
