"""MoleculeACE CSVs → labelled molecular graphs: featurisation, labels, de-duplication, sources, errors."""

from __future__ import annotations

import csv
import importlib
import sys
import warnings
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch

pytest.importorskip("rdkit", reason="MoleculeACE graphs need RDKit (pip install rdkit)")
pytest.importorskip("torch_geometric")

from hardneg.data.graphs.molecules import (
    DEFAULT_TARGETS,
    find_moleculeace,
    list_moleculeace_targets,
    read_moleculeace,
    smiles_to_graph,
)

_HEADER = ["smiles", "exp_mean [nM]", "y", "cliff_mol", "split"]


def _write(folder: Path, name: str, rows: list[tuple[str, float]], header: list[str] = _HEADER) -> Path:
    """A CSV in MoleculeACE's exact layout (y = −log10(exp_mean [nM]))."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.csv"
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        for i, (smiles, nm) in enumerate(rows):
            writer.writerow([smiles, nm, -np.log10(nm), 0, "train" if i % 4 else "test"])
    return path


@pytest.fixture
def data(tmp_path: Path) -> Path:
    folder = tmp_path / "benchmark_data"
    _write(folder, "CHEMBL1_Ki", [("CCO", 5.0), ("c1ccccc1O", 50.0), ("CC(=O)Oc1ccccc1C(=O)O", 500.0),
                                  ("CCN", 5000.0)])
    # "OCC" is ethanol again (shared with CHEMBL1_Ki: dropped from both); "c1ccccc1" twice in one file
    _write(folder, "CHEMBL2_EC50", [("c1ccccc1", 10.0), ("OCC", 20.0), ("c1ccccc1", 30.0), ("CCCl", 40.0),
                                    ("C1CCCCC1", 80.0)])
    _write(folder, "CHEMBL3_Ki", [("CS(=O)C", 1.0), ("CC#N", 2.0), ("C=CC=O", 3.0)])
    return folder


def _bond_set(edge_index: torch.Tensor) -> set[tuple[int, int]]:
    return {(int(a), int(b)) for a, b in edge_index.t().tolist()}


def test_atoms_bonds_and_features(data: Path) -> None:
    ds = read_moleculeace(data, targets=["CHEMBL1_Ki", "CHEMBL2_EC50"])
    by_smiles = {g.smiles: g for g in ds.graphs}
    benzene = by_smiles["c1ccccc1"]
    assert benzene.num_nodes == 6 and benzene.edge_index.shape == (2, 12)
    assert benzene.edge_index.dtype == torch.int64 and benzene.x.dtype == torch.float32
    edges = _bond_set(benzene.edge_index)
    assert all((b, a) in edges for a, b in edges)  # undirected: both directions
    assert len(edges) == 12 and all(a != b for a, b in edges)
    assert benzene.edge_attr.shape == (12, 4) and (benzene.edge_attr[:, 3] == 1).all()  # aromatic bonds
    # elements present, by atomic number: C, N, O, Cl → F = 4 + 6 degree + 4 hydrogens + 1 aromatic
    assert ds.num_features == 15 and all(g.x.shape[1] == 15 for g in ds.graphs)
    assert torch.equal(benzene.x[:, :4], torch.tensor([[1.0, 0, 0, 0]]).expand(6, 4))
    assert (benzene.x[:, 4 + 2] == 1).all()  # degree 2
    assert (benzene.x[:, 10 + 1] == 1).all()  # one hydrogen
    assert (benzene.x[:, -1] == 1).all()  # aromatic
    for g in ds.graphs:  # every atom: one element, one degree, one hydrogen count
        np.testing.assert_array_equal(g.x[:, :-1].sum(1).numpy(), 3.0)
    aspirin = by_smiles["CC(=O)Oc1ccccc1C(=O)O"]
    assert aspirin.num_nodes == 13 and aspirin.edge_index.shape[1] == 26
    assert int(aspirin.x[:, 2].sum()) == 4  # four oxygens
    assert aspirin.edge_attr.sum(0).tolist() == [10.0, 4.0, 0.0, 12.0]  # 5 single, 2 double, 6 aromatic
    chloroethane = by_smiles["CCCl"]
    assert chloroethane.num_nodes == 3 and chloroethane.x[:, 3].tolist() == [0.0, 0.0, 1.0]
    # the single-molecule helper agrees with the dataset on the shared vocabulary
    g = smiles_to_graph("c1ccccc1O", elements=("C", "N", "O", "Cl"))
    assert torch.equal(g.x, by_smiles["c1ccccc1O"].x)
    assert torch.equal(g.edge_index, by_smiles["c1ccccc1O"].edge_index)


def test_target_labels_and_dedup_across_targets(data: Path) -> None:
    ds = read_moleculeace(data, targets=["CHEMBL2_EC50", "CHEMBL1_Ki", "CHEMBL3_Ki"])
    assert ds.class_names == ("CHEMBL2_EC50", "CHEMBL1_Ki", "CHEMBL3_Ki")
    smiles = [g.smiles for g in ds.graphs]
    # ethanol (CCO / OCC) is in two targets: gone from both; benzene kept once in CHEMBL2_EC50
    assert "CCO" not in smiles and "OCC" not in smiles and smiles.count("c1ccccc1") == 1
    assert smiles == ["c1ccccc1", "CCCl", "C1CCCCC1", "c1ccccc1O", "CC(=O)Oc1ccccc1C(=O)O", "CCN",
                      "CS(=O)C", "CC#N", "C=CC=O"]
    assert ds.labels.dtype == np.int64 and ds.labels.tolist() == [0, 0, 0, 1, 1, 1, 2, 2, 2]
    assert [int(g.y.item()) for g in ds.graphs] == ds.labels.tolist()
    assert all(g.y.shape == (1,) and g.y.dtype == torch.int64 for g in ds.graphs)
    assert ds.name == "MoleculeACE-targets"
    # without the other target, ethanol stays: only shared molecules among the chosen targets are dropped
    two = read_moleculeace(data, targets=["CHEMBL1_Ki", "CHEMBL3_Ki"])
    assert [g.smiles for g in two.graphs][:2] == ["CCO", "c1ccccc1O"]


def test_activity_threshold(data: Path) -> None:
    ds = read_moleculeace(data, task="activity", targets=["CHEMBL1_Ki"])
    # potencies 5, 50, 500, 5000 nM; median 275 nM; active iff exp_mean <= threshold
    assert ds.labels.tolist() == [1, 1, 0, 0] and ds.class_names == ("inactive", "active")
    assert ds.name == "MoleculeACE-activity-CHEMBL1_Ki"
    at_1uM = read_moleculeace(data, task="activity", targets="CHEMBL1_Ki", threshold_nM=1000.0)
    assert at_1uM.labels.tolist() == [1, 1, 1, 0]
    # dedup within a file keeps the first row: benzene is 10 nM, not 30 nM
    two = read_moleculeace(data, task="activity", targets=["CHEMBL2_EC50"], threshold_nM=15.0)
    assert two.graphs[0].smiles == "c1ccccc1" and two.labels.tolist() == [1, 0, 0, 0]
    with pytest.raises(ValueError, match="puts every molecule of 'CHEMBL1_Ki' in one class"):
        read_moleculeace(data, task="activity", targets=["CHEMBL1_Ki"], threshold_nM=1e6)


def test_max_per_target_is_seeded(data: Path) -> None:
    a = read_moleculeace(data, targets=["CHEMBL2_EC50", "CHEMBL1_Ki"], max_per_target=2, seed=0)
    b = read_moleculeace(data, targets=["CHEMBL2_EC50", "CHEMBL1_Ki"], max_per_target=2, seed=0)
    assert len(a.graphs) == 4 and a.labels.tolist() == [0, 0, 1, 1]
    assert [g.smiles for g in a.graphs] == [g.smiles for g in b.graphs]
    draws = {
        tuple(g.smiles for g in read_moleculeace(data, targets=["CHEMBL2_EC50", "CHEMBL1_Ki"],
                                                 max_per_target=2, seed=s).graphs)
        for s in range(8)
    }
    assert len(draws) > 1


def test_wheel_and_single_csv_sources(data: Path, tmp_path: Path) -> None:
    wheel = tmp_path / "MoleculeACE-3.0.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("MoleculeACE/__init__.py", "")
        for path in sorted(data.glob("*.csv")):
            archive.write(path, f"MoleculeACE/Data/benchmark_data/{path.name}")
    assert list_moleculeace_targets(wheel) == list_moleculeace_targets(data) == (
        "CHEMBL1_Ki", "CHEMBL2_EC50", "CHEMBL3_Ki")
    from_zip = read_moleculeace(wheel, targets=["CHEMBL1_Ki", "CHEMBL3_Ki"])
    from_dir = read_moleculeace(data, targets=["CHEMBL1_Ki", "CHEMBL3_Ki"])
    assert [g.smiles for g in from_zip.graphs] == [g.smiles for g in from_dir.graphs]
    assert all(torch.equal(a.x, b.x) for a, b in zip(from_zip.graphs, from_dir.graphs))
    one = read_moleculeace(data / "CHEMBL1_Ki.csv", task="activity", targets=["CHEMBL1_Ki"])
    assert len(one.graphs) == 4


def test_unparsable_smiles_skipped_with_warning_or_strict_error(tmp_path: Path, capfd) -> None:
    folder = tmp_path / "d"
    _write(folder, "CHEMBL9_Ki", [("CCO", 1.0), ("C1CC", 2.0), ("not a smiles", 3.0), ("", 4.0),
                                  ("c1ccccc1", 5.0)])
    _write(folder, "CHEMBL8_Ki", [("CCN", 1.0)])
    with pytest.warns(UserWarning, match=r"CHEMBL9_Ki.csv: skipped 3 SMILES .*first: line 3, 'C1CC'"):
        ds = read_moleculeace(folder, targets=["CHEMBL9_Ki", "CHEMBL8_Ki"])
    assert [g.smiles for g in ds.graphs] == ["CCO", "c1ccccc1", "CCN"]
    with pytest.raises(ValueError, match=r"CHEMBL9_Ki.csv, line 3: RDKit cannot parse the SMILES 'C1CC'"):
        read_moleculeace(folder, targets=["CHEMBL9_Ki", "CHEMBL8_Ki"], strict=True)
    with pytest.raises(ValueError, match="RDKit cannot parse the SMILES 'C1CC'"):
        smiles_to_graph("C1CC")
    assert "Parse Error" not in capfd.readouterr().err  # RDKit's own log is silenced


def test_input_errors(data: Path, tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="does not exist"):
        read_moleculeace(tmp_path / "nowhere")
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match=r"no \.csv files in folder"):
        read_moleculeace(tmp_path / "empty")
    bad = tmp_path / "bad"
    _write(bad, "CHEMBL5_Ki", [("CCO", 1.0)], header=["SMILES", "exp_mean [nM]", "y", "cliff_mol", "split"])
    _write(bad, "CHEMBL6_Ki", [("CCN", 1.0)])
    with pytest.raises(ValueError, match=r"CHEMBL5_Ki.csv: missing column\(s\) \['smiles'\].*columns found: "
                                         r"\['SMILES', 'exp_mean \[nM\]', 'y', 'cliff_mol', 'split'\]"):
        read_moleculeace(bad, targets=["CHEMBL5_Ki", "CHEMBL6_Ki"])
    with pytest.raises(ValueError, match=r"unknown target\(s\) \['CHEMBL7_Ki'\]; valid targets: "
                                         r"\['CHEMBL1_Ki', 'CHEMBL2_EC50', 'CHEMBL3_Ki'\]"):
        read_moleculeace(data, targets=["CHEMBL1_Ki", "CHEMBL7_Ki"])
    with pytest.raises(ValueError, match="task must be one of"):
        read_moleculeace(data, task="regression")
    with pytest.raises(ValueError, match="needs at least 2 distinct targets"):
        read_moleculeace(data, targets=["CHEMBL1_Ki"])
    with pytest.raises(ValueError, match="needs exactly 1 target"):
        read_moleculeace(data, task="activity", targets=["CHEMBL1_Ki", "CHEMBL3_Ki"])
    with pytest.raises(ValueError, match="threshold_nM applies to task='activity' only"):
        read_moleculeace(data, targets=["CHEMBL1_Ki", "CHEMBL3_Ki"], threshold_nM=100.0)
    with pytest.raises(ValueError, match="threshold_nM must be a positive finite number of nM, got -1"):
        read_moleculeace(data, task="activity", targets=["CHEMBL1_Ki"], threshold_nM=-1)
    with pytest.raises(ValueError, match="max_per_target must be None or an int >= 1, got 0"):
        read_moleculeace(data, targets=["CHEMBL1_Ki", "CHEMBL3_Ki"], max_per_target=0)
    with pytest.raises(ValueError, match=r"does not cover the elements \['S'\]"):
        read_moleculeace(data, targets=["CHEMBL1_Ki", "CHEMBL3_Ki"], elements=["C", "N", "O"])
    with pytest.raises(ValueError, match="unknown element symbol 'Xx'"):
        read_moleculeace(data, targets=["CHEMBL1_Ki", "CHEMBL3_Ki"], elements=["C", "Xx"])
    _write(bad, "CHEMBL4_Ki", [("CCO", 1.0), ("CCN", float("nan"))])
    with pytest.raises(ValueError, match=r"CHEMBL4_Ki.csv, line 3: 'exp_mean \[nM\]' must be a positive"):
        read_moleculeace(bad, task="activity", targets=["CHEMBL4_Ki"])
    # only dropped molecules: nothing left
    _write(tmp_path / "same", "A", [("CCO", 1.0)])
    _write(tmp_path / "same", "B", [("OCC", 1.0)])
    with pytest.raises(ValueError, match=r"target 'A' .* has no usable molecules left"):
        read_moleculeace(tmp_path / "same", targets=["A", "B"])


def test_find_moleculeace_locates_without_importing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    package = tmp_path / "site" / "MoleculeACE"
    (package / "Data" / "benchmark_data").mkdir(parents=True)
    (package / "__init__.py").write_text("raise ImportError('the heavy package must not be imported')\n")
    _write(package / "Data" / "benchmark_data", "CHEMBL1_Ki", [("CCO", 1.0)])
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.delitem(sys.modules, "MoleculeACE", raising=False)
    importlib.invalidate_caches()
    assert find_moleculeace() == package / "Data" / "benchmark_data"
    assert "MoleculeACE" not in sys.modules
    assert list_moleculeace_targets(package) == ("CHEMBL1_Ki",)  # the package folder works as a source
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    assert find_moleculeace() is None
    with pytest.raises(FileNotFoundError, match=r"pip install --no-deps MoleculeACE==3\.0\.0"):
        read_moleculeace()


@pytest.mark.slow
def test_real_moleculeace_data() -> None:
    folder = find_moleculeace()
    if folder is None:
        pytest.skip("MoleculeACE data not installed (pip install --no-deps MoleculeACE==3.0.0)")
    assert len(list_moleculeace_targets(folder)) == 30
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # every SMILES of the benchmark parses
        ds = read_moleculeace()
    assert ds.class_names == DEFAULT_TARGETS
    assert np.bincount(ds.labels).tolist() == [919, 998, 972, 956]  # after dropping shared molecules
    assert ds.num_features == 22 and len(ds.graphs) == 3845
    nodes = np.array([g.num_nodes for g in ds.graphs])
    assert 25 < nodes.mean() < 35 and nodes.min() >= 10
    act = read_moleculeace(task="activity", targets=["CHEMBL2971_Ki"])
    assert np.bincount(act.labels).tolist() == [488, 488]
