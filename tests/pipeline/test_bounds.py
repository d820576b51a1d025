"""Bounds wherever a size is set: each key that scales memory or time is estimated before anything
is allocated (or bounded), and the error names the key, the estimate and the memory available."""

from __future__ import annotations

import math
import os
import time

import pytest
from typer.testing import CliRunner

from hardneg.cli import app
from hardneg.config.errors import ConfigError
from hardneg.modalities import get_modality
from hardneg.pipeline.config import load_config
from hardneg.pipeline.resources import (
    THREADS_PER_CPU,
    check_group_memory,
    check_memory,
    check_threads,
    memory_terms,
)

GIB = 1024**3


def _check(name: str | None, *overrides: str, available: int = 16 * GIB):  # type: ignore[no-untyped-def]
    cfg = load_config(name, list(overrides))
    return check_memory(cfg, get_modality(cfg.data.dataset), available=available)


@pytest.mark.parametrize(
    ("name", "overrides", "key"),
    [
        (None, ["train.mode=moco", "moco.queue_size=2e9"], "moco.queue_size=2000000000"),
        (None, ["data.dataset=random", "data.random_size=1e9"], "data.random_size=1000000000"),
        (None, ["data.dataset=random", "data.random_shape=[3,100000,100000]"],
         "data.random_shape=[3, 100000, 100000]"),
        ("latent_classes", ["data.latent.num_classes=1e9"], "data.latent.num_classes=1000000000"),
        ("latent_classes", ["data.latent.kind=topics", "data.latent.num_classes=1e7"],
         "data.latent.num_classes=10000000"),
    ],
)
def test_a_size_that_cannot_fit_is_refused_naming_its_key(
    name: str | None, overrides: list[str], key: str
) -> None:
    with pytest.raises(ConfigError, match=r"the run needs at least .* but 16.0 GB is available") as err:
        _check(name, *overrides)
    assert key in str(err.value)


def test_the_moco_queue_is_counted_as_size_times_dim_times_four_bytes() -> None:
    cfg = load_config(None, ["train.mode=moco", "moco.queue_size=1000", "model.projection_dim=16"])
    [queue] = [t for t in memory_terms(cfg, get_modality("digits")) if "queue of" in t.what]
    assert queue.nbytes == 1000 * (16 * 4 + 8) and queue.keys == ("moco.queue_size", "model.projection_dim")


def test_too_many_kwise_tasks_are_refused_before_training() -> None:
    """The k-wise evaluation comes after training: it is checked on its own, before anything runs."""
    with pytest.raises(ConfigError, match=r"the evaluation needs at least .* eval.kwise_tasks=1000000000"):
        _check(None, "eval.kwise_tasks=1e9")
    _check(None, "eval.kwise_tasks=1e9", "eval.mean_classifier=false")  # no k-wise readout: nothing to count
    _check(None, "eval.kwise_tasks=100000")


def test_parallel_workers_need_one_run_of_memory_each() -> None:
    cfgs = [load_config(None, [f"seed={s}"]) for s in range(3)]
    one = sum(t.nbytes for t in check_memory(cfgs[0], get_modality("digits"), available=16 * GIB))
    check_group_memory(cfgs, 2, "compare.workers", available=int(2.5 * one))  # two fit
    with pytest.raises(ConfigError, match=r"invalid value for 'compare.workers': 3 runs at once") as err:
        check_group_memory(cfgs, 3, "compare.workers", available=int(2.5 * one))
    assert "at most 2 fit, got compare.workers=3" in str(err.value)
    check_group_memory(cfgs[:1], 3, "compare.workers", available=int(2.5 * one))  # one run: one worker


def test_threads_are_bounded_by_the_machines_cpus() -> None:
    check_threads(load_config(None, ["train.threads=8"]), cpus=2)
    expected = r"'train.threads': at most 4 x the 2 CPUs of this machine \(8\), got 9"
    with pytest.raises(ConfigError, match=expected):
        check_threads(load_config(None, ["train.threads=9"]), cpus=2)


def test_the_cli_refuses_absurd_threads_before_writing(tmp_path) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "run"
    res = CliRunner().invoke(app, ["train", "digits", "train.threads=100000", "--out", str(out)])
    assert res.exit_code == 2, res.output
    cpus = os.cpu_count()
    expected = f"error: invalid value for 'train.threads': at most {THREADS_PER_CPU} x the {cpus} CPUs"
    assert expected in res.output
    assert not out.exists()


def test_optimal_k_of_a_trillion_classes_is_immediate_and_exact() -> None:
    from hardneg.theory.ash import optimal_num_negatives

    for n in (10**9, 10**12):
        t0 = time.perf_counter()
        ks = optimal_num_negatives(n)
        assert time.perf_counter() - t0 < 1.0
        assert {n - 1, n} <= set(ks) and max(ks) - min(ks) <= 5  # the exact minimisers and ties
    res = CliRunner().invoke(app, ["theory", "optimal-k", "--classes", str(10**12)])
    assert res.exit_code == 0 and "999999999999, 1000000000000" in res.output


def test_large_harmonic_numbers_are_o1_and_match_the_sum() -> None:
    from hardneg.theory.coupon import harmonic_number

    n = 10**6
    assert harmonic_number(n) == pytest.approx(math.fsum(1.0 / j for j in range(1, n + 1)), rel=1e-15)
    assert harmonic_number(10**15) == pytest.approx(math.log(10**15) + 0.5772156649015329, rel=1e-15)


def test_optimal_k_with_ceil_bounds_classes_naming_the_option() -> None:
    res = CliRunner().invoke(app, ["theory", "optimal-k", "--classes", str(10**12), "--ceil"])
    assert res.exit_code == 2
    assert "error: invalid value for '--classes': at most 100000 with --ceil, got 1000000000000" in res.output


def test_a_group_refuses_more_workers_than_fit_before_writing(
    tmp_path, monkeypatch: pytest.MonkeyPatch  # type: ignore[no-untyped-def]
) -> None:
    """3 workers x one run's memory on a machine with room for 2: refused naming sweep.workers."""
    from hardneg.pipeline import resources

    cfg = load_config(None)
    one = sum(t.nbytes for t in check_memory(cfg, get_modality("digits"), available=16 * GIB))
    monkeypatch.setattr(resources, "available_memory", lambda: int(2.5 * one))
    out = tmp_path / "group"
    args = ["sweep", "digits", "sweep.grid={loss.temperature: [0.2, 0.5]}", "sweep.seeds=[0, 1]",
            "sweep.workers=3", "--out", str(out), "-q"]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 2, res.output
    assert "error: invalid value for 'sweep.workers': 3 runs at once need at least" in res.output
    assert "at most 2 fit, got sweep.workers=3" in res.output
    assert not out.exists()
