"""Every script of examples/ runs at a tiny size (exit code 0, its closing line printed), and the
README and the docs' Examples page list every one."""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _run(args: list[str], timeout: float = 60) -> str:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"}
    proc = subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=timeout)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"{args} exited {proc.returncode}:\n{out[-4000:]}"
    return proc.stdout


def _needs(*modules: str) -> None:
    for module in modules:
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"{module} is not installed")


def test_every_example_has_a_docstring_and_tiny_size_arguments() -> None:
    scripts = sorted(EXAMPLES.glob("*.py"))
    assert len(scripts) >= 5
    for script in scripts:
        text = script.read_text(encoding="utf-8")
        assert text.startswith('"""'), f"{script.name} has no module docstring"
        assert "python " in text.split('"""')[1] or "torchrun" in text.split('"""')[1], (
            f"{script.name}'s docstring does not say how to run it")
        assert '"--steps"' in text and '"--batch-size"' in text, f"{script.name} lacks --steps/--batch-size"


def test_readme_and_docs_list_every_example() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    page = (ROOT / "docs" / "examples.md").read_text(encoding="utf-8")
    for script in EXAMPLES.glob("*.py"):
        assert script.name in readme, f"README.md's Examples section does not list {script.name}"
        assert script.name in page, f"docs/examples.md does not list {script.name}"


@pytest.mark.slow
def test_own_training_loop() -> None:
    out = _run(["examples/own_training_loop.py", "--steps", "5", "--batch-size", "32"])
    assert "final loss" in out


@pytest.mark.slow
def test_lightning_module() -> None:
    _needs("lightning")
    out = _run(["examples/lightning_module.py", "--steps", "3", "--batch-size", "16"])
    assert "trained 3 steps, final loss" in out


@pytest.mark.slow
@pytest.mark.parametrize("cached", [False, True])
def test_sentence_transformers_hard_negatives(cached: bool) -> None:
    _needs("sentence_transformers", "datasets")
    out = _run(["examples/sentence_transformers_hard_negatives.py", "--steps", "3", "--batch-size", "8",
                *(["--cached"] if cached else [])])
    name = "CachedHardNegativesRankingLoss" if cached else "HardNegativesRankingLoss"
    assert f"trained 3 steps with {name}" in out


@pytest.mark.slow
def test_ddp_torchrun_two_processes() -> None:
    out = _run(["-m", "torch.distributed.run", "--nnodes", "1", "--nproc_per_node", "2",
                "--master_addr", "127.0.0.1", "--master_port", str(_free_port()),
                "examples/ddp_torchrun.py", "--steps", "3", "--batch-size", "16"])
    assert "(2 processes, 64 views gathered)" in out
    assert "parameters equal on all ranks: True" in out


@pytest.mark.slow
def test_large_batch_tiled_gradcache() -> None:
    out = _run(["examples/large_batch_tiled_gradcache.py", "--steps", "1", "--batch-size", "1024",
                "--chunk-size", "256"])
    assert "B = 1024 pairs" in out
    assert "final loss" in out and "peak resident memory" in out
