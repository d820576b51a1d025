"""Graphs through the command line and the config: `hardneg train graphs`, TU folders, `hardneg compare`."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from hardneg.cli import app
from hardneg.config import ConfigError
from hardneg.pipeline.config import load_config
from hardneg.pipeline.experiment import train_run

from .helpers import TINY

pytest.importorskip("torch_geometric")



def _write_tu(root: Path, name: str, num_graphs: int = 24) -> None:
    """A TU folder (``root/name/name_A.txt``, …): class 0 = cycles, class 1 = stars, 5-8 nodes."""
    folder = root / name
    folder.mkdir(parents=True)
    edges, indicator, node_labels, graph_labels = [], [], [], []
    first = 1
    for g in range(num_graphs):
        n = 5 + g % 4
        label = g % 2
        nodes = list(range(first, first + n))
        pairs = [(nodes[i], nodes[(i + 1) % n]) for i in range(n)] if label == 0 else [
            (nodes[0], v) for v in nodes[1:]
        ]
        for u, v in pairs:
            edges += [f"{u}, {v}", f"{v}, {u}"]
        indicator += [str(g + 1)] * n
        node_labels += [str((i + g) % 3) for i in range(n)]
        graph_labels.append(str(2 * label - 1))  # TU sets often label -1 / 1
        first += n
    for suffix, lines in (("A", edges), ("graph_indicator", indicator), ("node_labels", node_labels),
                          ("graph_labels", graph_labels)):
        (folder / f"{name}_{suffix}.txt").write_text("\n".join(lines) + "\n")


@pytest.mark.slow
def test_cli_trains_a_tu_folder(tmp_path: Path) -> None:
    _write_tu(tmp_path / "tu", "TOY")
    out = tmp_path / "run"
    result = CliRunner().invoke(app, [
        "train", "graphs", "data.dataset=tu", f"data.root={tmp_path / 'tu'}", "data.name=TOY",
        *TINY, "eval.logistic=true", "--out", str(out), "--quiet",
    ])
    assert result.exit_code == 0, result.output
    metrics = json.loads((out / "metrics.json").read_text())["eval"]
    assert {"svm_cv", "logistic_cv"} <= set(metrics)
    # the structure decides the class: a trained GIN separates cycles from stars
    assert metrics["svm_cv"] >= 0.9
    assert (out / "checkpoints" / "last.ckpt").is_file()


def test_cli_refuses_a_tu_run_without_its_folder(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app, ["train", "graphs", "data.dataset=tu", *TINY, "--out", str(tmp_path / "r")]
    )
    assert result.exit_code == 2
    assert "data.root" in result.output and "data.name" in result.output
    missing = CliRunner().invoke(app, [
        "train", "graphs", "data.dataset=tu", f"data.root={tmp_path}", "data.name=NOPE", *TINY,
        "--out", str(tmp_path / "r2"),
    ])
    assert missing.exit_code == 2 and "NOPE" in missing.output


@pytest.mark.parametrize(
    ("overrides", "key"),
    [
        (["train.mode=moco"], "train.mode"),
        (["train.grad_cache_chunk=8"], "train.grad_cache_chunk"),
        (["eval.every_n_epochs=1"], "eval.every_n_epochs"),
        (["model.encoder=small_cnn"], "model.encoder"),
        (["model.encoder=nope"], "model.encoder"),
    ],
)
def test_settings_the_graph_modality_cannot_honour(overrides: list[str], key: str) -> None:
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        load_config("graphs", overrides)


@pytest.mark.parametrize(
    ("overrides", "key"),
    [
        (["data.oracle_positive=true"], "data.oracle_positive"),
        (["data.latent.num_classes=3"], "data.latent"),
        (["data.graphs.nope=1"], "data.graphs.nope"),
        (["model.feature_dim=8"], "model.feature_dim"),
        (["model.stem_stride=2"], "model.stem_stride"),
        (["data.dataset=molecules", "data.root=null"], "data.root"),
    ],
)
def test_keys_that_do_not_apply_to_graphs_are_refused(overrides: list[str], key: str, monkeypatch) -> None:
    import hardneg.data.graphs.molecules as molecules

    monkeypatch.setattr(molecules, "find_moleculeace", lambda: None)  # as if MoleculeACE were not installed
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        load_config("graphs", overrides)


def test_the_graph_section_holds_the_graph_keys() -> None:
    cfg = load_config("graphs", ["data.dataset=tu", "data.root=DIR", "data.name=MUTAG",
                                 "data.graphs.node_attributes=false"])
    assert sorted(type(cfg.data).model_fields) == ["dataset", "graphs", "name", "root"]
    assert cfg.data.graphs.node_attributes is False and cfg.data.graphs.released is False


def test_gin_and_layers_are_refused_for_images() -> None:
    with pytest.raises(ConfigError, match=r"model\.encoder"):
        load_config("digits", ["model.encoder=gin"])
    with pytest.raises(ConfigError, match=r"model\.layers"):
        load_config("digits", ["model.layers=3"])


def test_a_last_batch_of_one_graph_is_dropped(tmp_path: Path) -> None:
    cfg = load_config("graphs", [*TINY, "data.graphs.num_graphs=33", "train.epochs=1"])
    res = train_run(cfg, tmp_path / "run", quiet=True)  # 33 = 2 x 16 + 1: the single graph is left out
    assert res is not None and np.isfinite(res.history[0]["loss"])


@pytest.mark.slow
def test_compare_graphs_writes_paired_differences_and_beta_figure(tmp_path: Path) -> None:
    out = tmp_path / "cmp"
    args = [
        "compare", "graphs_compare", *TINY, "train.epochs=1", "data.graphs.num_graphs=30",
        "compare.seeds=[0,1]", "compare.workers=1", "eval.figures=true",
        "compare.strategies=[{name: infograph, overrides: {}}, "
        "{name: hard-2, overrides: {loss.negatives: {name: hard, beta: 2.0, rescale: true}}}]",
        "--out", str(out), "--quiet",
    ]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "svm_cv" in result.output and "paired differences to infograph" in result.output
    summary = (out / "summary.md").read_text()
    assert "Paired differences" in summary and "| hard-2 |" in summary and "final epoch" in summary
    assert (out / "figures" / "accuracy_vs_beta.png").stat().st_size > 1000
    rows = (out / "results.csv").read_text().splitlines()
    assert len(rows) == 1 + 4
    again = CliRunner().invoke(app, [*args[:-1], "--resume"])  # finished runs are reused
    assert again.exit_code == 0, again.output
    assert (out / "results.csv").read_text().splitlines() == rows
