"""The README's findings block and docs/studies.md's make-run tables equal their committed snapshot.

The drift tests re-render ``docs/results/reproduce-small.json`` and compare byte for byte with the
blocks: a number edited by hand, or a renderer changed without ``python scripts/update_findings.py
--render-only``, fails them. The other tests check the renderer on a synthetic snapshot (expected
strings worked out by hand, means and sample SDs recomputed in float64 with NumPy), the snapshot
built from a hand-written report folder, the block markers, and the ``--markdown`` option's checks.
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from hardneg.reproduce.markdown import (
    FINDINGS,
    GROUPS,
    findings_markdown,
    groups_markdown,
    read_block,
    replace_block,
    update_findings,
)
from hardneg.reproduce.report import report_json
from hardneg.reproduce.snapshot import build_snapshot, load_snapshot, read_report

ROOT = Path(__file__).resolve().parents[2]
SNAPSHOT = ROOT / "docs" / "results" / "reproduce-small.json"
REGENERATE = "run `python scripts/update_findings.py --render-only` (or regenerate from a new `make run`)"


def test_readme_findings_block_is_the_rendered_snapshot() -> None:
    block = read_block((ROOT / "README.md").read_text(encoding="utf-8"), FINDINGS)
    assert block == findings_markdown(load_snapshot(SNAPSHOT)), REGENERATE


def test_studies_make_run_tables_are_the_rendered_snapshot() -> None:
    block = read_block((ROOT / "docs" / "studies.md").read_text(encoding="utf-8"), GROUPS)
    assert block == groups_markdown(load_snapshot(SNAPSHOT)), REGENERATE


@pytest.mark.parametrize("budget", ["medium"])
def test_each_larger_budget_block_is_its_rendered_snapshot(budget: str) -> None:
    """README's and docs/studies.md's blocks of a larger budget are its committed snapshot, rendered
    (empty until the budget's first published run)."""
    from hardneg.reproduce.markdown import blocks

    findings, groups = blocks(budget)
    snapshot = ROOT / "docs" / "results" / f"reproduce-{budget}.json"
    readme = read_block((ROOT / "README.md").read_text(encoding="utf-8"), findings)
    studies = read_block((ROOT / "docs" / "studies.md").read_text(encoding="utf-8"), groups)
    if not snapshot.is_file():
        assert readme == studies == "", f"{findings}: a block without its snapshot {snapshot.name}"
        return
    snap = load_snapshot(snapshot)
    assert snap["budget"] == budget
    assert readme == findings_markdown(snap) and studies == groups_markdown(snap), REGENERATE


def test_committed_snapshot_is_consistent() -> None:
    """Each claim's interval holds its mean (mean ± the 95 % half-width in snapshots written before the
    Holm-level interval, ``ci_level``), and every group has the seeds its claims used."""
    snap = load_snapshot(SNAPSHOT)
    assert snap["commit"] and snap["data"] and snap["seconds"] > 0 and snap["budget"] == "small"
    for c in snap["claims"]:
        if c.get("ci_level") is None:
            assert c["ci_low"] == pytest.approx(c["diff_mean"] - c["half_width"], abs=1e-12)
            assert c["ci_high"] == pytest.approx(c["diff_mean"] + c["half_width"], abs=1e-12)
        else:  # symmetric about the mean, at least as wide as the 95 % interval (α_i ≤ 0.025)
            assert c["ci_low"] + c["ci_high"] == pytest.approx(2 * c["diff_mean"], abs=1e-12)
            assert c["ci_high"] - c["diff_mean"] >= c["half_width"] - 1e-12 or c["ci_level"] < 0.95
        assert 0 <= c["wins"] <= c["seeds"]
    for g in snap["groups"].values():
        seeds: dict[str, set[int]] = {r["strategy"]: set() for r in g["runs"]}
        for r in g["runs"]:
            seeds[r["strategy"]].add(r["seed"])
        assert len({frozenset(s) for s in seeds.values()}) == 1  # paired: the same seeds everywhere


def _claim(**kw: Any) -> dict[str, Any]:
    base = {"claim": "c", "section": "claim", "data": "latent", "metric": "linear_top1", "unit": "points",
            "test": "superiority", "margin": None, "paper_effect": None, "diff_mean": 0.0, "half_width": 0.0,
            "mde_design": None, "mde_observed": None, "p_value": None, "p_holm": None, "verdict": "not shown"}
    return {**base, **kw}


SYNTHETIC: dict[str, Any] = {
    "version": 1, "command": "make run", "budget": "small", "commit": "abc1234", "data": ["latent", "graphs"],
    "seconds": 95.44, "source_sha256": "0123456789abcdef", "count": "Claims reproduced: 1 of the 3 planned.",
    "claims": [
        _claim(claim="a", diff_mean=0.012345, half_width=0.00456, paper_effect=0.03, mde_design=0.0185,
               mde_observed=0.02779, p_holm=0.6288, verdict="not shown (MDE 1.85 points)"),
        _claim(claim="b", test="equivalence", margin=0.0045, diff_mean=-0.0013, half_width=0.0083,
               mde_design=0.0311, mde_observed=math.nan, p_holm=1.0, verdict="underpowered"),
        _claim(claim="d", data=None, verdict="not run here"),
        _claim(claim="t", section="theorem", unit="bits", metric="lemma", diff_mean=0.37412,
               half_width=0.022437, p_value=6.48e-07, verdict="holds"),
    ],
    "groups": {"latent": {"data": "latent", "metrics": ["linear_top1"], "runs": [
        {"strategy": "u", "seed": 0, "values": {"linear_top1": 0.8}},
        {"strategy": "u", "seed": 1, "values": {"linear_top1": 0.825}},
        {"strategy": "u", "seed": 2, "values": {"linear_top1": 0.81}},
        {"strategy": "h", "seed": 0, "values": {"linear_top1": 0.9}},
    ]}},
}


def test_findings_renderer_on_a_synthetic_snapshot() -> None:
    lines = findings_markdown(SYNTHETIC).split("\n")
    assert lines[0] == (
        "Produced by `make run` (`hardneg reproduce --budget small`) at commit abc1234 on latent, graphs, "
        "wall time 95 s (budget small; hardneg source sha256 0123456789ab). Generated from "
        "`docs/results/reproduce-small.json` by `python scripts/update_findings.py`; do not edit by hand.")
    assert lines[4] == ("| a | latent | linear_top1 | +1.23 ± 0.46 | +3.00 | 1.85 / 2.78 | 0.629 "
                        "| not shown (MDE 1.85 points) |")
    assert lines[5] == ("| b | latent | linear_top1 | -0.13 ± 0.83 | parity (±0.45) | 3.11 / – | 1 "
                        "| underpowered |")
    assert lines[6] == "| d | – | linear_top1 | – | not stated | – | – | not run here |"
    assert lines[8] == "Claims reproduced: 1 of the 3 planned."
    assert lines[10] == ("Theorem checks, each alone, outside the family: t: +0.374 ± 0.0224 bits "
                         "(one-sided p = 6.48e-07), **holds**.")
    assert len(lines) == 11


def test_groups_renderer_recomputes_mean_and_sample_sd() -> None:
    lines = groups_markdown(SYNTHETIC).split("\n")
    u = np.array([0.8, 0.825, 0.81], dtype=np.float64)
    assert f"{100 * u.mean():.2f} ± {100 * u.std(ddof=1):.2f}" == "81.17 ± 1.26"  # worked by hand
    assert lines[-2] == "| u | 81.17 ± 1.26 | 3 |"
    assert lines[-1] == "| h | 90.00 ± – | 1 |"  # one seed: no SD
    assert lines[-4] == "| strategy | linear_top1 | seeds |"


def test_replace_block_keeps_the_text_around_and_refuses_bad_markers() -> None:
    text = "head\n<!-- hardneg:x:start -->\nold\nlines\n<!-- hardneg:x:end -->\ntail\n"
    new = replace_block(text, "x", "new")
    assert new == "head\n<!-- hardneg:x:start -->\nnew\n<!-- hardneg:x:end -->\ntail\n"
    assert read_block(new, "x") == "new"
    for bad in ("no markers", "<!-- hardneg:x:end -->\n<!-- hardneg:x:start -->",
                "<!-- hardneg:x:start -->\n<!-- hardneg:x:start -->\n<!-- hardneg:x:end -->"):
        with pytest.raises(ValueError, match="hardneg:x:start"):
            replace_block(bad, "x", "new")


def _report_folder(root: Path, *, md_extra: str = "") -> None:
    """A hand-written report: claims.csv and claims.md as report.write_report lays them out, and one
    experiment folder with results.json."""
    rows = [
        {"claim": "a", "section": "claim", "verdict": "reproduced", "outcome": "reproduced", "data": "latent",
         "metric": "linear_top1", "test": "superiority", "margin": "", "paper_effect": "0.01",
         "diff_mean": "0.02", "diff_std": "0.01", "ci_low": "0.0076", "ci_high": "0.0324",
         "half_width": "0.0124", "wins": "5",
         "seeds": "5", "mde_design": "nan", "mde_observed": "0.015", "p_value": "0.004", "p_holm": "0.008",
         "unit": "points", "folder": "runs/reproduce/small/latent"},
        {"claim": "b", "section": "claim", "verdict": "not run here", "outcome": "", "data": "",
         "metric": "svm_cv", "test": "superiority", "margin": "", "paper_effect": "", "wins": "", "seeds": "",
         "unit": "points",
         "folder": ""},
    ]
    with (root / "claims.csv").open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    (root / "claims.md").write_text(
        f"# Reproduction report (budget: small)\n\n{md_extra}Code: hardneg 0.2.0, source sha256 "
        "0a1b2c3d4e5f; each run folder ...\n\nClaims reproduced: 1 of the 2 planned for this budget.\n",
        encoding="utf-8")
    (root / "latent").mkdir()
    runs = [{"strategy": s, "run": f"{s}/seed{k}", "linear_top1": 0.5 + 0.01 * k, "knn_top1": 0.1}
            for s in ("u", "h") for k in range(2)]
    (root / "latent" / "results.json").write_text(json.dumps({"table": {}, "runs": runs}), encoding="utf-8")


def test_snapshot_from_a_report_folder(tmp_path: Path) -> None:
    _report_folder(tmp_path)
    with pytest.raises(ValueError, match="commit and seconds must be given"):
        build_snapshot(tmp_path, command="make run")
    snap = build_snapshot(tmp_path, command="make run", commit="abc1234", seconds=12.34)
    assert (snap["commit"], snap["seconds"], snap["budget"], snap["source_sha256"]) == (
        "abc1234", 12.3, "small", "0a1b2c3d4e5f")
    assert snap["data"] == ["latent"]
    assert snap["count"] == "Claims reproduced: 1 of the 2 planned for this budget."
    a, b = snap["claims"]
    assert (a["diff_mean"], a["half_width"], a["wins"], a["seeds"], a["mde_design"]) == (
        0.02, 0.0124, 5, 5, None)
    assert (b["verdict"], b["seeds"], b["paper_effect"], b["folder"]) == ("not run here", None, None, None)
    g = snap["groups"]["latent"]
    assert g["metrics"] == ["linear_top1"]  # only the claims' metrics
    assert [(r["strategy"], r["seed"], r["values"]["linear_top1"]) for r in g["runs"]] == [
        ("u", 0, 0.5), ("u", 1, 0.51), ("h", 0, 0.5), ("h", 1, 0.51)]
    with pytest.raises(ValueError, match="seconds must be a finite number"):
        build_snapshot(tmp_path, command="make run", commit="abc", seconds=math.inf)


@pytest.mark.parametrize("extra,kind", [("**Partial report**: interrupted\n\n", "partial"),
                                        ("", "exploratory")])
def test_a_partial_or_exploratory_report_is_refused(tmp_path: Path, extra: str, kind: str) -> None:
    _report_folder(tmp_path, md_extra=extra)
    if kind == "exploratory":
        md = tmp_path / "claims.md"
        md.write_text(md.read_text().replace("(budget: small)", "(budget: small) — exploratory"))
    with pytest.raises(ValueError, match=kind):
        build_snapshot(tmp_path, command="make run", commit="abc", seconds=1.0)


def test_report_json_is_read_back_with_its_commit_and_wall_time(tmp_path: Path) -> None:
    rows = [{"claim": "a", "section": "claim", "verdict": "not shown", "outcome": "not shown",
             "unit": "points", "diff_mean": np.float64(0.01), "half_width": math.nan, "wins": np.int64(3),
             "seeds": 5,
             "metric": "linear_top1", "folder": ""}]
    doc = json.loads(report_json(rows, budget="small", seconds=42.0))
    assert doc["rows"][0]["half_width"] is None and doc["rows"][0]["wins"] == 3 and doc["seconds"] == 42.0
    assert doc["partial"] is False and doc["exploratory"] is False
    assert doc["count"].startswith("Claims reproduced")
    (tmp_path / "claims.json").write_text(json.dumps(doc))
    report = read_report(tmp_path)
    assert report["seconds"] == 42.0 and report["commit"] == doc["commit"]
    assert report["rows"][0]["claim"] == "a"


def test_update_findings_writes_nothing_when_a_file_lacks_its_markers(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    _report_folder(run)
    readme, studies, snap = tmp_path / "README.md", tmp_path / "studies.md", tmp_path / "snap.json"
    readme.write_text("x\n<!-- hardneg:findings:start -->\nold\n<!-- hardneg:findings:end -->\ny\n")
    studies.write_text("no markers here\n")
    with pytest.raises(ValueError, match=r"studies\.md"):
        update_findings(run, snapshot=snap, readme=readme, studies=studies, commit="abc", seconds=1.0)
    assert not snap.exists() and "old" in readme.read_text()
    studies.write_text("<!-- hardneg:make-run-tables:start -->\n<!-- hardneg:make-run-tables:end -->\n")
    written = update_findings(run, snapshot=snap, readme=readme, studies=studies, commit="abc", seconds=1.0)
    assert load_snapshot(snap) == written
    assert read_block(readme.read_text(), FINDINGS) == findings_markdown(written)
    assert readme.read_text().startswith("x\n") and readme.read_text().endswith("\ny\n")
    assert read_block(studies.read_text(), GROUPS) == groups_markdown(written)


@pytest.mark.parametrize("args", [["--budget", "full"], ["--only", "hard-beats-simclr"]])
def test_markdown_option_needs_a_full_small_or_medium_report(tmp_path: Path, args: list[str]) -> None:
    typer_testing = pytest.importorskip("typer.testing")
    from hardneg.cli import app

    result = typer_testing.CliRunner().invoke(
        app, ["reproduce", *args, "--markdown", "--out", str(tmp_path / "rep"), "-q"])
    assert result.exit_code == 2
    assert "--markdown renders a full report: it needs --budget small or medium" in result.output
    assert not (tmp_path / "rep").exists()


def test_source_commit_outside_and_inside_a_git_work_tree(tmp_path: Path) -> None:
    import re
    import shutil

    from hardneg.reproduce.snapshot import source_commit

    assert source_commit(tmp_path) is None  # not a work tree
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("needs git and the repository's work tree")
    assert re.fullmatch(r"[0-9a-f]{7,}( \+ local changes)?", source_commit(ROOT) or "")


def test_docs_claims_states_the_small_familys_size_the_code_fixes() -> None:
    """docs/claims.md gives the Holm family of the small budget (claims and hypotheses); it is
    counted here from the code, so adding a claim without updating the page fails."""
    from hardneg.reproduce.design import planned_claims
    from hardneg.reproduce.statistics import hypotheses

    claims = planned_claims("small")
    n_hyp = sum(len(hypotheses(c.test)) for c in claims)
    text = (Path(__file__).parents[2] / "docs" / "claims.md").read_text(encoding="utf-8")
    assert f"budget {len(claims)} claims with {n_hyp} hypotheses" in text
