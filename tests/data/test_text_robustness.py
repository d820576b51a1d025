"""Real text is accepted (issue 33, item 7; item 9's message): control characters judged per file,
byte-order marks dropped by every text reader, SentEval labels normalised or refused as ambiguous,
and ``hardneg data wiki`` naming the output the user gave."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

BOM = b"\xef\xbb\xbf"
WORDS = "cat dog ship rain bread chess king harbour storm oven".split()


def _sentences(n: int, seed: int = 0) -> list[str]:
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(WORDS, size=8).tolist()) + " ." for _ in range(n)]


# -- control characters: judged over the file, stray ones removed with one notice --------------------------


def _joke() -> str:
    """A 110-character line holding 12 bell characters (a joke spelled with ^G)."""
    line = "The terminal went " + "\a" * 12 + " and everyone in the office looked up from their desks"
    line += "." * (110 - len(line))
    assert len(line) == 110
    return line


def test_a_line_of_bells_in_a_real_article_folder_is_kept_without_the_bells(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from hardneg.data.text.corpus import read_article_folder

    folder = tmp_path / "jokes"
    folder.mkdir()
    lines = _sentences(40)
    lines[26] = _joke()
    (folder / "office.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (folder / "plain.txt").write_text("\n".join(_sentences(30, seed=1)) + "\n", encoding="utf-8")
    corpus = read_article_folder(folder)
    assert len(corpus) == 70 and corpus.num_articles == 2
    assert corpus.sentences[26] == _joke().replace("\a", "")
    assert capsys.readouterr().err.splitlines() == [
        f"notice: {folder / 'office.txt'}: removed 12 control character(s) (C0 controls or DEL), "
        "the first on line 27"
    ]


def test_a_file_mostly_of_control_characters_is_still_binary_data(tmp_path: Path) -> None:
    from hardneg.data.text.corpus import read_article_tsv

    path = tmp_path / "blob.tsv"
    path.write_bytes(b"a\tok fine\n" + b"b\t" + bytes(range(1, 9)) * 40 + b"\n")
    with pytest.raises(ValueError, match=rf"{path}, line 2: 320 control characters among the file's 331 "):
        read_article_tsv(path)


def test_a_nul_anywhere_is_binary_data_named_with_line_and_column(tmp_path: Path) -> None:
    from hardneg.data.text.corpus import read_article_tsv

    path = tmp_path / "zip.tsv"
    path.write_bytes(b"a\tone\nb\ttwo\x00three\n")
    with pytest.raises(ValueError, match=rf"^{path}, line 2: a NUL character at column 6: binary data"):
        read_article_tsv(path)


def test_a_documents_file_with_stray_controls_is_noticed_once_over_two_passes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from hardneg.data.text.documents import encode_documents

    lines = _sentences(12)
    lines[3] = "An escape \x1b[1mbold\x1b[0m word ."
    lines[6] = ""
    path = tmp_path / "docs.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    encoded = encode_documents(path)
    assert len(encoded) == 11
    assert not any("\x1b" in token for token in encoded.vocab.tokens)
    assert capsys.readouterr().err.splitlines() == [
        f"notice: {path}: removed 2 control character(s) (C0 controls or DEL), the first on line 4"
    ]


def test_a_senteval_file_with_a_stray_bell_is_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from hardneg.senteval.readers import read_task

    (tmp_path / "MR").mkdir()
    pos = "a fine film .\na \a ringing success .\n"
    (tmp_path / "MR" / "rt-polarity.pos").write_text(pos, encoding="utf-8")
    (tmp_path / "MR" / "rt-polarity.neg").write_text("a dull film .\n", encoding="utf-8")
    task = read_task("MR", tmp_path)
    assert task.sentences == ("a fine film .", "a ringing success .", "a dull film .")
    assert "rt-polarity.pos: removed 1 control character(s)" in capsys.readouterr().err


# -- byte-order marks: no reader makes a phantom label of one ----------------------------------------------


def test_a_bom_makes_no_phantom_article_in_a_tsv(tmp_path: Path) -> None:
    from hardneg.data.text.corpus import read_article_tsv

    text = "".join(f"art{i % 3}\t{s}\n" for i, s in enumerate(_sentences(12))).encode()
    (tmp_path / "plain.tsv").write_bytes(text)
    (tmp_path / "bom.tsv").write_bytes(BOM + text)
    plain, bom = read_article_tsv(tmp_path / "plain.tsv"), read_article_tsv(tmp_path / "bom.tsv")
    assert bom.articles == plain.articles == ("art0", "art1", "art2")
    assert bom.labels.tolist() == plain.labels.tolist()


def test_a_bom_is_dropped_by_the_folder_documents_and_nyt_readers(tmp_path: Path) -> None:
    from hardneg.data.text.corpus import read_article_folder
    from hardneg.data.text.documents import iter_documents
    from hardneg.data.text.nyt import read_nyt_editorials

    folder = tmp_path / "articles"
    folder.mkdir()
    (folder / "a.txt").write_bytes(BOM + b"First sentence .\nSecond one .\n")
    (folder / "b.txt").write_bytes(b"Other article .\n")
    assert read_article_folder(folder).sentences[0] == "First sentence ."
    docs = tmp_path / "docs.txt"
    docs.write_bytes(BOM + b"First sentence .\nSecond one .\n")
    assert next(iter_documents(docs))[0] == (1, "First sentence .")
    nyt = tmp_path / "nyt.txt"
    nyt.write_bytes(BOM + b"id\tsentiment\ttext\n1_1\t0.5\tOne .\n1_2\t0.1\tTwo .\n2_1\t-1\tThree .\n")
    assert read_nyt_editorials(nyt).articles == ("1", "2")


def test_a_bom_is_dropped_by_the_tu_and_moleculeace_readers(tmp_path: Path) -> None:
    from hardneg.data.graphs.molecules import _read_rows, _Source
    from hardneg.data.graphs.tu import read_tu

    folder = tmp_path / "BOM"
    folder.mkdir()
    (folder / "BOM_graph_indicator.txt").write_bytes(BOM + b"1\n1\n2\n2\n")
    (folder / "BOM_A.txt").write_bytes(BOM + b"1, 2\n2, 1\n3, 4\n4, 3\n")
    (folder / "BOM_graph_labels.txt").write_bytes(BOM + b"0\n1\n")
    assert read_tu(tmp_path, "BOM").labels.tolist() == [0, 1]
    csv = tmp_path / "CHEMBL1_Ki.csv"
    csv.write_bytes(BOM + b"smiles,exp_mean [nM],y,cliff_mol,split\nCCO,5.0,1,0,train\n")
    from hardneg.data.graphs.molecules import _read_file

    source = _Source("CHEMBL1_Ki", str(csv), lambda: _read_file(csv))
    assert _read_rows(source, need_potency=True) == [(2, "CCO", 5.0)]


# -- SentEval labels: normalised, or refused as ambiguous -------------------------------------------------


def _custom(tmp_path: Path, text: str, name: str = "spam") -> Path:
    (tmp_path / name).mkdir()
    path = tmp_path / name / "data.tsv"
    path.write_text(text, encoding="utf-8")
    return path


def test_labels_equal_as_numbers_are_one_class(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from hardneg.senteval.readers import read_task

    text = "1\tgood one .\n1.0\tgood two .\n 1\tgood three .\n0\tbad one .\n0.0\tbad two .\n"
    path = _custom(tmp_path, text)
    task = read_task("spam", tmp_path)
    assert task.classes == ("0", "1")
    assert task.labels.tolist() == [1, 1, 1, 0, 0]
    err = capsys.readouterr().err
    assert err.startswith(f"notice: {path}: task spam: labels equal as numbers read as one class: ")
    assert "'0', '0.0' as '0'" in err and "'1', '1.0' as '1'" in err


def test_labels_differing_only_in_case_are_ambiguous(tmp_path: Path) -> None:
    from hardneg.senteval.errors import SentEvalFormatError
    from hardneg.senteval.readers import read_task

    path = _custom(tmp_path, "pos\tgood .\nneg\tbad .\nPos\tfine .\n")
    with pytest.raises(SentEvalFormatError) as err:
        read_task("spam", tmp_path)
    assert str(err.value) == (
        f"{path}: line 3: task spam: label 'Pos' differs only in case from 'pos' (line 1): ambiguous, "
        "write every label of a class the same way"
    )


def test_split_task_labels_are_normalised_across_train_and_test(tmp_path: Path) -> None:
    from hardneg.senteval.readers import read_task

    (tmp_path / "topics").mkdir()
    (tmp_path / "topics" / "train.tsv").write_text("1\ta .\n2\tb .\n", encoding="utf-8")
    (tmp_path / "topics" / "test.tsv").write_text("2.0\tc .\n1\td .\n", encoding="utf-8")
    task = read_task("topics", tmp_path)
    assert task.classes == ("1", "2") and task.test_labels.tolist() == [1, 0]


# -- hardneg data wiki with a folder as the output (item 9) ------------------------------------------------


def test_hardneg_data_wiki_names_the_folder_given_as_output(tmp_path: Path) -> None:
    from hardneg.cli import app

    out = tmp_path / "corpus"
    out.mkdir()
    result = CliRunner().invoke(app, ["data", "wiki", str(out), "--sample"])
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        f"error: {out}: is a folder; OUT is the TSV file to write (e.g. {out / 'articles.tsv'})"
    )
    assert list(out.iterdir()) == []


def test_a_failed_write_names_the_output_not_a_temporary_file(tmp_path: Path) -> None:
    import errno

    from hardneg.cli.data import _write_naming

    out = tmp_path / "x.tsv"

    def failing() -> None:
        raise OSError(errno.EISDIR, "Is a directory", str(tmp_path / ".x.tsv.abc.tmp"))

    with pytest.raises(OSError) as err:
        _write_naming(out, failing)
    assert err.value.filename == str(out) and ".tmp" not in str(err.value)
