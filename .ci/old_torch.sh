#!/usr/bin/env bash
# The loss core on the oldest torch it supports (pyproject's floor): a venv of its own with
# torch==2.4.1 from PyPI (its Linux wheel carries CUDA libraries it loads at import, so they come
# along; no GPU is used), the package without dependencies, numpy and the test tools, then the
# core's tests (the loss engines, negatives, objectives, tiled engines, queue, GradCache,
# schedules, supervised contrastive), then the distributed tests that spawn 2 gloo processes
# (tests/test_distributed.py, tests/distributed/test_layouts.py and test_local_warning.py) in a
# pytest call of their own without -n: under torch 2.4.1 and pytest-xdist a spawned pair hung at
# a collective. About 3 minutes of installs and 4 of tests on 2 cores.
# Disk: the venv takes about 5 GB (measured: 5.0 GB, torch 2.4.1 with its CUDA wheels), installed
# without pip's cache (which would hold the 2.5 GB of wheels a second time) in a temporary folder
# this script creates and removes on exit, so `make test` after it has the disk back. With less
# than NEED_GB free the step is skipped, loudly (a CI machine once ran out of space here; what the
# floor checks is then said not to have run, rather than failing the whole run on the disk).
# Usage: .ci/old_torch.sh [PYTHON]   (default python3)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${1:-python3}
OLD=torch==2.4.1
NEED_GB=${OLD_TORCH_NEED_GB:-7}
t0=$SECONDS
step() { echo "old_torch: [$((SECONDS - t0)) s] $*"; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
free_gb=$(df -Pk "$tmp" | awk 'NR == 2 { print int($4 / 1048576) }')
if [ "$free_gb" -lt "$NEED_GB" ]; then
    step "SKIPPED: $free_gb GB free where the venv would go ($tmp), $NEED_GB GB needed;" \
         "the core's tests on $OLD did NOT run on this machine"
    exit 0
fi
venv=$tmp/venv
pip_install() { "$venv/bin/python" -m pip install --quiet --no-cache-dir "$@"; }

step "a venv with $OLD ($free_gb GB free)"
"$PY" -m venv "$venv"
pip_install --upgrade pip
pip_install "$OLD"
pip_install --no-deps -e .
pip_install "numpy>=2.4" pytest pytest-xdist hypothesis pot scipy
"$venv/bin/python" -c "import torch, hardneg; print('old_torch: torch', torch.__version__, 'hardneg', hardneg.__version__)"

step "the core's tests"
"$venv/bin/python" -m pytest -q -n 2 -p no:cacheprovider \
    tests/loss tests/negatives tests/objectives tests/engines \
    tests/test_queue.py tests/test_gradcache.py tests/test_lse.py tests/test_schedules.py \
    tests/test_supervised.py
step "the distributed tests (2 gloo processes each; without xdist)"
"$venv/bin/python" -m pytest -q -p no:cacheprovider \
    tests/test_distributed.py tests/distributed/test_layouts.py tests/distributed/test_local_warning.py
step "ok"
