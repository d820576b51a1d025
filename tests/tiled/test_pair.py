"""The shared-shift tile pair (one exponential for rows and columns) against the two-exponential
steps it replaces, its refusal where the shift is unsafe, and the symmetric pass with both paths."""

from __future__ import annotations

import pytest
import torch

from hardneg.tiled import TileMask
from hardneg.tiled.pair import absorb_pair_, grad_pair, safe_band
from hardneg.tiled.stream import Scratch, absorb_, finish, grad_block

EXPONENT_SETS = [
    (1.0,),
    (2.0, 1.0),
    (2.5, 1.5, 3.0),
    (2.0, 1.0, 2.0),
    (1.2, 0.2),
    (1.1, 0.1),
    (1.2, 0.2, 0.4),
]


def _block(rows: int, cols: int, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    s = 3.0 * torch.randn(rows, cols, generator=g, dtype=torch.float64)
    s[torch.rand(rows, cols, generator=g) < 0.2] = float("-inf")
    s[1] = float("-inf")  # a row and a column with no valid entry in this block
    s[:, 2] = float("-inf")
    return s


def _state(n: int, e: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Running statistics as earlier blocks would leave them (one row still empty)."""
    g = torch.Generator().manual_seed(seed)
    run_max = 2.0 * torch.randn(n, generator=g, dtype=torch.float64)
    run_sum = 1.0 + torch.rand(n, e, generator=g, dtype=torch.float64)
    run_max[0], run_sum[0] = float("-inf"), 0.0
    return run_max, run_sum


@pytest.mark.parametrize("exponents", EXPONENT_SETS)
def test_absorb_pair_equals_a_row_and_a_column_fold(exponents: tuple[float, ...]) -> None:
    s = _block(7, 5, seed=1)
    e = len(exponents)
    rows, cols = _state(7, e, seed=2), _state(5, e, seed=3)
    want_r, want_c = (rows[0].clone(), rows[1].clone()), (cols[0].clone(), cols[1].clone())
    absorb_(*want_c, s, exponents, dim=0, consume=False)
    absorb_(*want_r, s.clone(), exponents, dim=1)
    assert absorb_pair_(rows, cols, s.clone(), exponents, scratch=Scratch())
    for got, want in ((rows, want_r), (cols, want_c)):
        torch.testing.assert_close(finish(*got, exponents), finish(*want, exponents), rtol=1e-13, atol=0)


@pytest.mark.parametrize("exponents", EXPONENT_SETS)
def test_grad_pair_equals_the_row_and_column_gradients(exponents: tuple[float, ...]) -> None:
    s = _block(6, 9, seed=4)
    g = torch.Generator().manual_seed(5)
    e = len(exponents)
    # log-sum-exps at least as large as each row's block maximum (as full rows give), coefficients
    # of both signs, one row carrying no gradient
    lse_r = s.amax(1).clamp_min(0)[:, None] + torch.rand(6, e, generator=g, dtype=torch.float64)
    lse_r = lse_r * torch.tensor(exponents, dtype=torch.float64)
    lse_c = s.amax(0).clamp_min(0)[:, None] + torch.rand(9, e, generator=g, dtype=torch.float64)
    lse_c = lse_c * torch.tensor(exponents, dtype=torch.float64)
    coef_r, coef_c = (
        torch.randn(6, e, generator=g, dtype=torch.float64),
        torch.randn(9, e, generator=g, dtype=torch.float64),
    )
    coef_r[3] = 0.0
    active = list(range(e))
    want = grad_block(s, lse_r, coef_r, exponents, active, dim=1).clone()
    want += grad_block(s, lse_c, coef_c, exponents, active, dim=0)
    got = grad_pair(s.clone(), (lse_r, coef_r), (lse_c, coef_c), exponents, active, scratch=Scratch())
    assert got is not None
    torch.testing.assert_close(got, want, rtol=1e-13, atol=1e-15)


def test_an_unsafe_shift_is_refused_and_changes_nothing() -> None:
    band = safe_band(torch.float64)
    s = torch.zeros(4, 4, dtype=torch.float64)
    s[0, 0] = band / 2.0 + 1.0  # row 1.. and columns 1.. lie band/2 + 1 below the tile maximum
    rows, cols = _state(4, 2, seed=6), _state(4, 2, seed=7)
    before = [t.clone() for t in (*rows, *cols, s)]
    assert not absorb_pair_(rows, cols, s, (2.0, 1.0), scratch=Scratch())  # a_max = 2 doubles the gap
    for t, b in zip((*rows, *cols, s), before, strict=True):
        torch.testing.assert_close(t, b, rtol=0, atol=0)
    assert absorb_pair_(rows, cols, s.clone(), (1.0,), scratch=Scratch())  # gap band/2 + 1 < band
    lse = torch.zeros(4, 1, dtype=torch.float64)
    coef = torch.ones(4, 1, dtype=torch.float64)
    s2 = torch.full((4, 4), 1.5 * band, dtype=torch.float64)  # e^{c − L} = e^{1.5 B}
    assert grad_pair(s2, (lse, coef), (lse, coef), (1.0,), [0], scratch=Scratch()) is None
    coef[:] = 0.0  # rows that carry no gradient do not count
    assert grad_pair(s2, (lse, coef), (lse, coef), (1.0,), [0], scratch=Scratch()) is not None


def test_symmetric_pass_mixes_shared_and_two_exponential_tiles(monkeypatch: pytest.MonkeyPatch) -> None:
    """Views along one direction (logits near 1000) and one zero view (logits 0, far below): tiles
    that touch the zero view take the two-exponential path, the others the shared shift; the
    result equals a float64 logsumexp of the full matrix, in value and gradient."""
    import hardneg.tiled.symmetric as symmetric
    from hardneg.tiled.symmetric import tiled_lse_symmetric

    taken: list[bool] = []
    real_absorb, real_grad = symmetric.absorb_pair_, symmetric.grad_pair

    def absorb(*a, **k):  # type: ignore[no-untyped-def]
        ok = real_absorb(*a, **k)
        taken.append(ok)
        return ok

    def grad(*a, **k):  # type: ignore[no-untyped-def]
        h = real_grad(*a, **k)
        taken.append(h is not None)
        return h

    monkeypatch.setattr(symmetric, "absorb_pair_", absorb)
    monkeypatch.setattr(symmetric, "grad_pair", grad)
    g = torch.Generator().manual_seed(8)
    b, scale, exps = 8, 10.0, (2.0, 1.0)
    u = torch.nn.functional.normalize(torch.randn(1, 4, generator=g, dtype=torch.float64), dim=1)
    v = 10.0 * u + 0.01 * torch.randn(2 * b, 4, generator=g, dtype=torch.float64)
    v[0] = 0.0
    v.requires_grad_(True)
    idx = torch.arange(2 * b)
    rule = TileMask(
        num_anchors=2 * b, num_candidates=2 * b, excluded=torch.stack([idx, (idx + b) % (2 * b)], 1)
    )
    lse, _ = tiled_lse_symmetric(v, scale, exps, rule, tile=3)
    weights = torch.randn(2 * b, 2, generator=g, dtype=torch.float64)
    (got,) = torch.autograd.grad((lse * weights).sum(), v)
    assert True in taken and False in taken
    valid = torch.ones(2 * b, 2 * b, dtype=torch.bool)
    valid[idx, idx] = False
    valid[idx, (idx + b) % (2 * b)] = False
    s = (scale * v @ v.T).masked_fill(~valid, float("-inf"))
    want = torch.stack([torch.logsumexp(a * s, dim=1) for a in exps], dim=1)
    torch.testing.assert_close(lse, want, rtol=1e-12, atol=1e-12)
    (gw,) = torch.autograd.grad((want * weights).sum(), v)
    torch.testing.assert_close(got, gw, rtol=1e-10, atol=1e-10)
