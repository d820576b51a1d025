"""Run a benchmark script on another revision and on the working tree, back to back.

``python benchmarks/before_after.py REV benchmarks/bench_core.py [ARGS...]`` checks out ``REV``
into a temporary git worktree, runs the script from the working tree with ``PYTHONPATH`` set to
that revision's ``src`` ("before"), then with the working tree's ``src`` ("after"), and prints
both outputs. The two runs are sequential on the same machine minutes apart: compare the
*ratios* each run prints, not absolute times.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run(src: Path, script: str, args: list[str]) -> str:
    env = {**os.environ, "PYTHONPATH": str(src)}
    done = subprocess.run([sys.executable, script, *args], cwd=ROOT, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        return f"(failed with exit code {done.returncode})\n{done.stderr[-2000:]}"
    return done.stdout


def main() -> None:
    if len(sys.argv) < 3:
        raise SystemExit("usage: python benchmarks/before_after.py REV SCRIPT [ARGS...]")
    rev, script, args = sys.argv[1], sys.argv[2], sys.argv[3:]
    with tempfile.TemporaryDirectory() as tmp:
        tree = Path(tmp) / "before"
        subprocess.run(["git", "worktree", "add", "--detach", "-q", str(tree), rev], cwd=ROOT, check=True)
        try:
            print(f"=== before ({rev}) ===", flush=True)
            print(run(tree / "src", script, args), flush=True)
            print("=== after (working tree) ===", flush=True)
            print(run(ROOT / "src", script, args), flush=True)
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=ROOT, check=False)


if __name__ == "__main__":
    main()
