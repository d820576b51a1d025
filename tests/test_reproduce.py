"""``hardneg reproduce``: claims, verdicts, the report, resuming, and a tiny end-to-end run."""

from __future__ import annotations

import csv
import math
from dataclasses import replace
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hardneg.cli import app
from hardneg.pipeline.config import load_config
from hardneg.pipeline.paired import PairedDifference
from hardneg.reproduce import CLAIMS, EXPERIMENTS, NOT_RUN_HERE, verdict
from hardneg.reproduce import claims as claims_module
from hardneg.reproduce.run import run_reproduce


@pytest.mark.parametrize(
    ("diff", "expected"),
    [
        (PairedDifference(0.02, 0.01, 5, 5), "reproduced"),  # CI [0.0076, 0.0324]
        (PairedDifference(-0.02, 0.01, 0, 5), "contradicted"),
        (PairedDifference(0.02, 0.03, 3, 5), "not reproduced"),  # CI holds 0
        (PairedDifference(0.05, 0.0, 1, 1), "not reproduced"),  # one seed: no interval
    ],
)
def test_verdict_follows_the_confidence_interval(diff: PairedDifference, expected: str) -> None:
    assert verdict(diff) == expected


def test_every_claim_names_a_runnable_experiment_and_its_strategies() -> None:
    ids = [c.id for c in CLAIMS] + [n.id for n in NOT_RUN_HERE]
    assert len(ids) == len(set(ids))
    for claim in CLAIMS:
        exp = EXPERIMENTS[claim.experiment]
        assert {claim.baseline, claim.contender} <= set(exp.strategies)
        assert claim.source and claim.text.endswith(".")
        for budget in claim.budgets:
            assert budget in exp.budgets, (claim.id, budget)
            strategies = [{"name": n, "overrides": o} for n, o in exp.strategies.items()]
            cfg = load_config(exp.config, {**exp.budgets[budget], "compare.strategies": strategies})
            assert len(cfg.compare.seeds) >= 3  # a spread, and an interval


def test_bad_budget_and_unknown_claims_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"--budget must be one of \['small', 'full'\], got 'huge'"):
        run_reproduce(budget="huge", out=tmp_path)
    with pytest.raises(ValueError, match=r"--only takes claim ids among .* got \['nope'\]"):
        run_reproduce(budget="small", out=tmp_path, only=["nope"])


@pytest.fixture
def tiny_latent(monkeypatch: pytest.MonkeyPatch) -> None:
    """The latent experiment at a test budget: 2 strategies, 3 seeds, 1 epoch, 256 pairs."""
    exp = EXPERIMENTS["latent"]
    tiny = replace(
        exp,
        strategies={k: exp.strategies[k] for k in ("infonce", "collision-free")},
        budgets={"small": {"train.epochs": 1, "compare.seeds": [0, 1, 2], "compare.workers": 1,
                           "data.latent.train_size": 256, "data.latent.test_size": 128,
                           "eval.kwise": [1], "eval.kwise_tasks": 20, "eval.figures": False,
                           "train.progress": False}},
    )
    monkeypatch.setitem(claims_module.EXPERIMENTS, "latent", tiny)


def test_tiny_reproduction_writes_the_report_and_resumes(tmp_path: Path, tiny_latent: None) -> None:
    out = tmp_path / "rep"
    args = ["reproduce", "--only", "collision-free-helps", "--out", str(out), "--quiet"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "| collision-free-helps |" in result.output
    rows = list(csv.DictReader((out / "small" / "claims.csv").open()))
    assert [r["claim"] for r in rows] == ["collision-free-helps"]
    row = rows[0]
    assert row["verdict"] in ("reproduced", "not reproduced", "contradicted", "no verdict (zero variance)")
    assert int(row["seeds"]) == 3 and 0 <= int(row["wins"]) <= 3
    lo, hi, mean = float(row["ci_low"]), float(row["ci_high"]), float(row["diff_mean"])
    assert lo <= mean <= hi and not math.isnan(lo)
    # the difference is the contender's mean minus the baseline's (same seeds)
    assert mean == pytest.approx(float(row["contender_mean"]) - float(row["baseline_mean"]), abs=1e-12)
    md = (out / "small" / "claims.md").read_text()
    assert "## collision-free-helps" in md and "Ash et al." in md
    assert (out / "small" / "figures" / "claims.png").stat().st_size > 1000
    runs = sorted((out / "small" / "latent").glob("*/seed*/metrics.json"))
    assert len(runs) == 6
    stamps = [p.stat().st_mtime_ns for p in runs]
    again = run_reproduce(budget="small", out=out, only=["collision-free-helps"], echo=lambda _: None)
    assert [p.stat().st_mtime_ns for p in runs] == stamps  # finished runs reused
    assert again.rows[0]["diff_mean"] == pytest.approx(mean, abs=1e-12)


def test_missing_data_gives_not_run_here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    exp = replace(EXPERIMENTS["fashion_mnist"], budgets={"full": {
        **EXPERIMENTS["fashion_mnist"].budgets["full"], "data.root": str(tmp_path / "absent")}})
    monkeypatch.setitem(claims_module.EXPERIMENTS, "fashion_mnist", exp)
    res = run_reproduce(
        budget="full", out=tmp_path / "rep", only=["hard-beats-simclr-fmnist"], echo=lambda _: None
    )
    assert [r["verdict"] for r in res.rows] == ["not run here"]
    assert "needs fashion_mnist" in res.rows[0]["setting"]


def test_an_interrupted_reproduction_writes_a_partial_report_then_resumes(
    tmp_path: Path, tiny_latent: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C during the runs: exit 130, claims.md marked partial with the command that continues."""
    from hardneg.pipeline import experiment

    out = tmp_path / "rep"
    train = experiment.train_run
    calls = [0]

    def ctrl_c_at_the_third_run(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls[0] += 1
        if calls[0] == 3:
            raise KeyboardInterrupt
        return train(*args, **kwargs)

    from hardneg.pipeline import groups

    monkeypatch.setattr(groups, "train_run", ctrl_c_at_the_third_run)
    args = ["reproduce", "--only", "collision-free-helps", "--out", str(out), "--quiet"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 130, result.output
    md = (out / "small" / "claims.md").read_text()
    assert md.startswith("# Reproduction report (budget: small)\n\n**Partial report**: "
                         "interrupted during `latent` (2 of 6 of its runs finished)")
    assert "| collision-free-helps | interrupted |" in md
    assert f"hardneg reproduce --budget small --out {out}" in result.output
    monkeypatch.setattr(groups, "train_run", train)
    again = CliRunner().invoke(app, args)
    assert again.exit_code == 0, again.output
    md = (out / "small" / "claims.md").read_text()
    assert "Partial" not in md and "| collision-free-helps | interrupted |" not in md


def test_a_changed_claim_config_or_code_is_never_reused(
    tmp_path: Path, tiny_latent: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After a change of a claim's config (or of the code), reproduce trains again: no stale number."""
    import json

    import yaml

    from hardneg.pipeline import provenance

    out = tmp_path / "rep"
    run_reproduce(budget="small", out=out, only=["collision-free-helps"], echo=lambda _: None)
    runs = sorted((out / "small" / "latent").glob("*/seed*/metrics.json"))
    recorded = json.loads((runs[0].parent / "provenance.json").read_text())
    assert set(recorded) == {"config_sha256", "hardneg_version", "source_sha256"}

    exp = claims_module.EXPERIMENTS["latent"]
    budget = {**exp.budgets["small"], "data.latent.noise_std": 3.0}  # the claim's setting changes
    monkeypatch.setitem(claims_module.EXPERIMENTS, "latent", replace(exp, budgets={"small": budget}))
    stamps = [p.stat().st_mtime_ns for p in runs]
    run_reproduce(budget="small", out=out, only=["collision-free-helps"], echo=lambda _: None)
    assert all(p.stat().st_mtime_ns != s for p, s in zip(runs, stamps))  # every run trained again
    saved = yaml.safe_load((runs[0].parent / "config.yaml").read_text())
    assert saved["data"]["latent"]["noise_std"] == 3.0

    stamps = [p.stat().st_mtime_ns for p in runs]
    monkeypatch.setattr(provenance, "source_digest", lambda: "0" * 64)  # the code changes
    run_reproduce(budget="small", out=out, only=["collision-free-helps"], echo=lambda _: None)
    assert all(p.stat().st_mtime_ns != s for p, s in zip(runs, stamps))
    assert json.loads((runs[0].parent / "provenance.json").read_text())["source_sha256"] == "0" * 64
