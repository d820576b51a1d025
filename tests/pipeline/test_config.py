"""Typed config: YAML + dotted overrides, validation messages, packaged configs."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from hardneg.config import ConfigError, TrainConfig
from hardneg.pipeline.config import (
    config_to_dict,
    dump_yaml,
    load_config,
    packaged_config_names,
    parse_overrides,
    resolve_config_path,
    with_overrides,
)

REPO = Path(__file__).resolve().parents[2]


def test_overrides_are_parsed_as_yaml_scalars_and_lists():
    assert parse_overrides(
        ["loss.negatives.beta=0.5", "eval.kwise=[1, 4]", "loss.num_negatives=null", "name=x"]
    ) == {"loss.negatives.beta": 0.5, "eval.kwise": [1, 4], "loss.num_negatives": None, "name": "x"}


def test_every_python_float_literal_is_a_float(tmp_path):
    """YAML 1.1 reads 1e-3 as a string; a config accepts every float a Python user writes."""
    assert parse_overrides(["train.lr=1e-3", "x=2E+2", "y=.5"]) == {"train.lr": 1e-3, "x": 200.0, "y": 0.5}
    path = tmp_path / "c.yaml"
    path.write_text("train: {lr: 1e-3, weight_decay: 5e-7}\n")
    cfg = load_config(path, ["train.lr=3e-4"])
    assert cfg.train.lr == 3e-4 and cfg.train.weight_decay == 5e-7
    assert parse_overrides(["name='1e-3'"]) == {"name": "1e-3"}  # a quoted string stays a string


def test_duplicate_yaml_keys_are_an_error(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("train:\n  epochs: 3\n  epochs: 4\n")
    with pytest.raises(ConfigError, match=r"duplicate key 'epochs' at line 3 \(first at line 2\)"):
        load_config(path)


def test_file_then_overrides_later_wins(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("name: mine\nloss: {negatives: {name: hard, beta: 2.0}}\ntrain: {epochs: 7}\n")
    cfg = load_config(path, ["loss.negatives.beta=0.25"])
    assert (cfg.name, cfg.loss.negatives["name"], cfg.loss.negatives["beta"], cfg.train.epochs) == (
        "mine",
        "hard",
        0.25,
        7,
    )
    assert cfg.train.batch_size == TrainConfig().batch_size  # untouched keys keep defaults


def test_component_sections_fill_defaults_and_switch_cleanly():
    cfg = load_config(None, ["loss.negatives.name=hard", "loss.negatives.beta=1"])
    assert cfg.loss.negatives == {
        "name": "hard",
        "beta": 1.0,
        "detach_weights": False,
        "rescale": False,
        "target_ess": None,
    }
    assert isinstance(cfg.loss.negatives["beta"], float)
    # switching the name starts the section afresh: no beta left over for OT
    ot = with_overrides(cfg, {"loss.negatives.name": "ot"})
    assert ot.loss.negatives["name"] == "ot" and "beta" not in ot.loss.negatives
    assert ot.loss.negatives["epsilon"] == 0.5 and ot.loss.negatives["max_iter"] == 1000


def test_a_key_of_another_component_names_the_key_and_the_valid_ones():
    with pytest.raises(ConfigError) as err:
        load_config("digits", ["loss.negatives.name=hard", "loss.negatives.epsilon=0.5"])
    msg = str(err.value)
    assert "unknown config key 'loss.negatives.epsilon'" in msg
    assert "beta, detach_weights, rescale" in msg


def test_component_range_errors_come_from_the_component():
    with pytest.raises(
        ConfigError, match=r"'loss.negatives' \(hard\): beta must be a finite number >= 0, got -1"
    ):
        load_config(None, ["loss.negatives.name=hard", "loss.negatives.beta=-1"])
    with pytest.raises(
        ConfigError, match=r"'loss.objective' \(debiased\): tau_plus must lie in \[0.0, 1.0\)"
    ):
        load_config(None, ["loss.objective.name=debiased", "loss.objective.tau_plus=1.0"])
    with pytest.raises(
        ConfigError,
        match=r"'loss.negatives.name': .*\['hard', 'ot', 'uniform'\], got 'hardd' \(did you mean 'hard'\?\)",
    ):
        load_config(None, ["loss.negatives.name=hardd"])


def test_unknown_key_lists_valid_keys_and_suggests():
    with pytest.raises(ConfigError) as err:
        load_config(None, ["loss.temperatur=1"])
    msg = str(err.value)
    assert "'loss.temperatur'" in msg and "did you mean 'loss.temperature'" in msg
    for key in ("negatives", "objective", "temperature", "num_negatives", "collision_free"):
        assert key in msg


def test_unknown_key_in_file_is_rejected(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("train: {epoch: 3}\n")
    pattern = r"unknown config key 'train.epoch'.*valid keys in 'train':.*epochs"
    with pytest.raises(ConfigError, match=pattern):
        load_config(path)


def test_unknown_section_is_rejected():
    with pytest.raises(ConfigError, match=r"unknown config key 'optim'.*valid keys in the top level:.*train"):
        load_config(None, ["optim.lr=0.1"])


@pytest.mark.parametrize(
    ("override", "pattern"),
    [
        ("loss.temperature=0", r"'loss.temperature': must be >= 0.0001, got 0"),
        ("seed=4294967296", r"'seed': must be <= 4294967295, got 4294967296"),
        ("train.epochs=" + "9" * 400, r"'train.epochs': must be <= 10000000, got 9999.*\(400 characters\)"),
        ("compare.seeds=[]", r"'compare.seeds': must not be empty, got \[\]"),
        ("train.epochs=2.5", r"'train.epochs': must be an integer, got 2.5"),
        ("train.deterministic=maybe", r"'train.deterministic': must be true or false, got 'maybe'"),
        ("eval.kwise=[0]", r"'eval.kwise\[0\]': must be >= 1, got 0"),
        ("model.encoder=vgg", r"'model.encoder': .* takes one of \[.*'small_cnn'.*\], got 'vgg'"),
    ],
)
def test_invalid_values_name_key_constraint_and_value(override, pattern):
    with pytest.raises(ConfigError, match=pattern):
        load_config(None, [override])


def test_missing_file_names_the_file_and_packaged_configs():
    pattern = r"config file not found: 'no/such.yaml'.*packaged configs:.*digits"
    with pytest.raises(ConfigError, match=pattern):
        load_config("no/such.yaml")


def test_compare_strategy_overrides_are_validated(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("compare:\n  strategies:\n    - name: a\n      overrides: {loss.negatives.bta: 1}\n")
    load_config(path)  # a plain train does not validate the group (each run of compare does)
    with pytest.raises(ConfigError, match=r"compare.strategies\[0\].overrides.*'loss.negatives.bta'"):
        load_config(path, check_groups=True)


def test_yaml_round_trip(tmp_path):
    cfg = load_config("digits", ["loss.negatives.beta=0.3", "compare.seeds=[4]"])
    path = tmp_path / "config.yaml"
    path.write_text(dump_yaml(cfg))
    assert load_config(path) == cfg
    assert with_overrides(cfg, {"seed": 9}).seed == 9 and cfg.seed == 0


def test_packaged_configs_resolve_and_validate():
    names = packaged_config_names()
    assert {"digits", "digits_compare"} <= set(names)
    for name in names:
        assert resolve_config_path(name).is_file()
        load_config(name)


def test_every_config_is_packaged_once_and_validates():
    """One copy of each config, in the package (paper/ and studies/ included), each valid."""
    names = packaged_config_names()
    assert {"paper/cifar10_hard", "studies/k_digits", "theory_ash_tradeoff"} <= set(names)
    assert not (REPO / "configs").exists(), "configs live in src/hardneg/configs only"
    for name in names:
        path = resolve_config_path(name)
        assert yaml.safe_load(path.read_text())  # non-empty
        cfg = load_config(name)
        assert config_to_dict(cfg)["train"]["epochs"] >= 1
    assert resolve_config_path("configs/paper/cifar10_hard.yaml") == resolve_config_path("paper/cifar10_hard")


def test_paper_configs_follow_hcl_settings():
    for name in ("cifar10", "cifar100", "stl10"):
        cfg = load_config(f"paper/{name}_hard")
        assert cfg.model.encoder == "resnet50_cifar"
        assert (cfg.train.epochs, cfg.train.optimizer, cfg.train.lr, cfg.train.weight_decay) == (
            400,
            "adam",
            1e-3,
            1e-6,
        )
        assert cfg.loss.temperature == 0.5 and cfg.loss.negatives["name"] == "hard"
        assert cfg.train.batch_size in (256, 512)
        assert cfg.data.dataset == name and cfg.data.root is not None


def test_paper_graph_configs_follow_hcl_fig3_settings():
    names = ("MUTAG", "PTC_MR", "PROTEINS", "ENZYMES", "IMDB-BINARY", "IMDB-MULTI", "DD", "REDDIT-BINARY")
    for name in names:
        cfg = load_config(f"paper/graphs_tu_{name}")
        assert (cfg.data.dataset, cfg.data.name, cfg.data.graphs.node_attributes) == ("tu", name, False)
        assert (cfg.model.encoder, cfg.model.width, cfg.model.layers) == ("gin", 32, 3)
        assert (cfg.train.epochs, cfg.train.batch_size, cfg.train.lr) == (200, 128, 1e-3)
        assert cfg.loss.negatives["name"] == "hard" and cfg.loss.negatives["rescale"] is True
        assert cfg.sweep.grid == {"loss.negatives.beta": [0.0, 1.0, 2.0, 10.0]}
        assert cfg.sweep.seeds == list(range(10)) and cfg.eval.cv_folds == 10


def test_libyaml_and_python_parsers_read_every_packaged_config_the_same() -> None:
    """The config loader parses with libyaml when PyYAML has it; its plain scalars carry style ""
    where PyYAML's parser gives None: the float rule (``1e-3`` is a float) must hold for both."""
    import yaml

    from hardneg.pipeline import config as C

    class PythonParser(yaml.SafeLoader):
        pass

    PythonParser.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, C._construct_mapping)
    PythonParser.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SCALAR_TAG, C._construct_str)
    root = Path(C.__file__).resolve().parents[1] / "configs"
    texts = [p.read_text() for p in sorted(root.rglob("*.yaml"))]
    texts += ["lr: 1e-3\nxs: [1, 2.0, 3e4, '4e5', \"5e6\"]\nname: a1e5\n"]
    for text in texts:
        assert yaml.load(text, Loader=C._Loader) == yaml.load(text, Loader=PythonParser)
    assert yaml.load(texts[-1], Loader=C._Loader) == {"lr": 0.001, "xs": [1, 2.0, 30000.0, "4e5", "5e6"],
                                                      "name": "a1e5"}
