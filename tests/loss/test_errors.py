"""Bad input raises ValueError/TypeError naming the parameter, the constraint and the value."""

from __future__ import annotations

import pytest
import torch

from hardneg import BetaAnnealing, ContrastiveLoss, negatives, pair_scores
from hardneg.objectives import Debiased, InfoNCE

Z = torch.randn(4, 3)


@pytest.mark.parametrize(
    ("kwargs", "exc", "pattern"),
    [
        ({"temperature": 0.0}, ValueError, r"temperature must be a finite number > 0, got 0\.0"),
        ({"temperature": -1}, ValueError, r"temperature .* got -1"),
        ({"temperature": float("nan")}, ValueError, r"temperature .* got nan"),
        ({"temperature": "0.5"}, TypeError, r"temperature must be a real number, got '0\.5'"),
        ({"tau_plus": 1.0}, ValueError, r"tau_plus must lie in \[0\.0, 1\.0\), got 1\.0"),
        ({"tau_plus": -0.1}, ValueError, r"tau_plus must lie in .* got -0\.1"),
        ({"reduction": "avg"}, ValueError, r"reduction must be one of \('mean', 'sum', 'none'\), got 'avg'"),
        (
            {"negatives": "hard"},
            TypeError,
            r"negatives must be a hardneg\.negatives\.NegativeDistribution, got str",
        ),
        ({"objective": InfoNCE(), "tau_plus": 0.1}, ValueError, r"give tau_plus to the objective"),
    ],
)
def test_constructor_errors(kwargs: dict, exc: type, pattern: str) -> None:
    with pytest.raises(exc, match=pattern):
        ContrastiveLoss(**kwargs)


@pytest.mark.parametrize(
    ("factory", "exc", "pattern"),
    [
        (lambda: negatives.Hard(beta=-1.0), ValueError, r"beta must be a finite number >= 0, got -1\.0"),
        (lambda: negatives.Hard(beta=float("inf")), ValueError, r"beta .* got inf"),
        (lambda: Debiased(tau_plus=1.5), ValueError, r"tau_plus must lie in \[0\.0, 1\.0\), got 1\.5"),
        (lambda: InfoNCE(q=0), ValueError, r"q must be a finite number > 0, got 0"),
    ],
)
def test_component_errors(factory, exc: type, pattern: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(exc, match=pattern):
        factory()


@pytest.mark.parametrize(
    ("z1", "z2", "exc", "pattern"),
    [
        (
            torch.randn(4, 3),
            torch.randn(5, 3),
            ValueError,
            r"z1 and z2 must have the same shape \(B, d\), got \(4, 3\) and \(5, 3\)",
        ),
        (
            torch.randn(1, 3),
            torch.randn(1, 3),
            ValueError,
            r"batch size B \(z1\.shape\[0\]\) must be >= 2 .* got 1",
        ),
        (torch.randn(4), torch.randn(4), ValueError, r"z1 must have shape \(n, d\), got shape \(4,\)"),
        (
            torch.ones(4, 3, dtype=torch.int64),
            torch.ones(4, 3, dtype=torch.int64),
            TypeError,
            r"z1 must have a floating dtype .* got torch\.int64",
        ),
        (
            torch.tensor([[1.0, float("nan")], [0.0, 1.0]]),
            torch.randn(2, 2),
            ValueError,
            r"z1 must be finite, got 1 non-finite",
        ),
        (
            torch.randn(2, 2),
            torch.tensor([[1.0, float("inf")], [0.0, 1.0]]),
            ValueError,
            r"z2 must be finite",
        ),
        (torch.randn(4, 3).numpy(), torch.randn(4, 3), TypeError, r"z1 must be a torch\.Tensor, got ndarray"),
        (
            torch.randn(4, 3),
            torch.randn(4, 3, device="meta"),
            ValueError,
            r"same device, got z1 on cpu, z2 on meta",
        ),
    ],
)
def test_input_errors(z1, z2, exc: type, pattern: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(exc, match=pattern):
        ContrastiveLoss()(z1, z2)


def test_label_and_layout_errors() -> None:
    with pytest.raises(ValueError, match=r"labels must have shape \(4,\), got shape \(3,\)"):
        ContrastiveLoss()(Z, Z, labels=torch.tensor([0, 1, 2]))
    with pytest.raises(TypeError, match=r"labels must hold integer labels, got dtype torch\.float32"):
        ContrastiveLoss()(Z, Z, labels=torch.zeros(4))
    with pytest.raises(ValueError, match=r"candidates must have shape \(N, 3\) .* got \(5, 4\)"):
        pair_scores(Z, Z, torch.randn(5, 4), temperature=0.5)
    with pytest.raises(ValueError, match=r"mask must be a bool tensor of shape \(4, 5\), got torch\.float32"):
        pair_scores(Z, Z, torch.randn(5, 3), temperature=0.5, mask=torch.ones(4, 5))
    with pytest.raises(ValueError, match="at least one valid negative"):
        ContrastiveLoss().compute(
            pair_scores(Z, Z, torch.randn(5, 3), temperature=0.5, mask=torch.zeros(4, 5, dtype=torch.bool))
        )


def test_schedule_errors() -> None:
    with pytest.raises(ValueError, match=r"num_changes must be an integer >= 1, got 0"):
        BetaAnnealing(beta=1.0, num_changes=0, num_epochs=10)
    with pytest.raises(ValueError, match=r"direction must be one of \('down', 'up'\), got 'sideways'"):
        BetaAnnealing(beta=1.0, num_changes=2, num_epochs=10, direction="sideways")
    with pytest.raises(ValueError, match=r"epoch must be an integer >= 0, got -1"):
        BetaAnnealing(beta=1.0, num_changes=2, num_epochs=10)(-1)
    with pytest.raises(TypeError, match=r"negatives must have a 'beta' attribute"):
        BetaAnnealing(beta=1.0, num_changes=2, num_epochs=10).apply(negatives.Uniform(), 0)


@pytest.mark.parametrize(
    ("bad", "count"),
    [([float("nan")], 1), ([float("inf")], 1), ([float("inf"), float("-inf")], 2), ([], 0)],
)
def test_finite_check_fast_path_is_exact(bad: list[float], count: int) -> None:
    """The sum-based fast path never hides a bad entry (+inf and −inf together sum to NaN) and
    never refuses finite entries whose sum overflows (3e38 + 3e38 in float32)."""
    from hardneg._validation import check_finite_tensor

    x = torch.full((4, 3), 3e38, dtype=torch.float32)
    x.view(-1)[: len(bad)] = torch.tensor(bad)
    assert not torch.isfinite(x.sum())
    if count:
        with pytest.raises(ValueError, match=rf"x must be finite, got {count} non-finite entries"):
            check_finite_tensor("x", x)
    else:
        check_finite_tensor("x", x)
