"""The small-batch route of SimCLR's layout (``hardneg.engines.small``) equals the general path, and
is taken exactly where it may be.

The general path is reached with ``details=True`` (diagnostics are not on the small route); both
run on the same inputs. Uniform InfoNCE runs the general path's operators: ``torch.equal``
compares values and both views' gradients. The debiased settings run one fused node
(``hardneg.engines.fused_node``): equal up to float rounding (its accuracy against float64 is tested in
``tests/engines/test_fused_node.py``).
"""

from __future__ import annotations

import copy
from collections.abc import Iterator

import pytest
import torch

import hardneg.engines.dispatch as engines
from hardneg import ContrastiveLoss, negatives
from hardneg.objectives import Debiased, InfoNCE

SETTINGS: dict[str, dict[str, object]] = {
    "simclr": {},
    "debiased": {"tau_plus": 0.1},
    "hard+debiased": {"tau_plus": 0.1, "negatives": negatives.Hard(beta=1.0)},
    "hard5+debiased0.3": {"tau_plus": 0.3, "negatives": negatives.Hard(beta=5.0)},
    "hard0": {"negatives": negatives.Hard(beta=0.0)},
    "hard0+debiased": {"tau_plus": 0.1, "negatives": negatives.Hard(beta=0.0)},
    "hard-subnormal-beta": {"tau_plus": 0.1, "negatives": negatives.Hard(beta=1e-40)},
}
BIT_IDENTICAL = {"simclr", "hard0"}  # InfoNCE: the general path's own operators
# the fused node against the general path, relative to the largest entry: rounding of the compute
# dtype amplified by 1/t and the tilt (both are as accurate against float64: test_fused_simclr.py)
CLOSE = {torch.float64: 1e-10, torch.float32: 5e-4, torch.bfloat16: 2e-2}


def _close(got: torch.Tensor, want: torch.Tensor, tol: float) -> None:
    scale = want.detach().double().abs().max().item()
    diff = (got.detach().double() - want.detach().double()).abs().max().item()
    assert diff <= tol * scale, f"max difference {diff:.3g} > {tol:g} x max entry {scale:.3g}"


@pytest.fixture
def taken(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[bool]]:
    """Records, per call, whether the small route returned the loss."""
    calls: list[bool] = []
    real = engines.small_simclr_loss

    def spy(*args: object, **kwargs: object) -> object:
        out = real(*args, **kwargs)  # type: ignore[arg-type]
        calls.append(out is not None)
        return out

    monkeypatch.setattr(engines, "small_simclr_loss", spy)
    yield calls


def _both(loss_fn: ContrastiveLoss, z1: torch.Tensor, z2: torch.Tensor) -> list[torch.Tensor]:
    out = []
    for details in (False, True):
        a, b = z1.detach().clone().requires_grad_(True), z2.detach().clone().requires_grad_(True)
        got = loss_fn(a, b, details=details)
        value = got.loss if details else got
        value.sum().backward()
        out += [value.detach(), a.grad, b.grad]
    return out


# every dtype and reduction at B = 2 and 5; float32 / float64 and mean / none up to the largest B
SIZES = [
    (b, dtype, reduction)
    for b in (2, 5, 64, 128)
    for dtype in (torch.float32, torch.float64, torch.bfloat16)
    for reduction in ("mean", "sum", "none")
    if b < 64 or (dtype != torch.bfloat16 and reduction != "sum")
]


@pytest.mark.parametrize("validate", [True, False])
@pytest.mark.parametrize("b, dtype, reduction", SIZES)
@pytest.mark.parametrize("setting", sorted(SETTINGS))
def test_the_small_route_equals_the_general_path(
    setting: str, b: int, dtype: torch.dtype, reduction: str, validate: bool, taken: list[bool]
) -> None:
    g = torch.Generator().manual_seed(b)
    z1 = (3 * torch.randn(b, 16, generator=g, dtype=torch.float64)).to(dtype)
    z2 = (z1.double() + torch.randn(b, 16, generator=g, dtype=torch.float64)).to(dtype)
    loss_fn = ContrastiveLoss(temperature=0.2, validate=validate, reduction=reduction, **SETTINGS[setting])  # type: ignore[arg-type]
    small_value, small_g1, small_g2, value, g1, g2 = _both(loss_fn, z1, z2)
    assert taken == [True]  # the first call took the small route, the second (details) did not
    assert torch.isfinite(small_value).all()
    assert small_value.dtype == value.dtype and small_g1.dtype == g1.dtype == dtype
    if setting in BIT_IDENTICAL:
        assert torch.equal(small_value, value)
        assert torch.equal(small_g1, g1) and torch.equal(small_g2, g2)
    else:
        for got, want in ((small_value, value), (small_g1, g1), (small_g2, g2)):
            _close(got, want, CLOSE[dtype])


@pytest.mark.parametrize(
    "why, kwargs, call",
    [
        ("hard InfoNCE (no closed form on this route)", {"negatives": negatives.Hard(beta=1.0)}, {}),
        ("rescaled hard weights", {"tau_plus": 0.1, "negatives": negatives.Hard(beta=1.0, rescale=True)}, {}),
        ("detached hard weights",
         {"tau_plus": 0.1, "negatives": negatives.Hard(beta=1.0, detach_weights=True)}, {}),
        ("beta chosen per batch",
         {"tau_plus": 0.1, "negatives": negatives.Hard(beta=1.0, target_ess=0.5)}, {}),
        ("tau_plus estimated", {"objective": Debiased(tau_plus="auto")}, {}),
        ("a fixed Q", {"objective": InfoNCE(q=10.0)}, {}),
        ("unnormalised embeddings", {"normalize": False}, {}),
        ("labels", {}, {"labels": torch.arange(6)}),
        ("K-subsampled", {"num_negatives": 4}, {}),
        ("collision-free", {"collision_free": True}, {"labels": torch.arange(6)}),
    ],
)
def test_every_other_setting_takes_the_general_path(
    why: str, kwargs: dict[str, object], call: dict[str, object], taken: list[bool]
) -> None:
    loss_fn = ContrastiveLoss(temperature=0.5, **kwargs)  # type: ignore[arg-type]
    twin = copy.deepcopy(loss_fn)  # a β chosen per batch changes the loss's state
    z1, z2 = torch.randn(6, 8), torch.randn(6, 8)
    got = loss_fn(z1, z2, generator=torch.Generator().manual_seed(0), **call)  # type: ignore[arg-type]
    want = twin(z1, z2, details=True, generator=torch.Generator().manual_seed(0), **call).loss  # type: ignore[arg-type]
    torch.testing.assert_close(got, want)
    assert True not in taken, why


def test_a_batch_above_the_small_size_takes_the_general_path(taken: list[bool]) -> None:
    loss_fn = ContrastiveLoss(temperature=0.5)
    loss_fn(torch.randn(129, 4), torch.randn(129, 4))  # (2B)² = 66 564 > DENSE_LSE_MAX
    assert True not in taken


@pytest.mark.parametrize("b, fused", [(129, True), (256, True), (257, False)])
def test_the_fused_node_takes_batches_up_to_its_own_size(b: int, fused: bool, taken: list[bool]) -> None:
    """Hard + debiased takes the fused node up to B = 256 (4B² ≤ FUSED_MAX, measured faster than
    the general engines), one tilt at a time above B = 128; with the general path's values."""
    loss_fn = ContrastiveLoss(temperature=0.5, tau_plus=0.1, negatives=negatives.Hard(beta=1.0))
    g = torch.Generator().manual_seed(b)
    z1, z2 = torch.randn(b, 4, generator=g), torch.randn(b, 4, generator=g)
    small_value, small_g1, small_g2, value, g1, g2 = _both(loss_fn, z1, z2)
    assert (True in taken) is fused
    for got, want in ((small_value, value), (small_g1, g1), (small_g2, g2)):
        _close(got, want, CLOSE[torch.float32])


def test_a_zero_row_falls_back_to_the_checked_normalisation(taken: list[bool]) -> None:
    """The small route reads the norms once; a zero row (legal) sends the call to the general
    path, which keeps the row at zero, as before."""
    z1, z2 = torch.randn(4, 8), torch.randn(4, 8)
    z1[2] = 0.0
    loss_fn = ContrastiveLoss(temperature=0.5, tau_plus=0.1, negatives=negatives.Hard(beta=1.0))
    got, want = loss_fn(z1, z2), loss_fn(z1, z2, details=True).loss
    assert taken == [False] and torch.isfinite(got) and torch.equal(got, want)
    with pytest.raises(ValueError, match="z2"):
        loss_fn(z1, torch.full((4, 8), float("nan")))


def test_hooks_on_the_distribution_or_the_objective_still_run(taken: list[bool]) -> None:
    loss_fn = ContrastiveLoss(temperature=0.5, tau_plus=0.1)
    seen: list[str] = []
    loss_fn.objective.register_forward_hook(lambda *_: seen.append("objective"))
    loss_fn(torch.randn(4, 8), torch.randn(4, 8))
    assert seen == ["objective"] and True not in taken


def test_a_beta_schedule_is_read_at_every_call(taken: list[bool]) -> None:
    hard = negatives.Hard(beta=0.0)
    loss_fn = ContrastiveLoss(temperature=0.5, tau_plus=0.1, negatives=hard)
    z1, z2 = torch.randn(8, 4), torch.randn(8, 4)
    values = []
    for beta in (0.0, 2.0):
        hard.beta = beta
        values.append(loss_fn(z1, z2))
        torch.testing.assert_close(values[-1], loss_fn(z1, z2, details=True).loss, rtol=1e-6, atol=0)
    assert taken == [True, True] and not torch.equal(values[0], values[1])
