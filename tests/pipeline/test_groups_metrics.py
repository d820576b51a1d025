"""The columns of ``compare`` / ``sweep`` tables come from each run's modality: a custom SentEval task's
``{task}_acc`` is listed, and the built-in modalities' tables are those of the former fixed list."""

from __future__ import annotations

from pathlib import Path

import pytest

from hardneg.pipeline.config import load_config
from hardneg.pipeline.groups import CompareResult, aggregate, format_table, paired_table, table_metrics
from hardneg.pipeline.run_folder import RunResult

# the columns every table showed before the modalities named them (the order of the former list)
FORMER = ("linear_top1", "knn_top1", "knn_top5", "mean_top1", "svm_cv", "logistic_cv", "mu_avg2", "mu_avg10",
          "mu5_top1", "mr_acc", "cr_acc", "subj_acc", "mpqa_acc", "trec_acc", "msrp_acc")
# what runs of each packaged config may report (the metrics the tables leave out included)
REPORTED = {
    "digits": ["kwise1_top1", "mean5shot_top1", "mean_top1", "knn_top5", "knn_top1", "linear_top1"],
    "latent_classes": ["mu5_avg2", "tr_avg2", "mu_avg10", "mu_top1", "mu5_top1", "mu_avg2", "kwise4_top1",
                       "mean_top1", "knn_top1", "knn_top5", "linear_top1"],
    "articles": ["mu5_top10", "mu5_top1", "mu_avg2", "tr_top1", "mu_avg10", "linear_top1", "mean_top1"],
    "graphs": ["logistic_cv_fold_std", "svm_cv_fold_std", "logistic_cv", "svm_cv"],
    "sentences": ["msrp_f1", "msrp_acc", "trec_acc", "subj_acc", "cr_acc", "mr_acc", "mpqa_acc"],
}


def _runs(
    metrics: list[str], labels: tuple[str, ...] = ("a", "b"), seeds: int = 3
) -> dict[str, list[RunResult]]:
    """Seeds of each label with distinct values (a label's seed s: 0.5 + 0.01 s + 0.1 label, per metric)."""
    return {
        label: [RunResult(run_dir=Path(f"{label}/seed{s}"), history=[],
                          eval={m: 0.5 + 0.01 * s + 0.1 * i + 0.001 * j for j, m in enumerate(metrics)})
                for s in range(seeds)]
        for i, label in enumerate(labels)
    }


@pytest.mark.parametrize("config", sorted(REPORTED))
def test_built_in_tables_are_those_of_the_former_fixed_columns(config: str) -> None:
    cfg = load_config(config)
    table = aggregate(_runs(REPORTED[config]))
    metrics = table_metrics([cfg])
    assert format_table(table, metrics=metrics, seeds=3) == format_table(table, metrics=FORMER, seeds=3)
    shown = [m for m in FORMER if m in REPORTED[config]]
    assert format_table(table, metrics=metrics).splitlines()[0] == f"| strategy | {' | '.join(shown)} |"


def _custom_senteval(root: Path) -> Path:
    lines = [f"{label}\t{label} sentence number {i}" for i in range(8) for label in ("ham", "spam")]
    (root / "spam").mkdir(parents=True)
    (root / "spam" / "data.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root


def test_a_custom_senteval_task_s_metric_is_a_column_of_compare(tmp_path: Path) -> None:
    folder = _custom_senteval(tmp_path / "senteval")
    cfg = load_config("sentences", [f"eval.senteval={folder}", "eval.senteval_tasks=[spam]"])
    assert table_metrics([cfg])[-1] == "spam_acc"
    runs = _runs(["spam_acc", "spam_f1"], labels=("simclr", "hard"))
    result = CompareResult(root=tmp_path, runs=runs, table=aggregate(runs), metrics=table_metrics([cfg]))
    lines = format_table(result.table, metrics=result.metrics, seeds=3).splitlines()
    assert lines[:2] == ["| strategy | spam_acc |", "|---|---|"]
    # mean ± sample std (ddof = 1) of 0.5 + 0.01 s (+ 0.1 for the second label), s = 0, 1, 2, in %
    assert lines[2] == "| simclr | 51.00 ± 1.00 |" and lines[3] == "| hard | 61.00 ± 1.00 |"
    assert "spam_acc" in paired_table(result)
    # every task of the folder when none is named
    whole = load_config("sentences", [f"eval.senteval={folder}"])
    assert "spam_acc" in table_metrics([whole])
