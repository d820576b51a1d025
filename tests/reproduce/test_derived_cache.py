"""A run's derived metrics are kept in its ``derived.json`` and read back only when they were
computed from the same features by the same code (hardneg.reproduce.derived)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
import torch

from hardneg.pipeline.run_folder import unknown_entries, write_features, write_marker
from hardneg.reproduce import derived


def _run(path: Path, seed: int = 0) -> Path:
    rng = np.random.default_rng(seed)
    labels = np.repeat(np.arange(3), 40)
    features = (rng.normal(size=(3, 6))[labels] + rng.normal(size=(120, 6))).astype(np.float32)
    path.mkdir(parents=True, exist_ok=True)
    write_features(path / "features.npz", torch.from_numpy(features), torch.from_numpy(labels))
    return path


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Every computation of the Arora family, counted (the cache in memory cleared first)."""
    calls: list[Path] = []
    real = derived._FAMILIES["arora"]

    def compute(run_dir: Path) -> dict[str, float]:
        calls.append(run_dir)
        return real(run_dir)

    monkeypatch.setitem(derived._FAMILIES, "arora", compute)
    derived._cached.cache_clear()
    yield calls
    derived._cached.cache_clear()


def test_a_second_reading_in_a_new_process_reads_the_file_and_gets_the_same_numbers(
    tmp_path: Path, counted: list[Path]
) -> None:
    run = _run(tmp_path / "run")
    first = {m: derived.derived_metric(run, m) for m in ("lemma_4_3_bound", "prop_6_2_bound")}
    assert len(counted) == 1  # one computation gives the family's three metrics
    stored = json.loads((run / derived.CACHE).read_text())["arora"]
    assert stored["values"]["prop_6_2_bound"] == first["prop_6_2_bound"]
    assert "hardneg.reproduce.derived" in stored["modules"] and "hardneg.theory.measure" in stored["modules"]
    derived._cached.cache_clear()  # as a new process would start
    again = {m: derived.derived_metric(run, m) for m in first}
    assert again == first and len(counted) == 1  # bit for bit, and nothing measured again


def test_new_features_a_changed_module_or_a_damaged_file_measure_again(
    tmp_path: Path, counted: list[Path]
) -> None:
    run = _run(tmp_path / "run")
    before = derived.derived_metric(run, "lemma_4_3_bound")
    # new features (another run wrote the folder): measured again, with the new numbers
    _run(run, seed=1)
    os.utime(run / "features.npz", ns=(1, 1))  # even with an old time stamp: the hash decides
    derived._cached.cache_clear()
    after = derived.derived_metric(run, "lemma_4_3_bound")
    assert len(counted) == 2 and after != before
    # a module of the recorded code changed since: measured again
    stored = json.loads((run / derived.CACHE).read_text())
    stored["arora"]["modules"]["hardneg.theory.measure"] = "0" * 64
    (run / derived.CACHE).write_text(json.dumps(stored))
    derived._cached.cache_clear()
    assert derived.derived_metric(run, "lemma_4_3_bound") == after and len(counted) == 3
    # a damaged file: measured again and rewritten whole
    (run / derived.CACHE).write_text("{not json")
    derived._cached.cache_clear()
    assert derived.derived_metric(run, "lemma_4_3_bound") == after and len(counted) == 4
    assert json.loads((run / derived.CACHE).read_text())["arora"]["values"]["lemma_4_3_bound"] == after


def test_force_still_deletes_a_run_folder_holding_the_derived_metrics(
    tmp_path: Path, counted: list[Path]
) -> None:
    run = _run(tmp_path / "run")
    write_marker(run, "run")
    derived.derived_metric(run, "lemma_4_3_bound")
    assert (run / derived.CACHE).is_file() and unknown_entries(run, "run") == []
