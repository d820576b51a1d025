"""The fixed per-row shifts of the rectangular tiled log-sum-exp (forward) and the folded backward,
against a float64 re-derivation written here (masked ``logsumexp`` and autograd through it), with
spies that prove which path ran: the fixed shift where the shared-shift condition holds, the
running maximum and the unfolded gradient otherwise."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch

import hardneg.engines.tiled.lse as lse_mod
from hardneg.engines.tiled import TileMask, tiled_lse
from hardneg.engines.tiled.rowshift import RowShift, choose_fold, fold_checks, row_shift


def _reference(
    a: torch.Tensor, c: torch.Tensor, exponents: tuple[float, ...], valid: torch.Tensor
) -> torch.Tensor:
    """float64 ``log Σ_{j valid} e^{a_e ⟨a_i, c_j⟩}`` (A, E), straight from the definition."""
    s = (a.double() @ c.double().T).masked_fill(~valid, float("-inf"))
    return torch.stack([torch.logsumexp(e * s, dim=1) for e in exponents], dim=1)


def _spy(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Count the calls of each path's tile step."""
    calls = {"fixed": 0, "running": 0, "folded": 0, "unfolded": 0}

    def wrap(name: str, fn: Callable[..., object]) -> Callable[..., object]:
        def inner(*args: object, **kwargs: object) -> object:
            calls[name] += 1
            return fn(*args, **kwargs)

        return inner

    monkeypatch.setattr(lse_mod, "fixed_sums", wrap("fixed", lse_mod.fixed_sums))
    monkeypatch.setattr(lse_mod, "fold_tile_", wrap("folded", lse_mod.fold_tile_))
    monkeypatch.setattr(lse_mod, "absorb_", wrap("running", lse_mod.absorb_))
    monkeypatch.setattr(lse_mod, "grad_apply", wrap("unfolded", lse_mod.grad_apply))
    return calls


def _data(
    seed: int, n_a: int = 13, n_c: int = 37, d: int = 5, scale: float = 2.0
) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    a = torch.nn.functional.normalize(torch.randn(n_a, d, generator=g, dtype=torch.float64), dim=1) * scale
    c = torch.nn.functional.normalize(torch.randn(n_c, d, generator=g, dtype=torch.float64), dim=1)
    return a, c


def test_row_shift_finds_one_base_and_its_multiples() -> None:
    assert row_shift((1.0,)) == RowShift(0, ())
    assert row_shift((6.0, 1.0)) == RowShift(1, ((6, 0),))
    assert row_shift((1.0, 2.0, 6.0)) == RowShift(0, ((2, 1), (6, 2)))
    assert row_shift((1.2, 0.2)) == RowShift(1, ((6, 0),))  # 1.2 / 0.2 = 5.999… in floating point
    assert row_shift((1.0, 1.3)) is None  # two bases: the running maximum
    assert row_shift((1.7, 0.1)) is None  # k = 17 > MAX_MULTIPLE


MASKS = ["none", "diagonal", "labels", "explicit", "subsample"]


def _rule(kind: str, n_a: int, n_c: int, seed: int) -> TileMask:
    g = torch.Generator().manual_seed(seed + 100)
    none = torch.full((n_a, 1), -1)
    if kind == "none":
        return TileMask(num_anchors=n_a, num_candidates=n_c, excluded=none)
    if kind == "diagonal":
        return TileMask(num_anchors=n_a, num_candidates=n_c, excluded=torch.arange(n_a)[:, None])
    if kind == "labels":
        return TileMask(
            num_anchors=n_a,
            num_candidates=n_c,
            excluded=none,
            anchor_labels=torch.randint(0, 4, (n_a,), generator=g),
            candidate_labels=torch.randint(0, 4, (n_c,), generator=g),
            collision_free=True,
        )
    if kind == "explicit":
        explicit = torch.rand(n_a, n_c, generator=g) > 0.3
        explicit[2] = False  # a row without a valid entry: L = −inf, no gradient
        explicit[:, 3] = False  # a candidate that is nobody's negative: an exact 0 gradient
        return TileMask(num_anchors=n_a, num_candidates=n_c, excluded=none, explicit=explicit)
    return TileMask(num_anchors=n_a, num_candidates=n_c, excluded=none).with_subsample(5, 7, 8)


@pytest.mark.parametrize("mask", MASKS)
@pytest.mark.parametrize(
    ("exponents", "weights"),
    [
        ((1.0,), (1.0,)),  # InfoNCE
        ((1.0,), (-0.7,)),  # a negative coefficient: ρ carries any sign
        ((6.0, 1.0), (1.0, -1.0)),  # hard negatives (β = 0.2): ε = −1
        ((6.0, 1.0), (0.5, 2.0)),  # both positive: ε = +1
        ((3.0, 1.0), (1.0, -1.0)),  # β = 0.5: odd k
        ((5.0, 1.0), (1.0, -1.0)),  # β = 0.25: odd k by squaring
        ((2.0, 1.0), (1.0, -1.0)),  # β = 1
        ((4.0, 1.0), (1.0, -0.3)),  # even k = 4
    ],
)
def test_fixed_shift_and_folded_gradient_equal_the_float64_reference(
    mask: str, exponents: tuple[float, ...], weights: tuple[float, ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = _spy(monkeypatch)
    a, c = _data(len(mask) + int(10 * sum(exponents)))
    rule = _rule(mask, a.shape[0], c.shape[0], 3)
    a.requires_grad_(True)
    c.requires_grad_(True)
    got, counts = tiled_lse(a, c, exponents, rule, tile=8)
    valid = rule.block(0, a.shape[0], 0, c.shape[0])
    a64 = a.detach().clone().requires_grad_(True)
    c64 = c.detach().clone().requires_grad_(True)
    want = _reference(a64, c64, exponents, valid)
    torch.testing.assert_close(got, want, rtol=1e-10, atol=0)
    assert torch.equal(counts, valid.sum(dim=1))
    w = torch.tensor(weights, dtype=torch.float64)
    finite = torch.isfinite(want)
    ga, gc = torch.autograd.grad((got.where(finite, 0.0) * w).sum(), (a, c))
    wa, wc = torch.autograd.grad((want.where(finite, 0.0) * w).sum(), (a64, c64))
    torch.testing.assert_close(ga, wa, rtol=1e-9, atol=1e-12)
    torch.testing.assert_close(gc, wc, rtol=1e-9, atol=1e-12)
    assert torch.isfinite(ga).all() and torch.isfinite(gc).all()
    assert calls["fixed"] > 0 and calls["running"] == 0
    assert calls["folded"] > 0 and calls["unfolded"] == 0
    if mask == "explicit":
        assert torch.isneginf(got[2]).all() and (ga[2] == 0).all()  # the row without a valid entry
        assert (gc[3] == 0).all()  # floored entries carry an exact 0, not e^{floor}


def test_rows_without_a_gradient_get_an_exact_zero(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _spy(monkeypatch)
    a, c = _data(5)
    a.requires_grad_(True)
    c.requires_grad_(True)  # constant candidates would take the forward-accumulated gradient
    rule = _rule("none", a.shape[0], c.shape[0], 0)
    got, _ = tiled_lse(a, c, (6.0, 1.0), rule, tile=8)
    w = torch.ones(a.shape[0], 1, dtype=torch.float64) * torch.tensor([1.0, -1.0], dtype=torch.float64)
    w[[0, 7]] = 0.0
    (ga,) = torch.autograd.grad((got * w).sum(), a)
    assert (ga[[0, 7]] == 0).all() and (ga[1] != 0).any()
    assert calls["folded"] > 0


def test_mixed_signs_take_the_unfolded_gradient(monkeypatch: pytest.MonkeyPatch) -> None:
    """``b`` of both signs across rows (no single ε), and a row with ``f = 0`` but ``b ≠ 0``: no
    fold exists, the general block gradient runs and is still exact."""
    a, c = _data(8)
    rule = _rule("diagonal", a.shape[0], c.shape[0], 0)
    for w in (
        torch.tensor([[1.0, -1.0]] * 6 + [[1.0, 1.0]] * 7, dtype=torch.float64),
        torch.tensor([[1.0, -1.0]] * 12 + [[0.0, -1.0]], dtype=torch.float64),
    ):
        calls = _spy(monkeypatch)
        a1 = a.clone().requires_grad_(True)
        got, _ = tiled_lse(a1, c, (6.0, 1.0), rule, tile=8)
        (ga,) = torch.autograd.grad((got * w).sum(), a1)
        a64 = a.clone().requires_grad_(True)
        want = _reference(a64, c, (6.0, 1.0), rule.block(0, 13, 0, 37))
        (wa,) = torch.autograd.grad((want * w).sum(), a64)
        torch.testing.assert_close(ga, wa, rtol=1e-9, atol=1e-12)
        assert calls["folded"] == 0 and calls["unfolded"] > 0


def test_three_exponents_fold_the_forward_but_not_a_two_term_gradient(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The effective sample size's ``2β`` beside ``β`` and ``1 + β``: one exponential and two
    powers in the forward; with all three carrying a gradient the backward is the general one,
    with only two the fold."""
    a, c = _data(11)
    rule = _rule("labels", a.shape[0], c.shape[0], 1)
    want_fn = lambda x: _reference(x, c, (1.0, 2.0, 6.0), rule.block(0, 13, 0, 37))  # noqa: E731
    for w, folded in (((1.0, 0.3, -0.5), False), ((-1.0, 0.0, 1.0), True)):
        calls = _spy(monkeypatch)
        a1 = a.clone().requires_grad_(True)
        got, _ = tiled_lse(a1, c, (1.0, 2.0, 6.0), rule, tile=8)
        a64 = a.clone().requires_grad_(True)
        want = want_fn(a64)
        torch.testing.assert_close(got, want, rtol=1e-10, atol=0)
        wt = torch.tensor(w, dtype=torch.float64)
        (ga,) = torch.autograd.grad((got * wt).sum(), a1)
        (wa,) = torch.autograd.grad((want * wt).sum(), a64)
        torch.testing.assert_close(ga, wa, rtol=1e-9, atol=1e-12)
        assert calls["fixed"] > 0 and calls["running"] == 0
        assert (calls["folded"] > 0) == folded and (calls["unfolded"] > 0) != folded


def test_an_unsafe_shift_takes_the_running_maximum(monkeypatch: pytest.MonkeyPatch) -> None:
    """Float32 logits up to ±50 with exponents 1 and 6 (``2 a_max h = 600 > 43.7``): the fixed shift
    would underflow, so the running maximum and the general gradient run — and stay exact."""
    calls = _spy(monkeypatch)
    a, c = _data(4, scale=50.0)
    a32, c32 = a.float().requires_grad_(True), c.float()
    rule = _rule("none", a.shape[0], c.shape[0], 0)
    got, _ = tiled_lse(a32, c32, (6.0, 1.0), rule, tile=8)
    w = torch.tensor([1.0, -1.0])
    (ga,) = torch.autograd.grad((got * w).sum(), a32)
    a64 = a.clone().requires_grad_(True)
    want = _reference(a64, c, (6.0, 1.0), torch.ones(13, 37, dtype=torch.bool))
    (wa,) = torch.autograd.grad((want * w.double()).sum(), a64)
    torch.testing.assert_close(got.double(), want, rtol=1e-5, atol=0)
    torch.testing.assert_close(ga.double(), wa, rtol=1e-4, atol=1e-4)
    assert calls["running"] > 0 and calls["fixed"] == 0
    assert calls["unfolded"] > 0 and calls["folded"] == 0


def test_float32_hard_negatives_at_the_edge_of_the_safe_band(monkeypatch: pytest.MonkeyPatch) -> None:
    """Temperature 0.2, β = 0.2 on unit vectors (``2 · 6 · 1 = 12 ≤ 43.7``) and a larger logit
    scale just inside the band (``2 · 6 · 3.6 = 43.2``): the fixed path, equal to float64."""
    for scale in (1.0, 3.6):
        calls = _spy(monkeypatch)
        a, c = _data(6, n_a=40, n_c=300, d=16, scale=scale)
        a32 = a.float().requires_grad_(True)
        rule = _rule("diagonal", 40, 300, 0)
        got, _ = tiled_lse(a32, c.float(), (6.0, 1.0), rule, tile=64)
        w = torch.tensor([1.0, -1.0])
        (ga,) = torch.autograd.grad((got * w).sum(), a32)
        a64 = a.clone().requires_grad_(True)
        want = _reference(a64, c, (6.0, 1.0), rule.block(0, 40, 0, 300))
        (wa,) = torch.autograd.grad((want * w.double()).sum(), a64)
        torch.testing.assert_close(got.double(), want, rtol=2e-6, atol=0)
        torch.testing.assert_close(ga.double(), wa, rtol=1e-4, atol=1e-5)
        assert calls["fixed"] > 0 and calls["folded"] > 0


def test_fold_checks_refuse_a_scale_that_would_overflow() -> None:
    """``k log λ ≤ B`` (``λ^{k−1} = f/|b|``): a row whose base coefficient is 1e-30 of its top
    coefficient would need ``y^k`` up to ``λ^k ≈ 1e36``; the check refuses it, and ``choose_fold``
    returns ``None`` for it."""
    shape = RowShift(1, ((6, 0),))
    lse = torch.zeros(3, 2)
    coef = torch.tensor([[1.0, -1.0], [1.0, -1.0], [0.0, 0.0]])  # the last row has no gradient
    assert fold_checks(coef, lse, shape).tolist() == [True, False]
    flags = fold_checks(coef, lse, shape).tolist()
    fold = choose_fold(lse, coef, (6.0, 1.0), shape, [0, 1], flags)
    assert fold is not None and fold.eps == -1.0 and fold.k == 6
    assert torch.isneginf(fold.bias[2]).all() and fold.rho[2].item() == 0.0
    coef[1, 1] = -1e-30
    flags = fold_checks(coef, lse, shape).tolist()
    assert flags == [False, False]
    assert choose_fold(lse, coef, (6.0, 1.0), shape, [0, 1], flags) is None


def test_gradcheck_through_the_folded_path() -> None:
    a, c = _data(2, n_a=5, n_c=11, d=3)
    rule = _rule("diagonal", 5, 11, 0)
    a.requires_grad_(True)
    c.requires_grad_(True)
    w = torch.tensor([1.0, -1.0], dtype=torch.float64)
    assert torch.autograd.gradcheck(
        lambda x, y: (tiled_lse(x, y, (6.0, 1.0), rule, tile=4)[0] * w).sum(1), (a, c)
    )
