"""``hardneg reproduce``: claims, verdicts, the report, resuming, and a tiny end-to-end run."""

from __future__ import annotations

import csv
import math
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from typer.testing import CliRunner

from hardneg.cli import app
from hardneg.reproduce import CLAIMS, EXPERIMENTS
from hardneg.reproduce.claims import Term
from hardneg.reproduce.derived import DERIVED, derived_metric
from hardneg.reproduce.run import (
    claim_values,
    command_for,
    experiment_config,
    judge_rows,
    planned_claims,
    run_reproduce,
)


def _patch_experiments(monkeypatch: pytest.MonkeyPatch, budget: str = "small", **exps: Any) -> None:
    """Make the runner see ``exps`` (id → Experiment) in ``budget``'s design (composes with earlier
    patches)."""
    from hardneg.reproduce import run as run_module

    before = run_module.load_design

    def patched(b: str, path: Any = None) -> Any:
        d = before(b, path)
        return replace(d, experiments={**d.experiments, **exps}) if b == budget else d

    monkeypatch.setattr(run_module, "load_design", patched)


def _experiment(exp_id: str, budget: str = "small") -> Any:
    from hardneg.reproduce import run as run_module

    return run_module.load_design(budget).experiments[exp_id]


def test_every_claim_names_a_runnable_experiment_its_strategies_and_its_source() -> None:
    ids = [c.id for c in CLAIMS]
    assert len(ids) == len(set(ids))
    for claim in CLAIMS:
        exp = EXPERIMENTS[claim.experiment]
        assert claim.source and claim.quote and claim.text.endswith(".")
        assert claim.unit in ("points", "bits", "doublings", "cosine")
        if claim.shift is not None:  # an argmax over a grid: every cell is a strategy
            assert set(claim.shift.strategies) <= set(exp.strategies) and claim.unit == "doublings"
            continue
        assert {claim.baseline, claim.contender} <= set(exp.strategies)
        for term in claim.contrast:  # every metric fixed in advance: evaluated, or derived from run files
            assert term.strategy in exp.strategies, (claim.id, term)
            assert term.metric in ("linear_top1", "mean_top1", "svm_cv", "mu_avg2", "cr_acc", *DERIVED)
        # a contrast compares like with like: its weights sum to zero
        assert sum(t.weight for t in claim.contrast) == pytest.approx(0, abs=1e-12), claim.id
        for budget in claim.budgets:
            assert budget in exp.budgets, (claim.id, budget)
            cfg = experiment_config(exp, budget)
            assert len(cfg.compare.seeds) >= 3  # a spread, and an interval
            if exp.fallback is not None:  # the stand-in runs the same strategies
                assert set(EXPERIMENTS[exp.fallback].strategies) >= {claim.baseline, claim.contender}


def test_the_sides_of_a_comparison_share_their_objective_unless_the_claim_is_about_it() -> None:
    for claim in CLAIMS:
        sides = EXPERIMENTS[claim.experiment].strategies
        arms = claim.shift.strategies if claim.shift is not None else [t.strategy for t in claim.contrast]
        same = len({repr(sides[a].get("loss.objective")) for a in arms}) == 1
        # HCL compares its whole method (hard negatives with debiasing) to SimCLR: that claim is about
        # the objective too; every other comparison changes one thing
        assert same or claim.baseline == "simclr" or claim.id.startswith("debiasing-helps"), claim.id


def test_parity_claims_are_tested_with_a_margin_as_their_papers_word_them() -> None:
    """"can indeed match (and sometimes slightly exceed)": one-sided, non-inferiority; HCL's "on par"
    on CIFAR-10: two-sided, equivalence."""
    kinds = {c.id: c.test.kind for c in CLAIMS}
    assert kinds["ot-matches-hard"] == "noninferiority"
    assert kinds["hard-equals-simclr-cifar10"] == "equivalence"
    assert all(c.test.margin is not None for c in CLAIMS if c.test.kind in ("equivalence", "noninferiority"))


def test_every_not_run_here_command_parses_and_its_config_validates(tmp_path: Path) -> None:
    """``--budget paper`` with no data: each claim says what is missing and prints a command that runs."""
    import shlex

    import typer

    result = CliRunner().invoke(app, ["reproduce", "--budget", "paper", "--out", str(tmp_path / "rep"), "-q"])
    assert result.exit_code == 0, result.output
    paper = [c for c in CLAIMS if "paper" in c.budgets]
    for claim in paper:
        command = command_for(claim, "paper", tmp_path / "rep")
        assert command in result.output
        argv = shlex.split(command.replace("=DIR", f"={tmp_path}"))
        assert argv[:2] == ["hardneg", "reproduce"]
        reproduce = typer.main.get_command(app).get_command(None, "reproduce")  # type: ignore[attr-defined]
        ctx = reproduce.make_context("reproduce", argv[2:])  # parses, or raises a usage error
        assert ctx.params["budget"] == "paper" and ctx.params["only"] == [claim.id]
        exp = EXPERIMENTS[claim.experiment]
        root = tmp_path
        if exp.needs == "bookcorpus":  # a file of sentences, one per line, not a folder
            root = tmp_path / "books.txt"
            root.write_text("A first sentence.\nA second one.\n\nAnother document.\n", encoding="utf-8")
        experiment_config(exp, "paper", data={exp.needs: str(root)} if exp.needs else None)  # validates
    rows = list(csv.DictReader((tmp_path / "rep" / "paper" / "claims.csv").open()))
    assert [r["verdict"] for r in rows] == ["not run here"] * len(paper)
    assert all(r["setting"].startswith(("needs its data", "needs a GPU")) for r in rows)


def _rows(**claims: dict[str, Any]) -> list[dict[str, Any]]:
    from hardneg.reproduce.run import _row

    by = {c.id: c for c in CLAIMS}
    return [_row(by[k], **v) for k, v in claims.items()]


def test_a_report_from_synthetic_paired_results_covers_the_verdicts() -> None:
    """Verdicts of the small budget's family (14 planned claims, 35 hypotheses), checked by hand."""
    from scipy.stats import t as student

    rows = _rows(**{
        # mean 0.023, s = sqrt(22e-6), t = 10.96 on 4 df: one-sided p = 1.97e-4; ×35 = 0.0069
        "hard-beats-simclr": {"baseline_mean": 0.70},
        # mean 0.0005: H0 μ ≥ 0.019 rejected (t = −26.1): smaller than the paper's
        "hard-beats-debiased": {"baseline_mean": 0.70},
        # mean -0.023: opposite direction (two-sided)
        "debiasing-helps": {"baseline_mean": 0.70},
        # not worse by 1.5 points: mean 0.00025, s 0.00094, n 6: non-inferior
        "ot-matches-hard": {"baseline_mean": 0.70},
        # zero spread: no verdict
        "hard-helps-true-positives": {"baseline_mean": 0.70},
        # mean 0.01, s 0.04, n 3, no effect size in the paper
        "collision-free-helps": {"baseline_mean": 0.70},
        # a baseline at 99.8 % leaves 0.2 points < the paper's 0.5: at the ceiling
        "hard-beats-infograph": {"baseline_mean": 0.998},
    })
    diffs = {
        "hard-beats-simclr": [0.020, 0.025, 0.018, 0.022, 0.030],
        "hard-beats-debiased": [0.002, -0.001, 0.001, 0.002, -0.0015],
        "debiasing-helps": [-0.020, -0.025, -0.018, -0.022, -0.030],
        "ot-matches-hard": [0.0005, -0.001, 0.0015, 0.0, 0.001, -0.0005],
        "hard-helps-true-positives": [0.01, 0.01, 0.01],
        "collision-free-helps": [0.05, -0.03, 0.01],
        "hard-beats-infograph": [0.004, -0.003, 0.001],
    }
    judge_rows(rows, diffs, budget="small")
    by = {r["claim"]: r for r in rows}
    got = {r["claim"]: r["verdict"] for r in rows}
    assert got == {
        "hard-beats-simclr": "reproduced",
        "hard-beats-debiased": "smaller than the paper's 1.9 points",
        "debiasing-helps": "opposite direction",
        "ot-matches-hard": "reproduced (not worse by 1.5 points)",
        "hard-helps-true-positives": "no verdict (zero spread)",
        "collision-free-helps": f"not shown (the paper states no effect size; MDE "
                                f"{100 * by['collision-free-helps']['mde_observed']:.3g} points)",
        "hard-beats-infograph": "ceiling",
    }
    assert [by[c]["direction"] for c in ("hard-beats-simclr", "debiasing-helps", "hard-beats-debiased")] == [
        "supported", "against", "smaller"]
    # the family is the budget's, fixed: 14 claims (Lemma 4.3 apart) with 35 hypotheses, run or not
    assert by["hard-beats-simclr"]["alpha_design"] == pytest.approx(0.05 / 35)
    p = float(student.sf(0.023 / math.sqrt(22e-6 / 5), 4))
    assert by["hard-beats-simclr"]["p_value"] == pytest.approx(p, rel=1e-9)
    assert by["debiasing-helps"]["p_against"] == pytest.approx(2 * p, rel=1e-9)  # same |t|, two-sided
    # Holm over the 35 planned hypotheses: the measured ones, and p = 1 for the 17 of the claims not run
    from statsmodels.stats.multitest import multipletests

    keys = {"p_value": "p_holm", "p_against": "p_against_holm", "p_smaller": "p_smaller_holm"}
    measured = [(r["claim"], k) for r in rows for k in keys if not math.isnan(r[k])]
    assert len(measured) == 16  # 35 − 2 (zero spread: no test) − 17 (seven claims not run)
    pvals = [by[c][k] for c, k in measured] + [1.0] * (35 - 16)
    for (c, k), a in zip(measured, multipletests(pvals, method="holm")[1]):
        assert by[c][keys[k]] == pytest.approx(a, rel=1e-12)
    # the digits fallback (5-label readout) has its own pilot SD (the previous run's spread, ±0.79
    # points at 5 seeds), reported as the design MDE; the run's own SD decides (issue 45)
    digits = _rows(**{"ot-matches-hard": {"baseline_mean": 0.89, "experiment": "digits"}})
    judge_rows(digits, {"ot-matches-hard": [-0.0004 + x for x in (-0.003, 0.003, 0.002, -0.004, 0.002)]})
    ot = digits[0]
    assert ot["mde_basis"] == "observed" and ot["mde_design"] != ot["mde_observed"]
    assert ot["verdict"] == "reproduced (not worse by 1.5 points)" and ot["paper_difference"] == 0.001


def test_the_ceiling_applies_to_equivalence_not_to_noninferiority() -> None:
    """Equivalence within ±0.45 points on a baseline at 99.7 %: 0.3 points of room cannot show it;
    "not worse than" needs no room above the baseline."""
    from hardneg.reproduce.statistics import ClaimTest, judge

    d = [0.0001, -0.0002, 0.0003, 0.0, 0.0002, -0.0001]
    eq = judge({"c": d}, {"c": ClaimTest("equivalence", margin=0.0045)}, headroom={"c": 0.003})["c"]
    assert eq.verdict == "ceiling" and eq.p_holm < 0.05  # TOST alone would say equivalent
    rows = _rows(**{"ot-matches-hard": {"baseline_mean": 0.997, "experiment": "digits"}})
    judge_rows(rows, {"ot-matches-hard": d})
    assert rows[0]["verdict"] == "reproduced (not worse by 1.5 points)"


def test_the_family_does_not_depend_on_what_ran_and_only_is_exploratory() -> None:
    """The reviewer's probe: collision-free-helps alone was 'reproduced' (Holm over 2 hypotheses)."""
    from scipy.stats import ttest_rel

    d = [0.0045 + x for x in (-0.003, 0.003, 0.002, -0.004, 0.002)]
    p = float(ttest_rel(d, [0.0] * 5, alternative="greater").pvalue)
    full = _rows(**{"collision-free-helps": {"baseline_mean": 0.7}})
    judge_rows(full, {"collision-free-helps": d}, budget="small")
    assert full[0]["p_holm"] == pytest.approx(35 * p, rel=1e-9)  # claims not run count as planned
    assert not full[0]["verdict"].startswith("reproduced")
    only = _rows(**{"collision-free-helps": {"baseline_mean": 0.7}})
    judge_rows(only, {"collision-free-helps": d}, budget="small", exploratory=True)
    assert only[0]["p_holm"] == pytest.approx(p) and only[0]["verdict"] == "exploratory: reproduced"


def test_the_forest_plot_marks_the_paper_effect_and_the_mde(tmp_path: Path) -> None:
    from hardneg.figures.claims import _marks, claims_figure

    rows = _rows(**{"hard-beats-simclr": {"baseline_mean": 0.7}, "ot-matches-hard": {"baseline_mean": 0.7}})
    judge_rows(rows, {"hard-beats-simclr": [0.020, 0.025, 0.018, 0.022, 0.030],
                      "ot-matches-hard": [0.001, -0.002, 0.003, 0.0, 0.002, -0.001]})
    sup, eq = rows
    # the MDE that decides the verdict: the run's own (issue 45)
    assert _marks(sup) == ([pytest.approx(3.0)], [pytest.approx(100 * sup["mde_observed"])])
    mde = 100 * eq["mde_observed"]
    margins, mdes = _marks(eq)
    assert margins == [pytest.approx(-1.5)]  # non-inferiority: one bound, below 0
    assert mdes == [pytest.approx(-mde)]
    assert claims_figure(rows, tmp_path / "claims.png", budget="small") == tmp_path / "claims.png"
    assert (tmp_path / "claims.png").stat().st_size > 1000


def test_sources_name_the_sections_the_experiments_are_in() -> None:
    """Jiang et al.'s experiments are §VII (§V is the min-max theory); Ash et al.'s are §4, Fig. 3."""
    by = {c.id: c for c in CLAIMS}
    assert "§VII" in by["ot-matches-hard"].source and "§V," not in by["ot-matches-hard"].source
    for claim in ("collision-free-helps", "optimal-k-grows-with-classes"):
        assert "§4, Fig. 3" in by[claim].source and "§6" not in by[claim].source


def test_the_designs_state_pilot_sds_and_paper_derived_margins() -> None:
    """Each planned claim of small and medium has a pilot SD for its experiment (from the pilot file,
    as an upper 80 % limit, or stated with its provenance); each δ names its paper, table and arms; the
    one parity claim is non-inferiority with the margin and the paper's own difference of its design."""
    from hardneg.reproduce.design import load_design
    from hardneg.reproduce.statistics import design_sd

    for budget in ("small", "medium"):
        d = load_design(budget)
        assert d.pilot is not None and not set(d.pilot.seeds) & set().union(*d.run_seeds().values())
        for claim in d.family:
            assert claim.design, claim.id
            if claim.id in d.pilot.results:
                got = d.pilot.results[claim.id]
                assert claim.pilot_sd[got["experiment"]] == pytest.approx(design_sd(got["sd"], got["n"]))
                assert claim.pilot_mean == got["mean"]
            if claim.delta:
                assert "Table" in claim.delta["source"] or "Fig." in claim.delta["source"], claim.id
                assert claim.delta["arms"] == f"{claim.contender} − {claim.baseline}", claim.id
    small = load_design("small")
    ot = small.claim("ot-matches-hard").test
    assert (ot.kind, ot.margin, ot.paper_difference) == ("noninferiority", 0.015, 0.001)
    assert small.claim("debiasing-helps").test.paper_effect == 0.009  # the median row, not STL10's 4.1
    assert small.claim("arora-lemma-4-3-holds").theorem and "arora-lemma-4-3-holds" not in {
        c.id for c in planned_claims("small")}


@pytest.fixture
def tiny_latent(monkeypatch: pytest.MonkeyPatch) -> None:
    """The latent experiment at a test budget: 2 strategies, 3 seeds, 1 epoch, 256 pairs."""
    exp = EXPERIMENTS["latent"]
    tiny = replace(
        exp,
        strategies={k: exp.strategies[k] for k in ("infonce", "collision-free")},
        budgets={"small": {"train.epochs": 1, "compare.seeds": [0, 1, 2], "compare.workers": 1,
                           "data.latent.train_size": 256, "data.latent.test_size": 128,
                           "data.latent.noise_std": 4.0, "train.batch_size": 32,
                           "eval.kwise": [1], "eval.kwise_tasks": 20, "eval.figures": False,
                           "train.progress": False}},
    )
    _patch_experiments(monkeypatch, latent=tiny)


def test_tiny_reproduction_writes_the_report_and_resumes(tmp_path: Path, tiny_latent: None) -> None:
    out = tmp_path / "rep"
    args = ["reproduce", "--only", "collision-free-helps", "--out", str(out), "--quiet"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "| collision-free-helps |" in result.output
    stem = out / "small" / "claims-only-collision-free-helps"  # exploratory, beside the full report
    assert not (out / "small" / "claims.md").exists()
    rows = list(csv.DictReader(stem.with_suffix(".csv").open()))
    assert [r["claim"] for r in rows] == ["collision-free-helps"]
    row = rows[0]
    assert row["verdict"].startswith("exploratory: ") and row["exploratory"] == "True"
    assert int(row["seeds"]) == 3 and 0 <= int(row["wins"]) <= 3
    lo, hi, mean = float(row["ci_low"]), float(row["ci_high"]), float(row["diff_mean"])
    assert lo <= mean <= hi and not math.isnan(lo)
    # the difference is the contender's mean minus the baseline's (same seeds)
    assert mean == pytest.approx(float(row["contender_mean"]) - float(row["baseline_mean"]), abs=1e-12)
    md = stem.with_suffix(".md").read_text()
    assert "## collision-free-helps" in md and "Ash et al." in md and "**Exploratory** (`--only`)" in md
    assert (out / "small" / "figures" / "claims-only-collision-free-helps.png").stat().st_size > 1000
    runs = sorted((out / "small" / "latent").glob("*/seed*/metrics.json"))
    assert len(runs) == 6
    stamps = [p.stat().st_mtime_ns for p in runs]
    again = run_reproduce(budget="small", out=out, only=["collision-free-helps"], echo=lambda _: None)
    assert [p.stat().st_mtime_ns for p in runs] == stamps  # finished runs reused
    assert again.rows[0]["diff_mean"] == pytest.approx(mean, abs=1e-12)


def test_bad_budget_and_unknown_claims_are_refused(tmp_path: Path) -> None:
    budgets = r"\['small', 'medium', 'full', 'paper'\]"
    with pytest.raises(ValueError, match=rf"--budget must be one of {budgets}, got 'huge'"):
        run_reproduce(budget="huge", out=tmp_path)
    with pytest.raises(ValueError, match=r"--only takes claim ids of budget 'small' among .* got \['nope'\]"):
        run_reproduce(budget="small", out=tmp_path, only=["nope"])
    expected = r"--data takes NAME=DIR with NAME among \[.*'cifar10'.*\], got \['cifar'\]"
    with pytest.raises(ValueError, match=expected):
        run_reproduce(budget="paper", out=tmp_path, data={"cifar": "/data/c10"})


def test_without_fashion_mnist_the_image_claims_run_on_digits_and_say_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import yaml

    from tests.pipeline.helpers import tiny

    pairs = [o.split("=", 1) for o in tiny("eval.knn=false", "eval.figures=false")]
    small = {**{k: yaml.safe_load(v) for k, v in pairs}, "eval.linear_shots": [5], "eval.shot_draws": 2,
             "compare.seeds": [0, 1, 2], "compare.workers": 1}
    two = {k: EXPERIMENTS["digits"].strategies[k] for k in ("simclr", "hard")}
    _patch_experiments(monkeypatch,
                       digits=replace(EXPERIMENTS["digits"], strategies=two, budgets={"small": small}))
    absent = {**EXPERIMENTS["fashion_mnist"].budgets["small"], "data.root": str(tmp_path / "absent")}
    _patch_experiments(monkeypatch,
                       fashion_mnist=replace(EXPERIMENTS["fashion_mnist"], budgets={"small": absent}))
    res = run_reproduce(budget="small", out=tmp_path / "rep", only=["hard-beats-simclr"], echo=lambda _: None)
    (row,) = res.rows
    assert row["data"] == "digits (fallback: fashion_mnist not installed)"
    assert "scikit-learn digits" in row["setting"] and row["seeds"] == 3
    assert res.report == res.root / "claims-only-hard-beats-simclr.md"
    md = res.report.read_text()
    # the claim reads the few-label readout there (the all-label one is at the ceiling on digits)
    assert row["metric"] == "linear5shot_top1" and "5 labels per class" in row["setting"]
    assert "apt-get install dataset-fashion-mnist" in md.split("| claim |")[0]  # said first: how
    assert "| hard-beats-simclr | digits (fallback: fashion_mnist not installed) | linear5shot_top1 |" in md


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
    full = out / "small" / "claims.md"
    full.parent.mkdir(parents=True)
    full.write_text("the full report\n")  # an --only run never writes over it
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 130, result.output
    report = out / "small" / "claims-only-collision-free-helps.md"
    md = report.read_text()
    assert md.startswith("# Reproduction report (budget: small)\n\n**Partial report**: "
                         "interrupted during `latent` (2 of 6 of its runs finished)")
    assert "| collision-free-helps | – | mean_top1 | – | not stated | – | – | interrupted |" in md
    # the printed resume command keeps --only
    assert f"hardneg reproduce --budget small --out {out} --only collision-free-helps" in result.output
    assert f"hardneg reproduce --budget small --out {out} --only collision-free-helps" in md
    assert full.read_text() == "the full report\n"
    monkeypatch.setattr(groups, "train_run", train)
    again = CliRunner().invoke(app, args)
    assert again.exit_code == 0, again.output
    assert full.read_text() == "the full report\n"
    md = report.read_text()
    assert "Partial" not in md and "| interrupted |" not in md


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
    assert set(recorded) == {"config_sha256", "hardneg_version", "source_sha256", "modules", "imports",
                             "data", "libraries"}

    exp = _experiment("latent")
    budget = {**exp.budgets["small"], "data.latent.noise_std": 3.0}  # the claim's setting changes
    _patch_experiments(monkeypatch, latent=replace(exp, budgets={"small": budget}))
    stamps = [p.stat().st_mtime_ns for p in runs]
    run_reproduce(budget="small", out=out, only=["collision-free-helps"], echo=lambda _: None)
    assert all(p.stat().st_mtime_ns != s for p, s in zip(runs, stamps))  # every run trained again
    saved = yaml.safe_load((runs[0].parent / "config.yaml").read_text())
    assert saved["data"]["latent"]["noise_std"] == 3.0

    stamps = [p.stat().st_mtime_ns for p in runs]
    monkeypatch.setattr(provenance, "module_digest", lambda name: "0" * 64)  # the code changes
    run_reproduce(budget="small", out=out, only=["collision-free-helps"], echo=lambda _: None)
    assert all(p.stat().st_mtime_ns != s for p, s in zip(runs, stamps))
    assert json.loads((runs[0].parent / "provenance.json").read_text())["modules"]["hardneg.loss"] == "0" * 64


def _fake_runs(values: dict[str, dict[int, dict[str, float]]]) -> dict[str, dict[int, object]]:
    from types import SimpleNamespace

    return {label: {seed: SimpleNamespace(eval=ev, run_dir=Path("/nonexistent"))
                    for seed, ev in seeds.items()} for label, seeds in values.items()}


def test_a_contrast_claim_is_the_weighted_sum_of_its_terms_seed_by_seed() -> None:
    """HCL's monotone claim as a trend test: per seed, the least-squares slope of accuracy on β."""
    claim = next(c for c in CLAIMS if c.id == "hard-helps-true-positives")
    betas = {"uniform": 0.0, "hard-0.5": 0.5, "hard": 1.0, "hard-2": 2.0}
    acc = {"uniform": {0: 0.80, 1: 0.81, 2: 0.79}, "hard-0.5": {0: 0.81, 1: 0.80, 2: 0.80},
           "hard": {0: 0.83, 1: 0.82}, "hard-2": {0: 0.84, 1: 0.85, 2: 0.86}}  # seed 2 missing for hard
    runs = _fake_runs({k: {s: {"linear_top1": v} for s, v in d.items()} for k, d in acc.items()})
    stats, sides = claim_values(claim, runs)
    # the slope of an ordinary least-squares line through the four (β, accuracy) points, by numpy
    expected = [np.polyfit(list(betas.values()), [acc[k][s] for k in betas], 1)[0] for s in (0, 1)]
    assert stats == pytest.approx(expected, rel=1e-12)
    assert sides["uniform linear_top1"] == [0.80, 0.81] and len(sides) == 4
    # the default contrast is contender − baseline
    plain = next(c for c in CLAIMS if c.id == "hard-beats-simclr")
    assert plain.contrast == (Term("hard", "linear_top1", 1.0), Term("simclr", "linear_top1", -1.0))
    runs = _fake_runs({"hard": {0: {"linear_top1": 0.8}}, "simclr": {0: {"linear_top1": 0.75}, 1: {}}})
    assert claim_values(plain, runs)[0] == pytest.approx([0.05])


def test_the_optimal_k_claim_is_the_shift_of_the_argmax_over_a_grid_that_holds_the_theory_optimum() -> None:
    """Ash et al.'s Fig. 3: per seed, log2 of the best K at C = 16 minus at C = 4, and the bootstrap."""
    from hardneg.reproduce.run import optimum_bootstrap
    from hardneg.theory.ash import optimal_num_negatives

    claim = next(c for c in CLAIMS if c.id == "optimal-k-grows-with-classes")
    assert claim.shift is not None and claim.unit == "doublings"
    grid = dict(claim.shift.low) | dict(claim.shift.high)
    for c in (4, 16):  # the theory's optimum is in the grid, and K beyond it
        cells = [k for name, k in grid.items() if name.startswith(f"C{c}-")]
        assert set(optimal_num_negatives(c)) & set(cells) and max(cells) > max(optimal_num_negatives(c))
    curves = {  # seed -> (C = 4 curve, C = 16 curve) over K = 1, 2, 4, 8, 16, 32
        0: ([0.80, 0.85, 0.90, 0.88, 0.86, 0.84], [0.40, 0.42, 0.45, 0.47, 0.49, 0.48]),
        1: ([0.81, 0.86, 0.87, 0.89, 0.85, 0.83], [0.41, 0.44, 0.46, 0.48, 0.47, 0.50]),
        2: ([0.80, 0.88, 0.86, 0.85, 0.84, 0.80], [0.40, 0.43, 0.47, 0.46, 0.45, 0.44]),
    }
    ks = (1, 2, 4, 8, 16, 32)
    values: dict[str, dict[int, dict[str, float]]] = {}
    for seed, (low, high) in curves.items():
        for c, curve in ((4, low), (16, high)):
            for k, a in zip(ks, curve):
                values.setdefault(f"C{c}-K{k}", {})[seed] = {"mean_top1": a}
    stats, sides = claim_values(claim, _fake_runs(values))
    # by hand: best K per seed at C = 4: 4, 8, 2; at C = 16: 16, 32, 4
    assert stats == pytest.approx([math.log2(16 / 4), math.log2(32 / 8), math.log2(4 / 2)])
    assert list(sides.values()) == [[2.0, 3.0, 1.0], [4.0, 5.0, 2.0]]
    text = optimum_bootstrap(claim.shift, _fake_runs(values), resamples=500)
    # the mean curves' argmax: C = 4 at K = 4 (0.877), C = 16 at K = 32 (0.4733)
    assert text.startswith("C4 (fewer classes): best K of the mean curve 4 (bootstrap 95 %: ")
    assert "C16 (more classes): best K of the mean curve 32 (bootstrap 95 %: " in text
    assert "K=4: 87.7" in text


def _write_features(path: Path, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    from hardneg.pipeline.run_folder import write_features

    rng = np.random.default_rng(seed)
    labels = np.repeat(np.arange(4), 50)
    means = rng.normal(size=(4, 8)) * 1.5
    features = (means[labels] + rng.normal(size=(200, 8))).astype(np.float32)
    path.mkdir(parents=True, exist_ok=True)
    write_features(path / "features.npz", torch.from_numpy(features), torch.from_numpy(labels))
    return features, labels


def test_arora_lemma_4_3_is_measured_from_the_run_folder_features(tmp_path: Path) -> None:
    """Both sides of Lemma 4.3 re-derived here in float64: the mean classifier's average binary loss
    (exact over class pairs) and (L_un − τ)/(1 − τ) from an independent Monte-Carlo estimate."""
    features, labels = _write_features(tmp_path / "run")
    measured = derived_metric(tmp_path / "run", "lemma_4_3_measured")
    bound = derived_metric(tmp_path / "run", "lemma_4_3_bound")
    f = features.astype(np.float64)
    mu = np.stack([f[labels == c].mean(0) for c in range(4)])
    s = f @ mu.T
    pair = []  # L^mu_sup, binary tasks {c, c'} averaged uniformly (equal class sizes)
    for c in range(4):
        for c2 in range(4):
            if c != c2:
                sel = labels == c
                pair.append(np.mean(np.log2(1 + np.exp(-(s[sel, c] - s[sel, c2])))))
    assert measured == pytest.approx(np.mean(pair), rel=1e-9)
    rng = np.random.default_rng(1)
    n = 100_000  # anchor, a distinct sample of its class, a negative from all samples (τ = 1/4)
    a = rng.integers(0, 200, n)
    pos = (labels[a] * 50 + (a % 50 + rng.integers(1, 50, n)) % 50)  # classes are blocks of 50
    neg = rng.integers(0, 200, n)
    assert not np.any(pos == a) and np.all(labels[pos] == labels[a])
    v = np.einsum("nd,nd->n", f[a], f[pos] - f[neg])
    l_un = np.mean(np.logaddexp(0.0, -v) / np.log(2.0))
    tau = 0.25
    assert bound == pytest.approx((l_un - tau) / (1 - tau), rel=0.03)  # two Monte-Carlo estimates
    assert bound >= measured
    with pytest.raises(FileNotFoundError, match=r"no features file at .*features\.npz"):
        derived_metric(tmp_path / "empty", "lemma_4_3_bound")
    with pytest.raises(KeyError, match="unknown derived metric 'nope'"):
        derived_metric(tmp_path / "run", "nope")


def test_arora_proposition_6_2_block_bound_is_measured_from_the_run_folder_features(tmp_path: Path) -> None:
    """Prop. 6.2's middle term, (L^block_un − τ)/(1 − τ) with b = 4, re-derived here by an independent
    float64 Monte-Carlo estimate of eq. (12): blocks of 4 positives and 4 negatives drawn i.i.d. from
    the empirical class distributions (class c⁺, c⁻ ~ ρ̂ independently); the chain of the proposition
    holds on these features."""
    features, labels = _write_features(tmp_path / "run", seed=3)
    block = derived_metric(tmp_path / "run", "prop_6_2_bound")
    pair = derived_metric(tmp_path / "run", "lemma_4_3_bound")
    measured = derived_metric(tmp_path / "run", "lemma_4_3_measured")
    f = features.astype(np.float64)
    rng = np.random.default_rng(7)
    n, b = 100_000, 4
    a = rng.integers(0, 200, n)
    c_neg = rng.integers(0, 4, n)
    pos = labels[a][:, None] * 50 + rng.integers(0, 50, (n, b))  # classes are blocks of 50
    neg = c_neg[:, None] * 50 + rng.integers(0, 50, (n, b))
    v = np.einsum("nd,nd->n", f[a], f[pos].mean(axis=1) - f[neg].mean(axis=1))
    loss = np.logaddexp(0.0, -v) / np.log(2.0)
    tau = 0.25
    # two Monte-Carlo estimates: the library's draws 20 000 blocks, this one 100 000; 4 standard errors
    se = loss.std() / (1 - tau) * np.sqrt(1 / 20_000 + 1 / n)
    assert abs(block - (loss.mean() - tau) / (1 - tau)) < 4 * se
    assert measured <= block <= pair


def test_ot_hardness_is_the_coupling_weighted_negative_cosine_by_pot(tmp_path: Path) -> None:
    """Jiang et al.'s property 1 on a run's features, re-derived with POT's Sinkhorn in float64:
    the conditional coupling P*(j | i) of uniform marginals, cost 2 − 2cos (self-pairs excluded)."""
    import ot

    features, _ = _write_features(tmp_path / "run")
    h = features[:512].astype(np.float64)
    h /= np.linalg.norm(h, axis=1, keepdims=True)
    cos = h @ h.T
    n = len(h)
    got = {}
    for eps in (0.5, 2.0):
        cost = 2.0 - 2.0 * cos
        np.fill_diagonal(cost, 1e4)  # a self-pair is never a negative: exp(-1e4 / eps) = 0
        plan = ot.sinkhorn(np.full(n, 1 / n), np.full(n, 1 / n), cost, reg=eps, numItermax=20000,
                           stopThr=1e-12, method="sinkhorn_log")
        cond = plan / plan.sum(axis=1, keepdims=True)
        expected = float(np.mean((cond * cos).sum(axis=1)))
        got[eps] = derived_metric(tmp_path / "run", f"ot_hardness_eps{eps:g}")
        assert got[eps] == pytest.approx(expected, abs=1e-6)
    assert got[0.5] > got[2.0]  # harder at the smaller ε


def test_a_report_in_bits_prints_the_bound_claim_in_bits() -> None:
    from hardneg.reproduce.report import claims_markdown

    rows = _rows(**{"arora-lemma-4-3-holds": {"baseline_mean": 0.3, "contender_mean": 0.9, "data": "latent",
                                              "setting": "s", "folder": "f",
                                              "terms": {"infonce lemma_4_3_bound": (0.9, 0.05),
                                                        "infonce lemma_4_3_measured": (0.3, 0.02)}}})
    # mean 0.602, s = 0.01924, se = 0.008602; a check alone at α = 0.05: the interval at its level is
    # the 90 % one, t_{0.95,4} se = 2.1318 × 0.008602 = 0.01834: [0.5837, 0.6203]
    judge_rows(rows, {"arora-lemma-4-3-holds": [0.61, 0.58, 0.63, 0.60, 0.59]})
    assert rows[0]["verdict"] == "holds" and rows[0]["section"] == "theorem"
    md = claims_markdown(rows, budget="small")
    assert ("| arora-lemma-4-3-holds | latent | lemma_4_3 (bound − measured) | +0.602 [+0.584, +0.620] bits "
            "(90 %) |") in md
    # a theorem check: its own section, outside the claims' family and their count
    assert "## Theorem checks" in md and "Claims reproduced" not in md
    claims = _rows(**{"collision-free-helps": {"baseline_mean": 0.7, "data": "latent", "setting": "s",
                                               "folder": "f"}})
    judge_rows(claims, {"collision-free-helps": [0.02, 0.025, 0.018, 0.022, 0.03]})
    md = claims_markdown(claims + rows, budget="small")
    assert "Claims reproduced: 1 of the 14 planned for this budget (1 judged here" in md
    assert "infonce lemma_4_3_bound 0.9 ± 0.05 bits" in md
    assert ("`infonce:lemma_4_3_bound − infonce:lemma_4_3_measured` = +0.602 [+0.584, +0.620] bits (90 %) "
            "(std 0.0192)") in md


def test_the_pilot_runs_on_its_own_seeds_and_draw_and_writes_its_results(
    tmp_path: Path, tiny_latent: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--pilot``: the design's pilot seeds and data draw, never the runs' own; per claim the mean,
    SD and n of its per-seed differences, ready to commit as ``designs/pilots/<budget>.json``."""
    import json

    from hardneg.reproduce import run as run_module
    from hardneg.reproduce.run import run_pilot

    before = run_module.load_design

    def latent_only(b: str, path: Any = None) -> Any:
        d = before(b, path)
        assert d.pilot is not None
        pilot = replace(d.pilot, seeds=(7, 8, 9), overrides={"latent": {"data.latent.seed": 520}})
        return replace(d, claims=tuple(c for c in d.claims if c.id == "collision-free-helps"), pilot=pilot)

    monkeypatch.setattr(run_module, "load_design", latent_only)
    path = run_pilot(budget="small", out=tmp_path, echo=lambda _: None)
    assert path == tmp_path / "small-pilot" / "pilot.json"
    got = json.loads(path.read_text())
    assert got["seeds"] == [7, 8, 9] and set(got["claims"]) == {"collision-free-helps"}
    res = got["claims"]["collision-free-helps"]
    assert res["experiment"] == "latent" and res["n"] == 3 and res["sd"] > 0
    runs = sorted((tmp_path / "small-pilot" / "latent").glob("*/seed*/config.yaml"))
    assert {p.parent.name for p in runs} == {"seed7", "seed8", "seed9"}
    import yaml

    assert {yaml.safe_load(p.read_text())["data"]["latent"]["seed"] for p in runs} == {520}
    assert not (tmp_path / "small").exists()  # the pilot is not a run of the design
