"""Run the ``hardneg`` command with a signal sent to itself at a chosen moment (fault injection).

``python -m tests.faults.inject SIGNAL WHEN -- ARGS...`` runs ``hardneg ARGS...`` in this process
and sends ``SIGNAL`` (``INT`` or ``KILL``) to itself:

- ``step:N`` — at the start of the ``N``-th training batch of the process (0-based, counted over
  epochs and over the runs of a group with one worker);
- ``save:N`` — during the ``N``-th checkpoint write of the process, after its first bytes are on
  disk (``KILL`` then leaves a half-written temporary file behind).

With ``INT`` the signal arrives as Ctrl-C does; ``KILL`` ends the process on the spot. Nothing
here is part of the package: the hooks are installed by patching, as a debugger would.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import Iterator
from typing import Any


def _fire(sig: int) -> None:
    os.kill(os.getpid(), sig)
    if sig == signal.SIGKILL:  # pragma: no cover - never returns
        signal.pause()


def _at_step(sig: int, n: int) -> None:
    import lightning as L

    from hardneg.pipeline import experiment

    seen = [0]

    class Fire(L.Callback):
        def on_train_batch_start(self, *args: Any) -> None:
            seen[0] += 1
            if seen[0] == n + 1:
                _fire(sig)

    build = experiment.build_module

    def with_fire(*args: Any, **kwargs: Any) -> Any:
        module, callbacks = build(*args, **kwargs)
        return module, [*callbacks, Fire()]

    experiment.build_module = with_fire  # type: ignore[assignment]


def _at_save(sig: int, n: int) -> None:
    from hardneg.pipeline import checkpoints

    opened = checkpoints.atomic_open
    count = [0]

    class Handle:
        def __init__(self, inner: Any) -> None:
            self.inner, self.fired = inner, False

        def write(self, data: Any) -> int:
            written = self.inner.write(data)
            if not self.fired:
                self.fired = True
                self.inner.flush()
                _fire(sig)
            return int(written)

        def __getattr__(self, name: str) -> Any:
            return getattr(self.inner, name)

    @contextlib.contextmanager
    def firing_open(path: Any) -> Iterator[Any]:
        count[0] += 1
        with opened(path) as handle:
            yield Handle(handle) if count[0] == n + 1 else handle

    checkpoints.atomic_open = firing_open  # type: ignore[assignment]


def main(argv: list[str]) -> None:
    sig = signal.Signals["SIG" + argv[0]]  # INT, KILL, TERM, HUP
    kind, n = argv[1].split(":")
    {"step": _at_step, "save": _at_save}[kind](sig, int(n))
    assert argv[2] == "--"
    sys.argv = ["hardneg", *argv[3:]]
    from hardneg.cli import main as cli

    cli()


if __name__ == "__main__":
    main(sys.argv[1:])
