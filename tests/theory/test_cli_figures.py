"""CLI via typer's CliRunner on the theory app; figures are written as non-empty PNGs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from tests.reference.images import assert_png_has_content
from typer.testing import CliRunner

from hardneg.cli.theory import app
from hardneg.figures.theory import ash_coefficient_figure, ash_example_figure

runner = CliRunner()
PNG = b"\x89PNG\r\n\x1a\n"


def test_optimal_k() -> None:
    res = runner.invoke(app, ["optimal-k", "--classes", "100"])
    assert res.exit_code == 0, res.output
    assert "99, 100" in res.output


def test_collision_and_coefficients() -> None:
    res = runner.invoke(app, ["collision", "--classes", "10", "--negatives", "5"])
    assert res.exit_code == 0
    assert f"{1 - 0.9**5:.6g}" in res.output
    res = runner.invoke(app, ["ash-coefficient", "--classes", "10", "--negatives", "10"])
    assert res.exit_code == 0 and "29.2082" in res.output
    res = runner.invoke(app, ["ash-coefficient", "-C", "10", "-K", "10", "--ceil"])
    assert "34.4157" in res.output
    res = runner.invoke(app, ["arora-coefficients", "--negatives", "1", "--classes", "4"])
    assert res.exit_code == 0 and "alpha     1" in res.output


def test_errors_exit_code_2() -> None:
    res = runner.invoke(app, ["optimal-k", "--classes", "1"])
    assert res.exit_code == 2
    assert "invalid value for '--classes': must be an integer >= 2, got 1" in res.output
    res = runner.invoke(app, ["hcl-bound", "--epsilon", "2", "--classes", "3"])
    assert res.exit_code == 2 and "epsilon" in res.output


def test_hcl_tammes_crossings_ot() -> None:
    res = runner.invoke(app, ["hcl-bound", "--epsilon", "1.0", "--classes", "10"])
    assert res.exit_code == 0 and "vacuous" in res.output
    res = runner.invoke(app, ["tammes", "--points", "4", "--objective", "maxmin", "--steps", "200",
                              "--restarts", "3"])
    assert res.exit_code == 0 and "109.47" in res.output
    res = runner.invoke(app, ["crossings", "--r", "0.1"])
    assert res.exit_code == 0 and "0.0540074" in res.output and "2.75929" in res.output
    res = runner.invoke(app, ["ot-value", "--q", "256"])
    assert res.exit_code == 0 and "5.54908" in res.output


def test_report_npz_and_folder(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    y = rng.integers(0, 4, 400)
    f = np.eye(4)[y] + 0.1 * rng.normal(size=(400, 4))
    np.savez(tmp_path / "features.npz", features=f, labels=y)
    res = runner.invoke(app, ["report", str(tmp_path / "features.npz"), "--plain",
                              "--tuples", "2000", "-K", "2"])
    assert res.exit_code == 0, res.output
    assert "Ash Theorem 1" in res.output and "s(f)" in res.output
    out = tmp_path / "rep.json"
    res = runner.invoke(app, ["report", str(tmp_path), "--tuples", "2000", "--json", str(out)])
    assert res.exit_code == 0, res.output
    assert out.exists() and '"bounds"' in out.read_text()
    res = runner.invoke(app, ["report", str(tmp_path / "nope.npz")])
    assert res.exit_code == 2


def test_figures_command(tmp_path: Path) -> None:
    res = runner.invoke(app, ["figures", str(tmp_path / "figs")])
    assert res.exit_code == 0, res.output
    for name in ("ash_coefficient.png", "ash_f1_f2.png"):
        assert_png_has_content(tmp_path / "figs" / name)
    assert not [q for q in (tmp_path / "figs").iterdir() if q.name.startswith(".")]


def test_figure_functions(tmp_path: Path) -> None:
    assert_png_has_content(ash_coefficient_figure(tmp_path / "a.png", classes=(5, 20)))
    assert_png_has_content(ash_example_figure(tmp_path / "b.png", num_classes=20, rs=(0.2,)))
    with pytest.raises(ValueError, match="classes"):
        ash_coefficient_figure(tmp_path / "c.png", classes=(1,))
    assert not (tmp_path / "c.png").exists()
