"""A labelled data set of 1 class is refused when it is loaded, before any training, naming the file
(issue 33, item 8): IDX labels (tests/data/test_idx.py), TU graph labels, article ids, SentEval task
labels and MoleculeACE activity classes."""

from __future__ import annotations

from pathlib import Path

import pytest

from hardneg.modalities import get_modality
from hardneg.pipeline.config import load_config


def _tu(root: Path, name: str, labels: list[int]) -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    indicator = [g + 1 for g in range(len(labels)) for _ in range(2)]
    edges = [(2 * g + a, 2 * g + b) for g in range(len(labels)) for a, b in ((1, 2), (2, 1))]
    (folder / f"{name}_graph_indicator.txt").write_text("\n".join(map(str, indicator)) + "\n")
    (folder / f"{name}_A.txt").write_text("\n".join(f"{a}, {b}" for a, b in edges) + "\n")
    (folder / f"{name}_graph_labels.txt").write_text("\n".join(map(str, labels)) + "\n")
    return folder / f"{name}_graph_labels.txt"


def test_the_tu_reader_refuses_one_class_whatever_the_evaluation(tmp_path: Path) -> None:
    from hardneg.data.graphs.tu import read_tu

    labels = _tu(tmp_path, "ONE", [-1] * 8)
    with pytest.raises(ValueError) as err:
        read_tu(tmp_path, "ONE")
    assert str(err.value).startswith(f"{labels}: every graph is of class '-1' (1 class); ")
    cfg = load_config("graphs", ["data.dataset=tu", f"data.root={tmp_path}", "data.name=ONE",
                                 "eval.svm=false", "eval.logistic=false"])
    with pytest.raises(ValueError, match=r"\(1 class\)"):
        get_modality("tu").load(cfg)
    _tu(tmp_path, "TWO", [-1, 1] * 4)
    assert read_tu(tmp_path, "TWO").labels.tolist() == [0, 1] * 4


def test_an_article_corpus_of_one_article_says_1_class(tmp_path: Path) -> None:
    tsv = tmp_path / "one.tsv"
    tsv.write_text("".join(f"only\tsentence number {i} here .\n" for i in range(30)), encoding="utf-8")
    cfg = load_config("articles", ["data.text.source=tsv", f"data.root={tsv}", "eval.figures=false"])
    with pytest.raises(ValueError) as err:
        get_modality("articles").load(cfg)
    assert str(err.value).startswith(f"{tsv}: ") and "got 1 class" in str(err.value)


def test_a_senteval_task_of_one_class_says_1_class(tmp_path: Path) -> None:
    from hardneg.senteval.errors import SentEvalFormatError
    from hardneg.senteval.readers import read_task

    (tmp_path / "spam").mkdir()
    path = tmp_path / "spam" / "data.tsv"
    path.write_text("1\tone .\n1.0\ttwo .\n 1\tthree .\n", encoding="utf-8")  # one class once normalised
    with pytest.raises(SentEvalFormatError) as err:
        read_task("spam", tmp_path)
    assert str(err.value) == (
        f"{path}: task spam: every sentence is of class 1; its readout needs at least 2 classes, got 1 class"
    )


def test_a_molecule_activity_task_of_one_class_names_the_file(tmp_path: Path) -> None:
    pytest.importorskip("rdkit")
    from hardneg.data.graphs.molecules import read_moleculeace

    csv = tmp_path / "CHEMBL1_Ki.csv"
    csv.write_text("smiles,exp_mean [nM],y,cliff_mol,split\nCCO,5,1,0,train\nCCN,50,1,0,train\n")
    with pytest.raises(ValueError) as err:
        read_moleculeace(tmp_path, task="activity", targets="CHEMBL1_Ki", threshold_nM=1e6)
    assert str(err.value).startswith(f"{csv}: threshold_nM=1000000.0 puts every molecule of 'CHEMBL1_Ki' in "
                                     "one class (1 class)")
