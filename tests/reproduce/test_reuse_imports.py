"""A second reproduction that reuses every run imports no Lightning and measures nothing again:
the whole of a second ``make run`` is reading files (issue: reuse in under 15 s)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = '''
import json, sys
from dataclasses import replace
from hardneg.reproduce import run

design = run.load_design


def tiny(budget, path=None):
    d = design(budget, path)
    exp = d.experiments["latent"]
    latent = replace(
        exp, strategies={k: exp.strategies[k] for k in ("infonce", "collision-free")},
        budgets={"small": {"train.epochs": 1, "compare.seeds": [0, 1], "compare.workers": 1,
                           "data.latent.train_size": 256, "data.latent.test_size": 128,
                           "train.batch_size": 32, "eval.kwise": [1], "eval.kwise_tasks": 20,
                           "eval.figures": False, "train.progress": False}})
    return replace(d, experiments={**d.experiments, "latent": latent})


run.load_design = tiny
run.run_reproduce(budget="small", out=sys.argv[1], only=["collision-free-helps", "arora-prop-6-2-holds"],
                  echo=lambda _: None)
print(json.dumps({"lightning": "lightning" in sys.modules}))
'''


def _reproduce(out: Path) -> dict[str, bool]:
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(out)], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, bool] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


@pytest.mark.slow
def test_a_fully_reused_reproduction_imports_no_lightning_and_rewrites_no_run(tmp_path: Path) -> None:
    out = tmp_path / "rep"
    assert _reproduce(out) == {"lightning": True}  # the first one trains
    runs = sorted((out / "small" / "latent").glob("*/seed*"))
    files = [p for run in runs for p in sorted(run.rglob("*")) if p.is_file()]
    assert len(runs) == 4 and any(p.name == "derived.json" for p in files)  # Prop. 6.2 measured once
    stamps = {p: p.stat().st_mtime_ns for p in files}
    assert _reproduce(out) == {"lightning": False}
    assert {p: p.stat().st_mtime_ns for p in files} == stamps  # nothing trained or measured again
    assert (out / "small" / "claims-only-collision-free-helps+arora-prop-6-2-holds.md").is_file()


def test_only_data_installed_apart_is_loaded_to_see_whether_an_experiment_can_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Embedded data (motifs, latent, digits) is always there: loading it to check would import
    PyTorch Geometric for the motifs on every reused make run (about 3 s)."""
    from hardneg import modalities
    from hardneg.reproduce.design import EXPERIMENTS
    from hardneg.reproduce.run import _missing, experiment_config

    loaded: list[str] = []

    class Loader:
        def load(self, cfg: object) -> None:
            loaded.append(cfg.data.dataset)  # type: ignore[attr-defined]
            raise OSError("not installed")

    graphs, fmnist = (experiment_config(EXPERIMENTS[e], "small") for e in ("graphs", "fashion_mnist"))
    monkeypatch.setattr(modalities, "get_modality", lambda name: Loader())
    assert _missing(graphs, EXPERIMENTS["graphs"].needs) is None and loaded == []
    assert _missing(fmnist, EXPERIMENTS["fashion_mnist"].needs) == "needs its data (not installed)"
    assert loaded == ["fashion_mnist"]
