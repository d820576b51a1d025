"""Stop signals that end a training as Ctrl-C does (standard library only: the CLI imports it first).

SIGTERM is what ``kill``, ``timeout``, SLURM and container runtimes send; SIGHUP what a closed
terminal sends. Under :func:`interrupt_signals` both raise ``KeyboardInterrupt`` as SIGINT does, so
a training stopped by any of them saves ``interrupted.ckpt``, keeps its epoch checkpoints and can
be continued with ``--resume``; the command exits with 128 + the signal's number.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from typing import Any

__all__ = ["STOP_SIGNALS", "interrupt_signals"]

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@contextlib.contextmanager
def interrupt_signals() -> Iterator[list[int]]:
    """SIGTERM and SIGHUP raise ``KeyboardInterrupt`` as SIGINT does; yields the signals received.

    Only signals left at their default action are taken over (a handler someone installed, and an
    ignored signal — a group's worker ignores SIGINT — are kept), only in the main thread, and the
    previous handlers are put back on exit. Lightning composes its own SIGTERM handler with this
    one during ``fit``: it notes the signal, then this one stops the fit at once, as Ctrl-C does.
    """
    received: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield received
        return

    def handler(signum: int, frame: Any) -> None:
        received.append(signum)
        raise KeyboardInterrupt

    defaults = {signal.SIGINT: signal.default_int_handler, signal.SIGTERM: signal.SIG_DFL,
                signal.SIGHUP: signal.SIG_DFL}
    previous = {sig: signal.getsignal(sig) for sig in STOP_SIGNALS}
    taken = [sig for sig in STOP_SIGNALS if previous[sig] is defaults[sig]]
    for sig in taken:
        signal.signal(sig, handler)
    try:
        yield received
    finally:
        for sig in taken:
            signal.signal(sig, previous[sig])
