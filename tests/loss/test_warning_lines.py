"""The loss core's warnings point at the user's line (the call of the loss), whatever the layout, the
engine and the number of frames between them: Sinkhorn's non-convergence (materialised and tiled
engines). (The DDP warning: tests/distributed/test_local_warning.py.)"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import pytest
import torch

from hardneg import ContrastiveLoss
from hardneg.negatives import OptimalTransport


def _caught(call: Callable[[], object], text: str) -> list[warnings.WarningMessage]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call()
    return [w for w in caught if text in str(w.message)]


@pytest.mark.parametrize("engine", ["materialised", "tiled"])
@pytest.mark.parametrize("layout", ["forward", "pair"])
def test_a_sinkhorn_that_stops_early_warns_at_the_call(engine: str, layout: str) -> None:
    ot = OptimalTransport(epsilon=0.05, max_iter=1, differentiable=False)
    loss = ContrastiveLoss(temperature=0.5, negatives=ot, engine=engine, tile_size=4)
    z1, z2, c = torch.randn(8, 4), torch.randn(8, 4), torch.randn(8, 4)

    def call() -> object:
        return loss(z1, z2) if layout == "forward" else loss.pair(z1, z2, c)

    caught = _caught(call, "Sinkhorn stopped")
    assert len(caught) == 1 and caught[0].category is RuntimeWarning
    assert caught[0].filename == __file__, caught[0].filename
    assert caught[0].lineno == call.__code__.co_firstlineno + 1  # the line of the loss's call
