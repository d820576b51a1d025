"""Constant candidates: the anchors' gradient accumulated in the forward pass
(hardneg.engines.tiled.constant),
against a float64 re-derivation written here (``logsumexp`` and autograd through it), gradcheck,
and spies that prove which path ran (accumulated where it applies, the recomputing backward
otherwise)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch

import hardneg.engines.tiled.lse as lse_mod
from hardneg.engines.tiled import TileMask, tiled_lse
from hardneg.engines.tiled.constant import accumulation


def _reference(a: torch.Tensor, c: torch.Tensor, exponents: tuple[float, ...]) -> torch.Tensor:
    """float64 ``log Σ_j e^{a_e ⟨a_i, c_j⟩}`` (A, E), straight from the definition."""
    s = a.double() @ c.double().T
    return torch.stack([torch.logsumexp(e * s, dim=1) for e in exponents], dim=1)


def _spy(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    calls = {"accumulated": 0}
    fn = lse_mod.forward_accumulated

    def inner(*args: object, **kwargs: object) -> object:
        calls["accumulated"] += 1
        return fn(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(lse_mod, "forward_accumulated", inner)
    return calls


def _data(
    seed: int, n_a: int = 11, n_c: int = 29, d: int = 6, scale: float = 3.0
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(n_a, d, generator=g, dtype=torch.float64)
    a = torch.nn.functional.normalize(a, dim=1) * scale  # anchors / t with t = 1/scale
    c = torch.nn.functional.normalize(torch.randn(n_c, d, generator=g, dtype=torch.float64), dim=1)
    w = torch.randn(n_a, 1, generator=g, dtype=torch.float64)  # an upstream gradient of any sign
    return a, c, w


def _none(a: torch.Tensor, c: torch.Tensor) -> TileMask:
    return TileMask(a.shape[0], c.shape[0], excluded=torch.full((a.shape[0], 1), -1))


@pytest.mark.parametrize("exponents", [(1.0,), (6.0, 1.0), (2.0, 1.0), (1.0, 3.0)])
@pytest.mark.parametrize("tile", [4, 64])
def test_accumulated_value_and_gradient_equal_float64_reference(
    monkeypatch: pytest.MonkeyPatch, exponents: tuple[float, ...], tile: int
) -> None:
    calls = _spy(monkeypatch)
    a, c, w = _data(0)
    a.requires_grad_(True)
    got, counts = tiled_lse(a, c, exponents, _none(a, c), tile=tile)
    (g_got,) = torch.autograd.grad((got * w * torch.arange(1, len(exponents) + 1)).sum(), a)
    a64 = a.detach().clone().requires_grad_(True)
    want = _reference(a64, c, exponents)
    (g_want,) = torch.autograd.grad((want * w * torch.arange(1, len(exponents) + 1)).sum(), a64)
    torch.testing.assert_close(got, want, rtol=1e-13, atol=1e-13)
    torch.testing.assert_close(g_got, g_want, rtol=1e-12, atol=1e-13)
    assert counts.tolist() == [c.shape[0]] * a.shape[0]
    assert calls["accumulated"] == 1


def test_accumulated_gradient_passes_gradcheck(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _spy(monkeypatch)
    a, c, _ = _data(1, n_a=4, n_c=9, d=3)
    rule = _none(a, c)
    a.requires_grad_(True)
    assert torch.autograd.gradcheck(lambda x: tiled_lse(x, c, (6.0, 1.0), rule, tile=4)[0], (a,))
    assert calls["accumulated"] > 0


@pytest.mark.parametrize("case", ["candidates need a gradient", "masked", "no grad", "three exponents"])
def test_other_calls_keep_the_recomputing_backward(monkeypatch: pytest.MonkeyPatch, case: str) -> None:
    calls = _spy(monkeypatch)
    a, c, w = _data(2)
    exponents = (6.0, 1.0, 2.0) if case == "three exponents" else (6.0, 1.0)
    rule = _none(a, c)
    if case == "masked":  # one excluded candidate per anchor
        rule = TileMask(a.shape[0], c.shape[0], excluded=torch.arange(a.shape[0])[:, None])
    a.requires_grad_(case != "no grad")
    c.requires_grad_(case == "candidates need a gradient")
    with torch.set_grad_enabled(case != "no grad"):
        got, _ = tiled_lse(a, c, exponents, rule, tile=8)
    assert calls["accumulated"] == 0
    a64 = a.detach().clone().requires_grad_(True)
    valid = rule.block(0, a.shape[0], 0, c.shape[0])
    s = (a64 @ c.detach().T).masked_fill(~valid, float("-inf"))
    want = torch.stack([torch.logsumexp(e * s, dim=1) for e in exponents], dim=1)
    torch.testing.assert_close(got.detach(), want.detach(), rtol=1e-13, atol=1e-13)
    if case != "no grad":
        (g_got,) = torch.autograd.grad((got * w).sum(), a)
        (g_want,) = torch.autograd.grad((want * w).sum(), a64)
        torch.testing.assert_close(g_got, g_want, rtol=1e-12, atol=1e-13)


def test_accumulation_applies_only_where_exact_and_cheaper() -> None:
    ok = dict(wanted=True, num_candidates=5, clean=True, shared_shift=True, risky=False, compiled=False)
    assert accumulation((1.0,), **ok) is not None  # type: ignore[arg-type]
    assert accumulation((6.0, 1.0), **ok) is not None  # type: ignore[arg-type]
    assert accumulation((1.0, 1.3), **ok) is None  # type: ignore[arg-type]  # not multiples
    assert accumulation((-1.0,), **ok) is None  # type: ignore[arg-type]  # a negative tilt
    assert accumulation((6.0, 1.0, 2.0), **ok) is None  # type: ignore[arg-type]  # 2β: no gradient
    off: list[Callable[[dict[str, object]], None]] = [
        lambda d: d.update(wanted=False),
        lambda d: d.update(num_candidates=0),
        lambda d: d.update(clean=False),
        lambda d: d.update(shared_shift=False),
        lambda d: d.update(risky=True),
        lambda d: d.update(compiled=True),
    ]
    for change in off:
        kw: dict[str, object] = dict(ok)
        change(kw)
        assert accumulation((1.0,), **kw) is None  # type: ignore[arg-type]
