"""Sentences labelled by article through the training pipeline (`data.dataset: articles`)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch
from typer.testing import CliRunner

from hardneg.cli import app
from hardneg.config import ConfigError
from hardneg.data.text.splits import split_by_article
from hardneg.modalities.articles import ArticleBatches, Articles
from hardneg.models.bow import BagOfWords
from hardneg.pipeline.config import load_config
from hardneg.pipeline.experiment import load_data

TOPICS = {
    "cats": "cat kitten purr whisker meow",
    "ships": "ship sail harbour anchor crew",
    "rain": "rain cloud storm umbrella wet",
    "code": "code compile bug python test",
    "bread": "bread flour oven yeast bake",
    "chess": "chess rook pawn king board",
}


def _write_tsv(path: Path, *, per_article: int = 8, extra: str = "") -> Path:
    rng = np.random.default_rng(0)
    lines = []
    for article, words in TOPICS.items():
        vocab = words.split()
        for _ in range(per_article):
            fillers = rng.choice(["the", "a", "and", "of"], size=3).tolist()
            picked = rng.choice(vocab, size=4).tolist() + fillers
            lines.append(f"{article}\t{' '.join(picked).capitalize()}.")
    path.write_text("\n".join(lines) + "\n" + extra, encoding="utf-8")
    return path


TINY = ["data.text.source=tsv", "data.text.min_count=1", "train.batch_size=16", "train.epochs=4",
        "eval.kwise=[1]", "eval.kwise_tasks=50", "eval.knn_k=5", "eval.figures=false", "train.progress=false"]
_step = Articles().step  # the modality's own training step


def test_bag_of_words_is_the_mean_of_word_embeddings() -> None:
    enc = BagOfWords(vocab_size=12, dim=5).double()
    x = torch.tensor([[3, 4, 4, 0, 0], [7, 0, 0, 0, 0], [1, 2, 3, 4, 5]])
    w = enc.embedding.weight.detach()
    for row, ids in zip(enc(x), x.tolist()):
        words = [i for i in ids if i != 0]
        expected = sum(w[i] for i in words) / len(words)  # Σ_w count_w / len(x) · E_w
        assert torch.allclose(row, expected, atol=1e-12)
    with pytest.raises(ValueError, match="tokens must be a"):
        enc(x.float())
    with pytest.raises(ValueError, match="vocab_size must be an int >= 2"):
        BagOfWords(vocab_size=1)


def test_split_keeps_two_training_sentences_per_article() -> None:
    labels = np.repeat(np.arange(5), [2, 3, 4, 10, 1])
    train, test = split_by_article(labels, test_fraction=0.5, seed=3)
    assert not set(train) & set(test)
    counts = np.bincount(labels[train], minlength=5)
    assert counts.tolist() == [2, 2, 2, 5, 0]  # the lone sentence of article 4 has no positive
    assert np.bincount(labels[test], minlength=5).tolist() == [0, 1, 2, 5, 0]
    again = split_by_article(labels, test_fraction=0.5, seed=3)
    assert np.array_equal(train, again[0]) and np.array_equal(test, again[1])


def test_loads_splits_and_vocabulary_from_a_tsv(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write_tsv(tmp_path / "c.tsv", extra="lonely\tOnly one sentence here.\n")
    cfg = load_config("articles", [*TINY, f"data.root={path}"])
    train, test = load_data(cfg)
    assert "1 article(s) with fewer than two sentences left out" in capsys.readouterr().err
    assert train.inputs.dtype == torch.long and train.inputs.shape[1] == 64
    assert len(train) == 6 * 7 and len(test) == 6 * 1  # floor(20 % of 8) held out per article
    assert "kitten" in train.vocab and train.vocab.decode([0, 1]) == ["<pad>", "<unk>"]


def test_trains_and_separates_articles(tmp_path: Path) -> None:
    path = _write_tsv(tmp_path / "c.tsv")
    out = tmp_path / "run"
    result = CliRunner().invoke(app, ["train", "articles", *TINY, f"data.root={path}", "train.epochs=15",
                                      "--out", str(out), "--quiet"])
    assert result.exit_code == 0, result.output
    metrics = json.loads((out / "metrics.json").read_text())["eval"]
    assert {"linear_top1", "mean_top1", "kwise1_top1"} <= set(metrics)
    assert metrics["mean_top1"] > 0.6  # 6 articles: chance is 1/6
    from hardneg.data.text.vocab import Vocabulary

    assert "kitten" in Vocabulary.load(out / "vocab.json")  # the run folder keeps its vocabulary


def test_bad_text_settings_name_the_key(tmp_path: Path) -> None:
    # known from the config alone: refused when it is loaded, before anything is written
    with pytest.raises(ConfigError, match=r"data\.root"):
        load_config("articles", [*TINY, "data.text.source=tsv"])
    # known only once the corpus is read: refused when the data are loaded, naming the key
    path = _write_tsv(tmp_path / "c.tsv")
    cfg = load_config("articles", [*TINY, f"data.root={path}", "data.text.num_articles=99"])
    with pytest.raises(ConfigError, match=r"data\.text\.num_articles"):
        load_data(cfg)
    lonely = tmp_path / "lonely.tsv"
    lonely.write_text("a\tOne sentence here.\nb\tAnother one there.\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"data\.root.*no article has two sentences"):
        load_data(load_config("articles", [*TINY, f"data.root={lonely}"]))


def test_keys_of_the_sentences_modality_are_refused_naming_the_valid_keys(tmp_path: Path) -> None:
    from pydantic import ValidationError

    from hardneg.modalities.articles import ArticlesData

    with pytest.raises(ValidationError):
        ArticlesData.model_validate({"dataset": "articles", "text": {"context": 2}})
    ok = ArticlesData.model_validate({"dataset": "articles", "text": {"block_size": 2}})
    assert ok.text.block_size == 2
    for key in ("context=2", "positives=mean", "self_score=zero", "window=16"):
        with pytest.raises(ConfigError) as err:
            load_config("articles", [f"data.text.{key}"])
        message = str(err.value)
        assert f"unknown config key 'data.text.{key.split('=')[0]}'" in message
        assert ("valid keys in 'data.text': block_size, corpus_negatives, max_length, min_count, "
                "num_articles, source, supervised") in message
    out = tmp_path / "run"
    result = CliRunner().invoke(app, ["train", "articles", "data.text.context=2", "--out", str(out)])
    assert result.exit_code == 2 and "data.text.context" in result.output and "block_size" in result.output
    assert not out.exists()  # refused before anything is written


def test_image_encoders_are_refused_for_sentences() -> None:
    with pytest.raises(ConfigError, match=r"model\.encoder"):
        load_config("articles", ["model.encoder=small_cnn"])
    with pytest.raises(ConfigError, match=r"model\.layers"):
        load_config("articles", ["model.layers=2"])


def test_corpus_negatives_do_not_depend_on_the_batch_size(tmp_path: Path) -> None:
    from hardneg.pipeline.build import build_loss, build_module

    path = _write_tsv(tmp_path / "c.tsv")
    cfg = load_config("articles", [*TINY, f"data.root={path}", "data.text.corpus_negatives=20"])
    train, _ = load_data(cfg)
    data = ArticleBatches(train, seed=0, corpus_negatives=20)
    module, _ = build_module(cfg, train)
    loss = build_loss(cfg)
    for batch in ([0, 5, 9], list(range(30))):
        x, _, labels, _ = data[batch]
        assert x["pool"].shape == (20, train.inputs.shape[1]) and x["pool_labels"].shape == (20,)
        assert torch.equal(x["pool"], data[batch][0]["pool"])  # seeded by the batch: reproducible
        out = _step(cfg, module.encoder, loss, x, labels=labels, generator=torch.Generator().manual_seed(0))
        assert out.diagnostics["num_negatives"] == 20 and torch.isfinite(out.loss)
    # the pool's own-article sentences are collisions; collision-free negatives drop them
    cf = build_loss(load_config("articles", [*TINY, f"data.root={path}", "loss.collision_free=true"]))
    x, _, labels, _ = data[list(range(30))]
    out = _step(cfg, module.encoder, cf, x, labels=labels, generator=torch.Generator().manual_seed(0))
    assert out.diagnostics["collision_rate"] == 0.0
    assert _step(cfg, module.encoder, loss, x, labels=labels, generator=torch.Generator())\
        .diagnostics["collision_rate"] > 0.0


def test_corpus_negatives_train_and_refuse_a_larger_k(tmp_path: Path) -> None:
    path = _write_tsv(tmp_path / "c.tsv")
    base = ["train", "articles", *TINY, f"data.root={path}", "data.text.corpus_negatives=24"]
    ok = CliRunner().invoke(app, [*base, "loss.num_negatives=8", "--out", str(tmp_path / "r"), "--quiet"])
    assert ok.exit_code == 0, ok.output
    bad = CliRunner().invoke(app, [*base, "loss.num_negatives=30", "--out", str(tmp_path / "r2")])
    assert bad.exit_code == 2
    assert "loss.num_negatives" in bad.output and "corpus_negatives = 24" in bad.output
    assert not (tmp_path / "r2").exists()  # a config-time check: nothing written


def test_mean_classifier_from_k_shots(tmp_path: Path) -> None:
    """Arora et al.'s mu-k: class means from k training samples; k >= every class count is mu."""
    from hardneg.evaluate.latent_table import few_shot_indices
    from hardneg.modalities.readouts import evaluate_encoder
    from hardneg.pipeline.build import build_module

    labels = np.array([0, 0, 0, 1, 1, 2, 2, 2, 2])
    few = few_shot_indices(labels, 2, seed=1)
    assert np.bincount(labels[few]).tolist() == [2, 2, 2]
    assert np.array_equal(few, few_shot_indices(labels, 2, seed=1))
    path = _write_tsv(tmp_path / "c.tsv")
    cfg = load_config("articles", [*TINY, f"data.root={path}"])
    train, test = load_data(cfg)
    module, _ = build_module(cfg, train)
    res = evaluate_encoder(module.encoder, train=train, test=test, linear=False, knn=False,
                           kwise=[], mean_shots=[1, 50])
    assert res.metrics["mean50shot_top1"] == res.metrics["mean_top1"]  # 6 per class < 50: all of them
    assert 0.0 <= res.metrics["mean1shot_top1"] <= 1.0


def test_blocks_average_b_sentences_of_one_article(tmp_path: Path) -> None:
    """Arora et al.'s block loss: each item is b sentences of one article, represented by their mean."""
    from hardneg.pipeline.build import build_loss, build_module

    path = _write_tsv(tmp_path / "c.tsv")
    cfg = load_config("articles", [*TINY, f"data.root={path}", "data.text.block_size=3"])
    train, _ = load_data(cfg)
    data = ArticleBatches(train, seed=0, block_size=3)
    x, _, labels, idx = data[[0, 7, 20]]
    assert x["anchor"].shape == (9, train.inputs.shape[1]) and int(x["block_size"]) == 3
    rows = {tuple(r) for r in train.inputs.tolist()}
    assert all(tuple(r) in rows for r in x["anchor"].tolist())
    anchor_rows = [train.inputs.tolist().index(r) for r in x["anchor"].tolist()]
    positive_rows = [train.inputs.tolist().index(r) for r in x["positive"].tolist()]
    assert anchor_rows[0::3] == idx.tolist()  # each block starts with its own sentence
    for block in range(3):  # every sentence of a block comes from the item's article
        for rows_ in (anchor_rows, positive_rows):
            assert {int(train.labels[r]) for r in rows_[3 * block: 3 * block + 3]} == {int(labels[block])}
    module, _ = build_module(cfg, train)
    loss = build_loss(cfg)
    g = torch.Generator().manual_seed(0)
    out = _step(cfg, module.encoder, loss, x, labels=labels, generator=g)
    _, za = module.encoder(x["anchor"])
    _, zp = module.encoder(x["positive"])
    ref = loss(za.reshape(3, 3, -1).mean(1), zp.reshape(3, 3, -1).mean(1))
    assert torch.allclose(out.loss, ref, atol=1e-6)
    assert ArticleBatches(train, seed=0, block_size=1)[[0, 7]][0].keys() == {"anchor", "positive"}
    ok = CliRunner().invoke(app, ["train", "articles", *TINY, f"data.root={path}", "data.text.block_size=2",
                                  "--out", str(tmp_path / "r"), "--quiet"])
    assert ok.exit_code == 0, ok.output


def test_the_block_step_is_arora_et_al_block_loss(tmp_path: Path) -> None:
    """One block loss: at temperature 1 on unnormalised scores the articles step with blocks of b
    sentences is ``objectives.block_loss`` (logistic, base e; Arora et al., ICML 2019, eq. (12)) with
    each block's mean as the anchor and the 2B − 2 other blocks of the batch as negative blocks."""
    from hardneg.objectives.block import block_loss
    from hardneg.pipeline.build import build_loss, build_module

    b, items = 3, [0, 7, 20, 33]
    path = _write_tsv(tmp_path / "c.tsv")
    cfg = load_config("articles", [*TINY, f"data.root={path}", f"data.text.block_size={b}",
                                   "loss.temperature=1.0", "loss.normalize=false"])
    train, _ = load_data(cfg)
    module, _ = build_module(cfg, train)
    x, _, labels, _ = ArticleBatches(train, seed=0, block_size=b)[items]
    g = torch.Generator().manual_seed(0)
    out = _step(cfg, module.encoder, build_loss(cfg), x, labels=labels, generator=g)
    with torch.no_grad():
        a_blocks = module.encoder(x["anchor"])[1].double().reshape(len(items), b, -1)
        p_blocks = module.encoder(x["positive"])[1].double().reshape(len(items), b, -1)
    blocks = torch.cat([a_blocks, p_blocks])  # (2B, b, d): every block of the batch
    n = len(items)
    per = []
    for own, partner in ((a_blocks, p_blocks), (p_blocks, a_blocks)):
        for i in range(n):
            others = [j for j in range(2 * n) if j not in (i, (i + n) % (2 * n))]
            per.append(block_loss(own[i].mean(0)[None], partner[i][None], blocks[others][None],
                                  loss="logistic", base=math.e, reduction="none"))
    ref = torch.cat(per).mean()
    assert float(out.loss.detach()) == pytest.approx(float(ref), rel=1e-5)


def test_the_notice_counts_only_dropped_articles_of_the_kept_classes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write_tsv(tmp_path / "c.tsv", extra="lonely\tOnly one sentence here.\n")
    load_data(load_config("articles", [*TINY, f"data.root={path}", "data.text.num_articles=3"]))
    assert "article(s)" not in capsys.readouterr().err  # the first 3 articles all have 8 sentences


def test_supervised_baseline_trains_the_encoder_with_labels(tmp_path: Path) -> None:
    """Arora et al.'s Supervised columns: f trained by cross-entropy of a linear layer over articles."""
    import torch.nn.functional as F

    from hardneg.pipeline.build import build_loss, build_module

    path = _write_tsv(tmp_path / "c.tsv")
    cfg = load_config("articles", [*TINY, f"data.root={path}", "data.text.supervised=true"])
    train, _ = load_data(cfg)
    x, _, labels, idx = ArticleBatches(train, seed=0, supervised=True)[[0, 9, 17]]
    assert set(x) == {"anchor", "labels"} and torch.equal(x["labels"], train.labels[idx])
    module, _ = build_module(cfg, train)
    assert module.encoder.output_layer.out_features == len(TOPICS)
    out = _step(cfg, module.encoder, build_loss(cfg), x, labels=labels, generator=torch.Generator())
    h, _ = module.encoder(x["anchor"])
    ref = F.cross_entropy(module.encoder.output_layer(h).double(), labels)  # independent path, float64
    assert float(out.loss.detach()) == pytest.approx(float(ref.detach()), rel=1e-5)
    assert 0.0 <= out.diagnostics["train_accuracy"] <= 1.0
    run = tmp_path / "run"
    result = CliRunner().invoke(app, ["train", "articles", *TINY, f"data.root={path}", "train.epochs=15",
                                      "train.lr=0.05", "data.text.supervised=true", "eval.latent_table=true",
                                      "--out", str(run), "--quiet"])
    assert result.exit_code == 0, result.output
    metrics = json.loads((run / "metrics.json").read_text())["eval"]
    assert metrics["mu_top1"] > 0.6 and metrics["tr_avg2"] > 0.8  # 6 articles: chance 1/6 and 1/2
    assert "tr_avg10" not in metrics  # 6 classes: no 10-way task


@pytest.mark.parametrize("extra", ["data.text.block_size=2", "data.text.corpus_negatives=8"])
def test_supervised_refuses_blocks_and_corpus_negatives(tmp_path: Path, extra: str) -> None:
    path = _write_tsv(tmp_path / "c.tsv")
    with pytest.raises(ConfigError, match=r"data\.text\.supervised"):
        load_config("articles", [*TINY, f"data.root={path}", "data.text.supervised=true", extra])
