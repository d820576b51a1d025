"""The fused Triton tile kernel (issue 47) on a CPU, under Triton's interpreter.

The kernels (:mod:`hardneg.engines.tiled.triton_lse`) are compared with a plain float64 re-derivation
written here — the valid mask from its definition, ``log Σ_j e^{a_e s_ij}`` by ``torch.logsumexp``,
gradients by autograd through it — for exponents of every sign, every mask rule it implements,
tiles that do not divide the batch and features in several chunks; then ``engine="fused"`` is
compared with the materialised engine over distributions (Uniform, Hard, a user's tilted one),
objectives and layouts, checking that the kernel ran. Small sizes: the interpreter runs every
block operation in numpy. Skipped without triton (the ``gpu`` extra).
"""

from __future__ import annotations

import os

import pytest

os.environ["TRITON_INTERPRET"] = "1"  # before triton is imported: the kernels run on the CPU
pytest.importorskip("triton", minversion="3.7", reason="triton>=3.7 (the gpu extra) is not installed")

import torch
from torch import Tensor

from hardneg import ContrastiveLoss, negatives, objectives
from hardneg.engines.tiled import TileMask
from hardneg.engines.tiled import triton_lse as kernel
from hardneg.negatives import NegativeDistribution, TileWeights, normalize_log_weights
from hardneg.scores import Scores

F64 = torch.float64


class Tilted(NegativeDistribution):
    """A user's distribution: ``w_ij ∝ e^{γ s_ij}``, mean one per anchor (γ < 0: docs'
    ``Farthest``), stating its tilt so that it tiles."""

    per_anchor_weights = True

    def __init__(self, gamma: float) -> None:
        super().__init__()
        self.gamma = gamma

    def log_weights(self, scores: Scores) -> Tensor:
        return normalize_log_weights(self.gamma * scores.logits, scores.mask)

    def tile_weights(self) -> TileWeights:
        return TileWeights(tilt=self.gamma)


@pytest.fixture
def launches(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """How many times each kernel was launched (the fused engine must not fall back silently)."""
    count = {"forward": 0, "rows": 0, "cols": 0}
    for name, attribute in (("forward", "_forward"), ("rows", "_backward_rows"), ("cols", "_backward_cols")):

        def counted(*args: object, _fn: object = getattr(kernel, attribute), _name: str = name,
                    **kw: object) -> object:
            count[_name] += 1
            return _fn(*args, **kw)  # type: ignore[operator]

        monkeypatch.setattr(kernel, attribute, counted)
    return count


# -- the float64 re-derivation ------------------------------------------------------------------
def _valid(a_n: int, n_n: int, excluded: Tensor, labels: tuple[Tensor, Tensor] | None,
           explicit: Tensor | None) -> Tensor:
    """The valid mask from its definition: not an excluded index, not the same known label (≥ 0),
    allowed by ``explicit``."""
    valid = torch.ones(a_n, n_n, dtype=torch.bool)
    for i in range(a_n):
        for j in excluded[i].tolist():
            if j >= 0:
                valid[i, j] = False
    if labels is not None:
        la, lc = labels
        valid &= ~((la[:, None] == lc[None, :]) & (la[:, None] >= 0) & (lc[None, :] >= 0))
    if explicit is not None:
        valid &= explicit
    return valid


def _reference_lse(x: Tensor, y: Tensor, exponents: tuple[float, ...], valid: Tensor) -> Tensor:
    s = x.to(F64) @ y.to(F64).T
    return torch.stack([torch.where(valid, a * s, float("-inf")).logsumexp(dim=1) for a in exponents], dim=1)


def _finite(lse: Tensor) -> Tensor:
    return torch.where(torch.isfinite(lse), lse, 0.0)


def _grads(lse: Tensor, weights: Tensor, inputs: tuple[Tensor, ...]) -> tuple[Tensor, ...]:
    """Gradients of ``Σ weights · L`` (rows without a valid entry contribute nothing)."""
    return torch.autograd.grad((_finite(lse) * weights.to(lse.dtype)).sum(), inputs)


def _inputs(a_n: int, n_n: int, d: int, dtype: torch.dtype, seed: int) -> tuple[Tensor, Tensor]:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(a_n, d, generator=g, dtype=F64) * 0.8
    y = torch.randn(n_n, d, generator=g, dtype=F64) * 0.8
    return x.to(dtype).requires_grad_(), y.to(dtype).requires_grad_()


CASES = {
    # name: exponents, mask parts, d, blocks (None: the interpreter's 16 × 16 tiles)
    "uniform, exclusions": ((1.0,), "excluded", 5, None),
    "hard beta=1 and its ESS exponent, labels, explicit mask, empty row": ((2.0, 1.0, 2.0), "all", 5, None),
    "farthest gamma=0.7 (exponents 0.3, -0.7, -1.4), labels": ((0.3, -0.7, -1.4), "labels", 6, None),
    "beta=-1 (exponent 0 counts)": ((0.0, -1.0), "excluded", 4, None),
    "hard beta=0.5, features in three chunks": ((1.5, 0.5), "explicit", 40, kernel.Blocks(16, 16, 16, 1, 1)),
}


@pytest.mark.parametrize("dtype", [F64, torch.float32])
@pytest.mark.parametrize("case", list(CASES))
def test_lse_equals_the_float64_rederivation(case: str, dtype: torch.dtype) -> None:
    exponents, parts, d, blocks = CASES[case]
    a_n, n_n = 21, 37  # neither a multiple of the 16-row / 16-column tiles
    x, y = _inputs(a_n, n_n, d, dtype, seed=len(case))
    g = torch.Generator().manual_seed(1)
    excluded = torch.stack([torch.arange(a_n), (torch.arange(a_n) * 5 + 3) % n_n], dim=1)
    excluded[::4, 1] = -1
    la, lc = torch.randint(-1, 4, (a_n,), generator=g), torch.randint(-1, 4, (n_n,), generator=g)
    explicit = torch.rand(a_n, n_n, generator=g) > 0.25
    explicit[5] = False  # anchor 5: no valid candidate (L = −inf, no gradient)
    labels = (la, lc) if parts in ("labels", "all") else None
    mask = explicit if parts in ("explicit", "all") else None
    rule = TileMask(a_n, n_n, excluded=excluded, explicit=mask, anchor_labels=la, candidate_labels=lc,
                    collision_free=labels is not None)
    valid = _valid(a_n, n_n, excluded, labels, mask)

    lse, counts = kernel.lse(x, y, exponents, rule, blocks=blocks)
    xr, yr = x.detach().to(F64).requires_grad_(), y.detach().to(F64).requires_grad_()
    ref = _reference_lse(xr, yr, exponents, valid)
    assert counts.tolist() == valid.sum(dim=1).tolist()
    assert torch.equal(torch.isinf(lse), torch.isinf(ref))
    assert mask is None or bool(lse[5].isinf().all())
    weights = torch.randn(lse.shape, generator=g, dtype=F64)
    got, want = _grads(lse, weights, (x, y)), _grads(ref, weights, (xr, yr))
    rtol, atol = (1e-10, 1e-12) if dtype == F64 else (2e-5, 2e-6)
    torch.testing.assert_close(_finite(lse).to(F64), _finite(ref), rtol=rtol, atol=atol)
    for g_got, g_want in zip(got, want):
        torch.testing.assert_close(g_got.to(F64), g_want, rtol=rtol, atol=atol)


@pytest.mark.parametrize(("exponents", "d", "blocks"), [
    ((3.0, 2.0), 6, None),
    ((-0.5, 0.5, -1.0), 6, None),
    ((1.5, 0.5), 40, kernel.Blocks(16, 16, 16, 1, 1)),  # features in three chunks
])  # fmt: skip
def test_symmetric_lse_equals_the_float64_rederivation(exponents: tuple[float, ...], d: int,
                                                       blocks: kernel.Blocks | None) -> None:
    """SimCLR's layout: ``s = c·v vᵀ``, the view itself and its partner excluded, labels shared;
    the one row-block backward kernel against autograd through the re-derivation."""
    b, scale = 11, 2.0
    n = 2 * b
    v = _inputs(n, 1, d, F64, seed=3)[0]
    i = torch.arange(n)
    excluded = torch.stack([i, (i + b) % n], dim=1)
    labels = torch.randint(-1, 3, (b,), generator=torch.Generator().manual_seed(4)).repeat(2)
    rule = TileMask(n, n, excluded=excluded, anchor_labels=labels, candidate_labels=labels,
                    collision_free=True)
    lse, counts = kernel.lse_symmetric(v, scale, exponents, rule, blocks=blocks)
    vr = v.detach().clone().requires_grad_()
    valid = _valid(n, n, excluded, (labels, labels), None)
    ref = _reference_lse(scale * vr, vr, exponents, valid)
    weights = torch.randn(lse.shape, generator=torch.Generator().manual_seed(5), dtype=F64)
    assert counts.tolist() == valid.sum(dim=1).tolist()
    torch.testing.assert_close(_finite(lse), _finite(ref), rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(_grads(lse, weights, (v,))[0], _grads(ref, weights, (vr,))[0], rtol=1e-10,
                               atol=1e-12)


def test_gradcheck_small_float64() -> None:
    x, y = _inputs(5, 7, 3, F64, seed=6)
    rule = TileMask(5, 7, excluded=torch.tensor([[0], [1], [-1], [3], [6]]))
    assert torch.autograd.gradcheck(lambda a, b: kernel.lse(a, b, (2.0, -1.0), rule)[0], (x, y),
                                    fast_mode=True)
    i = torch.arange(6)
    sym = TileMask(6, 6, excluded=torch.stack([i, (i + 3) % 6], dim=1))
    v = _inputs(6, 1, 3, F64, seed=7)[0]
    assert torch.autograd.gradcheck(lambda a: kernel.lse_symmetric(a, 1.5, (2.0, 1.0), sym)[0], (v,),
                                    fast_mode=True)


def test_constant_candidates_run_no_column_kernel(launches: dict[str, int]) -> None:
    """MoCo's queue: the candidates need no gradient, so only the row-block backward runs."""
    x, y = _inputs(9, 20, 4, F64, seed=8)
    rule = TileMask(9, 20, excluded=torch.full((9, 1), -1))
    lse, _ = kernel.lse(x, y.detach(), (1.0,), rule)
    (gx,) = torch.autograd.grad(lse.sum(), (x,))
    xr = x.detach().clone().requires_grad_()
    (want,) = torch.autograd.grad(_reference_lse(xr, y.detach(), (1.0,), torch.ones(9, 20, dtype=torch.bool))
                                  .sum(), (xr,))
    torch.testing.assert_close(gx, want, rtol=1e-10, atol=1e-12)
    assert launches == {"forward": 1, "rows": 1, "cols": 0}


def test_the_kernel_refuses_a_drawn_mask() -> None:
    x, y = _inputs(4, 6, 3, F64, seed=9)
    rule = TileMask(4, 6, excluded=torch.full((4, 1), -1)).with_subsample(seed=0, num_negatives=2)
    with pytest.raises(ValueError, match="no K-subsampled mask"):
        kernel.lse(x, y, (1.0,), rule)


# -- engine="fused" against the materialised engine ----------------------------------------------
def _views(b: int, d: int, dtype: torch.dtype, seed: int = 0) -> tuple[Tensor, Tensor]:
    g = torch.Generator().manual_seed(seed)
    z1 = torch.randn(b, d, generator=g, dtype=F64)
    z2 = z1 + 0.4 * torch.randn(b, d, generator=g, dtype=F64)
    return z1.to(dtype), z2.to(dtype)


def _value_and_grads(loss_fn: ContrastiveLoss, call: str, inputs: tuple[Tensor, ...],
                     **kw: object) -> tuple[Tensor, ...]:
    leaves = tuple(t.detach().clone().requires_grad_() for t in inputs)
    out = getattr(loss_fn, call)(*leaves, **kw)
    return (out.detach(), *torch.autograd.grad(out, leaves))


DISTRIBUTIONS = {
    "uniform + InfoNCE": dict(),
    "hard beta=1 + Debiased": dict(negatives=negatives.Hard(beta=1.0), tau_plus=0.1),
    "a user's Farthest gamma=0.7": dict(negatives=Tilted(-0.7)),
    "hard beta=0.5, collision-free": dict(negatives=negatives.Hard(beta=0.5), collision_free=True),
    "hard beta=2 + Logistic": dict(negatives=negatives.Hard(beta=2.0), objective=objectives.Logistic()),
    "tilt 0.3 + Decoupled": dict(negatives=Tilted(0.3), objective=objectives.Decoupled()),
}


@pytest.mark.parametrize("name", list(DISTRIBUTIONS))
def test_fused_engine_equals_materialised_simclr(name: str, launches: dict[str, int]) -> None:
    """SimCLR's layout (B = 13: 26 views, two 16-row tiles), float64, values and gradients to 1e-10."""
    kw = DISTRIBUTIONS[name]
    labels = torch.arange(13) % 4 if kw.get("collision_free") else None
    z1, z2 = _views(13, 6, F64)
    fused = ContrastiveLoss(temperature=0.3, engine="fused", **kw)  # type: ignore[arg-type]
    full = ContrastiveLoss(temperature=0.3, engine="materialised", **kw)  # type: ignore[arg-type]
    got = _value_and_grads(fused, "forward", (z1, z2), labels=labels)
    want = _value_and_grads(full, "forward", (z1, z2), labels=labels)
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, rtol=1e-10, atol=1e-13)
    assert launches == {"forward": 1, "rows": 1, "cols": 0}  # symmetric: one backward kernel


def test_fused_engine_equals_materialised_pair_float32_with_mask_and_diagnostics(
    launches: dict[str, int],
) -> None:
    """The pair layout (A = 11 anchors, N = 29 candidates), an explicit mask, Hard(β = 1) with
    τ⁺ = 0.1, float32; the diagnostics' effective sample size streams a third exponent."""
    g = torch.Generator().manual_seed(2)
    a, p, c = (torch.randn(n, 8, generator=g) for n in (11, 11, 29))
    mask = torch.rand(11, 29, generator=g) > 0.2
    kw = dict(temperature=0.2, negatives=negatives.Hard(beta=1.0), tau_plus=0.1)
    fused = ContrastiveLoss(engine="fused", **kw)  # type: ignore[arg-type]
    full = ContrastiveLoss(engine="materialised", **kw)  # type: ignore[arg-type]
    got = _value_and_grads(fused, "pair", (a, p, c), mask=mask)
    want = _value_and_grads(full, "pair", (a, p, c), mask=mask)
    for x, y in zip(got, want):
        torch.testing.assert_close(x, y, rtol=2e-5, atol=2e-6)
    assert launches == {"forward": 1, "rows": 1, "cols": 1}
    d_fused = fused.pair(a, p, c, mask=mask, details=True).diagnostics
    d_full = full.pair(a, p, c, mask=mask, details=True).diagnostics
    assert d_fused["ess"] == pytest.approx(d_full["ess"], rel=1e-5)


def test_fused_engine_falls_back_with_the_reason_and_the_same_loss(launches: dict[str, int]) -> None:
    """Hinge reads the ramp mean: the tiled engine computes it (no kernel launch), as engine_for says."""
    z1, z2 = _views(6, 4, F64)
    fused = ContrastiveLoss(engine="fused", objective=objectives.Hinge())
    choice = fused.engine_for(12, 12, F64, num_valid=10)
    assert choice.engine == "tiled"
    assert choice.reason.startswith("not supported by the fused kernel (objective=")
    full = ContrastiveLoss(engine="materialised", objective=objectives.Hinge())
    torch.testing.assert_close(fused(z1, z2), full(z1, z2), rtol=1e-10, atol=1e-13)
    assert launches["forward"] == 0


def test_an_anchor_without_negatives_is_the_tiled_engines_error() -> None:
    a, c = torch.randn(3, 4, dtype=F64), torch.randn(5, 4, dtype=F64)
    mask = torch.ones(3, 5, dtype=torch.bool)
    mask[1] = False
    for engine in ("fused", "tiled"):
        with pytest.raises(ValueError, match="every anchor needs at least one valid negative"):
            ContrastiveLoss(engine=engine, memory_budget=0).pair(a, a, c, mask=mask)
