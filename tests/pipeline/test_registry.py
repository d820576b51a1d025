"""A distribution defined outside the package is registered from the user's module and trains
through the CLI; a config key that does not belong to the chosen component is refused."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from hardneg.config import ConfigError
from hardneg.pipeline.config import load_config
from hardneg.pipeline.history import read_history
from hardneg.pipeline.registry import NEGATIVES

from .helpers import tiny

PLUGIN = textwrap.dedent(
    """
    from hardneg.negatives import NegativeDistribution, normalize_log_weights
    from hardneg.pipeline.registry import register_negatives


    class Farthest(NegativeDistribution):
        '''Up-weights the least similar candidates: w ∝ exp(−gamma·s).'''

        def __init__(self, *, gamma: float = 1.0):
            super().__init__()
            if gamma < 0:
                raise ValueError(f"gamma must be >= 0, got {gamma}")
            self.gamma = gamma

        def log_weights(self, scores):
            return normalize_log_weights(-self.gamma * scores.logits, scores.mask)


    register_negatives("farthest", Farthest, description="a test plugin")
    """
)


@pytest.fixture
def plugin_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "plugins"
    folder.mkdir()
    (folder / "my_negatives.py").write_text(PLUGIN)
    monkeypatch.syspath_prepend(str(folder))
    yield folder
    NEGATIVES.unregister("farthest")
    sys.modules.pop("my_negatives", None)


def test_user_distribution_validates_through_imports(plugin_dir: Path) -> None:
    cfg = load_config(
        "digits", ["imports=[my_negatives]", "loss.negatives.name=farthest", "loss.negatives.gamma=2"]
    )
    assert cfg.loss.negatives == {"name": "farthest", "gamma": 2.0}
    with pytest.raises(
        ConfigError, match=r"unknown config key 'loss.negatives.beta'; valid keys in 'loss.negatives': gamma"
    ):
        load_config(
            "digits", ["imports=[my_negatives]", "loss.negatives.name=farthest", "loss.negatives.beta=1"]
        )
    with pytest.raises(ConfigError, match=r"'loss.negatives' \(farthest\): gamma must be >= 0, got -1"):
        load_config(
            "digits", ["imports=[my_negatives]", "loss.negatives.name=farthest", "loss.negatives.gamma=-1"]
        )


def test_missing_plugin_module_is_named() -> None:
    with pytest.raises(ConfigError, match=r"'imports': cannot import module 'no_such_plugin_xyz'"):
        load_config("digits", ["imports=[no_such_plugin_xyz]"])


@pytest.mark.slow
def test_user_distribution_trains_one_epoch_through_the_cli(plugin_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    env_path = f"{plugin_dir}"
    cmd = [
        sys.executable,
        "-m",
        "hardneg.cli",
        "train",
        "digits",
        *tiny("train.epochs=1", "eval.figures=false"),
        "imports=[my_negatives]",
        "loss.negatives.name=farthest",
        "loss.negatives.gamma=2.0",
        "--out",
        str(out),
        "-q",
    ]
    import os

    env = {**os.environ, "PYTHONPATH": env_path + os.pathsep + os.environ.get("PYTHONPATH", "")}
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    history = read_history(out / "metrics.csv")
    assert len(history) == 1 and history[0]["loss"] > 0
    assert 0 < history[0]["ess_fraction"] < 1  # non-uniform weights were used
    assert "farthest(gamma=2.0)" in (out / "summary.md").read_text()
