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


@pytest.mark.slow
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


def _command_paths() -> list[list[str]]:
    """Every command and sub-command of ``hardneg`` as the words that invoke it (the root is ``[]``)."""
    import typer.main

    from hardneg.cli import app

    paths: list[list[str]] = []

    def walk(command, path: list[str]) -> None:  # type: ignore[no-untyped-def]
        paths.append(path)
        for name, sub in getattr(command, "commands", {}).items():
            walk(sub, [*path, name])

    walk(typer.main.get_command(app), [])
    return paths


def test_minus_h_is_help_on_every_command() -> None:
    from typer.testing import CliRunner

    from hardneg.cli import app

    paths = _command_paths()
    assert ["theory", "optimal-k"] in paths and ["data", "wiki"] in paths and len(paths) >= 20
    for path in paths:
        short, long = CliRunner().invoke(app, [*path, "-h"]), CliRunner().invoke(app, [*path, "--help"])
        assert short.exit_code == 0, (path, short.output)
        assert short.output == long.output and short.output.startswith("Usage: "), path
        assert "-h, --help" in short.output, path


def test_python_minus_m_hardneg_is_the_hardneg_command() -> None:
    from hardneg import __version__

    version = subprocess.run([sys.executable, "-m", "hardneg", "--version"], env=cli_env(),
                             capture_output=True, text=True, timeout=120)
    assert (version.returncode, version.stdout.strip()) == (0, f"hardneg {__version__}"), version.stderr
    shown = subprocess.run([sys.executable, "-m", "hardneg", "-h"], env=cli_env(), capture_output=True,
                           text=True, timeout=120)
    assert shown.returncode == 0 and shown.stdout.startswith("Usage: python -m hardneg "), shown.stderr
    assert all(f"  {name} " in shown.stdout for name in ("train", "config", "theory", "data")), shown.stdout


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["theory", "optimal-k", "--classes", "-3"],
         "error: invalid value for '--classes': must be an integer >= 2, got -3"),
        (["theory", "collision", "-C", "3", "-K", "-1"],
         "error: invalid value for '--negatives': must be an integer >= 0, got -1"),
        (["theory", "tammes", "--points", "1"],
         "error: invalid value for '--points': must be an integer >= 2, got 1"),
        (["data", "wiki", "out.tsv", "--sample", "--min-sentences", "3", "--max-sentences", "1"],
         "error: invalid value for '--max-sentences': must be an int >= --min-sentences = 3, got 1"),
    ],
)
def test_errors_name_the_option_not_the_library_s_parameter(args: list[str], line: str, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from typer.testing import CliRunner

    from hardneg.cli import app

    result = CliRunner().invoke(app, [a.replace("out.tsv", str(tmp_path / "out.tsv")) for a in args])
    assert result.exit_code == 2 and result.stderr.strip() == line, result.output


def test_every_option_name_is_one_option() -> None:
    """The parameter → option map is read from the commands; each parameter is the same option
    wherever it appears (else the map could not name it)."""
    import typer.main

    from hardneg.cli._options import option_names
    from hardneg.cli.data import app as data_app
    from hardneg.cli.theory import app as theory_app

    for sub in (theory_app, data_app):
        group = typer.main.get_command(sub)
        commands = [group, *group.commands.values()]  # type: ignore[attr-defined]
        every = {p.name for c in commands for p in c.params if any(o.startswith("--") for o in p.opts)}
        assert set(option_names(sub)) == every
    assert option_names(theory_app)["classes"] == "--classes"


def test_theory_figures_into_a_file_is_one_error_line(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from typer.testing import CliRunner

    from hardneg.cli import app

    target = tmp_path / "a-file"
    target.write_text("x")
    result = CliRunner().invoke(app, ["theory", "figures", str(target / "figs")])
    assert result.exit_code == 2, result.output
    assert result.stderr.strip() == f"error: Not a directory: '{target / 'figs'}'", result.stderr


def test_the_help_of_commands_reading_configs_says_imports_run_code() -> None:
    from typer.testing import CliRunner

    from hardneg.cli import app

    for command in ("config", "train", "compare", "sweep"):
        shown = " ".join(CliRunner().invoke(app, [command, "--help"]).output.split())
        assert "`imports:` lists are imported first, which runs their code" in shown, command
    shown = " ".join(CliRunner().invoke(app, ["config", "--help"]).output.split())
    assert "importing a module runs the code at its top level" in shown
    shown = " ".join(CliRunner().invoke(app, ["evaluate", "--help"]).output.split())
    assert "lists under `imports:` are imported, which runs their code" in shown
