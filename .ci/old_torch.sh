#!/usr/bin/env bash
# The loss core on the oldest torch it supports (pyproject's floor): a venv of its own with
# torch==2.4.1 from PyPI (its Linux wheel carries CUDA libraries it loads at import, so they come
# along; no GPU is used), the package without dependencies, numpy and the test tools, then the
# core's tests (the loss engines, negatives, objectives, tiled engines, queue, GradCache,
# schedules). About 3 minutes of installs and 3 of tests on 2 cores. The distributed layouts
# (2 gloo processes) are tested on CI's torch only: under torch 2.4.1 and pytest-xdist a spawned
# pair hung at a collective.
# Usage: .ci/old_torch.sh [PYTHON]   (default python3)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${1:-python3}
OLD=torch==2.4.1
venv=.venv-oldtorch
t0=$SECONDS
step() { echo "old_torch: [$((SECONDS - t0)) s] $*"; }

step "a venv with $OLD"
"$PY" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --upgrade pip
"$venv/bin/python" -m pip install --quiet "$OLD"
"$venv/bin/python" -m pip install --quiet --no-deps -e .
"$venv/bin/python" -m pip install --quiet "numpy>=2.4" pytest pytest-xdist hypothesis pot scipy
"$venv/bin/python" -c "import torch, hardneg; print('old_torch: torch', torch.__version__, 'hardneg', hardneg.__version__)"

step "the core's tests"
"$venv/bin/python" -m pytest -q -n 2 -p no:cacheprovider \
    tests/loss tests/negatives tests/objectives tests/tiled \
    tests/test_queue.py tests/test_gradcache.py tests/test_lse.py tests/test_schedules.py
step "ok"
