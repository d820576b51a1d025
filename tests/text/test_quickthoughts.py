"""Quick-thoughts (Logeswaran & Lee, ICLR 2018) with HCL's negatives: loss forms, corpus, pipeline."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch
from typer.testing import CliRunner

from hardneg import ContrastiveLoss, negatives, objectives
from hardneg.cli import app
from hardneg.data.text.documents import (
    encode_document_list,
    encode_documents,
    iter_documents,
    write_documents,
)
from hardneg.text.quickthoughts import context_positives, quick_thoughts_loss


def _s2v_loss(f: torch.Tensor, g: torch.Tensor, context: int) -> float:
    """Transcription of the released quick-thoughts loss (S2V, s2v_model.py): scores f gᵀ with the
    diagonal set to 0, targets 1 on the diagonals ±1..±context normalised per row, softmax
    cross-entropy averaged over the batch."""
    b = f.shape[0]
    scores = f @ g.T
    scores = scores - torch.diag(torch.diag(scores))
    targets = torch.zeros(b, b, dtype=f.dtype)
    for k in [*range(-context, 0), *range(1, context + 1)]:
        targets += torch.from_numpy(np.eye(b, k=k))  # np.eye(batch_size, k=ctxt_pos), as in S2V
    targets = targets / targets.sum(dim=1, keepdim=True)
    return float(-(targets * torch.log_softmax(scores, dim=1)).sum(dim=1).mean())


@pytest.mark.parametrize("context", [1, 2])
def test_mean_form_with_a_zero_diagonal_is_the_released_qt_loss(context: int) -> None:
    g = torch.Generator().manual_seed(context)
    f, c = (
        torch.randn(10, 6, generator=g, dtype=torch.float64),
        torch.randn(10, 6, generator=g, dtype=torch.float64),
    )
    loss = ContrastiveLoss(temperature=1.0, normalize=False)
    out = quick_thoughts_loss(
        loss, f, c, torch.zeros(10, dtype=torch.long), context=context, positives="mean", self_score="zero"
    )
    assert float(out.loss) == pytest.approx(_s2v_loss(f, c, context), rel=1e-12)


def test_sum_form_is_hcl_with_m_positives_and_mean_form_excludes_the_anchor() -> None:
    g = torch.Generator().manual_seed(5)
    f, c = (
        torch.randn(7, 4, generator=g, dtype=torch.float64),
        torch.randn(7, 4, generator=g, dtype=torch.float64),
    )
    docs = torch.tensor([0, 0, 0, 0, 1, 1, 1])
    loss = ContrastiveLoss(temperature=1.0, normalize=False)
    s = (f @ c.T).tolist()
    ref_sum, ref_mean = [], []
    for i in range(7):
        pos = [j for j in (i - 1, i + 1) if 0 <= j < 7 and docs[j] == docs[i]]
        neg = [j for j in range(7) if j != i and j not in pos]
        num = sum(math.exp(s[i][j]) for j in pos)
        ref_sum.append(-math.log(num / (num + sum(math.exp(s[i][j]) for j in neg))))
        lse = math.log(sum(math.exp(s[i][j]) for j in range(7) if j != i))
        ref_mean.append(sum(lse - s[i][p] for p in pos) / len(pos))
    out = quick_thoughts_loss(loss, f, c, docs, positives="sum")
    torch.testing.assert_close(out.per_anchor, torch.tensor(ref_sum, dtype=torch.float64), rtol=1e-12, atol=0)
    out = quick_thoughts_loss(loss, f, c, docs, positives="mean")
    torch.testing.assert_close(
        out.per_anchor, torch.tensor(ref_mean, dtype=torch.float64), rtol=1e-12, atol=0
    )


def test_positives_stay_inside_a_document_and_lonely_sentences_are_not_anchors() -> None:
    docs = torch.tensor([0, 1, 1, 2, 3, 3])
    pm = context_positives(docs, context=2)
    assert pm[1].tolist() == [False, False, True, False, False, False]
    assert not pm[0].any() and not pm[3].any()
    loss = ContrastiveLoss(temperature=1.0, normalize=False)
    out = quick_thoughts_loss(loss, torch.randn(6, 3), torch.randn(6, 3), docs)
    assert out.per_anchor.shape == (4,)
    with pytest.raises(ValueError, match="no sentence of the batch has a neighbour"):
        quick_thoughts_loss(loss, torch.randn(3, 3), torch.randn(3, 3), torch.tensor([0, 1, 2]))
    with pytest.raises(ValueError, match="context must be an int >= 1"):
        context_positives(docs, context=0)


def test_hard_and_debiased_together_stay_finite_on_large_unnormalised_scores() -> None:
    """HCL saw numerical issues with tau+ > 0 and hard sampling on QT; ours works in the log domain."""
    g = torch.Generator().manual_seed(0)
    f = (30 * torch.randn(64, 16, generator=g)).requires_grad_()
    c = (30 * torch.randn(64, 16, generator=g)).requires_grad_()
    loss = ContrastiveLoss(
        temperature=1.0,
        normalize=False,
        negatives=negatives.Hard(beta=2.0, rescale=True),
        objective=objectives.Debiased(0.01),
    )
    out = quick_thoughts_loss(loss, f, c, torch.zeros(64, dtype=torch.long))
    out.loss.backward()
    assert torch.isfinite(out.loss) and torch.isfinite(f.grad).all() and torch.isfinite(c.grad).all()


def test_gradcheck_of_both_forms() -> None:
    g = torch.Generator().manual_seed(2)
    f = torch.randn(6, 3, generator=g, dtype=torch.float64, requires_grad=True)
    c = torch.randn(6, 3, generator=g, dtype=torch.float64, requires_grad=True)
    docs = torch.tensor([0, 0, 0, 1, 1, 1])
    loss = ContrastiveLoss(
        temperature=1.0, normalize=False, negatives=negatives.Hard(beta=1.0), tau_plus=0.05
    )
    for form in ("sum", "mean"):
        assert torch.autograd.gradcheck(
            lambda a, b, form=form: quick_thoughts_loss(loss, a, b, docs, positives=form).loss, (f, c)
        )


def _corpus(path: Path, docs: int = 30, per_doc: int = 6) -> Path:
    topics = [
        "cat kitten purr",
        "ship sail harbour",
        "rain cloud storm",
        "code bug python",
        "bread oven yeast",
    ]
    out = []
    for d in range(docs):
        words = topics[d % len(topics)].split()
        out.append(
            [f"The {words[i % 3]} and the {words[(i + 1) % 3]} met {i} times." for i in range(per_doc)]
        )
    return write_documents(out, path)


def test_documents_are_streamed_and_encoded_with_their_boundaries(tmp_path: Path) -> None:
    path = tmp_path / "c.txt"
    path.write_text(
        "A cat sat.\nIt purred.\n\n\nAlone.\n\nRain fell on the long road home.\nWe ran.\n", encoding="utf-8"
    )
    docs = list(iter_documents(path))
    assert [[n for n, _ in d] for d in docs] == [[1, 2], [5], [7, 8]]
    enc = encode_documents(path, max_length=3)
    assert (
        enc.documents.tolist() == [0, 0, 1, 1] and enc.dropped_documents == 1 and enc.truncated == 2
    )  # 'a cat sat .' too
    same = encode_document_list([[s for _, s in d] for d in docs], max_length=3)
    assert torch.equal(same.tokens, enc.tokens) and same.vocab.tokens == enc.vocab.tokens


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "no sentence"),
        (b"\n\n", "no sentence"),
        (b"Alone.\n\nAlso alone.\n", "no document has two"),
    ],
)
def test_bad_corpora_name_the_file_and_line(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "bad.txt"
    path.write_bytes(content)
    with pytest.raises(ValueError, match=message):
        encode_documents(path)


def _senteval(folder: Path) -> Path:
    (folder / "MR").mkdir(parents=True)
    pos = [f"a great {w} film" for w in ("fun", "warm", "bright", "kind", "bold", "deep")] * 3
    neg = [f"a dull {w} mess" for w in ("slow", "cold", "grey", "mean", "flat", "thin")] * 3
    (folder / "MR" / "rt-polarity.pos").write_text("\n".join(pos) + "\n", encoding="latin-1")
    (folder / "MR" / "rt-polarity.neg").write_text("\n".join(neg) + "\n", encoding="latin-1")
    return folder


TINY = [
    "data.text.source=documents",
    "data.text.window=16",
    "train.epochs=2",
    "eval.senteval_folds=2",
    "eval.figures=false",
    "train.progress=false",
    "data.text.min_count=1",
]


@pytest.mark.parametrize(
    "extra",
    [
        [],
        [
            "model.encoder=gru",
            "model.width=8",
            "model.feature_dim=6",
            "model.bidirectional=true",
            "data.text.positives=mean",
            "loss.negatives={name: hard, beta: 1.0, rescale: true}",
        ],
    ],
)
def test_trains_and_evaluates_the_senteval_way(tmp_path: Path, extra: list[str]) -> None:
    corpus = _corpus(tmp_path / "corpus.txt")
    folder = _senteval(tmp_path / "senteval")
    run = tmp_path / "run"
    result = CliRunner().invoke(
        app,
        [
            "train",
            "sentences",
            *TINY,
            f"data.root={corpus}",
            f"eval.senteval={folder}",
            *extra,
            "--out",
            str(run),
            "--quiet",
        ],
    )
    assert result.exit_code == 0, result.output
    metrics = json.loads((run / "metrics.json").read_text())["eval"]
    assert set(metrics) == {"mr_acc"} and 0.0 <= metrics["mr_acc"] <= 1.0
    assert (run / "vocab.json").is_file()
    again = CliRunner().invoke(app, ["evaluate", str(run), "--senteval", str(folder)])
    assert again.exit_code == 0, again.output


def test_windows_are_contiguous_and_one_index_is_one_batch(tmp_path: Path) -> None:
    from hardneg.modalities.sentences import ContiguousWindows
    from hardneg.pipeline.config import load_config
    from hardneg.pipeline.experiment import load_data

    corpus = _corpus(tmp_path / "corpus.txt", docs=10, per_doc=5)
    cfg = load_config("sentences", [*TINY, f"data.root={corpus}", "data.test_fraction=0.2"])
    train, test = load_data(cfg)
    assert len(train) == 40 and len(test) == 10 and not set(train.labels.tolist()) & set(test.labels.tolist())
    windows = ContiguousWindows(train, window=16)
    x, _, docs, idx = windows[[1]]
    assert len(windows) == 2 and windows.items_per_step == 1 and idx.tolist() == list(range(16, 32))
    assert torch.equal(x["tokens"], train.inputs[16:32]) and torch.equal(docs, train.labels[16:32])


@pytest.mark.parametrize(
    ("overrides", "key"),
    [
        (["data.root=null"], "data.root"),
        (["data.text.source=nyt"], "data.text.source"),
        (["model.bidirectional=true"], "model.bidirectional"),
        (["train.batch_size=16"], "train.batch_size"),
        (["data.text.block_size=5"], "data.text.block_size"),
        (["eval.senteval_tasks=[MPQA]"], "eval.senteval_tasks"),
        (["eval.senteval_tasks=[NOPE]"], "eval.senteval_tasks"),
        (["eval.senteval=/no/such/senteval"], "eval.senteval"),
    ],
)
def test_bad_settings_fail_when_the_config_is_loaded(tmp_path: Path, overrides: list[str], key: str) -> None:
    """Checked before anything is written (no data read): the error names the key."""
    from hardneg.config import ConfigError
    from hardneg.pipeline.config import load_config

    corpus = _corpus(tmp_path / "corpus.txt", docs=6, per_doc=4)
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        load_config("sentences", [*TINY, f"data.root={corpus}", *overrides])


def test_senteval_tasks_must_be_in_the_folder(tmp_path: Path) -> None:
    from hardneg.config import ConfigError
    from hardneg.pipeline.config import load_config

    corpus = _corpus(tmp_path / "corpus.txt", docs=6, per_doc=4)
    folder = _senteval(tmp_path / "senteval")
    base = [*TINY, f"data.root={corpus}", f"eval.senteval={folder}"]
    assert load_config("sentences", [*base, "eval.senteval_tasks=[mr]"]).eval.senteval_tasks == ["mr"]
    with pytest.raises(ConfigError, match=r"'eval\.senteval_tasks': no files of \['CR'\]"):
        load_config("sentences", [*base, "eval.senteval_tasks=[MR, CR]"])


def test_keys_of_the_articles_modality_are_refused_naming_the_valid_keys() -> None:
    from pydantic import ValidationError

    from hardneg.config import ConfigError
    from hardneg.modalities.sentences import SentencesData
    from hardneg.pipeline.config import load_config

    with pytest.raises(ValidationError):
        SentencesData.model_validate({"dataset": "sentences", "text": {"corpus_negatives": 8}})
    for key in ("block_size=5", "corpus_negatives=8", "supervised=true", "num_articles=3"):
        with pytest.raises(ConfigError) as err:
            load_config("sentences", [f"data.text.{key}"])
        message = str(err.value)
        assert f"unknown config key 'data.text.{key.split('=')[0]}'" in message
        valid = "context, max_length, min_count, positives, self_score, source, window"
        assert f"valid keys in 'data.text': {valid}" in message


def test_the_cli_refuses_an_unknown_key_before_writing_anything(tmp_path: Path) -> None:
    out = tmp_path / "run"
    result = CliRunner().invoke(app, ["train", "sentences", "data.text.block_size=5", "--out", str(out)])
    assert result.exit_code == 2 and "data.text.block_size" in result.output and "window" in result.output
    assert not out.exists()


def test_the_window_is_the_batch_and_train_batch_size_does_not_apply(tmp_path: Path) -> None:
    from hardneg.config import ConfigError
    from hardneg.config.schema import TrainConfig
    from hardneg.modalities.sentences import ContiguousWindows, Sentences
    from hardneg.pipeline.config import load_config
    from hardneg.pipeline.experiment import load_data

    corpus = _corpus(tmp_path / "corpus.txt", docs=6, per_doc=4)
    cfg = load_config("sentences", [*TINY, f"data.root={corpus}", "data.text.window=8"])
    assert cfg.data.text.window == 8
    assert cfg.train.batch_size == TrainConfig.model_fields["batch_size"].default  # left at its default
    train, _ = load_data(cfg)
    data = Sentences().dataset(cfg, train)
    assert isinstance(data, ContiguousWindows) and data[[0]][0]["tokens"].shape[0] == 8
    with pytest.raises(ConfigError, match=r"'train\.batch_size'.*data\.text\.window"):
        load_config("sentences", [*TINY, f"data.root={corpus}", "train.batch_size=8"])
    # more sentences than the training split holds: known only once the corpus is read
    with pytest.raises(ConfigError, match=r"data\.text\.window"):
        load_data(load_config("sentences", [*TINY, f"data.root={corpus}", "data.text.window=999"]))


def test_a_latin1_line_is_read_as_latin1_with_one_notice(tmp_path: Path) -> None:
    path = tmp_path / "old.txt"
    path.write_bytes(b"One.\nTwo.\n\ncaf\xe9 ok\nfine\n")
    notices: list[str] = []
    docs = list(iter_documents(path, report=notices.append))
    assert [[s for _, s in d] for d in docs] == [["One.", "Two."], ["caf\u00e9 ok", "fine"]]
    assert notices == [f"{path}: not UTF-8 (line 4); read as latin-1"]
