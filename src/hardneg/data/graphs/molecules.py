"""Real labelled molecular graphs from the MoleculeACE benchmark (van Tilborg et al., JCIM 2022).

MoleculeACE ("Exposing the limitations of molecular machine learning with activity cliffs",
van Tilborg, Alenicheva & Grisoni, J. Chem. Inf. Model. 2022) curates, for 30 ChEMBL targets,
615–3657 molecules each with a measured potency: one CSV per target, ``CHEMBL<id>_<Ki|EC50>.csv``,
with the columns ``smiles``, ``exp_mean [nM]`` (potency in nM), ``y = −log10(exp_mean [nM])``,
``cliff_mol`` and ``split``. The PyPI package ``MoleculeACE`` ships them under
``MoleculeACE/Data/benchmark_data``. Two graph-classification tasks are built from them:

* ``task="targets"`` — multi-class, "at which target was this molecule measured": one class per
  chosen CSV (class ``c`` = ``targets[c]``). A molecule (by RDKit canonical SMILES) that appears in
  more than one chosen target is dropped, so every label is unambiguous. The default four targets
  have similar sizes, disjoint protein families and almost no shared molecules: histamine H1
  (CHEMBL231, Ki), dopamine transporter (CHEMBL238, Ki), JAK2 kinase (CHEMBL2971, Ki) and PI3Kα
  (CHEMBL4005, Ki).
* ``task="activity"`` — binary on one target: a molecule is *active* (label 1) iff

      exp_mean [nM] ≤ threshold_nM        (equivalently y ≥ −log10(threshold_nM)),

  with ``threshold_nM`` = the median potency of the target's molecules by default (a balanced
  split; MoleculeACE molecules are mostly potent, 55–97 % of each target lie below 1 µM, so a
  fixed 1 µM cut is badly unbalanced), or a given value such as ``1000.0`` (1 µM).

A molecule becomes a graph ``Data(x, edge_index, edge_attr, y, smiles)`` over its heavy atoms
(hydrogens are folded into the atom features):

* ``x: (n, F)`` float32, ``F = |E| + 6 + 4 + 1``: one-hot element over the vocabulary ``E``
  (the elements present in the chosen molecules, by atomic number, unless ``elements`` is
  given), one-hot heavy-atom degree ``{0, 1, 2, 3, 4, ≥5}``, one-hot attached hydrogens
  ``{0, 1, 2, ≥3}``, aromatic flag;
* ``edge_index: (2, 2·bonds)`` int64, each bond in both directions (undirected);
* ``edge_attr: (2·bonds, 4)`` float32, one-hot bond type ``{single, double, triple, aromatic}``;
* ``y: (1,)`` int64 label; ``smiles``: the SMILES string as read.

SMILES are parsed with RDKit. A SMILES RDKit cannot parse (or one with no atoms) is skipped and
counted in a single ``UserWarning`` per file, or raises ``ValueError`` with ``strict=True``.
"""

from __future__ import annotations

import csv
import io
import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from hardneg.data.graphs.dataset import GraphDataset

__all__ = [
    "DEFAULT_ACTIVITY_TARGET",
    "DEFAULT_TARGETS",
    "MOLECULEACE_INSTALL",
    "find_moleculeace",
    "list_moleculeace_targets",
    "read_moleculeace",
    "smiles_to_graph",
]

DEFAULT_TARGETS: tuple[str, ...] = ("CHEMBL231_Ki", "CHEMBL238_Ki", "CHEMBL2971_Ki", "CHEMBL4005_Ki")
DEFAULT_ACTIVITY_TARGET = "CHEMBL214_Ki"  # serotonin 5-HT1A receptor, Ki, 3317 molecules
MOLECULEACE_INSTALL = "pip install --no-deps MoleculeACE==3.0.0"
RDKIT_INSTALL = "pip install rdkit"

_SMILES = "smiles"
_POTENCY = "exp_mean [nM]"
_DEGREE_BINS = 6  # heavy-atom degree 0..4, >=5
_HYDROGEN_BINS = 4  # attached hydrogens 0..2, >=3
_BOND_TYPES = ("SINGLE", "DOUBLE", "TRIPLE", "AROMATIC")
_TASKS = ("targets", "activity")


def _rdkit() -> Any:
    try:
        from rdkit import Chem
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError(
            f"reading molecules needs RDKit, which is not installed; install it with `{RDKIT_INSTALL}`"
        ) from err
    return Chem


def find_moleculeace() -> Path | None:
    """Folder ``MoleculeACE/Data/benchmark_data`` of an installed ``MoleculeACE`` package, else ``None``.

    Located with ``importlib.util.find_spec`` only: the package (whose ``__init__`` imports its
    heavy model dependencies) is not imported, so ``pip install --no-deps MoleculeACE==3.0.0``
    is enough.
    """
    from hardneg._packages import installed_package_path

    folder = installed_package_path("MoleculeACE", Path("Data") / "benchmark_data")
    if folder is not None and folder.is_dir() and any(folder.glob("CHEMBL*.csv")):
        return folder
    return None


@dataclass(frozen=True)
class _Source:
    """One target CSV: its name (the file stem), where it lives (for messages) and how to read it."""

    name: str
    where: str
    read_text: Callable[[], str]


def _read_file(path: Path) -> str:
    return path.read_text(encoding="utf-8-sig")  # a byte-order mark is not part of the first column


def _read_member(archive_path: Path, member: str) -> str:
    import zipfile

    with zipfile.ZipFile(archive_path) as archive:
        return archive.read(member).decode("utf-8-sig")


def _sources(path_or_dir: str | Path | None) -> dict[str, _Source]:
    """Target CSVs of a folder, a single CSV, a ``MoleculeACE`` wheel (zip), or the installed package."""
    import zipfile

    if path_or_dir is None:
        found = find_moleculeace()
        if found is None:
            raise FileNotFoundError(
                "no MoleculeACE data given and no installed MoleculeACE package found; pass path_or_dir= "
                f"(a folder of CHEMBL*.csv, or the MoleculeACE wheel), or run `{MOLECULEACE_INSTALL}`"
            )
        path_or_dir = found
    path = Path(path_or_dir)
    if not path.exists():
        raise FileNotFoundError(f"path_or_dir does not exist: {str(path)!r}")
    if path.is_dir():
        csvs = sorted(path.glob("*.csv"))
        if not csvs and (path / "Data" / "benchmark_data").is_dir():  # the package folder itself
            csvs = sorted((path / "Data" / "benchmark_data").glob("*.csv"))
        if not csvs:
            raise FileNotFoundError(f"no .csv files in folder {str(path)!r} (expected CHEMBL*_Ki.csv, ...)")
        return {p.stem: _Source(p.stem, str(p), partial(_read_file, p)) for p in csvs}
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as archive:
            members = sorted(
                m for m in archive.namelist() if m.endswith(".csv") and "/benchmark_data/" in f"/{m}"
            )
        if not members:
            raise FileNotFoundError(
                f"archive {str(path)!r} holds no benchmark_data/*.csv (is it the MoleculeACE wheel?)"
            )
        stems = {m: Path(m).stem for m in members}
        return {stems[m]: _Source(stems[m], f"{path}!{m}", partial(_read_member, path, m)) for m in members}
    if path.suffix.lower() == ".csv":
        return {path.stem: _Source(path.stem, str(path), partial(_read_file, path))}
    raise ValueError(
        f"path_or_dir must be a folder of CSVs, a .csv file or the MoleculeACE wheel, got {str(path)!r}"
    )


def list_moleculeace_targets(path_or_dir: str | Path | None = None) -> tuple[str, ...]:
    """Names of the targets (CSV file stems, e.g. ``"CHEMBL231_Ki"``) available at ``path_or_dir``."""
    return tuple(sorted(_sources(path_or_dir)))


def _read_rows(source: _Source, *, need_potency: bool) -> list[tuple[int, str, float]]:
    """``(line number, smiles, exp_mean [nM] or nan)`` of each data row of a MoleculeACE CSV."""
    text = source.read_text()
    reader = csv.DictReader(io.StringIO(text))
    columns = [c for c in (reader.fieldnames or [])]
    required = [_SMILES, _POTENCY] if need_potency else [_SMILES]
    missing = [c for c in required if c not in columns]
    if missing:
        raise ValueError(
            f"{source.where}: missing column(s) {missing} (MoleculeACE layout: smiles, exp_mean [nM], y, "
            f"cliff_mol, split); columns found: {columns}"
        )
    rows: list[tuple[int, str, float]] = []
    for line, row in enumerate(reader, start=2):
        potency = math.nan
        if need_potency:
            raw = row.get(_POTENCY)
            try:
                potency = float(raw) if raw is not None else math.nan
            except ValueError:
                potency = math.nan
            if not (math.isfinite(potency) and potency > 0):
                raise ValueError(
                    f"{source.where}, line {line}: {_POTENCY!r} must be a positive number, got {raw!r}"
                )
        rows.append((line, (row.get(_SMILES) or "").strip(), potency))
    return rows


def _parse(
    rows: list[tuple[int, str, float]], source: _Source, *, strict: bool
) -> list[tuple[str, Any, str, float]]:
    """``(canonical smiles, RDKit mol, smiles as read, potency)``; unparsable rows skipped (or raised)."""
    Chem = _rdkit()
    from rdkit import rdBase

    parsed: list[tuple[str, Any, str, float]] = []
    bad: list[tuple[int, str]] = []
    seen: set[str] = set()
    with rdBase.BlockLogs():  # RDKit reports parse errors on stderr; counted here instead
        for line, smiles, potency in rows:
            mol = Chem.MolFromSmiles(smiles) if smiles else None
            if mol is None or mol.GetNumAtoms() == 0:
                if strict:
                    raise ValueError(f"{source.where}, line {line}: RDKit cannot parse the SMILES {smiles!r}")
                bad.append((line, smiles))
                continue
            key = Chem.MolToSmiles(mol)
            if key in seen:  # the same molecule twice in one file: keep the first row
                continue
            seen.add(key)
            parsed.append((key, mol, smiles, potency))
    if bad:
        line, smiles = bad[0]
        warnings.warn(
            f"{source.where}: skipped {len(bad)} SMILES that RDKit cannot parse "
            f"(first: line {line}, {smiles!r})",
            UserWarning,
            stacklevel=3,
        )
    return parsed


def _atom_features(mol: Any, element_index: dict[int, int]) -> np.ndarray:
    n_el = len(element_index)
    x = np.zeros((mol.GetNumAtoms(), n_el + _DEGREE_BINS + _HYDROGEN_BINS + 1), dtype=np.float32)
    for atom in mol.GetAtoms():
        i = atom.GetIdx()
        x[i, element_index[atom.GetAtomicNum()]] = 1.0
        x[i, n_el + min(atom.GetDegree(), _DEGREE_BINS - 1)] = 1.0
        x[i, n_el + _DEGREE_BINS + min(atom.GetTotalNumHs(), _HYDROGEN_BINS - 1)] = 1.0
        x[i, -1] = float(atom.GetIsAromatic())
    return x


def _bonds(mol: Any) -> tuple[np.ndarray, np.ndarray]:
    """``edge_index (2, 2B)`` with each bond both ways, and ``edge_attr (2B, 4)`` bond-type one-hot."""
    src: list[int] = []
    dst: list[int] = []
    types: list[int] = []
    for bond in mol.GetBonds():
        a, b = bond.GetBeginAtomIdx(), bond.GetEndAtomIdx()
        name = str(bond.GetBondType())
        t = _BOND_TYPES.index(name) if name in _BOND_TYPES else 0  # dative / other bonds: as single
        src += [a, b]
        dst += [b, a]
        types += [t, t]
    edge_index = np.array([src, dst], dtype=np.int64).reshape(2, -1)
    edge_attr = np.zeros((len(types), len(_BOND_TYPES)), dtype=np.float32)
    edge_attr[np.arange(len(types)), types] = 1.0
    return edge_index, edge_attr


def _element_index(mols: Sequence[Any], elements: Sequence[str] | None) -> dict[int, int]:
    Chem = _rdkit()
    table = Chem.GetPeriodicTable()
    present = sorted({atom.GetAtomicNum() for mol in mols for atom in mol.GetAtoms()})
    if elements is None:
        return {z: i for i, z in enumerate(present)}
    numbers: list[int] = []
    for symbol in elements:
        try:
            numbers.append(int(table.GetAtomicNumber(str(symbol))))
        except (RuntimeError, ValueError) as err:
            raise ValueError(f"elements: unknown element symbol {symbol!r}") from err
    if len(set(numbers)) != len(numbers):
        raise ValueError(f"elements must not repeat a symbol, got {list(elements)}")
    uncovered = [table.GetElementSymbol(z) for z in present if z not in numbers]
    if uncovered:
        raise ValueError(
            f"elements={list(elements)} does not cover the elements {uncovered} of the molecules"
        )
    return {z: i for i, z in enumerate(numbers)}


def smiles_to_graph(smiles: str, *, elements: Sequence[str] = ("C", "N", "O", "F", "S", "Cl")) -> Any:
    """One molecule as ``torch_geometric.data.Data(x, edge_index, edge_attr, smiles)`` (features as above).

    Example:
        >>> g = smiles_to_graph("c1ccccc1O")
        >>> g.num_nodes, g.edge_index.shape[1], g.x.shape[1]
        (7, 14, 17)
    """
    import torch
    from torch_geometric.data import Data

    Chem = _rdkit()
    from rdkit import rdBase

    with rdBase.BlockLogs():
        mol = Chem.MolFromSmiles(smiles) if smiles else None
    if mol is None or mol.GetNumAtoms() == 0:
        raise ValueError(f"RDKit cannot parse the SMILES {smiles!r}")
    index = _element_index([mol], elements)
    edge_index, edge_attr = _bonds(mol)
    return Data(
        x=torch.from_numpy(_atom_features(mol, index)),
        edge_index=torch.from_numpy(edge_index),
        edge_attr=torch.from_numpy(edge_attr),
        smiles=smiles,
    )


def read_moleculeace(
    path_or_dir: str | Path | None = None,
    *,
    task: str = "targets",
    targets: Sequence[str] | None = None,
    max_per_target: int | None = None,
    threshold_nM: float | None = None,
    elements: Sequence[str] | None = None,
    strict: bool = False,
    seed: int = 0,
) -> GraphDataset:
    """A graph-classification dataset from MoleculeACE target CSVs (tasks and features: module docstring).

    Args:
        path_or_dir: a folder of ``CHEMBL*.csv`` in MoleculeACE's layout, one such CSV, the
            ``MoleculeACE`` wheel (read as a zip, nothing installed), or ``None`` for the installed
            package (:func:`find_moleculeace`).
        task: ``"targets"`` (one class per target) or ``"activity"`` (active / inactive on one target).
        targets: target names (CSV stems such as ``"CHEMBL231_Ki"``); at least 2 distinct for
            ``"targets"`` (default :data:`DEFAULT_TARGETS`), exactly 1 for ``"activity"``
            (default :data:`DEFAULT_ACTIVITY_TARGET`).
        max_per_target: keep at most this many molecules per target (uniformly at random with
            ``seed``, after de-duplication, file order kept); ``None`` keeps all.
        threshold_nM: activity cut in nM (``"activity"`` only); ``None`` = the target's median
            potency (computed on all its parsed molecules, before ``max_per_target``).
        elements: element symbols of the one-hot vocabulary, in order (must cover the molecules);
            ``None`` = the elements present, by atomic number.
        strict: raise on a SMILES RDKit cannot parse instead of skipping it with a warning.
        seed: seed of the ``max_per_target`` subsample.

    Returns:
        ``GraphDataset`` with ``graphs`` in target order then file order, ``labels: (N,)`` int64,
        ``class_names`` (the targets, or ``("inactive", "active")``), ``num_features = F`` and
        ``name`` ``"MoleculeACE-targets"`` or ``"MoleculeACE-activity-<target>"``.
    """
    import torch
    from torch_geometric.data import Data

    from hardneg.data.graphs.dataset import GraphDataset

    if task not in _TASKS:
        raise ValueError(f"task must be one of {_TASKS}, got {task!r}")
    if max_per_target is not None and (
        isinstance(max_per_target, bool) or not isinstance(max_per_target, int) or max_per_target < 1
    ):
        raise ValueError(f"max_per_target must be None or an int >= 1, got {max_per_target!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be an int >= 0, got {seed!r}")
    if threshold_nM is not None:
        if task != "activity":
            raise ValueError(f"threshold_nM applies to task='activity' only, got task={task!r}")
        if isinstance(threshold_nM, bool) or not (
            isinstance(threshold_nM, int | float) and math.isfinite(threshold_nM) and threshold_nM > 0
        ):
            raise ValueError(f"threshold_nM must be a positive finite number of nM, got {threshold_nM!r}")
    if targets is None:
        chosen = DEFAULT_TARGETS if task == "targets" else (DEFAULT_ACTIVITY_TARGET,)
    elif isinstance(targets, str):
        chosen = (targets,)
    else:
        chosen = tuple(targets)
    if task == "targets" and len(set(chosen)) < 2:
        raise ValueError(f"task='targets' needs at least 2 distinct targets, got targets={list(chosen)}")
    if task == "targets" and len(set(chosen)) != len(chosen):
        raise ValueError(f"targets must not repeat a target, got {list(chosen)}")
    if task == "activity" and len(chosen) != 1:
        raise ValueError(f"task='activity' needs exactly 1 target, got targets={list(chosen)}")

    sources = _sources(path_or_dir)
    unknown = [t for t in chosen if t not in sources]
    if unknown:
        raise ValueError(f"unknown target(s) {unknown}; valid targets: {sorted(sources)}")

    need_potency = task == "activity"
    per_target = [
        _parse(_read_rows(sources[t], need_potency=need_potency), sources[t], strict=strict) for t in chosen
    ]
    if task == "targets":
        counts: dict[str, int] = {}
        for mols in per_target:
            for key, *_ in mols:
                counts[key] = counts.get(key, 0) + 1
        per_target = [[m for m in mols if counts[m[0]] == 1] for mols in per_target]
    for t, mols in zip(chosen, per_target):
        if not mols:
            raise ValueError(f"target {t!r} ({sources[t].where}) has no usable molecules left")

    rng = np.random.default_rng(seed)
    if task == "targets":
        labelled = []
        for c, mols in enumerate(per_target):
            labelled += [(m, c) for m in _subsample(mols, max_per_target, rng)]
        class_names = tuple(chosen)
        name = "MoleculeACE-targets"
    else:
        mols = per_target[0]
        cut = float(np.median([m[3] for m in mols])) if threshold_nM is None else float(threshold_nM)
        labelled = [(m, int(m[3] <= cut)) for m in _subsample(mols, max_per_target, rng)]
        if len({c for _, c in labelled}) < 2:
            raise ValueError(
                f"{sources[chosen[0]].where}: threshold_nM={cut!r} puts every molecule of {chosen[0]!r} in "
                "one class (1 class); choose another threshold"
            )
        class_names = ("inactive", "active")
        name = f"MoleculeACE-activity-{chosen[0]}"

    index = _element_index([m[1] for m, _ in labelled], elements)
    graphs = []
    for (_, mol, smiles, _), c in labelled:
        edge_index, edge_attr = _bonds(mol)
        graphs.append(
            Data(
                x=torch.from_numpy(_atom_features(mol, index)),
                edge_index=torch.from_numpy(edge_index),
                edge_attr=torch.from_numpy(edge_attr),
                y=torch.tensor([c], dtype=torch.int64),
                smiles=smiles,
            )
        )
    labels = np.array([c for _, c in labelled], dtype=np.int64)
    return GraphDataset(
        graphs=graphs,
        labels=labels,
        class_names=class_names,
        num_features=len(index) + _DEGREE_BINS + _HYDROGEN_BINS + 1,
        name=name,
    )


def _subsample(items: list[Any], limit: int | None, rng: np.random.Generator) -> list[Any]:
    if limit is None or len(items) <= limit:
        return items
    keep = np.sort(rng.choice(len(items), size=limit, replace=False))
    return [items[i] for i in keep]
