"""The pre-registered designs (``designs/<budget>.yaml``), their checks, and registration."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from hardneg.reproduce.design import BUDGETS, DESIGNS, load_design
from hardneg.reproduce.registration import claim_status, register, registration_of


def _write(
    tmp_path: Path, budget: str = "small", edit: Any = None, pilot: dict[str, Any] | None = None
) -> Path:
    """A copy of ``budget``'s design (and its pilot file) under ``tmp_path``, ``edit(doc)`` applied."""
    doc = yaml.safe_load((DESIGNS / f"{budget}.yaml").read_text(encoding="utf-8"))
    if edit is not None:
        edit(doc)
    (tmp_path / "pilots").mkdir(exist_ok=True)
    src = DESIGNS / "pilots" / f"{budget}.json"
    if pilot is not None:
        import json

        (tmp_path / "pilots" / f"{budget}.json").write_text(json.dumps(pilot), encoding="utf-8")
    elif src.is_file():
        (tmp_path / "pilots" / f"{budget}.json").write_bytes(src.read_bytes())
    path = tmp_path / f"{budget}.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return path


def test_every_budget_has_a_design_that_loads() -> None:
    for budget in BUDGETS:
        d = load_design(budget)
        assert d.budget == budget and len(d.digest) == 64 and d.claims
        assert all(c.budgets == (budget,) for c in d.claims)
        assert [c.id for c in d.family] == [c.id for c in d.claims if not c.theorem]


def test_the_medium_design_is_the_larger_confirmatory_one() -> None:
    small, medium = load_design("small"), load_design("medium")
    new = {"accuracy-rises-to-optimal-k", "collision-free-helps-few-classes"}
    assert new <= {c.id for c in medium.claims}
    fm = medium.experiments["fashion_mnist"].budgets["medium"]
    assert "data.test_subset" not in fm  # the full 10 000-image test set
    small_seeds = small.experiments["fashion_mnist"].budgets["small"]["compare.seeds"]
    assert len(fm["compare.seeds"]) > len(small_seeds)
    lat = medium.experiments["latent"].budgets["medium"]
    assert lat["data.latent.test_size"] >= 8 * 1024
    ash = medium.experiments["ash_tradeoff"].budgets["medium"]
    assert ash["data.latent.train_size"] // 64 >= 10 * 40  # steps: the small grid trained 40
    assert medium.pilot is not None and medium.pilot.overrides["latent"]["data.latent.seed"] != 0


@pytest.mark.parametrize(("edit", "message"), [
    (lambda d: d.update(alpha=2.0), r"small.yaml: alpha must be in \(0, 1\), got 2.0"),
    (lambda d: d.update(budget="large"),
     r"small.yaml: budget must equal the file's name 'small', got 'large'"),
    (lambda d: d["claims"][0].update(question="why"),
     r"small.yaml: claims.hard-beats-simclr.question must be one of \['effect', 'size'\], got 'why'"),
    (lambda d: d["claims"][0].update(experiment="mnist"),
     r"claims.hard-beats-simclr.experiment must name an experiment of the file .* got 'mnist'"),
    (lambda d: d["claims"][0].pop("metric"), r"claims.hard-beats-simclr.metric is required, got None"),
    (lambda d: d["pilot"].update(seeds=[0, 20]),
     r"small.yaml: pilot.seeds must be disjoint from experiments.fashion_mnist's seeds, got \[20\]"),
    (lambda d: d["pilot"].update(file="../../x.json"), r"pilot.file must name a file in designs/pilots/"),
    (lambda d: d["pilot"].update(file="pilots/other.json"),  # the loader reads the budget's own
     r"pilot.file must name a file in designs/pilots/, small.json \(after the budget\), "
     r"got 'pilots/other.json'"),
    (lambda d: d["claims"].append(dict(d["claims"][0])),
     r"claims must have distinct ids, got \['hard-beats-simclr'\]"),
])
def test_a_bad_design_is_refused_naming_file_key_and_value(tmp_path: Path, edit: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        load_design("small", _write(tmp_path, edit=edit))


def test_a_pilot_sets_the_design_sd_and_the_effect_question(tmp_path: Path) -> None:
    from hardneg.reproduce.statistics import design_sd

    pilot = {"claims": {"collision-free-helps": {"experiment": "latent", "mean": 0.02, "sd": 0.01, "n": 5},
                        "hard-beats-simclr": {"experiment": "fashion_mnist", "mean": -0.01, "sd": 0.01,
                                              "n": 5}}}
    d = load_design("small", _write(tmp_path, pilot=pilot))
    cf = d.claim("collision-free-helps")
    assert cf.pilot_sd["latent"] == pytest.approx(design_sd(0.01, 5)) == pytest.approx(0.015576, rel=1e-4)
    assert cf.test.question == "effect" and cf.test.pilot_mean == 0.02 and cf.test.powered_at == 0.02
    hb = d.claim("hard-beats-simclr")  # asks about size: powered at the paper's δ whatever the pilot
    assert hb.test.question == "size" and hb.test.powered_at == 0.03
    lb = d.claim("large-beta-hurts-augmented")  # no pilot result: nothing to power the effect at
    assert lb.test.question == "size" and lb.pilot_mean is None


def test_a_claim_digest_changes_with_exactly_what_its_verdict_depends_on(tmp_path: Path) -> None:
    base = load_design("small", _write(tmp_path))

    def delta(doc: dict[str, Any]) -> None:
        doc["claims"][0]["delta"]["value"] = 0.05

    (tmp_path / "b").mkdir()
    edited = load_design("small", _write(tmp_path / "b", edit=delta))
    assert edited.digest != base.digest
    assert edited.claim_digest("hard-beats-simclr") != base.claim_digest("hard-beats-simclr")
    assert edited.claim_digest("collision-free-helps") == base.claim_digest("collision-free-helps")


def test_registration_decides_confirmatory_or_exploratory(tmp_path: Path) -> None:
    d = load_design("small")
    reg = {**registration_of(d), "committed": True, "commit": "abc"}
    assert claim_status(d, reg, "hard-beats-simclr") == "confirmatory"
    assert claim_status(d, reg, "arora-lemma-4-3-holds") == "theorem check"
    changed = {**reg, "claims": {**reg["claims"], "hard-beats-simclr": "0" * 64}}
    assert claim_status(d, changed, "hard-beats-simclr") == (
        "exploratory: its design changed after the runs began")
    assert claim_status(d, changed, "hard-beats-debiased") == "confirmatory"
    assert claim_status(d, {**reg, "pilot_results": []}, "hard-beats-simclr").startswith(
        "exploratory: no pilot result")
    dirty = {**reg, "committed": False, "commit": "small.yaml modified"}
    assert claim_status(d, dirty, "ot-beats-simclr") == (
        "exploratory: the design was not committed when the runs began (small.yaml modified)")


def test_registration_is_written_once_and_read_back(tmp_path: Path) -> None:
    d = load_design("small")
    first = register(d, tmp_path / "small")
    assert (tmp_path / "small" / "registration.json").is_file()
    assert register(d, tmp_path / "small") == first  # a resumed run keeps the first registration
    again = register(d, tmp_path / "small", fresh=True)  # --force: the runs begin again
    assert again["claims"] == first["claims"]


def test_the_docs_print_the_medium_design_claims_table() -> None:
    from hardneg.reproduce.design import claims_table
    from hardneg.reproduce.markdown import read_block

    docs = Path(__file__).resolve().parents[2] / "docs" / "claims.md"
    assert read_block(docs.read_text(encoding="utf-8"), "claims-table").strip() == claims_table("medium")


def test_an_installed_design_counts_as_released_even_inside_a_git_checkout(tmp_path: Path) -> None:
    """A venv inside a user's repository: the package's design files are untracked there, not
    uncommitted edits."""
    import shutil
    import subprocess

    from hardneg.reproduce.registration import _committed

    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    designs = tmp_path / ".venv" / "lib" / "site-packages" / "hardneg" / "reproduce" / "designs"
    designs.mkdir(parents=True)
    (designs / "small.yaml").write_text("budget: small\n", encoding="utf-8")
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    assert _committed([designs / "small.yaml"]) == (True, "installed package")
    mine = tmp_path / "designs"
    mine.mkdir()
    (mine / "small.yaml").write_text("budget: small\n", encoding="utf-8")  # a checkout's own file
    committed, why = _committed([mine / "small.yaml"])
    assert not committed and why == "small.yaml is not committed"
