"""Tiny-budget settings shared by the training and CLI tests (seconds per run on 2 cores)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

TINY = [
    "data.train_subset=256",
    "data.test_subset=120",
    "model.width=8",
    "model.feature_dim=16",
    "model.projection_dim=16",
    "model.hidden_dim=32",
    "train.epochs=1",
    "train.batch_size=64",
    "train.threads=1",
    "train.progress=false",
    "train.log_every_n_steps=1",
    "eval.knn_k=20",
    "eval.kwise=[1]",
    "eval.kwise_tasks=20",
    "eval.every_n_epochs=0",
]


def tiny(*extra: str) -> list[str]:
    """The tiny overrides, then ``extra`` (later keys win)."""
    return [*TINY, *extra]


def cli_env() -> dict[str, str]:
    """Environment of a ``python -m hardneg.cli`` subprocess: no progress bars, one thread."""
    env = dict(os.environ)
    env.update({"CI": "1", "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
                "PYTHONWARNINGS": "ignore"})
    return env


def run_cli(args: list[str], *, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run ``python -m hardneg.cli ARGS`` to completion."""
    return subprocess.run([sys.executable, "-m", "hardneg.cli", *args], cwd=cwd, env=cli_env(),
                          capture_output=True, text=True, timeout=300)
