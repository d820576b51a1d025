"""The tiling protocol (issue 36, item 3): a distribution defined here, outside the package, tiles
by stating its weights per tile (``tile_weights``), with the materialised engine's values and
gradients and those of an independent float64 formula; one that states nothing is refused with
the reason, and ``engine="auto"`` materialises it within the budget."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import torch
from torch import Tensor

from hardneg import ContrastiveLoss, negatives, objectives
from hardneg.negatives import NegativeDistribution, TileWeights, normalize_log_weights
from hardneg.scores import Scores

F64 = torch.float64


class Tilted(NegativeDistribution):
    """``w_ij ∝ exp(gamma · s_ij)`` (mean one per anchor): ``gamma < 0`` is the docs' ``Farthest``,
    ``gamma = 2β`` a hard distribution tilted twice as much as ``Hard(β)``."""

    per_anchor_weights = True

    def __init__(self, gamma: float) -> None:
        super().__init__()
        self.gamma = gamma

    def log_weights(self, scores: Scores) -> Tensor:
        return normalize_log_weights(self.gamma * scores.logits, scores.mask)

    def tile_weights(self) -> TileWeights:
        return TileWeights(tilt=self.gamma)


class Untiled(NegativeDistribution):
    """The same weights without the protocol: only the materialised engine computes it."""

    def __init__(self, gamma: float) -> None:
        super().__init__()
        self.gamma = gamma

    def log_weights(self, scores: Scores) -> Tensor:
        return normalize_log_weights(self.gamma * scores.logits, scores.mask)


def _views(b: int = 7, d: int = 5, seed: int = 0) -> tuple[Tensor, Tensor]:
    g = torch.Generator().manual_seed(seed)
    z1 = torch.randn(b, d, generator=g, dtype=F64)
    z2 = z1 + 0.5 * torch.randn(b, d, generator=g, dtype=F64)
    return z1.requires_grad_(), z2.requires_grad_()


def _reference(z1: Tensor, z2: Tensor, gamma: float, t: float) -> Tensor:
    """SimCLR's layout written out in float64: ``mean_i −s⁺_i + log(e^{s⁺_i} + Σ_j w_ij e^{s_ij})``
    with ``w_ij = N · softmax_j(gamma · s_ij)`` over the 2B − 2 other views."""
    v = torch.nn.functional.normalize(torch.cat([z1, z2]), dim=1)
    n = v.shape[0]
    b = n // 2
    s = v @ v.T / t
    partner = (torch.arange(n) + b) % n
    pos = s[torch.arange(n), partner]
    valid = ~torch.eye(n, dtype=torch.bool)
    valid[torch.arange(n), partner] = False
    losses = []
    for i in range(n):
        si = s[i][valid[i]]
        w = (n - 2) * torch.softmax(gamma * si, dim=0)
        losses.append(-pos[i] + torch.log(pos[i].exp() + (w * si.exp()).sum()))
    return torch.stack(losses).mean()


def _value_and_grads(loss: ContrastiveLoss, z1: Tensor, z2: Tensor, **kw: object) -> list[Tensor]:
    value = loss(z1, z2, **kw)  # type: ignore[arg-type]
    return [value.detach(), *torch.autograd.grad(value, (z1, z2))]


@pytest.mark.parametrize("gamma", [-2.0, -1.0, -0.5, 0.0, 1.4])
def test_a_user_tilt_tiles_with_the_materialised_values_and_gradients(gamma: float) -> None:
    z1, z2 = _views()
    kw = dict(temperature=0.4, negatives=Tilted(gamma))
    mat = ContrastiveLoss(engine="materialised", **kw)  # type: ignore[arg-type]
    til = ContrastiveLoss(memory_budget=0, tile_size=4, **kw)  # type: ignore[arg-type]
    assert til.engine_for(14, 14, F64).engine == "tiled"
    a, b = _value_and_grads(mat, z1, z2), _value_and_grads(til, z1, z2)
    for x, y in zip(a, b):
        torch.testing.assert_close(x, y, rtol=1e-6, atol=1e-9)
    torch.testing.assert_close(a[0], _reference(z1, z2, gamma, 0.4), rtol=1e-10, atol=0)
    assert til(z1, z2, details=True).diagnostics["tiled"] == 1.0


@pytest.mark.parametrize("gamma", [-0.7, 2.0])
def test_a_user_tilt_tiles_in_the_pair_layout_subsampled_collision_free_with_every_objective(
    gamma: float,
) -> None:
    g = torch.Generator().manual_seed(3)
    a = torch.randn(6, 4, generator=g, dtype=F64, requires_grad=True)
    p = (a + 0.3 * torch.randn(6, 4, generator=g, dtype=F64)).detach().requires_grad_()
    c = torch.randn(11, 4, generator=g, dtype=F64, requires_grad=True)
    mask = torch.rand(6, 11, generator=g) > 0.2
    ya, yc = torch.arange(6) % 3, torch.arange(11) % 3
    for objective in (objectives.Debiased(0.1), objectives.Logistic(), objectives.Hinge(aggregate="mean")):
        kw = dict(negatives=Tilted(gamma), objective=objective, num_negatives=4, collision_free=True)
        outs = []
        for loss in (
            ContrastiveLoss(engine="materialised", **kw),  # type: ignore[arg-type]
            ContrastiveLoss(memory_budget=0, tile_size=3, **kw),  # type: ignore[arg-type]
        ):
            value = loss.pair(
                a, p, c, mask=mask, anchor_labels=ya, candidate_labels=yc,
                generator=torch.Generator().manual_seed(5),
            )
            outs.append([value.detach(), *torch.autograd.grad(value, (a, p, c))])
        for x, y in zip(*outs):
            torch.testing.assert_close(x, y, rtol=1e-6, atol=1e-9)


def test_the_effective_sample_size_of_a_user_tilt_matches() -> None:
    z1, z2 = _views(b=6)
    mat = ContrastiveLoss(engine="materialised", negatives=Tilted(-1.5))(z1, z2, details=True)
    til = ContrastiveLoss(memory_budget=0, tile_size=5, negatives=Tilted(-1.5))(z1, z2, details=True)
    for key in ("ess", "ess_fraction", "num_negatives"):
        assert til.diagnostics[key] == pytest.approx(mat.diagnostics[key], rel=1e-9)


def test_a_user_tilt_takes_the_speed_crossover_and_the_gathered_engine() -> None:
    assert ContrastiveLoss(negatives=Tilted(0.5)).engine_for(8192, 8192).reason.startswith("speed crossover")
    sub = ContrastiveLoss(negatives=Tilted(-0.5), num_negatives=3)
    assert sub.engine_for(8192, 8192).engine == "gathered"
    z1, z2 = _views(b=8)
    kw = dict(negatives=Tilted(-0.5), num_negatives=3)
    outs = [
        _value_and_grads(
            ContrastiveLoss(engine=engine, **kw), z1, z2,  # type: ignore[arg-type]
            generator=torch.Generator().manual_seed(1),
        )
        for engine in ("materialised", "gathered")
    ]
    for x, y in zip(*outs):
        torch.testing.assert_close(x, y, rtol=1e-6, atol=1e-9)


def test_a_distribution_without_the_protocol_is_refused_with_the_reason() -> None:
    z1, z2 = _views()
    with pytest.raises(ValueError, match=r"(?s)tiled engine .*Untiled does not state its weights per tile.*"
                       r"implement tile_weights\(\).*TileWeights\(tilt=beta\).*Raise memory_budget"):
        ContrastiveLoss(memory_budget=0, negatives=Untiled(-1.0))(z1, z2)
    with pytest.raises(ValueError, match=r"Untiled does not state its weights per tile"):
        ContrastiveLoss(engine="tiled", negatives=Untiled(-1.0)).engine_for(14, 14)
    with pytest.raises(ValueError, match=r"(?s)gathered engine needs .*per_anchor_weights = True.*Untiled"):
        ContrastiveLoss(engine="gathered", negatives=Untiled(-1.0), num_negatives=3).engine_for(14, 14)
    # engine="auto" within the budget materialises it, with the reference value
    auto = ContrastiveLoss(negatives=Untiled(-1.0), temperature=0.4)
    choice = auto.engine_for(8192, 8192)
    assert (choice.engine, choice.reason) == ("materialised", "not supported by the tiled engine")
    torch.testing.assert_close(auto(z1, z2), _reference(z1, z2, -1.0, 0.4), rtol=1e-10, atol=0)


def test_built_in_distributions_state_their_tiling() -> None:
    assert negatives.Uniform().tile_weights() == TileWeights(tilt=0.0)
    assert negatives.Hard(beta=0.3).tile_weights() == TileWeights(tilt=0.3)
    assert TileWeights(tilt=0.3).exponents(diagnostics=True) == (1.3, 0.3, 0.6)
    assert TileWeights(tilt=1e-320).exponents(dtype=torch.float32) == (1.0,)
    for option in ({"rescale": True}, {"detach_weights": True}, {"target_ess": 0.5}):
        hard = negatives.Hard(**option)  # type: ignore[arg-type]
        assert hard.tile_weights() is None
        assert "without rescale/detach_weights/target_ess" in hard.tile_refusal()
    ot = negatives.OptimalTransport(epsilon=0.5).tile_weights()
    assert ot is not None and ot.kind == "sinkhorn" and ot.sinkhorn is not None and ot.sinkhorn.epsilon == 0.5
    assert negatives.OptimalTransport(epsilon=0.5, differentiable=True).tile_weights() is None
    assert negatives.Uniform().per_anchor_weights and negatives.Hard().per_anchor_weights
    assert not negatives.OptimalTransport(epsilon=0.5).per_anchor_weights


def test_the_tiled_package_asks_no_negative_class() -> None:
    """No ``isinstance`` (or ``type(...) in``) test on a class of ``hardneg.negatives`` in ``tiled/``."""
    names = set(negatives.__all__)
    root = Path(negatives.__file__).parents[1] / "tiled"
    for path in root.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "isinstance":
                used = {n.id for n in ast.walk(node.args[1]) if isinstance(n, ast.Name)}
                assert not used & names, f"{path.name}:{node.lineno} isinstance on {used & names}"
            if isinstance(node, ast.Compare) and any(isinstance(op, ast.In) for op in node.ops):
                used = {n.id for c in node.comparators for n in ast.walk(c) if isinstance(n, ast.Name)}
                assert not used & names, f"{path.name}:{node.lineno} a class test on {used & names}"
