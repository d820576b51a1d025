"""A Wikipedia XML dump -> sentences labelled by article (gensim's wikicorpus underneath)."""

from __future__ import annotations

import bz2
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hardneg.cli import app
from hardneg.data.text import read_article_tsv

pytest.importorskip("gensim")

from hardneg.data.text.wiki import build_wiki_corpus, find_gensim_wiki_sample

PAGE = """  <page>
    <title>{title}</title>
    <ns>0</ns>
    <id>{id}</id>
    <revision>
      <id>{id}0</id>
      <text xml:space="preserve">{text}</text>
    </revision>
  </page>
"""


def _dump(path: Path, pages: list[tuple[str, str]], *, compress: bool = True) -> Path:
    body = "".join(PAGE.format(title=t, id=i + 1, text=x) for i, (t, x) in enumerate(pages))
    xml = ('<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.10/" version="0.10" xml:lang="en">\n'
           f"{body}</mediawiki>\n")
    if compress:
        path.write_bytes(bz2.compress(xml.encode("utf-8")))
    else:
        path.write_text(xml, encoding="utf-8")
    return path


CATS = ("'''Cats''' are small [[carnivore|carnivorous]] mammals kept as pets. "
        "They sleep for most of the day in warm places.\n== Behaviour ==\n"
        "A cat grooms its fur with a rough tongue every day. Short one.\n"
        "{{Infobox animal|name=Cat}}\n* a list item that is not a sentence at all")
SHIPS = "Ships carry goods across the oceans of the world. The crew works in shifts on long voyages."


def test_builds_sentences_by_article_from_a_dump(tmp_path: Path) -> None:
    dump = _dump(tmp_path / "wiki.xml.bz2", [("Cat", CATS), ("Ship", SHIPS), ("Kitty", "#REDIRECT [[Cat]]"),
                                             ("Stub", "Too short.")])
    c = build_wiki_corpus(dump, min_words=5, min_sentences=2)
    assert c.articles == ("Cat", "Ship")  # the redirect and the one-sentence stub are left out
    assert c.sentences[:3] == [
        "Cats are small carnivorous mammals kept as pets.",
        "They sleep for most of the day in warm places.",
        "A cat grooms its fur with a rough tongue every day.",
    ]
    assert c.labels.tolist() == [0, 0, 0, 1, 1]
    plain = _dump(tmp_path / "wiki.xml", [("Ship", SHIPS)], compress=False)
    assert len(build_wiki_corpus(plain)) == 2
    capped = build_wiki_corpus(dump, max_sentences=2, seed=1)
    assert capped.sentences_per_article().tolist() == [2, 2]


def test_bad_dumps_name_the_file(tmp_path: Path) -> None:
    dump = _dump(tmp_path / "wiki.xml.bz2", [("Ship", SHIPS)])
    truncated = tmp_path / "cut.xml.bz2"
    truncated.write_bytes(dump.read_bytes()[: len(dump.read_bytes()) // 2])
    with pytest.raises(ValueError, match=r"cut\.xml\.bz2: not a readable Wikipedia XML dump"):
        build_wiki_corpus(truncated)
    junk = tmp_path / "junk.xml"
    junk.write_text("<mediawiki><page><title>x</title>")
    with pytest.raises(ValueError, match=r"junk\.xml: not a readable Wikipedia XML dump"):
        build_wiki_corpus(junk)
    with pytest.raises(ValueError, match="no article has 9 sentences"):
        build_wiki_corpus(dump, min_sentences=9)
    with pytest.raises(FileNotFoundError, match="no Wikipedia dump"):
        build_wiki_corpus(tmp_path / "absent.xml")
    with pytest.raises(ValueError, match="max_sentences must be an int >= min_sentences"):
        build_wiki_corpus(dump, min_sentences=3, max_sentences=2)


def test_cli_writes_a_tsv_the_pipeline_reads(tmp_path: Path) -> None:
    dump = _dump(tmp_path / "wiki.xml.bz2", [("Cat", CATS), ("Ship", SHIPS)])
    out = tmp_path / "wiki.tsv"
    result = CliRunner().invoke(app, ["data", "wiki", str(out), "--dump", str(dump)])
    assert result.exit_code == 0, result.output
    assert "5 sentences of 2 articles" in result.output
    assert read_article_tsv(out).articles == ("Cat", "Ship")
    both = CliRunner().invoke(app, ["data", "wiki", str(out), "--dump", str(dump), "--sample"])
    assert both.exit_code == 2 and "exactly one of --dump DUMP and --sample" in both.output


@pytest.mark.slow
@pytest.mark.skipif(find_gensim_wiki_sample() is None, reason="gensim's test dump not installed")
def test_the_real_106_article_dump() -> None:
    c = build_wiki_corpus(find_gensim_wiki_sample())
    counts = c.sentences_per_article()
    assert 100 <= c.num_articles <= 106 and 15_000 < len(c) < 22_000
    assert 100 < sorted(counts)[len(counts) // 2] < 170 and (counts >= 200).sum() >= 30
