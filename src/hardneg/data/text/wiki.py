"""An article-labelled sentence corpus from a Wikipedia XML dump (the format users download).

Arora et al. (ICML 2019, App. D.1) build Wiki-3029 from a Wikipedia dump: articles with at least
200 sentences, 200 sentences sampled per article, an article being a class. The dump is parsed
with gensim's wikicorpus utilities (``extract_pages``, ``filter_wiki``), not with hand-written
regular expressions over wikitext; redirects are skipped, section headings and the bold/italic
quote marks gensim leaves are removed, paragraphs are split into sentences
(:func:`hardneg.data.text.tokenize.split_sentences`), and a sentence is kept when it has at least
``min_words`` word tokens (tokens with a letter). An article is kept with at least
``min_sentences`` sentences; ``max_sentences`` samples that many of them (seeded, in text order).

A real dump of 106 articles ships inside gensim's test data; :func:`find_gensim_wiki_sample`
finds it without importing gensim's code paths that need it.
"""

from __future__ import annotations

import bz2
import re
from pathlib import Path

import numpy as np

from hardneg._packages import installed_package_path
from hardneg.data.text.corpus import ArticleCorpus, _labelled

__all__ = ["build_wiki_corpus", "find_gensim_wiki_sample"]

_SAMPLE = Path("test") / "test_data" / "enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2"
_QUOTES = re.compile(r"'{2,}")


def find_gensim_wiki_sample() -> Path | None:
    """The 106-article dump in gensim's test data, or ``None`` when gensim is not installed."""
    return installed_package_path("gensim", _SAMPLE)


def _sentences(wikitext: str, min_words: int) -> list[str]:
    from gensim.corpora.wikicorpus import filter_wiki

    from hardneg.data.text.tokenize import split_sentences, word_tokenize

    plain = _QUOTES.sub("", filter_wiki(wikitext))
    out = []
    for paragraph in plain.split("\n"):
        paragraph = paragraph.strip()
        if not paragraph or paragraph.startswith(("=", "|", "{", "!", "*", "#", ":")):
            continue  # headings, table rows, list items
        for sentence in split_sentences(paragraph):
            words = [t for t in word_tokenize(sentence) if any(c.isalpha() for c in t)]
            if len(words) >= min_words:
                out.append(" ".join(sentence.split()))
    return out


def build_wiki_corpus(
    dump: str | Path,
    *,
    min_words: int = 5,
    min_sentences: int = 2,
    max_sentences: int | None = None,
    seed: int = 0,
) -> ArticleCorpus:
    """Sentences labelled by article from a (``.bz2`` or plain) Wikipedia XML dump.

    Raises ``FileNotFoundError`` for a missing dump and ``ValueError`` naming the file for a
    truncated or non-XML one, or when no article has ``min_sentences`` sentences.
    """
    from xml.etree.ElementTree import ParseError

    from gensim.corpora.wikicorpus import extract_pages

    for name, value, low in (("min_words", min_words, 1), ("min_sentences", min_sentences, 1)):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ValueError(f"{name} must be an int >= {low}, got {value!r}")
    if max_sentences is not None and (isinstance(max_sentences, bool) or not isinstance(max_sentences, int)
                                      or max_sentences < min_sentences):
        raise ValueError(
            f"max_sentences must be an int >= min_sentences = {min_sentences}, got {max_sentences!r}"
        )
    path = Path(dump)
    if not path.is_file():
        raise FileNotFoundError(f"no Wikipedia dump at '{path}'")
    opener = bz2.open if path.suffix == ".bz2" else open
    rng = np.random.default_rng([seed, 0x3029])
    sentences: list[str] = []
    ids: list[str] = []
    try:
        with opener(path, "rb") as handle:
            for title, text, _ in extract_pages(handle):
                if not text or text.lstrip().lower().startswith("#redirect"):
                    continue
                kept = _sentences(text, min_words)
                if len(kept) < min_sentences:
                    continue
                if max_sentences is not None and len(kept) > max_sentences:
                    keep = np.sort(rng.choice(len(kept), size=max_sentences, replace=False))
                    kept = [kept[i] for i in keep]
                sentences += kept
                ids += [title] * len(kept)
    except (ParseError, EOFError, OSError, ValueError) as err:  # gensim: ValueError for a foreign XML
        if isinstance(err, FileNotFoundError):
            raise
        raise ValueError(f"{path}: not a readable Wikipedia XML dump ({type(err).__name__}: {err})") from None
    if not sentences:
        raise ValueError(f"{path}: no article has {min_sentences} sentences of >= {min_words} words")
    return _labelled(sentences, ids, path.name.split(".")[0])
