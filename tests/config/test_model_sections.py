"""Each encoder owns its ``model`` keys: the section is chosen by ``model.encoder`` the way ``data`` is by
the data set, and a key the encoder does not read is an error naming it and the keys that apply
(issue 36, item 2)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import yaml
from pydantic import Field
from typer.testing import CliRunner

from hardneg.cli import app
from hardneg.config import ConfigError, ModelSection
from hardneg.models import (
    ENCODER_NAMES,
    MLPEncoder,
    SmallCNN,
    encoder_section,
    encoder_section_names,
    register_encoder_section,
)
from hardneg.models.configured import configured_encoder
from hardneg.models.sections import GINSection, GRUSection
from hardneg.pipeline.config import dump_yaml, load_config

# the keys each encoder read in 0.2 (its MODEL_KEYS row), written out here, not taken from the schemas
HEAD = {"projection_dim", "hidden_dim"}
MODEL_KEYS = {
    "small_cnn": HEAD | {"width", "feature_dim", "stem_stride"},
    "mlp": HEAD | {"width", "feature_dim"},
    "resnet18_cifar": HEAD,
    "resnet50_cifar": HEAD,
    "gin": {"width", "layers"},
    "bow": {"feature_dim"},
    "gru": {"width", "feature_dim", "bidirectional"},
}
# the 0.2 flat section's order and defaults: a dump keeps the keys that apply, in this order
FLAT_02 = {"encoder": "small_cnn", "projection_dim": 64, "hidden_dim": 256, "width": None,
           "feature_dim": None, "stem_stride": None, "layers": None, "bidirectional": False}


@pytest.mark.parametrize("encoder", sorted(MODEL_KEYS))
def test_each_encoder_declares_the_keys_it_reads_with_the_0_2_defaults(encoder: str) -> None:
    section = encoder_section(encoder)
    assert issubclass(section, ModelSection)
    assert set(section.model_fields) == MODEL_KEYS[encoder] | {"encoder"}
    defaults = section(encoder=encoder).model_dump()
    assert defaults == {k: (encoder if k == "encoder" else v) for k, v in FLAT_02.items() if k in defaults}
    assert list(defaults) == [k for k in FLAT_02 if k in defaults]
    assert all(f.description for k, f in section.model_fields.items())


def test_every_encoder_of_a_modality_and_of_build_encoder_has_a_section() -> None:
    from hardneg.modalities import dataset_names, get_modality

    accepted = {e for name in dataset_names() for e in get_modality(name).encoders}
    assert accepted | set(ENCODER_NAMES) <= set(encoder_section_names())


@pytest.mark.parametrize(
    ("config", "override", "encoder", "applies"),
    [
        ("digits", "model.layers=3", "small_cnn", "gin"),
        ("digits", "model.bidirectional=true", "small_cnn", "gru"),
        ("graphs", "model.feature_dim=8", "gin", "bow, gru, mlp, small_cnn"),
        ("graphs", "model.stem_stride=2", "gin", "small_cnn"),
        ("sentences", "model.projection_dim=8", "bow", "mlp, resnet18_cifar, resnet50_cifar, small_cnn"),
        ("latent_classes", "model.stem_stride=2", "mlp", "small_cnn"),
        ("paper/cifar10_hard", "model.width=16", "resnet50_cifar", "gin, gru, mlp, small_cnn"),
    ],
)
def test_a_key_the_encoder_does_not_read_is_refused_naming_the_keys_that_apply(
    config: str, override: str, encoder: str, applies: str
) -> None:
    key = override.split("=")[0]
    with pytest.raises(ConfigError) as err:
        load_config(config, [override])
    valid = ", ".join(sorted(MODEL_KEYS[encoder] | {"encoder"}))
    assert str(err.value) == (
        f"unknown config key '{key}'; valid keys in 'model': {valid} (those of model.encoder '{encoder}'); "
        f"'{key}' applies to {applies}"
    )


def test_the_cli_refuses_before_anything_is_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["train", "digits", "model.layers=3", "--out", str(tmp_path / "run")])
    assert result.exit_code == 2, result.output
    assert "unknown config key 'model.layers'" in result.output and "applies to gin" in result.output
    assert list(tmp_path.iterdir()) == []


def test_a_config_file_s_encoder_chooses_the_section(tmp_path: Path) -> None:
    path = tmp_path / "gin.yaml"
    path.write_text("data: {dataset: motifs}\nmodel: {encoder: gin, layers: 5}\n")
    cfg = load_config(path)
    assert type(cfg.model) is GINSection and (cfg.model.width, cfg.model.layers) == (None, 5)
    assert cfg.model.arguments() == {"hidden": 32, "num_layers": 5}  # null: GIN's default width
    bad = tmp_path / "bad.yaml"
    bad.write_text("model: {layers: 5}\n")  # no encoder: small_cnn's section
    with pytest.raises(ConfigError, match=r"^unknown config key 'model.layers'; .* applies to gin$"):
        load_config(bad)


def test_a_0_2_config_with_keys_that_apply_loads_unchanged(tmp_path: Path) -> None:
    path = tmp_path / "old.yaml"  # explicit nulls and the head's keys, as 0.2 wrote them
    path.write_text("model: {encoder: small_cnn, projection_dim: 32, hidden_dim: 64, width: 8, "
                    "feature_dim: 16, stem_stride: null}\n")
    assert load_config(path).model.model_dump() == {
        "encoder": "small_cnn", "projection_dim": 32, "hidden_dim": 64, "width": 8, "feature_dim": 16,
        "stem_stride": None}


def test_another_encoder_starts_the_section_anew_keeping_the_shared_keys() -> None:
    cfg = load_config("sentences", ["model.encoder=gru", "model.width=8", "model.bidirectional=true"])
    assert type(cfg.model) is GRUSection
    assert cfg.model.model_dump() == {"encoder": "gru", "width": 8, "feature_dim": 100, "bidirectional": True}
    resnet = load_config("digits", ["model.encoder=resnet18_cifar", "model.hidden_dim=32"])
    assert resnet.model.model_dump() == {"encoder": "resnet18_cifar", "projection_dim": 64, "hidden_dim": 32}
    with pytest.raises(ConfigError, match=r"^unknown config key 'model.width'"):  # 0.2 needed it null
        load_config("digits", ["model.encoder=resnet18_cifar", "model.width=null"])


def test_an_encoder_the_modality_does_not_take_is_refused_naming_those_it_takes() -> None:
    for encoder in ("nope", "gin"):
        with pytest.raises(ConfigError) as err:
            load_config("digits", [f"model.encoder={encoder}"])
        assert str(err.value) == (
            "invalid value for 'model.encoder': data.dataset 'digits' (images) takes one of "
            f"['resnet18_cifar', 'resnet50_cifar', 'small_cnn'], got '{encoder}'"
        )


def test_hardneg_config_keeps_the_0_2_keys_that_apply() -> None:
    result = CliRunner().invoke(app, ["config", "fashion_mnist"])
    assert result.exit_code == 0, result.output
    assert yaml.safe_load(result.output)["model"] == {
        "encoder": "small_cnn", "projection_dim": 64, "hidden_dim": 256, "width": 32, "feature_dim": 128,
        "stem_stride": 2}
    assert "  stem_stride: 2\nloss:" in result.output  # the 0.2 order; layers / bidirectional gone


def test_a_run_folder_written_by_0_2_keeps_loading(tmp_path: Path) -> None:
    """A 0.2 run's ``config.yaml`` holds every ``model`` key; those that do not apply were left at
    their defaults and are dropped when it is read (a config file elsewhere keeps the check)."""
    old = yaml.safe_load(dump_yaml(load_config("graphs", ["model.layers=4"])))
    old["model"] = {**FLAT_02, "encoder": "gin", "width": 32, "layers": 4}
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.yaml").write_text(yaml.safe_dump(old))
    (run / ".hardneg-run").write_text("")
    assert load_config(run / "config.yaml").model.model_dump() == {"encoder": "gin", "width": 32, "layers": 4}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(old))
    inapplicable = "projection_dim|hidden_dim|feature_dim|stem_stride|bidirectional"
    with pytest.raises(ConfigError, match=rf"^unknown config key 'model\.({inapplicable})'"):
        load_config(tmp_path / "config.yaml")


def test_configured_encoder_maps_the_section_to_build_encoder() -> None:
    cnn = configured_encoder(load_config("fashion_mnist").model, in_channels=1)
    stem = cnn.backbone.features[0]
    assert isinstance(cnn.backbone, SmallCNN) and (stem.out_channels, stem.stride) == (32, (2, 2))
    assert (cnn.feature_dim, cnn.projection_dim, cnn.head.net[0].out_features) == (128, 64, 256)
    mlp = configured_encoder(load_config("latent_classes").model, in_dim=5)
    assert isinstance(mlp.backbone, MLPEncoder) and mlp.backbone.net[0].out_features == 128
    bare = configured_encoder(ModelSection(), in_channels=3)  # a bare section: small_cnn's defaults
    assert bare.backbone.features[0].out_channels == 32 and bare(torch.rand(2, 3, 8, 8))[1].shape == (2, 64)
    with pytest.raises(ConfigError, match=r"^invalid value for 'model.encoder': configured_encoder builds"):
        configured_encoder(GINSection(encoder="gin"), in_dim=3)


class _NetSection(ModelSection):
    depth: int = Field(2, ge=1, description="layers of the user's net")


def test_a_user_encoder_registers_its_section(monkeypatch: pytest.MonkeyPatch) -> None:
    import hardneg.models.sections as sections
    from hardneg.modalities import get_modality

    monkeypatch.setattr(sections, "_SECTIONS", dict(sections._SECTIONS))
    monkeypatch.setattr(type(get_modality("latent")), "encoders", ("mlp", "user_net"))
    with pytest.raises(ConfigError, match=r"register its keys with hardneg.models.register_encoder_section"):
        load_config("latent_classes", ["model.encoder=user_net"])
    assert register_encoder_section("user_net", _NetSection) is _NetSection
    cfg = load_config("latent_classes", ["model.encoder=user_net", "model.depth=3"])
    assert type(cfg.model) is _NetSection and cfg.model.model_dump() == {"encoder": "user_net", "depth": 3}
    with pytest.raises(ConfigError, match=r"^invalid value for 'model.depth': must be >= 1, got 0$"):
        load_config("latent_classes", ["model.encoder=user_net", "model.depth=0"])


def test_registering_a_section_checks_its_arguments() -> None:
    class NoDefault(ModelSection):
        depth: int

    with pytest.raises(TypeError, match=r"section must be a subclass of hardneg.config.ModelSection, got"):
        register_encoder_section("x", dict)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"name must be a non-empty string, got ''"):
        register_encoder_section("", _NetSection)
    with pytest.raises(ValueError, match=r"must give every key a default; \['depth'\] have none"):
        register_encoder_section("x", NoDefault)
    assert "x" not in encoder_section_names()


def test_the_modalities_build_their_encoders_from_the_section() -> None:
    """``null`` takes the encoder's default; every key reaches its constructor argument."""
    from types import SimpleNamespace

    from hardneg.modalities import get_modality

    text = SimpleNamespace(vocab=list(range(20)))
    cfg = load_config("sentences", ["model.encoder=gru", "model.width=8", "model.feature_dim=6",
                                    "model.bidirectional=true"])
    qt = get_modality("sentences").build_encoder(cfg, text)
    assert (qt.f.embedding.embedding_dim, qt.f.gru.hidden_size, qt.f.gru.bidirectional) == (8, 6, True)
    assert qt.g is not qt.f and qt.feature_dim == 2 * 2 * 6
    bow = get_modality("sentences").build_encoder(load_config("sentences", ["model.feature_dim=null"]), text)
    assert bow.f.embedding.embedding_dim == 100 and bow.feature_dim == 200
    cfg = load_config("graphs", ["model.width=null", "model.layers=null"])
    gin = get_modality("motifs").build_encoder(cfg, SimpleNamespace(num_features=5))
    assert (gin.encoder.hidden, gin.encoder.num_layers, gin.encoder.in_dim) == (32, 3, 5)
    cfg = load_config("graphs", ["model.width=8", "model.layers=2"])
    gin = get_modality("motifs").build_encoder(cfg, SimpleNamespace(num_features=5))
    assert (gin.encoder.hidden, gin.encoder.num_layers) == (8, 2)
