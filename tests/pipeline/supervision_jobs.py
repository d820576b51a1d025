"""Jobs for the supervised-worker tests (module level, so spawned workers can import them)."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path


def square(x: int) -> int:
    return x * x


def fail_on(x: int, bad: int) -> int:
    if x == bad:
        raise ValueError(f"job {x} failed")
    return x


def sleep_and_record(folder: str, name: str, seconds: float) -> str:
    """Write ``<name>.pid`` (this worker's PID), sleep, then write ``<name>.done``."""
    Path(folder, f"{name}.pid").write_text(str(os.getpid()))
    time.sleep(seconds)
    Path(folder, f"{name}.done").write_text("done")
    return name


def main() -> None:
    """``python -m tests.pipeline.supervision_jobs FOLDER WORKERS N SECONDS``: N sleeping jobs.

    Prints ``interrupted K`` (the jobs finished) when stopped by Ctrl-C / SIGTERM.
    """
    from hardneg.pipeline.workers import Interrupted, run_supervised

    folder, workers, n, seconds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
    Path(folder, "parent.pid").write_text(str(os.getpid()))
    try:
        run_supervised(sleep_and_record, [(folder, f"job{i}", seconds) for i in range(n)], workers=workers)
    except Interrupted as stop:
        print(f"interrupted {sum(r is not None for r in stop.results)}", flush=True)
        sys.exit(130)
    print("finished", flush=True)


if __name__ == "__main__":
    main()
