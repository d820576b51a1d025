"""β annealing (Robinson et al., ICLR 2021, App. D.1) against the paper's recursion β_{i+1} = β_i − β/ℓ."""

from __future__ import annotations

import pytest

from hardneg import BetaAnnealing, ContrastiveLoss, negatives
from tests.reference.schedules import paper_recursion


@pytest.mark.parametrize(
    ("beta", "changes", "epochs"), [(1.0, 4, 100), (2.0, 3, 10), (0.5, 7, 7), (1.0, 1, 5)]
)
def test_down_matches_paper(beta: float, changes: int, epochs: int) -> None:
    schedule = BetaAnnealing(beta=beta, num_changes=changes, num_epochs=epochs)
    got = [schedule(e) for e in range(epochs + 3)]
    assert got == pytest.approx(paper_recursion(beta, changes, epochs), abs=1e-12)
    assert got[0] == beta and got[-1] == 0.0


def test_up_mirrors_down() -> None:
    down = BetaAnnealing(beta=1.5, num_changes=5, num_epochs=50)
    up = BetaAnnealing(beta=1.5, num_changes=5, num_epochs=50, direction="up")
    for e in range(60):
        assert up(e) + down(e) == pytest.approx(1.5)


def test_apply_sets_beta_on_the_loss() -> None:
    loss_fn = ContrastiveLoss(negatives=negatives.Hard(beta=1.0))
    schedule = BetaAnnealing(beta=1.0, num_changes=2, num_epochs=4)
    assert schedule.apply(loss_fn.negatives, 3) == 0.5
    assert loss_fn.negatives.beta == 0.5
