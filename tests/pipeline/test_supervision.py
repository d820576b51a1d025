"""Supervised workers (hardneg.pipeline.workers): order, failures, no orphans, Ctrl-C stops everything."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hardneg.pipeline.workers import run_supervised
from tests.pipeline import supervision_jobs as jobs

ROOT = Path(__file__).resolve().parents[2]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie still answers kill(0); it has stopped running
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return True


def _wait_for(predicate, timeout: float = 30.0) -> bool:  # type: ignore[no-untyped-def]
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.1)
    return predicate()


@pytest.mark.parametrize("workers", [1, 2])
def test_results_in_job_order(workers: int) -> None:
    seen: list[int] = []
    out = run_supervised(jobs.square, [(i,) for i in range(5)], workers=workers,
                         on_result=lambda i, r: seen.append(i))
    assert out == [0, 1, 4, 9, 16]
    assert sorted(seen) == [0, 1, 2, 3, 4]


@pytest.mark.parametrize("workers", [1, 2])
def test_a_failure_is_raised_in_the_parent(workers: int) -> None:
    with pytest.raises(ValueError, match="job 2 failed"):
        run_supervised(jobs.fail_on, [(i, 2) for i in range(4)], workers=workers)


def test_a_worker_serves_several_jobs_and_every_worker_exits(tmp_path: Path) -> None:
    """Two workers for six jobs: the imports are paid twice, not six times; all jobs ran, in order."""
    out = run_supervised(jobs.sleep_and_record, [(str(tmp_path), f"job{i}", 0.05) for i in range(6)],
                         workers=2)
    assert out == [f"job{i}" for i in range(6)]
    pids = {int(p.read_text()) for p in tmp_path.glob("job*.pid")}
    assert len(pids) == 2 and os.getpid() not in pids
    assert _wait_for(lambda: not any(_alive(pid) for pid in pids), timeout=10)


def test_workers_must_be_positive() -> None:
    with pytest.raises(ValueError, match="workers must be >= 1, got 0"):
        run_supervised(jobs.square, [(1,)], workers=0)


def _start(tmp_path: Path, workers: int, n: int, seconds: float) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.pipeline.supervision_jobs",
         str(tmp_path), str(workers), str(n), str(seconds)],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


def _worker_pids(tmp_path: Path, count: int) -> list[int]:
    assert _wait_for(lambda: len(list(tmp_path.glob("job*.pid"))) >= count), "workers did not start"
    time.sleep(0.2)  # the PID files are written before the job sleeps
    return [int(p.read_text()) for p in sorted(tmp_path.glob("job*.pid"))]


@pytest.mark.skipif(sys.platform != "linux", reason="the kill -9 test uses /proc")
def test_kill_9_of_the_parent_leaves_no_orphan(tmp_path: Path) -> None:
    proc = _start(tmp_path, workers=2, n=4, seconds=120)
    pids = _worker_pids(tmp_path, 2)
    proc.kill()  # SIGKILL: the parent runs no clean-up at all
    proc.wait()
    assert _wait_for(lambda: not any(_alive(p) for p in pids), timeout=10), "a worker outlived its parent"
    time.sleep(1.0)
    assert not list(tmp_path.glob("job*.done"))
    assert len(list(tmp_path.glob("job*.pid"))) == 2  # the queued jobs never started


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_ctrl_c_stops_every_worker_and_starts_no_queued_job(tmp_path: Path, sig: int) -> None:
    proc = _start(tmp_path, workers=2, n=5, seconds=120)
    pids = _worker_pids(tmp_path, 2)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert out.strip() == "interrupted 0"
    assert not any(_alive(p) for p in pids)
    assert len(list(tmp_path.glob("job*.pid"))) == 2
