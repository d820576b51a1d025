"""The paper's rule for a setting (the best of β ∈ {1, 2, 10}, Robinson et al., ICLR 2021, §5.2),
applied to independent runs before the claim's runs (:class:`hardneg.reproduce.Selection`)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from hardneg.pipeline import groups
from hardneg.reproduce.claims import Selection
from hardneg.reproduce.design import EXPERIMENTS
from hardneg.reproduce.run import experiment_config, select_setting


def _fake_compare(means: dict[str, list[float]], seen: list[Any]) -> Any:
    def run_compare(cfg: Any, folder: Path, **_: Any) -> Any:
        seen.append((cfg, folder))
        runs = {label: [SimpleNamespace(eval={"svm_cv": v}) for v in vals] for label, vals in means.items()}
        return SimpleNamespace(runs=runs)
    return run_compare


def test_the_graph_claims_beta_is_chosen_on_another_draw_of_the_motifs_and_other_seeds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[Any] = []
    means = {"hard-1": [0.70, 0.72, 0.71], "hard-2": [0.74, 0.73, 0.75], "hard-10": [0.60, 0.90, 0.70]}
    monkeypatch.setattr(groups, "run_compare", _fake_compare(means, seen))
    exp = EXPERIMENTS["graphs"]
    chosen, note = select_setting(exp, "small", tmp_path, echo=lambda _: None)
    (cfg, folder), = seen
    assert folder == tmp_path / "small" / "graphs-selection"
    main = experiment_config(exp, "small")
    assert cfg.data.graphs.seed != main.data.graphs.seed  # another draw of the data
    assert not set(cfg.compare.seeds) & set(main.compare.seeds)  # other training seeds
    assert [s.name for s in cfg.compare.strategies] == ["hard-1", "hard-2", "hard-10"]
    # hard-2 has the best mean (0.74 against 0.71 and 0.7333): its β replaces the strategy's
    assert chosen.strategies["hard"]["loss.negatives"]["beta"] == 2.0
    assert chosen.strategies["infograph"] == exp.strategies["infograph"]
    assert chosen.selection is exp.selection and chosen.id == "graphs"
    assert "hard = hard-2" in note["selection"] and "hard-10 0.7333" in note["selection"]
    again = experiment_config(chosen, "small")
    beta = {s.name: s.overrides["loss.negatives"].get("beta") for s in again.compare.strategies}
    assert beta == {"infograph": None, "hard": 2.0}


def test_the_rule_takes_the_first_candidate_on_a_tie_and_refuses_a_missing_one() -> None:
    sel = Selection("hard", {"a": {}, "b": {}, "c": {}}, "svm_cv", {})
    assert sel.choose({"a": 0.5, "b": 0.7, "c": 0.7}) == "b"
    with pytest.raises(ValueError, match=r"no svm_cv for candidates \['c'\]"):
        sel.choose({"a": 0.5, "b": 0.7})


def test_the_selection_runs_on_the_data_the_user_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--data fashion_mnist=DIR`` reaches the selection's runs too, not only the claim's."""
    from dataclasses import replace

    seen: list[Any] = []
    monkeypatch.setattr(groups, "run_compare", _fake_compare({"h1": [0.5], "h6": [0.6]}, seen))
    beta = {"h1": 1.0, "h6": 6.0}
    cands = {k: {"loss.negatives": {"name": "hard", "beta": b}} for k, b in beta.items()}
    exp = replace(EXPERIMENTS["fashion_mnist"],
                  selection=Selection("hard", cands, "svm_cv", {"small": {"compare.seeds": [100]}}))
    root = tmp_path / "fmnist"
    chosen, _ = select_setting(exp, "small", tmp_path, data={"fashion_mnist": str(root)}, echo=lambda _: None)
    (cfg, _folder), = seen
    assert str(cfg.data.root) == str(root)
    assert chosen.strategies["hard"]["loss.negatives"]["beta"] == 6.0
