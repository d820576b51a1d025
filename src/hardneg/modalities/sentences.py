"""Sentences in order through the training pipeline: the modality behind ``data.dataset: sentences``.

Quick-thoughts (Logeswaran & Lee, ICLR 2018) with the negatives of Robinson et al. (ICLR 2021,
§5.3): a batch is B **contiguous** sentences of the corpus, ``f`` embeds them as anchors and ``g``
as candidates, a sentence's neighbours in its document are its positives
(:mod:`hardneg.text.quickthoughts`). The encoders are ``model.encoder: bow`` (the mean of word
embeddings, the cheap option) or ``gru`` (QT's: ``model.width`` = word-embedding size,
``model.feature_dim`` = hidden size, ``model.bidirectional``); the representation is ``[f; g]``.

Corpus (``data.text.source``): ``documents`` — a file at ``data.root`` with one sentence per line
and a blank line between documents (BookCorpus-style; streamed, :mod:`hardneg.data.text.documents`), or
``wiki`` — the articles of a Wikipedia dump at ``data.root`` or of gensim's 106-article sample, in
text order (each article a document). A seeded ``data.test_fraction`` of the *documents* is held
out; its sentences give the test features (labels = document index). Documents of one sentence are
left out (no positive) and counted. Batches are the corpus cut into windows of ``train.batch_size``
sentences, the windows shuffled every epoch; windows cross document boundaries (as QT's stream
does), positives never do.

Evaluation (``eval.senteval``): the SentEval tasks of a folder in SentEval's layouts
(:mod:`hardneg.senteval`), by default the MR, CR, SUBJ-like and TREC sets prepared from installed
packages into a temporary folder (``hardneg data senteval`` writes them once).
"""

from __future__ import annotations

import sys
import tempfile
import time
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from torch import Tensor, nn

from hardneg.modalities.articles import TokenSplit
from hardneg.modalities.base import IdentityViews, Modality

if TYPE_CHECKING:
    from torch.utils.data import Dataset

    from hardneg.loss import ContrastiveLoss
    from hardneg.reduction import LossOutput
    from hardneg.data.text.documents import EncodedDocuments
    from hardneg.pipeline.config import RunConfig
    from hardneg.pipeline.evaluation import EvalResult

__all__ = ["SENTENCES", "ContiguousWindows", "encode_sentences", "load_documents"]


def load_documents(cfg: RunConfig) -> EncodedDocuments:
    """The corpus of ``data.text.source`` (``documents`` or ``wiki``) as token ids, in order."""
    from hardneg.data.text.documents import encode_document_list, encode_documents
    from hardneg.pipeline.config import ConfigError

    t, root = cfg.data.text, cfg.data.root
    if t.source == "documents":
        if root is None:
            raise ConfigError(
                "invalid value for 'data.root': data.text.source=documents reads a file of "
                "sentences (one per line, a blank line between documents), got None"
            )
        return encode_documents(root, min_count=t.min_count, max_length=t.max_length)
    if t.source != "wiki":
        raise ConfigError(
            f"invalid value for 'data.text.source': data.dataset=sentences reads 'documents' or "
            f"'wiki', got {t.source!r}"
        )
    from hardneg.modalities.articles import wiki_dump
    from hardneg.data.text.wiki import build_wiki_corpus

    dump = wiki_dump(cfg)
    corpus = build_wiki_corpus(dump)
    docs = [
        [corpus.sentences[i] for i in np.flatnonzero(corpus.labels == a)] for a in range(corpus.num_articles)
    ]
    return encode_document_list(docs, name=str(dump), min_count=t.min_count, max_length=t.max_length)


def _load(cfg: RunConfig) -> tuple[TokenSplit, TokenSplit]:
    enc = load_documents(cfg)
    if enc.dropped_documents or enc.truncated:
        print(
            f"notice: {enc.dropped_documents} document(s) of one sentence left out; {enc.truncated} "
            f"sentence(s) cut to data.text.max_length={cfg.data.text.max_length} tokens",
            file=sys.stderr,
        )
    n_docs = int(enc.documents.max()) + 1
    rng = np.random.default_rng([cfg.data.split_seed, 0x0D0C])
    n_test = int(np.floor(cfg.data.test_fraction * n_docs))
    if n_docs - n_test < 1:
        raise ValueError(f"data.test_fraction={cfg.data.test_fraction} leaves no training document")
    test_docs = torch.as_tensor(np.sort(rng.choice(n_docs, size=n_test, replace=False)), dtype=torch.long)
    is_test = torch.isin(enc.documents, test_docs)
    classes = tuple(str(d) for d in range(n_docs))

    def split(keep: Tensor) -> TokenSplit:
        return TokenSplit(enc.tokens[keep], enc.documents[keep], classes, None, enc.vocab)

    train = split(~is_test)
    if cfg.train.batch_size > len(train):
        from hardneg.pipeline.config import ConfigError

        raise ConfigError(
            f"invalid value for 'train.batch_size': at most the {len(train)} training sentences, "
            f"got {cfg.train.batch_size}"
        )
    return train.head(cfg.data.train_subset), (split(is_test) if n_test else train).head(cfg.data.test_subset)


class ContiguousWindows:
    """``[w]`` → window ``w``: ``({"tokens": (B, L), "documents": (B,)}, empty, documents, indices)``.

    The training sentences in corpus order cut into ``len(self)`` windows of ``window`` sentences
    (the last partial window is dropped). ``items_per_step = 1`` tells the data module that one
    index — one window — is one batch; the epoch-seeded sampler shuffles the windows.
    """

    items_per_step = 1

    def __init__(self, data: TokenSplit, *, window: int) -> None:
        if window < 2 or window > len(data):
            raise ValueError(f"window must lie in [2, {len(data)}] (the training sentences), got {window}")
        self.tokens, self.documents, self.window = data.inputs, data.labels.long(), int(window)

    def __len__(self) -> int:
        return int(self.tokens.shape[0]) // self.window

    def __getitem__(self, indices: list[int]) -> tuple[dict[str, Tensor], Tensor, Tensor, Tensor]:
        (w,) = [int(i) for i in indices]
        idx = torch.arange(w * self.window, (w + 1) * self.window)
        docs = self.documents[idx]
        return {"tokens": self.tokens[idx], "documents": docs}, torch.empty(0), docs, idx


def _dataset(train: Any, cfg: RunConfig) -> Dataset[tuple[Tensor, Tensor, Tensor, Tensor]]:
    return ContiguousWindows(train, window=cfg.train.batch_size)  # type: ignore[return-value]


def _step(
    encoder: nn.Module,
    loss: ContrastiveLoss,
    x: dict[str, Tensor],
    *,
    labels: Tensor | None,
    generator: torch.Generator,
) -> LossOutput:
    """The QT loss of one window (:meth:`~hardneg.text.quickthoughts.QuickThoughts.loss`)."""
    return encoder.loss(loss, x["tokens"], x["documents"], generator=generator)  # type: ignore[operator]


def _encoder(cfg: RunConfig, train: Any) -> nn.Module:
    from hardneg.models.gru import GRUEncoder
    from hardneg.models.bow import BagOfWords
    from hardneg.text.quickthoughts import QuickThoughts

    m, t = cfg.model, cfg.data.text
    dim = m.feature_dim or 100

    def one() -> nn.Module:
        if m.encoder == "gru":
            return GRUEncoder(
                vocab_size=len(train.vocab),
                embedding_dim=m.width or 100,
                hidden_dim=dim,
                bidirectional=m.bidirectional,
            )
        return BagOfWords(vocab_size=len(train.vocab), dim=dim)

    return QuickThoughts(f=one(), g=one(), context=t.context, positives=t.positives, self_score=t.self_score)


def encode_sentences(
    encoder: nn.Module, vocab: Any, sentences: list[str], *, max_length: int, batch_size: int = 512
) -> np.ndarray:
    """``[f(s); g(s)]`` of raw sentences, (N, D) float32: NLTK tokens, the run's vocabulary (unknown
    words → ``<unk>``; a sentence without tokens is one ``<unk>``), cut to ``max_length``."""
    from hardneg.evaluate import extract_features
    from hardneg.modalities.articles import encode_padded
    from hardneg.data.text.tokenize import word_tokenize

    if not sentences:
        return np.zeros((0, int(getattr(encoder, "feature_dim", 0))), dtype=np.float32)
    tokens = [word_tokenize(s) or ["<unk>"] for s in sentences]
    ids = encode_padded(tokens, vocab, max_length)
    return extract_features(encoder, ids, batch_size=batch_size).numpy()


def _evaluate(encoder: nn.Module, train: Any, test: Any, cfg: RunConfig) -> EvalResult:
    from hardneg.evaluate import extract_features
    from hardneg.senteval import SentEvalEvaluator, evaluate_folder, prepare_senteval
    from hardneg.pipeline.evaluation import EvalResult

    start = time.perf_counter()
    e, length = cfg.eval, cfg.data.text.max_length

    def encode(sentences: list[str]) -> np.ndarray:
        return encode_sentences(encoder, train.vocab, list(sentences), max_length=length)

    def features(split: TokenSplit) -> Tensor:
        return extract_features(encoder, split.inputs, batch_size=e.batch_size)

    evaluator = SentEvalEvaluator(
        folds=e.senteval_folds, inner_folds=e.senteval_folds, seed=cfg.seed, threads=cfg.train.threads or 1
    )
    metrics: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="hardneg-senteval-") as tmp:
        folder, tasks = e.senteval, e.senteval_tasks
        if folder is None:
            tasks = tasks or ["MR", "CR", "SUBJ", "TREC"]
            prepare_senteval(tmp, seed=0, tasks=tasks)
            folder = tmp
        results = evaluate_folder(folder, encode, tasks=tasks, evaluator=evaluator)
    for name, res in results.items():
        metrics[f"{name.lower()}_acc"] = res.accuracy / 100.0
        if res.f1 is not None:
            metrics[f"{name.lower()}_f1"] = res.f1 / 100.0
    return EvalResult(
        metrics=metrics,
        train_features=features(train),
        test_features=features(test),
        seconds=time.perf_counter() - start,
    )


SENTENCES = Modality(
    name="sentences",
    load=_load,
    dataset=_dataset,
    views=lambda cfg, train: IdentityViews(),
    encoder_kwargs=lambda cfg, train: {"vocab_size": len(train.vocab)},
    encoders=("bow", "gru"),
    build_encoder=_encoder,
    step=_step,
    evaluate=_evaluate,
    save=lambda train, run: train.vocab.save(run / "vocab.json"),
)
