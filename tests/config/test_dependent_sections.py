"""Each modality owns its ``eval`` keys and ``train.mode`` its ``moco`` keys: a key that does not apply
is an error naming it and the keys that apply, before anything is written (issue 36, item 1)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from hardneg.cli import app
from hardneg.config import ConfigError, EvalSection, MocoConfig, MocoSection
from hardneg.modalities import get_modality
from hardneg.modalities.readouts import ClassTableEval, ReadoutEval
from hardneg.pipeline.config import dump_yaml, load_config, packaged_config_names

# the keys each evaluation protocol reads, written out here (not taken from the schema under test)
SHARED = {"figures", "batch_size"}
READOUTS = SHARED | {"linear", "linear_C", "knn", "knn_k", "knn_temperature", "mean_classifier", "kwise",
                     "kwise_tasks", "mean_shots", "linear_shots", "shot_draws", "every_n_epochs"}
EVAL_KEYS = {
    "digits": READOUTS,
    "latent": READOUTS | {"latent_table"},
    "articles": READOUTS | {"latent_table"},
    "motifs": SHARED | {"svm", "logistic", "cv_folds"},
    "sentences": SHARED | {"senteval", "senteval_tasks", "senteval_folds"},
}


@pytest.mark.parametrize("dataset", sorted(EVAL_KEYS))
def test_each_modality_declares_the_eval_keys_its_protocol_reads(dataset: str) -> None:
    section = get_modality(dataset).eval_section
    assert issubclass(section, EvalSection)
    assert set(section.model_fields) == EVAL_KEYS[dataset]


@pytest.mark.parametrize(
    ("config", "override", "applies"),
    [
        ("digits", "eval.senteval_folds=5", "sentences"),
        ("digits", "eval.svm=false", "graphs"),
        ("digits", "eval.latent_table=true", "articles, latent"),
        ("graphs", "eval.knn_k=5", "articles, images, latent"),
        ("sentences_compare", "eval.linear=false", "articles, images, latent"),
    ],
)
def test_an_eval_key_of_another_modality_is_refused_naming_the_keys_that_apply(
    config: str, override: str, applies: str
) -> None:
    key = override.split("=")[0]
    dataset = load_config(config).data.dataset
    with pytest.raises(ConfigError) as err:
        load_config(config, [override])
    message = str(err.value)
    assert message.startswith(f"unknown config key '{key}'")
    valid = ", ".join(sorted(EVAL_KEYS["digits" if dataset not in EVAL_KEYS else dataset]))
    assert f"valid keys in 'eval': {valid} (those of data.dataset '{dataset}'" in message
    # built-in modalities first; a modality another test registered (e.g. a toy one) may follow
    assert re.search(rf"'{re.escape(key)}' applies to {applies}(, [a-z_]+)*$", message), message


def test_moco_keys_apply_to_moco_mode_only() -> None:
    with pytest.raises(ConfigError) as err:
        load_config("digits", ["moco.queue_size=128"])
    assert str(err.value) == (
        "unknown config key 'moco.queue_size': 'moco' takes no keys with train.mode 'simclr'; "
        "'moco.queue_size' applies to train.mode 'moco'"
    )
    cfg = load_config("digits", ["train.mode=moco", "moco.queue_size=128"])
    assert isinstance(cfg.moco, MocoConfig) and (cfg.moco.queue_size, cfg.moco.momentum) == (128, 0.99)
    simclr = load_config("digits")
    assert type(simclr.moco) is MocoSection and yaml.safe_load(dump_yaml(simclr))["moco"] == {}


def test_a_config_file_s_mode_and_data_set_choose_the_sections(tmp_path: Path) -> None:
    path = tmp_path / "moco.yaml"
    path.write_text("train: {mode: moco}\nmoco: {queue_size: 64}\n")
    assert load_config(path).moco.queue_size == 64  # type: ignore[attr-defined]
    # back to SimCLR: the moco section starts anew, with no keys
    assert load_config(path, ["train.mode=simclr"]).moco.model_dump() == {}
    bad = tmp_path / "bad.yaml"
    bad.write_text("moco: {momentum: 0.5}\n")
    with pytest.raises(ConfigError, match=r"^unknown config key 'moco.momentum': 'moco' takes no keys"):
        load_config(bad)
    graphs = tmp_path / "graphs.yaml"
    graphs.write_text("data: {dataset: motifs}\nmodel: {encoder: gin}\neval: {cv_folds: 3, batch_size: 7}\n")
    cfg = load_config(graphs)
    assert (cfg.eval.cv_folds, cfg.eval.batch_size) == (3, 7)  # type: ignore[attr-defined]


def test_another_data_set_starts_its_eval_section_anew_keeping_the_shared_keys() -> None:
    cfg = load_config("digits", ["eval.knn_k=7", "eval.batch_size=9", "data.dataset=latent",
                                 "model.encoder=mlp", "eval.latent_table=true"])
    assert isinstance(cfg.eval, ClassTableEval)
    assert (cfg.eval.knn_k, cfg.eval.batch_size, cfg.eval.latent_table) == (7, 9, True)
    graphs = load_config(None, ["eval.batch_size=9", "data.dataset=motifs", "model.encoder=gin"])
    assert set(graphs.eval.model_dump()) == EVAL_KEYS["motifs"] and graphs.eval.batch_size == 9
    images = load_config("latent_classes", ["data.dataset=digits", "model.encoder=small_cnn"])
    assert type(images.eval) is ReadoutEval


def test_the_cli_refuses_before_anything_is_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    for override in ("eval.senteval_folds=5", "moco.queue_size=128"):
        key = override.split("=")[0]
        out = tmp_path / "run"
        result = runner.invoke(app, ["train", "digits", override, "--out", str(out)])
        assert result.exit_code == 2, result.output
        assert f"unknown config key '{key}'" in result.output and "applies to" in result.output
        assert not out.exists()
        result = runner.invoke(app, ["train", "digits", override])  # the default folder neither
        assert result.exit_code == 2
    assert list(tmp_path.iterdir()) == []


def test_a_run_folder_written_before_keeps_loading(tmp_path: Path) -> None:
    """An older run's ``config.yaml`` holds every ``eval`` and ``moco`` key; those that do not apply
    had no effect and are dropped when it is read (a config file elsewhere keeps the check)."""
    old = yaml.safe_load(dump_yaml(load_config("digits", ["eval.knn_k=11"])))
    old["eval"].update({"svm": True, "logistic": True, "cv_folds": 10, "latent_table": False,
                        "senteval": None, "senteval_tasks": None, "senteval_folds": 10})
    old["moco"] = {"queue_size": 4096, "momentum": 0.99}
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.yaml").write_text(yaml.safe_dump(old))
    (run / "provenance.json").write_text("{}")
    cfg = load_config(run / "config.yaml")
    assert cfg.eval.knn_k == 11 and "svm" not in cfg.eval.model_dump()  # type: ignore[attr-defined]
    assert cfg.moco.model_dump() == {}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(old))  # not a run folder: refused
    other = r"^unknown config key 'eval\.(svm|logistic|cv_folds|latent_table|senteval\w*)'"
    with pytest.raises(ConfigError, match=other):
        load_config(tmp_path / "config.yaml")


@pytest.mark.parametrize("name", packaged_config_names())
def test_every_packaged_config_validates_with_its_groups(name: str) -> None:
    cfg = load_config(name, check_groups=True)
    assert set(cfg.eval.model_dump()) == set(get_modality(cfg.data.dataset).eval_section.model_fields)
