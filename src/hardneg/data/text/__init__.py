"""Text data: tokenisation, vocabularies, article-labelled corpora, documents in order.

The readers shared by the text modalities: Ash et al. (AISTATS 2022, §4) and Arora et al.
(ICML 2019, §8) train on sentences labelled by their article (an article is a latent class, two
sentences of one article a positive pair); Logeswaran & Lee's quick-thoughts (ICLR 2018) on
sentences in order. Names are imported on first use (NLTK loads only when text is tokenised).
"""

from __future__ import annotations

import importlib
from typing import Any

_WHERE = {
    "ArticleCorpus": "corpus",
    "Vocabulary": "vocab",
    "read_article_folder": "corpus",
    "read_article_tsv": "corpus",
    "read_nyt_editorials": "nyt",
    "split_sentences": "tokenize",
    "word_tokenize": "tokenize",
    "write_article_tsv": "corpus",
}

__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        value = getattr(importlib.import_module(f"hardneg.data.text.{_WHERE[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'hardneg.data.text' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
