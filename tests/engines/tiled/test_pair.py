"""The shared-shift tile pair (one exponential for rows and columns) against the two-exponential
steps it replaces, the once-per-call decision that the shift is safe (no tensor read per tile),
and the symmetric pass on both paths."""

from __future__ import annotations

import pytest
import torch

from hardneg.engines.tiled import TileMask
from hardneg.engines.tiled.lse import plan_tiles
from hardneg.engines.tiled.pair import absorb_pair_, grad_pair, safe_band
from hardneg.engines.tiled.stream import Scratch, absorb_, finish, grad_block

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
    absorb_pair_(rows, cols, s.clone(), exponents, scratch=Scratch())
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


def test_an_all_invalid_block_folds_nothing() -> None:
    s = torch.full((3, 4), float("-inf"), dtype=torch.float64)
    rows, cols = _state(3, 2, seed=6), _state(4, 2, seed=7)
    before = [t.clone() for t in (*rows, *cols)]
    absorb_pair_(rows, cols, s, (2.0, 1.0), scratch=Scratch(), floor=-700.0)
    for t, b in zip((*rows, *cols), before, strict=True):
        torch.testing.assert_close(t, b, rtol=0, atol=0)
    lse, coef = torch.zeros(3, 1, dtype=torch.float64), torch.ones(3, 1, dtype=torch.float64)
    lse_c, coef_c = torch.zeros(4, 1, dtype=torch.float64), torch.ones(4, 1, dtype=torch.float64)
    h = grad_pair(
        torch.full((3, 4), float("-inf"), dtype=torch.float64),
        (lse, coef),
        (lse_c, coef_c),
        (1.0,),
        [0],
        scratch=Scratch(),
    )
    torch.testing.assert_close(h, torch.zeros(3, 4, dtype=torch.float64), rtol=0, atol=0)


def test_the_shared_shift_is_decided_once_by_the_cauchy_schwarz_bound() -> None:
    """``2 a_max max‖x‖ max‖y‖ ≤ B``: safe for every tile, else for none."""
    band = safe_band(torch.float64)
    x = torch.zeros(5, 3, dtype=torch.float64)
    x[:, 0] = 1.0
    rule = TileMask(num_anchors=5, num_candidates=5, excluded=torch.full((5, 1), -1))
    h_ok = (band / 4.0) ** 0.5 * 0.99  # 2 · 2 · h_ok² < B
    assert plan_tiles(h_ok * x, h_ok * x, (2.0, 1.0), rule, 2).shared_shift
    assert not plan_tiles(
        1.01 * (band / 4.0) ** 0.5 * x, (band / 4.0) ** 0.5 * x, (2.0, 1.0), rule, 2
    ).shared_shift
    assert plan_tiles(1.01 * (band / 4.0) ** 0.5 * x, (band / 4.0) ** 0.5 * x, (1.0,), rule, 2).shared_shift


def test_plan_floors_exactly_the_blocks_with_an_excluded_entry() -> None:
    """Exclusions only: the blocks holding an excluded index get the exponent floor, the others none
    (unless an argument may underflow); any other rule floors every block."""
    b, tile = 6, 4  # 12 views, 3 × 3 blocks; i and i + 6 excluded
    idx = torch.arange(2 * b)
    rule = TileMask(
        num_anchors=2 * b, num_candidates=2 * b, excluded=torch.stack([idx, (idx + b) % (2 * b)], 1)
    )
    v = torch.nn.functional.normalize(torch.randn(2 * b, 3, dtype=torch.float64), dim=1)
    plan = plan_tiles(v, v, (1.0,), rule, tile)
    blocks = {(i // tile, int(j) // tile) for i in range(2 * b) for j in (i, (i + b) % (2 * b))}
    assert plan.masked == frozenset(blocks)
    assert not plan.risky
    for i in range(3):
        for j in range(3):
            assert (plan.floor(i, j) is not None) == ((i, j) in blocks)
    labelled = TileMask(
        num_anchors=2 * b,
        num_candidates=2 * b,
        excluded=rule.excluded,
        anchor_labels=idx,
        candidate_labels=idx,
        collision_free=True,
    )
    assert plan_tiles(v, v, (1.0,), labelled, tile).masked is None
    assert plan_tiles(v, v, (1.0,), labelled, tile).floor(0, 1) is not None


@pytest.mark.parametrize("spread", [False, True])
def test_symmetric_pass_on_either_path_equals_float64_logsumexp(
    spread: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Unit views (shared shift everywhere) and views along one direction of norm 10 with one zero
    view at scale 10 (logits near 1000, one row far below: the bound refuses the shared shift and
    every tile takes the two-exponential path); both equal a float64 logsumexp of the full matrix,
    in value and gradient."""
    import hardneg.engines.tiled.symmetric as symmetric
    from hardneg.engines.tiled.symmetric import tiled_lse_symmetric

    taken: list[str] = []
    real_absorb, real_grad = symmetric.absorb_pair_, symmetric.grad_pair

    def absorb(*a, **k):  # type: ignore[no-untyped-def]
        taken.append("absorb")
        return real_absorb(*a, **k)

    def grad(*a, **k):  # type: ignore[no-untyped-def]
        taken.append("grad")
        return real_grad(*a, **k)

    monkeypatch.setattr(symmetric, "absorb_pair_", absorb)
    monkeypatch.setattr(symmetric, "grad_pair", grad)
    g = torch.Generator().manual_seed(8)
    b, exps = 8, (2.0, 1.0)
    if spread:
        scale = 10.0
        u = torch.nn.functional.normalize(torch.randn(1, 4, generator=g, dtype=torch.float64), dim=1)
        v = 10.0 * u + 0.01 * torch.randn(2 * b, 4, generator=g, dtype=torch.float64)
        v[0] = 0.0
    else:
        scale = 2.0
        v = torch.nn.functional.normalize(torch.randn(2 * b, 4, generator=g, dtype=torch.float64), dim=1)
    v.requires_grad_(True)
    idx = torch.arange(2 * b)
    rule = TileMask(
        num_anchors=2 * b, num_candidates=2 * b, excluded=torch.stack([idx, (idx + b) % (2 * b)], 1)
    )
    lse, _ = tiled_lse_symmetric(v, scale, exps, rule, tile=3)
    weights = torch.randn(2 * b, 2, generator=g, dtype=torch.float64)
    (got,) = torch.autograd.grad((lse * weights).sum(), v)
    assert (taken == []) if spread else (set(taken) == {"absorb", "grad"})
    valid = torch.ones(2 * b, 2 * b, dtype=torch.bool)
    valid[idx, idx] = False
    valid[idx, (idx + b) % (2 * b)] = False
    s = (scale * v @ v.T).masked_fill(~valid, float("-inf"))
    want = torch.stack([torch.logsumexp(a * s, dim=1) for a in exps], dim=1)
    torch.testing.assert_close(lse, want, rtol=1e-12, atol=1e-12)
    (gw,) = torch.autograd.grad((want * weights).sum(), v)
    torch.testing.assert_close(got, gw, rtol=1e-10, atol=1e-10)
