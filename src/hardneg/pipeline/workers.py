"""Supervised worker processes for the runs of a group (``compare``, ``sweep``, ``reproduce``).

A group with ``workers > 1`` trains its runs in that many spawned processes, each serving jobs
until none is left (the imports are paid once per worker, not once per run). They are supervised,
so that no run outlives the command that started it:

- **a worker dies with its parent**: on Linux the kernel sends it SIGKILL when the parent dies
  (``prctl(PR_SET_PDEATHSIG)``), and every worker also watches its parent's PID and exits when it
  changes (any POSIX system) — a ``kill -9`` of ``hardneg compare`` leaves no orphan training
  into the folder;
- **Ctrl-C stops every worker**: workers ignore SIGINT (the terminal sends it to the whole process
  group); the parent alone decides, starts no further run and kills the running ones. A killed run
  loses only its unfinished epoch: its checkpoints are written atomically and ``--resume``
  continues it from the last finished epoch, so the interrupted group resumes where it stood;
- a failure in one worker stops the others and is raised in the parent.

The results arrive in job order whatever the number of workers (each run is seeded by its own
config, so they do not depend on ``workers``).
"""

from __future__ import annotations

import contextlib
import os
import pickle
import signal
import threading
from collections.abc import Callable, Sequence
from typing import Any, cast

from hardneg._signals import interrupt_signals

__all__ = ["Interrupted", "run_supervised"]

_POLL_SECONDS = 0.5  # how often a worker checks that its parent is alive


class Interrupted(Exception):
    """Ctrl-C (or SIGTERM) stopped a group; ``results`` holds the jobs that finished (others ``None``)."""

    def __init__(self, results: list[Any]) -> None:
        done = sum(r is not None for r in results)
        super().__init__(f"interrupted with {done} of {len(results)} jobs finished")
        self.results = results


def _die_with_parent(parent: int) -> None:
    """Make this process end when ``parent`` does (kernel signal on Linux, a watchdog elsewhere too)."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG = 1
    except (OSError, AttributeError):  # not Linux: the watchdog below is enough
        pass
    if os.getppid() != parent:  # the parent died before the line above took effect
        os._exit(1)

    def watch() -> None:
        while True:
            threading.Event().wait(_POLL_SECONDS)
            if os.getppid() != parent:
                os._exit(1)

    threading.Thread(target=watch, name="hardneg-parent-watch", daemon=True).start()


def _child(conn: Any, parent: int, init: Callable[[], None] | None, fn: Callable[..., Any]) -> None:
    """A worker: answer each job the parent sends (``(index, args)``) until it sends ``None``.

    One process serves many jobs, so the imports (torch, Lightning: seconds each) are paid once per
    worker, not once per run; the runs are seeded by their own configs, so the results do not
    depend on which worker ran them or after what.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides what Ctrl-C stops
    _die_with_parent(parent)
    if init is not None:
        init()
    try:
        while (job := conn.recv()) is not None:
            i, args = job
            # plain pickle, not the connection's: torch would pass tensors as shared-memory handles
            # owned by this process
            try:
                answer = pickle.dumps(("ok", i, fn(*args)))
            except BaseException as err:
                try:
                    answer = pickle.dumps(("error", i, err))
                except Exception:  # an exception that does not pickle
                    answer = pickle.dumps(("error", i, RuntimeError(f"{type(err).__name__}: {err}")))
            conn.send_bytes(answer)
    except EOFError:  # the parent closed the pipe: nothing more to do
        pass
    finally:
        conn.close()


def run_supervised(
    fn: Callable[..., Any],
    jobs: Sequence[tuple[Any, ...]],
    *,
    workers: int,
    init: Callable[[], None] | None = None,
    on_result: Callable[[int, Any], None] | None = None,
) -> list[Any]:
    """``[fn(*args) for args in jobs]``, computed in up to ``workers`` supervised processes.

    Args:
        fn: a module-level (picklable) function.
        jobs: the argument tuples, one per job.
        workers: how many processes run at once (≥ 1).
        init: run first in every worker (e.g. logging set-up); in this process when the jobs run
            here (``workers == 1`` or a single job).
        on_result: called in the parent as ``on_result(index, result)`` when a job finishes.

    Raises:
        Interrupted: on Ctrl-C or SIGTERM (every worker is killed first), with the finished results.
        BaseException: the first failure of a job, re-raised after the other workers are killed.
    """
    import multiprocessing
    from multiprocessing.connection import Connection, wait

    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    results: list[Any] = [None] * len(jobs)
    if workers == 1 or len(jobs) <= 1:  # this process is the one worker: ``init`` runs here
        if init is not None and jobs:
            init()
        return _in_process(fn, jobs, results, on_result)
    ctx = multiprocessing.get_context("spawn")
    running: dict[Any, tuple[int, Any]] = {}  # connection -> (job index, process)
    queue = list(range(len(jobs)))
    parent = os.getpid()
    stop_signals = contextlib.ExitStack()
    stop_signals.enter_context(interrupt_signals())  # SIGTERM / SIGHUP stop the group as Ctrl-C does
    try:
        for _ in range(min(workers, len(jobs))):  # each worker takes jobs until the queue is empty
            conn, child = ctx.Pipe(duplex=True)
            proc = ctx.Process(target=_child, args=(child, parent, init, fn), daemon=True)
            proc.start()
            child.close()
            i = queue.pop(0)
            conn.send((i, tuple(jobs[i])))
            running[conn] = (i, proc)
        while running:
            for ready in wait(list(running)):
                conn = cast(Connection, ready)
                i, proc = running.pop(conn)
                try:
                    status, _, value = pickle.loads(conn.recv_bytes())
                except EOFError:  # killed (out of memory, kill -9) before it could answer
                    proc.join()
                    raise RuntimeError(
                        f"a worker process died (exit code {proc.exitcode}) while running job {i + 1} "
                        f"of {len(jobs)}; run again with --resume to continue"
                    ) from None
                if status == "error":
                    running[conn] = (i, proc)  # killed with the others below
                    raise value if isinstance(value, BaseException) else RuntimeError(str(value))
                results[i] = value
                if on_result is not None:
                    on_result(i, value)
                if queue:
                    i = queue.pop(0)
                    conn.send((i, tuple(jobs[i])))
                    running[conn] = (i, proc)
                else:
                    conn.send(None)  # done: the worker exits
                    proc.join()
                    conn.close()
    except KeyboardInterrupt:
        _kill(running)
        raise Interrupted(results) from None
    except BaseException:
        _kill(running)
        raise
    finally:
        stop_signals.close()
    return results


def _in_process(
    fn: Callable[..., Any],
    jobs: Sequence[tuple[Any, ...]],
    results: list[Any],
    on_result: Callable[[int, Any], None] | None,
) -> list[Any]:
    """One job after the other in this process; Ctrl-C or SIGTERM ends the group as :class:`Interrupted`.

    Lightning answers Ctrl-C during ``fit`` by ignoring SIGINT from then on and exiting with
    status 1; the default SIGINT handler is put back so that a second Ctrl-C still works.
    """
    stop_signals = contextlib.ExitStack()
    stop_signals.enter_context(interrupt_signals())  # SIGTERM / SIGHUP stop the group as Ctrl-C does
    try:
        for i, args in enumerate(jobs):
            results[i] = fn(*args)
            if on_result is not None:
                on_result(i, results[i])
    except KeyboardInterrupt:
        raise Interrupted(results) from None
    except SystemExit as err:
        if err.code in (0, None):
            raise
        raise Interrupted(results) from None
    finally:
        stop_signals.close()
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGINT, signal.default_int_handler)
    return results


def _kill(running: dict[Any, tuple[int, Any]]) -> None:
    """SIGKILL every running worker and reap it (its checkpoints are atomic: nothing is half-written)."""
    for _, proc in running.values():
        if proc.is_alive():
            proc.kill()
    for conn, (_, proc) in running.items():
        proc.join()
        conn.close()
    running.clear()
