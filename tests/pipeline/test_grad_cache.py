"""``train.grad_cache_chunk``: the chunked step through Lightning's manual optimisation."""

from __future__ import annotations

import math

import pytest

from hardneg.config import ConfigError
from hardneg.pipeline.config import load_config
from hardneg.pipeline.experiment import train_run

from .helpers import tiny

BASE = tiny("train.epochs=2", "eval.figures=false", "eval.linear=false", "eval.knn=false")


@pytest.mark.slow
def test_one_chunk_per_view_equals_the_plain_step(tmp_path):
    """With chunk = batch size the chunked step is the plain step: identical losses."""
    plain = train_run(load_config("digits", BASE), tmp_path / "plain", quiet=True)
    cached = train_run(
        load_config("digits", [*BASE, "train.grad_cache_chunk=64"]), tmp_path / "gc", quiet=True
    )
    assert [r["loss"] for r in cached.history] == pytest.approx([r["loss"] for r in plain.history], rel=1e-6)


@pytest.mark.slow
def test_smaller_chunks_train(tmp_path):
    """Smaller chunks: BatchNorm normalises each chunk with its own statistics (documented), so
    the losses differ slightly from the plain step but training proceeds."""
    result = train_run(
        load_config("digits", [*BASE, "train.grad_cache_chunk=16"]), tmp_path / "gc16", quiet=True
    )
    losses = [r["loss"] for r in result.history]
    assert all(math.isfinite(v) for v in losses) and losses[-1] < losses[0]


def test_grad_cache_needs_simclr_mode(tmp_path):
    cfg = load_config("digits", [*BASE, "train.grad_cache_chunk=16", "train.mode=moco"])
    with pytest.raises(ValueError, match=r"grad_cache_chunk needs mode='simclr', got mode='moco'"):
        train_run(cfg, tmp_path / "bad", quiet=True)
    with pytest.raises(ConfigError, match=r"'train.grad_cache_chunk': must be >= 1"):
        load_config("digits", ["train.grad_cache_chunk=0"])
