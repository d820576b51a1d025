"""The value object of step 2: one evaluation of the negative distribution per loss call.

The objective and the diagnostics read the same :class:`WeightedScores`; the log weights are
computed at most once per call (counted by patching the pure functions), and not at all where
the objective has a closed form and no diagnostics are asked.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import pytest
import torch

import hardneg.negatives.hard as hard_module
import hardneg.negatives.ot as ot_module
from hardneg import ContrastiveLoss, simclr_scores
from hardneg.negatives import (
    Hard,
    NegativeDistribution,
    OptimalTransport,
    Uniform,
    WeightedScores,
    normalize_log_weights,
)
from hardneg.objectives import Debiased, Hinge, InfoNCE, JensenShannon
from tests.reference.data import views


def _counting(monkeypatch: pytest.MonkeyPatch, module: Any, name: str) -> list[int]:
    calls = [0]
    original: Callable[..., Any] = getattr(module, name)

    def wrapped(*args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        return original(*args, **kwargs)

    monkeypatch.setattr(module, name, wrapped)
    return calls


CASES = {
    "hard": (lambda: Hard(beta=1.0), None, hard_module, "hard_log_weights"),
    "hard_rescaled": (lambda: Hard(beta=1.0, rescale=True), None, hard_module, "hard_log_weights"),
    "subsample_hard": (lambda: Hard(beta=1.0), 5, hard_module, "hard_log_weights"),
    "ot": (lambda: OptimalTransport(epsilon=0.5), None, ot_module, "ot_log_weights"),
    "subsample_ot": (lambda: OptimalTransport(epsilon=0.5, max_iter=50), 5, ot_module, "ot_log_weights"),
}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("objective", ["infonce", "debiased", "jsd"])
def test_log_weights_computed_exactly_once_per_step_with_diagnostics(
    monkeypatch: pytest.MonkeyPatch, case: str, objective: str
) -> None:
    make, k, module, fn = CASES[case]
    calls = _counting(monkeypatch, module, fn)
    obj = {"infonce": InfoNCE(), "debiased": Debiased(0.1), "jsd": JensenShannon()}[objective]
    loss = ContrastiveLoss(temperature=0.5, negatives=make(), objective=obj, num_negatives=k)
    z1, z2 = views(b=8, d=4, dtype=torch.float32)
    z1.requires_grad_(True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # OT after subsampling may hit max_iter
        out = loss(z1, z2, generator=torch.Generator().manual_seed(0), details=True)
    out.loss.backward()
    assert calls[0] == 1
    assert "ess" in out.diagnostics and "neg_cosine_weighted" in out.diagnostics
    if case.endswith("ot"):
        assert "ot_iterations" in out.diagnostics


def test_hard_closed_form_never_forms_weights_without_diagnostics(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _counting(monkeypatch, hard_module, "hard_log_weights")
    loss = ContrastiveLoss(temperature=0.5, tau_plus=0.1, negatives=Hard(beta=2.0))
    loss(*views(b=6, d=3))
    assert calls[0] == 0


def test_value_object_memoises_and_matches_explicit_sum() -> None:
    scores = simclr_scores(*views(b=5, d=3), temperature=0.4)
    w = Hard(beta=1.5).weigh(scores)
    first = w.log_weights
    assert first is w.log_weights  # memoised
    explicit = torch.logsumexp(scores.logits + first, dim=1)
    torch.testing.assert_close(w.log_weighted_sum, explicit, rtol=1e-12, atol=1e-12)
    u = Uniform().weigh(scores)
    assert u.uniform and u.log_weights is None
    torch.testing.assert_close(u.probabilities().sum(1), torch.ones(10, dtype=torch.float64))
    assert bool(torch.isinf(u.dense_log_weights()[~scores.mask]).all())


def test_user_distribution_with_only_log_weights() -> None:
    """A user's distribution implements ``log_weights`` alone and works with every objective."""

    class Farthest(NegativeDistribution):
        def log_weights(self, scores):  # type: ignore[no-untyped-def]
            return normalize_log_weights(-scores.logits, scores.mask)

    z1, z2 = views(b=6, d=4)
    scores = simclr_scores(z1, z2, temperature=0.5)
    ell = normalize_log_weights(-scores.logits, scores.mask)
    want = torch.nn.functional.softplus(torch.logsumexp(scores.logits + ell, 1) - scores.positive)
    got = ContrastiveLoss(temperature=0.5, negatives=Farthest(), reduction="none")(z1, z2)
    torch.testing.assert_close(got, want)
    with pytest.raises(ValueError, match=r"non-uniform weights"):
        ContrastiveLoss(negatives=Farthest(), objective=Hinge())(z1, z2)


def test_bad_user_log_weights_shape_is_an_error() -> None:
    class Bad(NegativeDistribution):
        def log_weights(self, scores):  # type: ignore[no-untyped-def]
            return torch.zeros(3)

    pattern = r"Bad.log_weights must return a tensor of shape \(8, 8\).*got \(3,\)"
    with pytest.raises(ValueError, match=pattern):
        ContrastiveLoss(negatives=Bad())(*views(b=4, d=3))


def test_subsample_draws_only_from_the_generator_argument() -> None:
    z1, z2 = views(b=8, d=4)
    loss = ContrastiveLoss(temperature=0.5, num_negatives=3, reduction="none")
    a = loss(z1, z2, generator=torch.Generator().manual_seed(7))
    torch.manual_seed(123)  # the global RNG plays no part
    b = loss(z1, z2, generator=torch.Generator().manual_seed(7))
    c = loss(z1, z2, generator=torch.Generator().manual_seed(8))
    torch.testing.assert_close(a, b, rtol=0, atol=0)
    assert not torch.equal(a, c)


def test_ot_works_under_inference_mode() -> None:
    z1, z2 = views(b=6, d=4, dtype=torch.float32)
    loss = ContrastiveLoss(temperature=0.5, negatives=OptimalTransport(epsilon=0.5))
    with torch.inference_mode():
        a = loss(z1, z2)
    torch.testing.assert_close(a, loss(z1, z2))


def test_unknown_labels_never_collide() -> None:
    """Labels < 0 (unlabelled images, label-less queue keys) are never a collision."""
    z1, z2 = views(b=4, d=3)
    y = torch.tensor([-1, -1, 0, 0])
    out = ContrastiveLoss(collision_free=True)(z1, z2, labels=y, details=True)
    # anchors 2, 3 (and their views) lose each other; unlabelled anchors keep all 6 candidates
    per_anchor_valid = [6, 6, 4, 4] * 2
    assert out.diagnostics["num_negatives"] == sum(per_anchor_valid) / 8
    assert out.diagnostics["collision_rate"] == 0.0
    every = ContrastiveLoss()(z1, z2, labels=torch.full((4,), -1), details=True)
    assert every.diagnostics["collision_rate"] == 0.0
    torch.testing.assert_close(
        ContrastiveLoss(collision_free=True)(z1, z2, labels=torch.full((4,), -1)), ContrastiveLoss()(z1, z2)
    )


def test_weighted_scores_repr_and_info() -> None:
    scores = simclr_scores(*views(b=3, d=2), temperature=1.0)
    w = WeightedScores(scores, info={"x": 1.0})
    assert "uniform=True" in repr(w) and w.info == {"x": 1.0}
