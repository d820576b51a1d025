"""The shared layers (``pipeline``, ``config``, ``cli``) know no modality: every metric, data set and
evaluation option comes from the modality that owns it (issue 46, item 5).

- a grep of the shared layers finds no metric name of a single modality, no data set name and not
  "images";
- a ``sweep`` of graphs draws its series figure from the graph modality's headline metrics (it was
  empty when the figure knew only the readouts' metrics);
- the progress line and ``hardneg evaluate``'s extra options are the modality's.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from hardneg.modalities import dataset_names, get_modality
from hardneg.pipeline import groups
from hardneg.pipeline.config import load_config, packaged_config_names

SRC = Path(__file__).resolve().parents[2] / "src" / "hardneg"
SHARED = ("pipeline", "config", "cli")
# data set names that are also ordinary English words, which the shared layers use as words
# ("random" seeds, "sentences" of a batch, "articles" of a corpus, "latent" classes)
ENGLISH = {"random", "sentences", "articles", "latent"}


def _modality_words() -> set[str]:
    """Every data set name and every metric a packaged config's modality tables, plus "images"."""
    words = set(dataset_names()) - ENGLISH
    for name in packaged_config_names():
        cfg = load_config(name)
        modality = get_modality(cfg.data.dataset)
        words |= set(modality.table_metrics(cfg)) | set(modality.headline_metrics(cfg))
    return words | {"images", "latent_table", "check_senteval_run"}


def test_the_shared_layers_name_no_metric_data_set_or_images() -> None:
    words = _modality_words()
    assert {"svm_cv", "knn_top1", "mr_acc", "digits", "cifar10", "motifs"} <= words  # the list is live
    pattern = re.compile(r"\b(" + "|".join(sorted(map(re.escape, words), key=len, reverse=True)) + r")\b")
    found = [
        f"{path.relative_to(SRC)}:{i}: {match.group(0)}"
        for layer in SHARED
        for path in sorted((SRC / layer).rglob("*.py"))
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        for match in pattern.finditer(line)
    ]
    assert found == []


def test_a_graphs_sweep_draws_a_non_empty_series_figure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    drawn: dict[str, dict[str, Any]] = {}
    real = groups.figures.curves

    def curves(series: dict[str, Any], path: Path, **kwargs: Any) -> None:
        drawn[Path(path).name] = series
        real(series, path, **kwargs)

    monkeypatch.setattr(groups.figures, "curves", curves)
    cfg = load_config("graphs", [
        "data.graphs.num_graphs=40", "train.epochs=1", "train.batch_size=16", "train.threads=1",
        "train.progress=false", "eval.cv_folds=3", "eval.logistic=false",
        "model.width=8", "model.layers=1",
        "sweep.grid={loss.negatives.beta: [0.0, 1.0]}", "sweep.seeds=[0]",
    ])
    lines: list[str] = []
    result = groups.run_sweep(cfg, tmp_path / "sweep", echo=lines.append)
    headline = get_modality(cfg.data.dataset).headline_metrics(cfg)
    assert result.headline == headline
    series = drawn["accuracy_vs_beta.png"]
    assert series, "the sweep's series figure has no line"
    assert {name.split(" ")[0] for name in series} == {groups.short_name(m) for m in headline
                                                         if any(m in r.eval for rs in result.runs.values()
                                                                for r in rs)}
    assert all([x for x, _, _ in points] == [0.0, 1.0] for points in series.values())
    assert (tmp_path / "sweep" / "figures" / "accuracy_vs_beta.png").stat().st_size > 0
    # the progress line names the graph modality's headline metrics
    progress = [line for line in lines if line.startswith("[")]
    assert len(progress) == 2 and all(f"{groups.short_name(headline[0])} " in line for line in progress)


def test_evaluate_options_come_from_the_modalities() -> None:
    from typer.testing import CliRunner

    from hardneg.cli import app

    help_text = CliRunner().invoke(app, ["evaluate", "--help"]).output
    declared = {o.flag for n in dataset_names() for o in get_modality(n).evaluate_options}
    assert declared and all(flag in help_text for flag in declared)
