"""Small surprises a user meets, each fixed: one ``error:`` prefix, booleans are not numbers, runs
named after their data, an MNIST config, warnings once per run."""

from __future__ import annotations

import subprocess
import sys
import warnings

import pytest
import torch

from hardneg.config.errors import ConfigError
from hardneg.pipeline.config import load_config, packaged_config_names
from tests.pipeline.helpers import cli_env


@pytest.mark.parametrize(
    ("args", "first"),
    [
        (["train", "digits", "--bogus"], "error: No such option: --bogus"),
        (["data", "wiki"], "error: Missing argument 'out'."),
        (["data", "wiki", "out.tsv", "--dump", "/nonexistent/dump.xml"], "error: no Wikipedia dump at"),
        (["config", "digits", "train.epochs=true"], "error: invalid value for 'train.epochs'"),
    ],
)
def test_every_failure_is_one_error_line(args: list[str], first: str, tmp_path) -> None:  # type: ignore[no-untyped-def]
    done = subprocess.run([sys.executable, "-m", "hardneg.cli", *args], cwd=tmp_path, env=cli_env(),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert lines[0].startswith(first), done.stderr
    assert all(not line.startswith(("Error", "╭", "Traceback")) for line in lines), done.stderr


@pytest.mark.parametrize("override", ["train.epochs=true", "model.width=false", "train.lr=true",
                                      "eval.knn_k=true"])
def test_a_boolean_is_not_a_number(override: str) -> None:
    with pytest.raises(ConfigError, match=r"must be a number, not a boolean"):
        load_config("digits", [override])


def test_booleans_still_set_boolean_keys() -> None:
    assert load_config("digits", ["eval.figures=false"]).eval.figures is False


def test_a_run_is_named_after_the_data_an_override_chose() -> None:
    tu = load_config("graphs", ["data.dataset=tu", "data.name=MUTAG", "data.root=/data/TU"])
    assert tu.name == "graphs-tu-MUTAG"
    assert load_config("fashion_mnist", ["data.dataset=mnist"]).name == "fashion_mnist-mnist"
    named = load_config("graphs", ["data.dataset=tu", "data.name=MUTAG", "data.root=/d", "name=mine"])
    assert named.name == "mine"
    assert load_config("graphs", []).name == "graphs"


def test_mnist_has_a_config_of_its_own() -> None:
    assert "mnist" in packaged_config_names()
    cfg = load_config("mnist", [])
    assert (cfg.name, cfg.data.dataset) == ("mnist", "mnist")


def test_a_sinkhorn_that_does_not_converge_warns_once_per_setting() -> None:
    from hardneg import ContrastiveLoss
    from hardneg.negatives import OptimalTransport

    loss = ContrastiveLoss(negatives=OptimalTransport(epsilon=0.05, max_iter=1), temperature=0.5)
    g = torch.Generator().manual_seed(0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")  # Python's default: a repeated text at one place shows once
        for _ in range(5):
            loss(torch.randn(32, 8, generator=g), torch.randn(32, 8, generator=g))
    ot = [w for w in caught if "Sinkhorn stopped" in str(w.message)]
    assert len(ot) == 1


def test_an_encoder_another_modality_takes_is_refused_naming_this_modality_s() -> None:
    with pytest.raises(ConfigError, match=r"'model.encoder': .*\(graphs\) takes one of \['gin'\], got 'gru'"):
        load_config("graphs", ["model.encoder=gru"])


def test_compare_lists_what_it_wrote_and_each_run_s_evaluation_time(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from typer.testing import CliRunner

    from hardneg.cli import app
    from tests.graphs.test_pipeline import TINY

    out = tmp_path / "cmp"
    result = CliRunner().invoke(app, [
        "compare", "graphs_compare", *TINY, "train.epochs=1", "data.graphs.num_graphs=30",
        "compare.seeds=[0]",
        "compare.strategies=[{name: infograph, overrides: {}}, {name: hard, overrides: "
        "{loss.negatives: {name: hard, beta: 2.0}}}]", "--out", str(out),
    ])
    assert result.exit_code == 0, result.output
    runs = [line for line in result.output.splitlines() if line.startswith("[")]
    assert len(runs) == 2 and all(": fit " in line and ", evaluate " in line for line in runs), runs
    listed = next(line for line in result.output.splitlines() if line.startswith("results:"))
    assert "figures" not in listed and "summary.md" in listed  # eval.figures=false: no figure written
    assert not (out / "figures").exists()
    assert "# Compare `graphs_compare` on motifs" in (out / "summary.md").read_text()


def test_version_and_help_read_plainly() -> None:
    """``hardneg --version`` prints the package version; flags in ``--help`` show no ``<bool>``."""
    from hardneg import __version__

    done = subprocess.run([sys.executable, "-m", "hardneg.cli", "--version"], env=cli_env(),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"hardneg {__version__}"
    for args in (["--help"], ["train", "--help"], ["theory", "--help"], ["data", "--help"]):
        shown = subprocess.run([sys.executable, "-m", "hardneg.cli", *args], env=cli_env(),
                               capture_output=True, text=True, timeout=120)
        assert shown.returncode == 0, shown.stderr
        assert "<bool>" not in shown.stdout and "--help" in shown.stdout, shown.stdout
