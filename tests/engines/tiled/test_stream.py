"""The block steps of the streaming log-sum-exp against float64 re-derivations: integer-multiple
exponents (hard negatives' ``1 + β = kβ``) by powers instead of exponentials, forward and backward."""

from __future__ import annotations

import pytest
import torch

from hardneg.engines.tiled.stream import (
    MAX_MULTIPLE,
    Scratch,
    absorb_,
    exp_,
    exp_floor,
    finish,
    grad_block,
    ipow,
    may_underflow,
    multiples,
)

SETS = [(1.0,), (2.0, 1.0), (1.5, 0.5), (1.2, 0.2), (1.1, 0.1), (1.2, 0.2, 0.4), (2.5, 1.5, 3.0), (1.7, 0.1)]


@pytest.mark.parametrize("k", range(2, MAX_MULTIPLE + 1))
def test_ipow_equals_pow(k: int) -> None:
    x = torch.rand(5, 7, dtype=torch.float64, generator=torch.Generator().manual_seed(k))
    out = torch.empty_like(x)
    before = x.clone()
    torch.testing.assert_close(ipow(x, k, out), x**k, rtol=1e-14, atol=0)
    assert torch.equal(x, before)


def test_multiples_pairs_each_exponent_with_its_smallest_divisor() -> None:
    assert multiples((1.2, 0.2), [0, 1]) == {0: (1, 6)}  # 1.2 / 0.2 = 5.999… in floating point
    assert multiples((1.2, 0.2, 0.4), [0, 1, 2]) == {0: (1, 6), 2: (1, 2)}
    assert multiples((2.5, 1.5, 3.0), [0, 1, 2]) == {2: (1, 2)}
    assert multiples((1.7, 0.1), [0, 1]) == {}  # k = 17 > MAX_MULTIPLE: two exponentials
    assert multiples((1.3, 0.3), [0, 1]) == {}
    assert multiples((2.0, 1.0), [0]) == {}  # an inactive base does not count


def _lse_rows(s: torch.Tensor, exponents: tuple[float, ...]) -> torch.Tensor:
    return torch.stack([torch.logsumexp(a * s, dim=1) for a in exponents], dim=1)


@pytest.mark.parametrize("exponents", SETS)
@pytest.mark.parametrize("dim", [0, 1])
def test_streamed_blocks_equal_logsumexp(exponents: tuple[float, ...], dim: int) -> None:
    g = torch.Generator().manual_seed(3)
    s = 4.0 * torch.randn(6, 11, dtype=torch.float64, generator=g)
    s[torch.rand(6, 11, generator=g) < 0.25] = float("-inf")
    s[:, 0] = 1.0  # every row has a valid entry
    n = s.shape[0]  # statistics of the rows of s, read along dim 1 or (transposed blocks) dim 0
    run_max = torch.full((n,), float("-inf"), dtype=torch.float64)
    run_sum = torch.zeros(n, len(exponents), dtype=torch.float64)
    work = Scratch()
    for c0, c1 in ((0, 4), (4, 9), (9, s.shape[1])):
        block = s[:, c0:c1] if dim == 1 else s[:, c0:c1].T.contiguous()
        absorb_(run_max, run_sum, block.clone(), exponents, dim=dim, scratch=work)
    torch.testing.assert_close(
        finish(run_max, run_sum, exponents), _lse_rows(s, exponents), rtol=1e-13, atol=0
    )


@pytest.mark.parametrize("exponents", SETS)
@pytest.mark.parametrize("scale", [1.0, 30.0])
def test_grad_block_equals_the_direct_formula(exponents: tuple[float, ...], scale: float) -> None:
    """``Σ_e coef_e e^{a_e s − L_e}`` with the rows' true log-sum-exps (scale 30: logits up to ~100,
    where a power's factor ``e^{k L_top/k_top − L_m}`` spans many orders of magnitude)."""
    g = torch.Generator().manual_seed(4)
    s = scale * torch.randn(5, 13, dtype=torch.float64, generator=g)
    s[torch.rand(5, 13, generator=g) < 0.2] = float("-inf")
    s[:, 0] = 0.0
    lse = _lse_rows(s, exponents)
    coef = torch.randn(5, len(exponents), dtype=torch.float64, generator=g)
    want = sum(coef[:, e, None] * torch.exp(a * s - lse[:, e, None]) for e, a in enumerate(exponents))
    for dim, (blk, l_, c_) in enumerate(((s.T.contiguous(), lse, coef), (s, lse, coef))):
        got = grad_block(blk, l_, c_, exponents, list(range(len(exponents))), dim=dim)
        torch.testing.assert_close(got if dim == 1 else got.T, want, rtol=1e-12, atol=1e-300)


def test_exp_floor_keeps_arguments_in_the_normal_range() -> None:
    for dtype in (torch.float32, torch.float64):
        low = exp_floor(dtype)
        x = torch.tensor([float("-inf"), -1e4, low - 1.0, -1.0, 0.0], dtype=dtype)
        y = exp_(x.clone(), low)
        assert bool((y >= torch.finfo(dtype).tiny).all())  # normal numbers: the fast path
        torch.testing.assert_close(y[3:], torch.exp(x[3:]), rtol=0, atol=0)  # above the floor: exact
        assert float(y[0]) <= 1e-34 if dtype == torch.float32 else float(y[0]) <= 1e-300


def test_may_underflow_follows_the_cauchy_schwarz_bound() -> None:
    v = torch.nn.functional.normalize(torch.randn(50, 8, generator=torch.Generator().manual_seed(0)), dim=1)
    assert not may_underflow(v / 0.5, v, (2.0, 1.0), 100)  # |s| <= 2: arguments >= -8 - log 100
    assert may_underflow(v / 0.02, v, (2.0, 1.0), 100)  # |s| <= 50: arguments may reach -200
    assert not may_underflow((v / 0.02).double(), v.double(), (2.0, 1.0), 100)  # float64 floor -701


@pytest.mark.parametrize("temperature", [0.5, 0.01])
def test_floored_tiles_equal_the_float64_reference(
    temperature: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Masked tiles (K-subsampling: most entries −inf) and a temperature whose arguments reach
    −400 (so every tile is floored): the tiled log-sum-exp still equals a float64 logsumexp."""
    import hardneg.engines.tiled.rowshift as rowshift
    import hardneg.engines.tiled.stream as stream
    from hardneg.engines.tiled import TileMask, tiled_lse

    floors: list[float | None] = []
    real = stream.exp_
    for module in (stream, rowshift):  # the running maximum, and the fixed per-row shifts
        monkeypatch.setattr(module, "exp_", lambda x, floor=None: floors.append(floor) or real(x, floor))

    g = torch.Generator().manual_seed(9)
    a = torch.nn.functional.normalize(torch.randn(20, 6, generator=g), dim=1) / temperature
    c = torch.nn.functional.normalize(torch.randn(30, 6, generator=g), dim=1)
    excluded = torch.full((20, 1), -1)
    rule = TileMask(num_anchors=20, num_candidates=30, excluded=excluded).with_subsample(3, 4, 8)
    a.requires_grad_(True)
    lse, _ = tiled_lse(a, c, (2.0, 1.0), rule, tile=8)
    valid = rule.block(0, 20, 0, 30)
    a64 = a.detach().double().requires_grad_(True)
    s = (a64 @ c.double().T).masked_fill(~valid, float("-inf"))
    want = torch.stack([torch.logsumexp(k * s, dim=1) for k in (2.0, 1.0)], dim=1)
    torch.testing.assert_close(lse.double(), want, rtol=1e-5, atol=0)
    weights = torch.tensor([1.0, -0.5])
    (grad,) = torch.autograd.grad((lse * weights).sum(), a)
    (want_grad,) = torch.autograd.grad((want * weights.double()).sum(), a64)
    torch.testing.assert_close(grad.double(), want_grad, rtol=1e-4, atol=1e-5)
    assert floors and all(f == exp_floor(torch.float32) for f in floors)  # every tile is masked


PAIRS = [(1.5, 1.0), (1.5, 1.0, 2.0), (11.0, 10.0, 20.0), (1.001, 1.0, 2.0), (2.5, 1.5, 4.0, 3.0)]


def _pair_block(seed: int, scale: float) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    s = scale * torch.randn(6, 11, dtype=torch.float64, generator=g)
    s[torch.rand(6, 11, generator=g) < 0.25] = float("-inf")
    s[:, 0] = 1.0
    s[5] = float("-inf")  # a row without a valid entry
    return s


@pytest.mark.parametrize("exponents", PAIRS)
@pytest.mark.parametrize("dim", [0, 1])
def test_streamed_tilted_pair_equals_logsumexp(exponents: tuple[float, ...], dim: int) -> None:
    """The tilted pair's running (M, D, S_b, …) over three blocks (the maximum rises between them):
    ``finish`` gives every L_e and ``pair_difference`` gives L_0 − L_1, against float64 logsumexp."""
    from hardneg.engines.tiled.stream import pair_difference

    s = _pair_block(5, 4.0)
    n = s.shape[0]
    run_max = torch.full((n,), float("-inf"), dtype=torch.float64)
    run_sum = torch.zeros(n, len(exponents), dtype=torch.float64)
    work = Scratch()
    for c0, c1 in ((0, 4), (4, 9), (9, s.shape[1])):
        block = s[:, c0:c1] if dim == 1 else s[:, c0:c1].T.contiguous()
        absorb_(run_max, run_sum, block.clone(), exponents, dim=dim, scratch=work, pair=True)
    want = _lse_rows(s, exponents)
    got = finish(run_max, run_sum, exponents, pair=True)
    torch.testing.assert_close(got[:5], want[:5], rtol=1e-13, atol=0)
    assert bool(torch.isneginf(got[5]).all())
    diff = pair_difference(run_max, run_sum, exponents, pair=True)
    torch.testing.assert_close(diff[:5], want[:5, 0] - want[:5, 1], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("exponents", PAIRS)
def test_pair_gradient_equals_the_direct_formula(exponents: tuple[float, ...]) -> None:
    """``pair_grad_apply`` of the outputs (L_0 − L_1, L_1, L_2, …) with random upstream gradients:
    ``g_0 (a p_a − b p_b) + Σ_{e ≥ 1} g_e a_e p_e``, p_e the rows' softmax of ``a_e s``."""
    from hardneg.engines.tiled.stream import pair_grad_apply, pair_grad_plan

    s = _pair_block(6, 3.0)
    n = s.shape[0]
    run_max = torch.full((n,), float("-inf"), dtype=torch.float64)
    run_sum = torch.zeros(n, len(exponents), dtype=torch.float64)
    absorb_(run_max, run_sum, s.clone(), exponents, dim=1, pair=True)
    grad = torch.randn(n, len(exponents), dtype=torch.float64, generator=torch.Generator().manual_seed(7))
    lse = _lse_rows(s, exponents)
    p = [torch.exp(a * s - lse[:, e, None]) for e, a in enumerate(exponents)]
    a, b = exponents[0], exponents[1]
    want = grad[:, :1] * (a * p[0] - b * p[1])
    for e in range(1, len(exponents)):
        want = want + grad[:, e, None] * exponents[e] * p[e]
    plan = pair_grad_plan(run_max, run_sum, grad, exponents, list(range(len(exponents))))
    for dim, blk in ((1, s), (0, s.T.contiguous())):
        got = pair_grad_apply(blk, plan, dim=dim)
        got = got if dim == 1 else got.T
        torch.testing.assert_close(got[:5], want[:5], rtol=1e-11, atol=1e-14)
        assert bool((got[5] == 0).all())
