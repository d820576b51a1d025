"""The latent-class simulator as a training dataset (``data.dataset: latent``), tiny budgets."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from hardneg.config import ConfigError
from hardneg.data.latent import LatentClassSimulator
from hardneg.data.vectors import BatchedLatent, BatchedPairs, LatentBatch, load_latent_splits
from hardneg.pipeline.config import load_config, resolve_config_path
from hardneg.pipeline.data import ContrastiveDataModule
from hardneg.pipeline.experiment import evaluate_run, train_run
from hardneg.pipeline.history import read_history

TINY_LATENT = [
    "data.latent.train_size=384",
    "data.latent.test_size=150",
    "model.width=32",
    "model.feature_dim=8",
    "model.projection_dim=8",
    "model.hidden_dim=16",
    "train.epochs=2",
    "train.batch_size=64",
    "train.threads=1",
    "train.progress=false",
    "train.log_every_n_steps=1",
    "eval.knn_k=20",
    "eval.kwise=[1]",
    "eval.kwise_tasks=20",
]


def tiny_latent(*extra: str) -> list[str]:
    return [*TINY_LATENT, *extra]


@pytest.fixture(scope="module")
def latent_run(tmp_path_factory):
    cfg = load_config("latent_classes", tiny_latent())
    return train_run(cfg, tmp_path_factory.mktemp("runs") / "latent", quiet=True)


def test_training_pairs_are_the_simulators_items_and_true_positives():
    train, test = load_latent_splits(num_classes=4, input_dim=6, train_size=50, test_size=30, seed=3)
    sim = LatentClassSimulator(num_classes=4, input_dim=6, length=50, seed=3)
    for i in (0, 17, 49):
        x, x_pos, c = sim[i]
        assert torch.equal(train.inputs[i], x) and torch.equal(train.positives[i], x_pos)
        assert int(train.labels[i]) == c
    assert not torch.equal(train.inputs, train.positives)  # two samples, not one copied
    x, x_pos, y, idx = BatchedPairs(train)[[3, 1, 4]]
    assert x.shape == x_pos.shape == (3, 6) and y.tolist() == train.labels[[3, 1, 4]].tolist()
    assert idx.tolist() == [3, 1, 4]
    assert test.inputs.shape == (30, 6) and test.labels.dtype == torch.int64 and test.positives is None
    again_train, again_test = load_latent_splits(
        num_classes=4, input_dim=6, train_size=50, test_size=30, seed=3
    )
    assert torch.equal(again_train.inputs, train.inputs) and torch.equal(again_test.inputs, test.inputs)


def test_gaussian_pairs_share_their_class_mean():
    # noise 0: both views are mu_c exactly, so a pair is identical and the test draw hits the means
    train, test = load_latent_splits(
        num_classes=3, input_dim=5, noise_std=0.0, train_size=20, test_size=10, seed=1
    )
    assert torch.equal(train.inputs, train.positives)
    means = LatentClassSimulator(num_classes=3, input_dim=5, seed=1).means
    assert np.allclose(test.inputs.numpy(), means[test.labels.numpy()], atol=1e-6)


def test_topics_kind_gives_unit_norm_bag_of_words():
    train, _ = load_latent_splits(
        num_classes=3, kind="topics", vocab_size=50, topic_words=5, doc_length=10, train_size=8, test_size=4
    )
    assert train.inputs.shape == (8, 50)
    assert torch.allclose(train.inputs.norm(dim=1), torch.ones(8))


def test_data_module_batches_pairs():
    train, _ = load_latent_splits(num_classes=3, input_dim=4, train_size=40, test_size=4)
    dm = ContrastiveDataModule(dataset=BatchedPairs(train), batch_size=16, seed=0)
    batches = list(dm.train_dataloader())
    assert len(batches) == 2
    x, x_pos, _, idx = batches[0]
    assert x.shape == (16, 4) and torch.equal(x_pos, train.positives[idx])


def test_run_folder_has_features_npz_with_test_shapes(latent_run):
    run = latent_run.run_dir
    for name in (
        "config.yaml",
        "metrics.json",
        "eval.csv",
        "summary.md",
        "features.npz",
        "figures/cosine_histograms.png",
        "figures/loss.png",
    ):
        assert (run / name).is_file(), name
    assert not (run / "figures" / "hardest_negatives.png").exists()  # images only
    with np.load(run / "features.npz") as data:
        assert sorted(data.files) == ["features", "labels"]
        f, y = data["features"], data["labels"]
    assert f.shape == (150, 8) and f.dtype == np.float32
    assert y.shape == (150,) and y.dtype == np.int64
    _, test = load_latent_splits(num_classes=10, input_dim=32, noise_std=2.0, train_size=384, test_size=150)
    assert np.array_equal(y, test.labels.numpy())
    assert np.allclose(f, latent_run.test_features.numpy())
    assert not list(run.glob(".features.npz.*"))  # no temporary file left behind
    assert "latent (gaussian, 10 classes" in (run / "summary.md").read_text()


def test_latent_run_learns_and_evaluates_everything(latent_run):
    assert set(latent_run.eval) == {"linear_top1", "knn_top1", "knn_top5", "mean_top1", "kwise1_top1"}
    assert latent_run.eval["linear_top1"] > 0.3  # 10 classes: chance is 0.1
    row = latent_run.history[-1]
    assert row["num_negatives"] == 126.0  # 2B - 2 in-batch negatives
    assert 0.0 < row["collision_rate"] < 0.25  # uniform prior over 10 classes: about 0.1


def test_evaluate_run_reproduces_metrics_and_features(latent_run):
    before = np.load(latent_run.run_dir / "features.npz")["features"]
    again = evaluate_run(latent_run.run_dir, figures_on=False)
    assert again.eval == pytest.approx(latent_run.eval, abs=1e-9)
    assert np.array_equal(np.load(latent_run.run_dir / "features.npz")["features"], before)


@pytest.mark.parametrize("extra", [[], ["loss.num_negatives=8"]])
def test_collision_free_oracle_removes_every_collision(tmp_path, extra):
    cfg = load_config(
        "latent_classes",
        tiny_latent(
            "loss.collision_free=true", "train.epochs=1", "eval.linear=false", "eval.figures=false", *extra
        ),
    )
    result = train_run(cfg, tmp_path / "cf", quiet=True)
    row = result.history[-1]
    assert row["collision_rate"] == 0.0  # the epoch's mean of rates >= 0: every step had none
    assert read_history(result.run_dir / "metrics.csv") == result.history
    if extra:
        assert row["num_negatives"] == 8.0


def test_num_negatives_subsamples_the_batch(tmp_path):
    cfg = load_config(
        "latent_classes",
        tiny_latent("loss.num_negatives=8", "train.epochs=1", "eval.linear=false", "eval.figures=false"),
    )
    row = train_run(cfg, tmp_path / "k8", quiet=True).history[-1]
    assert row["num_negatives"] == 8.0 and 0.0 <= row["collision_rate"] < 0.5


@pytest.mark.parametrize(
    ("override", "pattern"),
    [
        ("data.latent.num_classes=1", r"'data.latent.num_classes': must be >= 2, got 1"),
        (
            "data.latent.class_probs=[0.5,0.5]",
            r"'data.latent.class_probs': must have data.latent.num_classes = 10 entries, got 2",
        ),
        (
            "data.latent.class_probs=[0.2,0.2,0.2,0.2,0.2,0.2,0.2,0.2,0.2,0.2]",
            r"'data.latent.class_probs': must sum to 1, got sum 2.0",
        ),
        (
            "data.latent.class_probs=[-0.1,0.3,0.1,0.1,0.1,0.1,0.1,0.1,0.1,0.1]",
            r"'data.latent.class_probs\[0\]': must be >= 0.0, got -0.1",
        ),
        (
            "data.latent.kind=images",
            r"'data.latent.kind': must be one of \['gaussian', 'topics'\], got 'images'",
        ),
        ("data.latent.noise_std=-1", r"'data.latent.noise_std': must be >= 0.0, got -1"),
        ("data.latent.train_size=1", r"'data.latent.train_size': must be >= 2, got 1"),
        ("data.latent.test_size=0", r"'data.latent.test_size': must be >= 2, got 0"),
        ("data.latent.background=1.5", r"'data.latent.background': must be <= 1.0, got 1.5"),
        ("data.latent.seed=-3", r"'data.latent.seed': must be >= 0, got -3"),
        ("data.latent.input_dim=0", r"'data.latent.input_dim': must be >= 1, got 0"),
        ("data.latent.dim=4", r"unknown config key 'data.latent.dim'.*valid keys in 'data.latent'"),
        (
            "model.encoder=small_cnn",
            r"'model.encoder': data.dataset 'latent' \(latent\) takes one of \['mlp'\]",
        ),
        ("data.augment=simclr", r"unknown config key 'data.augment'.*valid keys in 'data'"),
        ("data.oracle_positive=true", r"unknown config key 'data.oracle_positive'"),
        ("data.layout=blocks", r"'data.layout': must be one of \['tuples', 'two_views'\], got 'blocks'"),
        ("data.block_size=0", r"'data.block_size': must be >= 1, got 0"),
        ("data.block_size=3", r"'data.block_size': blocks need data.layout = 'tuples'.*got 3"),
    ],
)
def test_bad_simulator_config_is_rejected_naming_the_key(override, pattern):
    with pytest.raises(ConfigError, match=pattern):
        load_config("latent_classes", [override])


def test_topic_words_above_vocab_size_is_rejected():
    pattern = r"'data.latent.topic_words': must be <= data.latent.vocab_size = 10, got 20"
    with pytest.raises(ConfigError, match=pattern):
        load_config(
            "latent_classes",
            ["data.latent.kind=topics", "data.latent.vocab_size=10", "data.latent.topic_words=20"],
        )


def test_mlp_on_images_is_rejected_at_load_time():
    with pytest.raises(
        ConfigError,
        match=r"'model.encoder': data.dataset 'digits' \(images\) takes one of \[.*'small_cnn'\], got 'mlp'",
    ):
        load_config("digits", ["model.encoder=mlp"])


def test_non_uniform_prior_and_topics_are_accepted():
    probs = "[0.5,0.1,0.1,0.1,0.05,0.05,0.025,0.025,0.025,0.025]"
    cfg = load_config("latent_classes", [f"data.latent.class_probs={probs}", "data.latent.kind=topics"])
    assert cfg.data.latent.class_probs is not None and sum(cfg.data.latent.class_probs) == pytest.approx(1.0)


def test_packaged_config():
    assert resolve_config_path("latent_classes").is_file()
    cfg = load_config("latent_classes")
    assert (cfg.data.dataset, cfg.model.encoder) == ("latent", "mlp")
    assert (cfg.data.layout, cfg.data.block_size) == ("two_views", 1)


# -- Arora et al.'s tuple layout (data.layout: tuples) ---------------------------------------


def test_blocks_extend_the_pairs():
    """Block b: the same anchors, the pair's positive first, b - 1 more draws of the class."""
    train, test = load_latent_splits(num_classes=4, input_dim=6, train_size=20, test_size=10, seed=3)
    blocks, test_b = load_latent_splits(
        num_classes=4, input_dim=6, train_size=20, test_size=10, seed=3, block_size=3
    )
    assert blocks.positives.shape == (20, 3, 6)
    assert torch.equal(blocks.inputs, train.inputs) and torch.equal(blocks.positives[:, 0], train.positives)
    assert torch.equal(blocks.labels, train.labels) and torch.equal(test_b.inputs, test.inputs)
    assert not torch.equal(blocks.positives[:, 1], blocks.positives[:, 2])
    batch, _, _, idx = BatchedLatent(blocks)[[2, 0]]
    assert isinstance(batch, LatentBatch) and batch.positives.shape == (2, 3, 6)
    assert torch.equal(batch.anchors, blocks.inputs[[2, 0]]) and idx.tolist() == [2, 0]


def test_tuple_layout_trains_against_the_other_items(tmp_path):
    cfg = load_config(
        "latent_classes",
        tiny_latent("data.layout=tuples", "train.epochs=1", "eval.linear=false", "eval.figures=false"),
    )
    row = train_run(cfg, tmp_path / "tuples", quiet=True).history[-1]
    assert row["num_negatives"] == 63.0  # the B - 1 other items' positives
    assert 0.0 < row["collision_rate"] < 0.25


def test_block_layout_with_k_and_collision_free(tmp_path):
    cfg = load_config(
        "latent_classes",
        tiny_latent(
            "data.layout=tuples",
            "data.block_size=3",
            "loss.num_negatives=5",
            "loss.collision_free=true",
            "loss.objective.name=logistic",
            "train.epochs=1",
            "eval.linear=false",
            "eval.figures=false",
        ),
    )
    result = train_run(cfg, tmp_path / "blocks", quiet=True)
    row = result.history[-1]
    assert row["num_negatives"] == 5.0 and row["collision_rate"] == 0.0
    assert 0.0 <= result.eval["mean_top1"] <= 1.0


@pytest.mark.parametrize(
    ("overrides", "pattern"),
    [
        (
            ["data.layout=tuples", "loss.num_negatives=64"],
            r"'loss.num_negatives': must be <= train.batch_size - 1 = 63 .*got 64",
        ),
        (
            ["data.layout=tuples", "train.drop_last=false", "data.latent.train_size=385"],
            r"'train.drop_last': the last batch would hold 1 item\(s\)",
        ),
    ],
)
def test_bad_tuple_layout_is_rejected(overrides, pattern):
    with pytest.raises(ConfigError, match=pattern):
        load_config("latent_classes", tiny_latent(*overrides))


def test_two_views_train_with_the_engines_step_tuples_with_their_own():
    """``two_views``: the engine's two-view step (MoCo and GradCache apply); ``tuples``: the modality's."""
    from hardneg.modalities.latent import Latent
    from hardneg.pipeline.config import load_config

    pairs = load_config("latent_classes")
    tuples = load_config("latent_classes", ["data.layout=tuples", "loss.num_negatives=1"])
    assert not Latent().own_step(pairs) and Latent().own_step(tuples)
    load_config("latent_classes", ["train.grad_cache_chunk=32"])  # allowed with the engine's step


def test_latent_splits_are_drawn_once_per_section_and_each_caller_gets_its_own_copy() -> None:
    """The runs of a comparison share the (seeded) data; a caller editing its split in place
    cannot change what the next run gets."""
    from hardneg.data import vectors

    vectors._latent_splits.cache_clear()
    kwargs = {"num_classes": 3, "input_dim": 4, "train_size": 12, "test_size": 6, "seed": 5}
    a_train, a_test = vectors.load_latent_splits(**kwargs)
    a_train.inputs.zero_()
    a_test.labels.fill_(-1)
    b_train, b_test = vectors.load_latent_splits(**kwargs)
    assert vectors._latent_splits.cache_info().hits == 1
    vectors._latent_splits.cache_clear()
    c_train, c_test = vectors.load_latent_splits(**kwargs)  # drawn afresh: the same numbers
    assert torch.equal(b_train.inputs, c_train.inputs) and torch.equal(b_test.labels, c_test.labels)
    assert torch.equal(b_train.positives, c_train.positives) and bool(b_train.inputs.abs().sum() > 0)
