"""Sentences as padded token ids, split into training and test sentences.

:class:`TokenSplit` is one split of either text modality: ``inputs`` (N, L) int64 token ids padded
with 0 (``<pad>``), ``labels`` the article (``articles``) or document (``sentences``) of each
sentence, and the vocabulary the ids come from. Two ways to split:

- :func:`split_by_article`: a seeded fraction of *each article's* sentences is held out (Arora et
  al., ICML 2019, §8: an 80/20 split of each Wiki-3029 article), at least two stay in training so
  that every training sentence has a positive;
- :func:`tokenized_article_splits`: the whole path from an
  :class:`~hardneg.data.text.corpus.ArticleCorpus` to ``(train, test)`` — NLTK Treebank tokens,
  :func:`split_by_article`, a vocabulary built on the training sentences only, ids cut / padded.

(The ``sentences`` modality holds out whole documents instead; it builds its splits from
:class:`~hardneg.data.text.documents.EncodedDocuments`.)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import torch
from torch import Tensor

from hardneg.data.vectors import LabeledVectors

if TYPE_CHECKING:
    from hardneg.data.text.corpus import ArticleCorpus
    from hardneg.data.text.vocab import Vocabulary

__all__ = ["ArticleSplits", "TokenSplit", "encode_padded", "split_by_article", "tokenized_article_splits"]


@dataclass(frozen=True)
class TokenSplit(LabeledVectors):
    """A split of sentences as padded token ids ``inputs`` (N, L) int64, with its vocabulary."""

    vocab: Vocabulary | None = None

    def head(self, n: int | None) -> TokenSplit:
        """The first ``n`` sentences (all when ``n`` is ``None`` or not smaller), same vocabulary."""
        if n is None or n >= len(self):
            return self
        return TokenSplit(self.inputs[:n], self.labels[:n], self.classes, None, self.vocab)


def encode_padded(tokens: list[list[str]], vocab: Vocabulary, max_length: int) -> Tensor:
    """(N, max_length) int64 ids, cut to ``max_length`` and padded with 0."""
    out = torch.zeros(len(tokens), max_length, dtype=torch.long)
    for i, sentence in enumerate(tokens):
        ids = vocab.encode(sentence[:max_length])
        out[i, : len(ids)] = torch.as_tensor(ids, dtype=torch.long)
    return out


def split_by_article(
    labels: np.ndarray, *, test_fraction: float, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """Indices ``(train, test)``: ``floor(test_fraction · n)`` of each article's n sentences held out,
    at least two kept for training; articles with fewer than two sentences are left out.

    >>> train, test = split_by_article(np.array([0, 0, 0, 0, 1, 1, 2]), test_fraction=0.5, seed=0)
    >>> len(train), len(test), 6 in train.tolist() + test.tolist()
    (4, 2, False)
    """
    rng = np.random.default_rng([seed, 0x7E47])
    train: list[int] = []
    test: list[int] = []
    for article in np.unique(labels):
        members = np.flatnonzero(labels == article)
        if members.size < 2:
            continue
        members = rng.permutation(members)
        n_test = min(int(np.floor(test_fraction * members.size)), members.size - 2)
        test += members[:n_test].tolist()
        train += members[n_test:].tolist()
    return np.array(sorted(train), dtype=np.int64), np.array(sorted(test), dtype=np.int64)


@dataclass(frozen=True)
class ArticleSplits:
    """``train`` and ``test`` (the training split when nothing is held out), and what was left out:
    sentences without tokens and articles with fewer than two (tokenised) sentences."""

    train: TokenSplit
    test: TokenSplit
    empty_sentences: int
    dropped_articles: int


def tokenized_article_splits(
    corpus: ArticleCorpus, *, test_fraction: float, seed: int, min_count: int, max_length: int
) -> ArticleSplits:
    """Tokenise ``corpus`` (NLTK Treebank, lower-cased), split each article's sentences
    (:func:`split_by_article`), build the vocabulary on the training sentences (tokens seen fewer
    than ``min_count`` times become ``<unk>``) and encode both splits (:func:`encode_padded`).

    Raises ``ValueError`` (naming the corpus) when no article has two sentences.
    """
    from hardneg.data.text.tokenize import word_tokenize
    from hardneg.data.text.vocab import Vocabulary

    tokens = [word_tokenize(s) for s in corpus.sentences]
    keep = np.array([len(t) > 0 for t in tokens])
    labels = corpus.labels[keep]
    tokens = [t for t, k in zip(tokens, keep) if k]
    train_idx, test_idx = split_by_article(labels, test_fraction=test_fraction, seed=seed)
    dropped_articles = len(np.unique(corpus.labels)) - len(np.unique(labels[train_idx]))
    if len(train_idx) < 2:
        raise ValueError(f"{corpus.name}: no article has two sentences to form a positive pair")
    vocab = Vocabulary.build((tokens[i] for i in train_idx), min_count=min_count)

    def split(idx: np.ndarray) -> TokenSplit:
        ids = encode_padded([tokens[i] for i in idx], vocab, max_length)
        return TokenSplit(ids, torch.as_tensor(labels[idx], dtype=torch.long), corpus.articles, None, vocab)

    train = split(train_idx)
    test = split(test_idx) if len(test_idx) else train
    return ArticleSplits(train, test, int((~keep).sum()), dropped_articles)
