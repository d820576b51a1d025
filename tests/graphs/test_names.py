"""One meaning for ``graphs``: the graph modality. The losses are ``hardneg.infograph``, the embedded
synthetic motif data set is ``data.dataset: motifs``; both old names work with one warning until 0.4."""

from __future__ import annotations

import ast
import importlib
import re
import warnings
from pathlib import Path

import numpy as np
import pytest
import yaml

pytest.importorskip("torch_geometric")

import hardneg.infograph
from hardneg.config import ConfigError
from hardneg.modalities import dataset_names, get_modality
from hardneg.modalities.graphs import Graphs, load_graph_dataset
from hardneg.pipeline.config import dump_yaml, load_config
from hardneg.pipeline.experiment import train_run

from .helpers import TINY as GRAPH_TINY

TINY = [*GRAPH_TINY, "train.epochs=1"]  # the graph tests' tiny run, one epoch
OLD_DATA = "data.dataset: 'graphs' is now 'motifs'"
ROOT = Path(__file__).resolve().parents[2]


def _deprecations(record: pytest.WarningsRecorder) -> list[str]:
    return [str(w.message) for w in record if issubclass(w.category, DeprecationWarning)]


@pytest.mark.parametrize("name", hardneg.infograph.__all__)
def test_the_old_import_path_warns_once_and_gives_the_same_object(name: str) -> None:
    old = importlib.import_module("hardneg.graphs")
    with pytest.warns(DeprecationWarning) as record:
        value = getattr(old, name)
    assert _deprecations(record) == [
        "hardneg.graphs is now hardneg.infograph; the old path goes in 0.4 "
        f"(import {name} from hardneg.infograph)"
    ]
    assert value is getattr(hardneg.infograph, name)


def test_the_old_import_statement_still_works_and_unknown_names_fail() -> None:
    with pytest.warns(DeprecationWarning, match=r"hardneg\.graphs is now hardneg\.infograph"):
        from hardneg.graphs import InfoGraphLoss
    assert InfoGraphLoss is hardneg.infograph.InfoGraphLoss
    old = importlib.import_module("hardneg.graphs")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an unknown name warns nothing: it is not a moved name
        with pytest.raises(AttributeError, match=r"module 'hardneg.graphs' has no attribute 'GIN'"):
            old.GIN  # noqa: B018


@pytest.mark.parametrize("sub", ["objective", "released"])
def test_the_old_submodule_paths_warn_once_and_give_the_same_objects(sub: str) -> None:
    """0.2's ``hardneg.graphs.objective`` / ``.released`` (the files before the rename)."""
    old = importlib.import_module(f"hardneg.graphs.{sub}")
    new = importlib.import_module(f"hardneg.infograph.{sub}")
    for name in new.__all__:
        with pytest.warns(DeprecationWarning) as record:
            value = getattr(old, name)
        assert _deprecations(record) == [
            f"hardneg.graphs.{sub} is now hardneg.infograph.{sub}; the old path goes in 0.4 "
            f"(import {name} from hardneg.infograph.{sub})"
        ]
        assert value is getattr(new, name)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(AttributeError, match=rf"module 'hardneg.graphs.{sub}' has no attribute 'GIN'"):
            old.GIN  # noqa: B018


def test_the_old_submodule_import_statement_points_at_the_callers_line() -> None:
    with pytest.warns(DeprecationWarning, match=r"hardneg\.graphs\.released is now") as record:
        from hardneg.graphs.released import released_local_global_loss
    assert released_local_global_loss is hardneg.infograph.released_local_global_loss
    assert record[0].filename == __file__


def test_the_old_data_set_name_warns_once_and_the_checked_config_says_motifs(tmp_path: Path) -> None:
    with pytest.warns(DeprecationWarning) as record:
        cfg = load_config("graphs", ["data.dataset=graphs"])
    assert len(_deprecations(record)) == 1 and _deprecations(record)[0].startswith(OLD_DATA)
    assert cfg.data.dataset == "motifs"
    assert yaml.safe_load(dump_yaml(cfg))["data"]["dataset"] == "motifs"
    # a config file (an old run folder's config.yaml, say) with the old name: one warning too
    path = tmp_path / "old.yaml"
    path.write_text("data: {dataset: graphs, graphs: {num_graphs: 50}}\nmodel: {encoder: gin}\n")
    with pytest.warns(DeprecationWarning) as record:
        from_file = load_config(path, check_groups=True)
    assert len(_deprecations(record)) == 1
    assert (from_file.data.dataset, from_file.data.graphs.num_graphs) == ("motifs", 50)  # type: ignore[attr-defined]
    # the new name warns nothing, and the two configs are equal
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        new = load_config("graphs")
    with pytest.warns(DeprecationWarning, match=OLD_DATA):
        renamed = load_config("graphs", ["data.dataset=graphs"])
    assert new.data.dataset == "motifs" and new.data == renamed.data
    # the old name still finds the modality, and is listed nowhere
    assert get_modality("graphs") is get_modality("motifs") and isinstance(get_modality("motifs"), Graphs)
    assert "graphs" not in dataset_names() and {"motifs", "tu", "molecules"} <= set(dataset_names())


def test_motifs_trains_and_the_old_name_trains_to_the_same_numbers(tmp_path: Path) -> None:
    new = train_run(load_config("graphs", [*TINY, "data.dataset=motifs"]), tmp_path / "new", quiet=True)
    with pytest.warns(DeprecationWarning, match=OLD_DATA):
        old_cfg = load_config("graphs", [*TINY, "data.dataset=graphs"])
    old = train_run(old_cfg, tmp_path / "old", quiet=True)
    assert new is not None and old is not None
    assert set(new.eval) == {"svm_cv", "svm_cv_fold_std"} and 0.0 <= new.eval["svm_cv"] <= 1.0
    assert np.isfinite(new.history[-1]["loss"])
    assert new.test_features is not None and old.test_features is not None
    np.testing.assert_array_equal(new.test_features.numpy(), old.test_features.numpy())
    assert new.eval == old.eval
    for run in ("new", "old"):
        written = yaml.safe_load((tmp_path / run / "config.yaml").read_text())
        assert written["data"]["dataset"] == "motifs"


def test_an_unknown_data_set_lists_motifs_tu_and_molecules() -> None:
    with pytest.raises(ConfigError, match=r"invalid value for 'data.dataset'") as err:
        load_config("graphs", ["data.dataset=motif"])
    assert all(f"'{name}'" in str(err.value) for name in ("motifs", "tu", "molecules"))
    assert "'graphs'" not in str(err.value) and "got 'motif'" in str(err.value)
    # the modality's own reader names its three data sets
    cfg = load_config("graphs")
    cfg.data.dataset = "motif"
    with pytest.raises(ConfigError, match=r"one of \['motifs', 'tu', 'molecules'\], got 'motif'"):
        load_graph_dataset(cfg)


def test_no_file_uses_the_old_import_path_or_the_old_data_set_name() -> None:
    """The code, tests, benchmarks, docs and packaged configs say ``hardneg.infograph`` and ``motifs``
    (this file, which checks the old names, and the deprecated package itself excepted; docs may
    name the old path as the 0.2 one)."""
    found = []
    shims = ROOT / "src" / "hardneg" / "graphs"
    for folder in ("src", "tests", "benchmarks", "examples", "scripts"):
        for path in (ROOT / folder).rglob("*.py"):
            if path == Path(__file__).resolve() or path.parent == shims:
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
                if isinstance(node, ast.ImportFrom):
                    modules = [node.module or ""]
                elif isinstance(node, ast.Import):
                    modules = [a.name for a in node.names]
                else:
                    continue
                if any(m == "hardneg.graphs" or m.startswith("hardneg.graphs.") for m in modules):
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    old_data = re.compile(r"dataset(: |=)graphs\b")
    texts = [*(ROOT / "src" / "hardneg" / "configs").rglob("*.yaml"), ROOT / "README.md",
             *(ROOT / "docs").glob("*.md")]
    for path in texts:
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if old_data.search(line) or re.search(r"hardneg\.graphs\b(?!`, (its|their) 0\.2)", line):
                found.append(f"{path.relative_to(ROOT)}:{n}")
    assert not found, "use hardneg.infograph / data.dataset: motifs:\n" + "\n".join(found)
