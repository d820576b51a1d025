"""``tiled_lse(difference=True)``: the tilted pair ``L_0 − L_1`` of hard negatives streamed over tiles
(Robinson et al., ICLR 2021, eq. (4)), against a float64 logsumexp, through gradcheck, and in
float32 against float64 at β = 1000 on the plain and the symmetric pass."""

from __future__ import annotations

import pytest
import torch

from hardneg import ContrastiveLoss, negatives
from hardneg.engines.tiled import TileMask, tiled_lse
from hardneg.engines.tiled.symmetric import tiled_lse_symmetric


def _unit(n: int, d: int, seed: int, dtype: torch.dtype = torch.float64) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.nn.functional.normalize(torch.randn(n, d, generator=g, dtype=dtype), dim=1)


def _direct(s: torch.Tensor, valid: torch.Tensor, exponents: tuple[float, ...]) -> torch.Tensor:
    """(L_0 − L_1, L_1, L_2, …) from float64 logsumexps of the masked logits."""
    sm = s.masked_fill(~valid, float("-inf"))
    lse = torch.stack([torch.logsumexp(a * sm, dim=1) for a in exponents], dim=1)
    return torch.cat([(lse[:, 0] - lse[:, 1])[:, None], lse[:, 1:]], dim=1)


def _simclr_rule(n: int) -> TileMask:
    idx = torch.arange(n)
    return TileMask(num_anchors=n, num_candidates=n, excluded=torch.stack([idx, (idx + n // 2) % n], dim=1))


EXPONENTS = [(1.5, 1.0), (2.5, 1.5, 3.0), (1.001, 1.0, 2.0), (2.5, 1.5, 4.0), (3.0, 1.0)]


@pytest.mark.parametrize("exponents", EXPONENTS)
@pytest.mark.parametrize("subsample", [False, True])
def test_difference_equals_logsumexp_and_passes_gradcheck(
    exponents: tuple[float, ...], subsample: bool
) -> None:
    """The plain pass (anchors ≠ candidates, an exclusion per anchor, optionally K-subsampled): the
    first column is L_0 − L_1, the others L_e; gradcheck through every column. (3, 1) is not a
    tilted pair (b < a − b): the same output from the existing streams."""
    a, c = 3.0 * _unit(7, 4, 0), _unit(9, 4, 1)
    rule = TileMask(num_anchors=7, num_candidates=9, excluded=torch.arange(7)[:, None])
    if subsample:
        rule = rule.with_subsample(5, 4, 4)
    out, counts = tiled_lse(a, c, exponents, rule, tile=4, difference=True)
    valid = _valid(rule, 7, 9)
    torch.testing.assert_close(out, _direct(a @ c.T, valid, exponents), rtol=1e-12, atol=1e-12)
    assert counts.tolist() == valid.sum(dim=1).tolist()
    weights = torch.randn(7, len(exponents), dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    x, y = a.clone().requires_grad_(True), c.clone().requires_grad_(True)
    assert torch.autograd.gradcheck(
        lambda p, q: (tiled_lse(p, q, exponents, rule, tile=4, difference=True)[0] * weights).sum(), (x, y)
    )


def _valid(rule: TileMask, rows: int, cols: int) -> torch.Tensor:
    """The rule's mask as a bool (rows, cols) matrix (its −inf fill of a zero matrix)."""
    s = torch.zeros(rows, cols, dtype=torch.float64)
    rule.fill_invalid_(s, 0, rows, 0, cols)
    return torch.isfinite(s)


@pytest.mark.parametrize("exponents", [(1.5, 1.0), (1.5, 1.0, 2.0), (1.001, 1.0, 2.0)])
@pytest.mark.parametrize("scale", [2.0, 20.0])
def test_symmetric_difference_equals_logsumexp_and_passes_gradcheck(
    exponents: tuple[float, ...], scale: float
) -> None:
    """The symmetric SimCLR pass (each tile pair once): at scale 2 one shared shift per tile pair
    (the two log-sum-exps), at scale 20 (2·a·scale above the safe band) the tilted pair, its
    diagonal tiles' rows transposed."""
    v = _unit(10, 4, 3)
    rule = _simclr_rule(10)
    out, _ = tiled_lse_symmetric(v, scale, exponents, rule, tile=4, difference=True)
    want = _direct(scale * v @ v.T, _valid(rule, 10, 10), exponents)
    torch.testing.assert_close(out, want, rtol=1e-12, atol=1e-12)
    weights = torch.randn(10, len(exponents), dtype=torch.float64, generator=torch.Generator().manual_seed(4))
    x = v.clone().requires_grad_(True)

    def weighted(p: torch.Tensor) -> torch.Tensor:
        return (tiled_lse_symmetric(p, scale, exponents, rule, tile=4, difference=True)[0] * weights).sum()

    assert torch.autograd.gradcheck(weighted, (x,))


@pytest.mark.parametrize("symmetric", [False, True])
def test_float32_difference_at_beta_1000_equals_float64(symmetric: bool) -> None:
    """β = 1000 in the engine's units (logits β/t·cos, exponents 1 + 1/β and 1): the float32
    gradient within 2e-6 of float64's (before issue 44: 3e-5 on the symmetric pass, whose diagonal
    tiles read s_ij for s_ji)."""
    beta, t = 1000.0, 0.5
    exps = (1.0 + 1.0 / beta, 1.0)
    v64 = _unit(32, 16, 5)
    rule = _simclr_rule(32)
    grads = []
    for dtype in (torch.float32, torch.float64):
        v = v64.to(dtype).requires_grad_(True)
        if symmetric:
            out = tiled_lse_symmetric(v, beta / t, exps, rule, tile=8, difference=True)[0]
        else:
            out = tiled_lse(v * (beta / t), v, exps, rule, tile=8, difference=True)[0]
        out[:, 0].sum().backward()
        assert v.grad is not None
        grads.append(v.grad.double())
    assert float((grads[0] - grads[1]).norm() / grads[1].norm()) <= 2e-6


def test_difference_needs_a_decreasing_positive_pair() -> None:
    a, c = _unit(3, 4, 0), _unit(5, 4, 1)
    rule = TileMask(num_anchors=3, num_candidates=5, excluded=torch.full((3, 1), -1))
    message = r"difference=True needs exponents a_0 > a_1 > 0 first, got "
    with pytest.raises(ValueError, match=message + r"\(1.0,\)"):
        tiled_lse(a, c, (1.0,), rule, tile=2, difference=True)
    with pytest.raises(ValueError, match=message + r"\(1.0, 2.0\)"):
        tiled_lse_symmetric(_unit(4, 3, 2), 1.0, (1.0, 2.0), _simclr_rule(4), tile=2, difference=True)


def test_compile_tiles_takes_the_eager_pair_kernels() -> None:
    """compile_tiles=True with β > 1 and no safe shared shift (β = 100, t = 0.5): the tilted pair
    has no compiled kernel; the eager one runs (no torch.compile, the same values and gradients as
    compile_tiles=False)."""
    z1, z2 = _unit(12, 5, 6), _unit(12, 5, 7)
    results = []
    for compiled in (False, True):
        loss_fn = ContrastiveLoss(temperature=0.5, tau_plus=0.1, negatives=negatives.Hard(beta=100.0),
                                  memory_budget=0, tile_size=8, compile_tiles=compiled)
        a, b = z1.clone().requires_grad_(True), z2.clone().requires_grad_(True)
        value = loss_fn(a, b)
        value.backward()
        results.append((value, a.grad, b.grad))
    for x, y in zip(*results, strict=True):
        assert torch.equal(x, y)
