"""Memory bounds before allocation (hardneg.pipeline.resources): absurd sizes are refused in
seconds naming their keys; the bounds are true lower bounds of the built models; allocation
failures name their stage."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

from hardneg.cli import app
from hardneg.config.errors import ConfigError
from hardneg.modalities import get_modality
from hardneg.pipeline.config import load_config, packaged_config_names
from hardneg.pipeline.resources import OutOfMemory, check_memory, format_bytes, stage

GIB = 1024**3


def _check(name: str, *overrides: str, available: int = 16 * GIB):  # type: ignore[no-untyped-def]
    cfg = load_config(name, list(overrides))
    return check_memory(cfg, get_modality(cfg.data.dataset), available=available)


@pytest.mark.parametrize(
    ("name", "override", "key"),
    [
        ("graphs", "model.layers=1000000", "model.layers=1000000"),
        ("articles", "data.text.max_length=1000000000", "data.text.max_length=1000000000"),
        ("articles", "model.feature_dim=1000000000", "model.feature_dim=1000000000"),
        ("articles", "data.text.corpus_negatives=1000000000", "data.text.corpus_negatives=1000000000"),
        ("sentences", "data.text.max_length=1000000000", "data.text.max_length=1000000000"),
        ("digits", "model.width=100000", "model.width=100000"),
        ("latent_classes", "data.latent.train_size=1000000000", "data.latent.train_size=1000000000"),
        ("digits", "train.batch_size=100000000", "train.batch_size=100000000"),
    ],
)
def test_a_config_that_cannot_fit_is_refused_naming_its_key(name: str, override: str, key: str) -> None:
    expected = r"the run needs at least .* of memory but 16.0 GB is available"
    with pytest.raises(ConfigError, match=expected) as err:
        _check(name, override)
    assert key in str(err.value)


@pytest.mark.parametrize("name", [n for n in packaged_config_names() if not n.startswith("theory_")])
def test_every_packaged_config_fits_in_16_gib(name: str) -> None:
    terms = _check(name)
    assert sum(t.nbytes for t in terms) < 16 * GIB


def _numel(module: torch.nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


def _state_params(terms) -> int:  # type: ignore[no-untyped-def]
    """The parameter count of the training-state term (4 bytes x (weights, grads, 2 Adam moments))."""
    (term,) = [t for t in terms if "parameters" in t.what]
    return term.nbytes // 16


@pytest.mark.parametrize(("layers", "width"), [(3, 32), (5, 64), (1, 8)])
def test_the_graph_bound_is_a_lower_bound_of_infograph(layers: int, width: int) -> None:
    from hardneg.models.gin import InfoGraphModel

    terms = _check("graphs", f"model.layers={layers}", f"model.width={width}")
    for in_dim in (1, 7, 200):  # the input width is the data's, unknown before loading
        actual = _numel(InfoGraphModel(in_dim=in_dim, hidden=width, num_layers=layers))
        assert _state_params(terms) <= actual
        if in_dim == 1:
            assert _state_params(terms) >= 0.5 * actual


@pytest.mark.parametrize("extra", [[], ["model.encoder=gru", "model.width=16", "model.bidirectional=true"]])
def test_the_sentence_bound_is_a_lower_bound_of_quick_thoughts(extra: list[str]) -> None:
    from hardneg.models.bow import BagOfWords
    from hardneg.models.gru import GRUEncoder
    from hardneg.text.quickthoughts import QuickThoughts

    cfg = load_config("sentences", extra)
    terms = check_memory(cfg, get_modality("sentences"), available=16 * GIB)
    m = cfg.model
    dim = m.feature_dim or 100

    def one(vocab: int) -> torch.nn.Module:
        if m.encoder == "gru":
            return GRUEncoder(vocab_size=vocab, embedding_dim=m.width or 100, hidden_dim=dim,
                              bidirectional=m.bidirectional)
        return BagOfWords(vocab_size=vocab, dim=dim)

    smallest = _numel(QuickThoughts(f=one(2), g=one(2)))  # the bound assumes a 2-word vocabulary
    assert 0.5 * smallest <= _state_params(terms) <= smallest


@pytest.mark.parametrize(("name", "in_key"), [("digits", "in_channels"), ("latent_classes", "in_dim")])
def test_image_and_vector_bounds_count_the_built_encoder_exactly(name: str, in_key: str) -> None:
    from hardneg.models.configured import configured_encoder

    cfg = load_config(name, [])
    terms = check_memory(cfg, get_modality(cfg.data.dataset), available=16 * GIB)
    size = 1 if name == "digits" else cfg.data.latent.input_dim  # type: ignore[attr-defined]
    assert _state_params(terms) == _numel(configured_encoder(cfg.model, **{in_key: size}))


def test_an_allocation_failure_names_its_stage_and_keys() -> None:
    with pytest.raises(OutOfMemory, match=r"out of memory while training \(.*can't allocate memory.*\); "
                                          r"the memory of this stage is set by train.batch_size=64"):
        with stage("training", load_config("digits", ["train.batch_size=64"]), ["train.batch_size"]):
            raise RuntimeError("[enforce fail at alloc_cpu.cpp:127] DefaultCPUAllocator: "
                               "can't allocate memory")
    with pytest.raises(OutOfMemory, match=r"while loading the data \(MemoryError\); .*data.dataset=digits"):
        with stage("loading the data", load_config("digits", []), ["data"]):
            raise MemoryError
    # other failures pass through unchanged
    with pytest.raises(RuntimeError, match=r"^shape mismatch$"):
        with stage("training", load_config("digits", []), ["train.batch_size"]):
            raise RuntimeError("shape mismatch")


def test_format_bytes() -> None:
    assert [format_bytes(n) for n in (0, 1023, 1024, 5 * 1024**2)] == ["0 B", "1023 B", "1.0 KB", "5.0 MB"]


def test_the_cli_refuses_before_writing_anything(tmp_path: Path) -> None:
    out = tmp_path / "run"
    result = CliRunner().invoke(app, ["train", "graphs", "model.layers=1000000", "--out", str(out)])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: the run needs at least")
    assert "model.layers=1000000" in lines[0]
    assert not out.exists()
