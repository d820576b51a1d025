"""Memory queue (MoCo-v2; HCL App. C.1) and the momentum update."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from hardneg import ContrastiveLoss
from hardneg.negatives import Hard
from hardneg.queue import MemoryQueue, QueueLoss, momentum_update
from tests.reference.moco import MocoReference


def test_fifo_order_with_wraparound() -> None:
    q = MemoryQueue(size=5, dim=2)
    seen: list[torch.Tensor] = []
    for step in range(4):
        batch = torch.arange(6 * step, 6 * step + 6, dtype=torch.float32).view(3, 2)
        q.enqueue(batch)
        seen.extend(batch)
        expected = torch.stack(seen[-5:])
        torch.testing.assert_close(q.ordered(), expected)
        assert len(q) == min(3 * (step + 1), 5)
        assert int(q.pointer) == (3 * (step + 1)) % 5
        # candidates hold exactly the same keys (storage order)
        got = {tuple(r.tolist()) for r in q.candidates()}
        assert got == {tuple(r.tolist()) for r in expected}


def test_partial_fill_and_oversized_batch() -> None:
    q = MemoryQueue(size=4, dim=3)
    q.enqueue(torch.ones(2, 3))
    assert q.candidates().shape == (2, 3)
    big = torch.arange(18, dtype=torch.float32).view(6, 3)
    q.enqueue(big)
    torch.testing.assert_close(q.ordered(), big[-4:])


def test_enqueue_detaches_and_state_dict_roundtrip() -> None:
    q = MemoryQueue(size=6, dim=2, with_labels=True)
    x = torch.randn(4, 2, requires_grad=True)
    q.enqueue(x * 2, labels=torch.tensor([1, 2, 3, 4]))
    assert not q.keys.requires_grad
    r = MemoryQueue(size=6, dim=2, with_labels=True)
    r.load_state_dict(q.state_dict())
    torch.testing.assert_close(r.candidates(), q.candidates())
    assert int(r.pointer) == 4 and len(r) == 4
    assert r.candidate_labels().tolist() == [1, 2, 3, 4]
    assert set(q.state_dict()) == {"keys", "pointer", "filled", "labels"}


def test_queue_errors() -> None:
    q = MemoryQueue(size=4, dim=3)
    with pytest.raises(ValueError, match=r"keys must have shape \(B, dim=3\).*got \(2, 5\)"):
        q.enqueue(torch.randn(2, 5))
    with pytest.raises(ValueError, match=r"size must be an int >= 1, got 0"):
        MemoryQueue(size=0, dim=3)
    with pytest.raises(TypeError, match=r"dim must be an int >= 1"):
        MemoryQueue(size=3, dim=2.0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="labels must be a tensor of shape"):
        MemoryQueue(size=4, dim=3, with_labels=True).enqueue(torch.randn(2, 3))
    loss = ContrastiveLoss()
    with pytest.raises(ValueError, match="queue is empty"):
        QueueLoss(loss, q)(torch.randn(2, 3), torch.randn(2, 3))
    q.enqueue(torch.randn(2, 3))
    with pytest.raises(ValueError, match=r"q must have shape \(B, dim=3\)"):
        QueueLoss(loss, q)(torch.randn(2, 4), torch.randn(2, 4))


def test_queue_loss_matches_reference_then_enqueues() -> None:
    """Robinson et al. (ICLR 2021), App. C.1: Hard(β) with τ⁺ = 0 over the queue; float64 loop reference."""
    g = torch.Generator().manual_seed(0)
    queue = MemoryQueue(size=16, dim=4, dtype=torch.float64)
    queue.enqueue(torch.randn(10, 4, generator=g, dtype=torch.float64))
    before = queue.candidates().clone()
    qv = torch.randn(3, 4, generator=g, dtype=torch.float64, requires_grad=True)
    kv = torch.randn(3, 4, generator=g, dtype=torch.float64)
    beta, t = 0.2, 0.2
    loss_fn = ContrastiveLoss(temperature=t, negatives=Hard(beta=beta), reduction="none")
    got = QueueLoss(loss_fn, queue)(qv, kv)
    got.sum().backward()  # the queue was replaced out of place: backward still works
    nq = [x / x.norm() for x in qv.detach()]
    nk = [x / x.norm() for x in kv]
    nc = [x / x.norm() for x in before]
    for i in range(3):
        s = [float(nq[i] @ c) / t for c in nc]
        w = [math.exp(beta * x) for x in s]
        w = [x * len(s) / sum(w) for x in w]
        neg = sum(wj * math.exp(x) for wj, x in zip(w, s))
        pos = math.exp(float(nq[i] @ nk[i]) / t)
        assert abs(float(got[i].detach()) + math.log(pos / (pos + neg))) < 1e-10
    assert len(queue) == 13
    torch.testing.assert_close(queue.ordered()[-3:], torch.nn.functional.normalize(kv, dim=1))


def test_queue_loss_matches_moco_reference_code_over_steps() -> None:
    """Loss and queue contents equal MoCo's reference code step by step, through a wrap-around:
    keys are enqueued normalised, after the loss (never their own negatives)."""
    g = torch.Generator().manual_seed(1)
    init = torch.randn(8, 5, generator=g, dtype=torch.float64)
    ref = MocoReference(init)
    queue = MemoryQueue(size=8, dim=5, dtype=torch.float64)
    queue.enqueue(torch.nn.functional.normalize(init, dim=1))
    moco = QueueLoss(ContrastiveLoss(temperature=0.07, reduction="none"), queue)
    for _ in range(5):  # 5 steps of 4 keys: the 8-slot queue wraps around twice
        q = torch.randn(4, 5, generator=g, dtype=torch.float64) * 3.0
        k = torch.randn(4, 5, generator=g, dtype=torch.float64) * 0.2
        got = moco(q, k)
        want = ref.step(q, k, 0.07)
        torch.testing.assert_close(got, want, rtol=1e-10, atol=1e-12)
        torch.testing.assert_close(queue.keys, ref.queue.T, rtol=0, atol=1e-15)


def test_queue_loss_labels_unknown_keys_as_minus_one() -> None:
    queue = MemoryQueue(size=6, dim=3, with_labels=True)
    queue.enqueue(torch.randn(2, 3), labels=torch.tensor([0, 1]))
    QueueLoss(ContrastiveLoss(), queue)(torch.randn(2, 3), torch.randn(2, 3))
    assert queue.candidate_labels().tolist() == [0, 1, -1, -1]


def test_queue_loss_unnormalized_keeps_backward_valid() -> None:
    queue = MemoryQueue(size=8, dim=3)
    queue.enqueue(torch.randn(8, 3))
    q = torch.randn(4, 3, requires_grad=True)
    loss = QueueLoss(ContrastiveLoss(normalize=False, temperature=1.0), queue)(q, torch.randn(4, 3))
    loss.backward()
    assert q.grad is not None and torch.isfinite(q.grad).all()


def test_queue_loss_collision_free_with_labels() -> None:
    queue = MemoryQueue(size=8, dim=3, with_labels=True)
    queue.enqueue(torch.randn(8, 3), labels=torch.tensor([0, 1, 2, 0, 1, 2, 0, 1]))
    loss_fn = ContrastiveLoss(collision_free=True, reduction="none")
    y = torch.tensor([0, 2])
    q, k = torch.randn(2, 3), torch.randn(2, 3)
    got = QueueLoss(loss_fn, queue)(q, k, labels=y, enqueue=False)
    keys, labels = queue.candidates(), queue.candidate_labels()
    for i in range(2):
        keep = keys[labels != y[i]]
        ref = ContrastiveLoss(reduction="none").pair(q[i : i + 1], k[i : i + 1], keep)
        torch.testing.assert_close(got[i : i + 1], ref)
    assert len(queue) == 8


def test_momentum_update() -> None:
    torch.manual_seed(0)
    online, target = nn.Linear(3, 2), nn.Linear(3, 2)
    before = [p.detach().clone() for p in target.parameters()]
    momentum_update(online, target, m=0.9)
    for p_t, p_o, b in zip(target.parameters(), online.parameters(), before):
        torch.testing.assert_close(p_t, 0.9 * b + 0.1 * p_o.detach())
        assert not p_t.requires_grad or p_t.grad is None
    momentum_update(online, target, m=0.0)
    for p_t, p_o in zip(target.parameters(), online.parameters()):
        torch.testing.assert_close(p_t, p_o)
    with pytest.raises(ValueError, match=r"m must lie in \[0.0, 1.0\], got 1.5"):
        momentum_update(online, target, m=1.5)
    with pytest.raises(ValueError, match=r"parameter #0 must have the same shape"):
        momentum_update(online, nn.Linear(4, 2), m=0.5)
    with pytest.raises(ValueError, match="same parameters"):
        momentum_update(online, nn.Linear(3, 2, bias=False), m=0.5)


def _hard_queue_reference(
    q: torch.Tensor, k: torch.Tensor, keys: torch.Tensor, t: float, beta: float
) -> torch.Tensor:
    """Robinson et al.'s hard-negative InfoNCE (τ⁺ = 0) over a queue, written out in float64:
    ``−log e^{s⁺} / (e^{s⁺} + N Σ_j e^{(1+β) s_j} / Σ_j e^{β s_j})``, by explicit logsumexps."""
    qn, kn, cn = (nn.functional.normalize(x.double(), dim=1) for x in (q, k, keys))
    pos = (qn * kn).sum(1) / t
    s = qn @ cn.T / t
    neg = math.log(cn.shape[0]) + torch.logsumexp((1 + beta) * s, 1) - torch.logsumexp(beta * s, 1)
    return (torch.logaddexp(pos, neg) - pos).mean()


@pytest.mark.parametrize("engine", ["materialised", "tiled"])
@pytest.mark.parametrize("beta", [0.2, 1.0, 0.3])
def test_hard_queue_loss_equals_float64_reference(engine: str, beta: float) -> None:
    """The tiled queue path streams β·s (the tilt 1 + β = kβ as an integer power for β = 0.2, 1)
    and sums y·base + y^k·factor in the backward; value and gradient equal the reference."""
    g = torch.Generator().manual_seed(5)
    q = torch.randn(9, 6, generator=g, dtype=torch.float64, requires_grad=True)
    k = torch.randn(9, 6, generator=g, dtype=torch.float64)
    keys = torch.randn(70, 6, generator=g, dtype=torch.float64)
    queue = MemoryQueue(size=70, dim=6, dtype=torch.float64)
    queue.enqueue(nn.functional.normalize(keys, dim=1))
    loss_fn = ContrastiveLoss(temperature=0.2, negatives=Hard(beta=beta), engine=engine, tile_size=8)
    got = QueueLoss(loss_fn, queue)(q, k, enqueue=False)
    (g_got,) = torch.autograd.grad(got, q)
    want = _hard_queue_reference(q, k, keys, 0.2, beta)
    (g_want,) = torch.autograd.grad(want, q)
    torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(g_got, g_want, rtol=1e-10, atol=1e-12)


def test_queue_length_is_read_once_per_value() -> None:
    queue = MemoryQueue(size=5, dim=2)
    assert len(queue) == 0
    queue.enqueue(torch.ones(3, 2))
    assert len(queue) == 3 and queue.candidates().shape == (3, 2)
    state = queue.state_dict()
    queue.enqueue(torch.ones(4, 2))
    assert len(queue) == 5
    queue.load_state_dict(state)  # an in-place write of the buffer: the cached length follows it
    assert len(queue) == 3 and queue.ordered().shape == (3, 2)
    queue.filled.fill_(1)
    assert len(queue) == 1


def test_stored_keys_are_unit_rows_and_the_queue_knows_it() -> None:
    """Keys are normalised once, when enqueued; the queue counts its newest unit keys, reads the
    norms once after a state load or an in-place edit, and never counts unread keys as unit."""
    g = torch.Generator().manual_seed(3)
    queue = MemoryQueue(size=8, dim=3)
    moco = QueueLoss(ContrastiveLoss(), queue)
    assert not queue.keys_normalized()  # empty
    queue.enqueue(5 * torch.randn(8, 3, generator=g))  # not unit: found in the finiteness read
    assert not queue.keys_normalized()
    for step in range(4):  # 2 keys a step: the first keys are all overwritten after 4 steps
        moco(torch.randn(2, 3, generator=g), 3 * torch.randn(2, 3, generator=g))
        assert queue.keys_normalized() == (step == 3)
    norms = torch.linalg.vector_norm(queue.keys.double(), dim=1)
    torch.testing.assert_close(norms, torch.ones(8, dtype=torch.float64), rtol=0, atol=1e-6)
    fresh = MemoryQueue(size=8, dim=3)
    fresh.load_state_dict(queue.state_dict())
    assert fresh.keys_normalized()  # read once from the loaded keys
    fresh.keys.mul_(2.0)  # an in-place edit: read again
    assert not fresh.keys_normalized()
    queue.enqueue(nn.functional.normalize(torch.randn(2, 3, generator=g), dim=1), check_finite=False)
    assert not queue.keys_normalized()  # unread keys are not counted as unit
    queue.enqueue(torch.ones(8, 3), normalized=False)
    queue.enqueue(nn.functional.normalize(torch.ones(2, 3), dim=1), normalized=True)
    assert not queue.keys_normalized()  # 2 of 8 known unit


def _moco_reference(q: torch.Tensor, k: torch.Tensor, keys: torch.Tensor, t: float) -> torch.Tensor:
    """MoCo's InfoNCE over a queue (He et al., CVPR 2020, eq. 1) in float64, from the definition:
    the mean over queries of ``−log e^{q̂·k̂/t} / (e^{q̂·k̂/t} + Σ_j e^{q̂·ĉ_j/t})``."""
    qn, kn, cn = (nn.functional.normalize(x.double(), dim=1) for x in (q, k, keys))
    pos = (qn * kn).sum(1) / t
    return (torch.logaddexp(pos, torch.logsumexp(qn @ cn.T / t, 1)) - pos).mean()


def _spy_paths(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Count the pair preparations that took the candidates as they were (not normalised again)
    and the log-sum-exps whose anchors' gradient was accumulated in the forward pass."""
    import hardneg.engines.dispatch as engines_mod
    import hardneg.engines.tiled.lse as lse_mod
    import hardneg.scores.layouts as layouts_mod

    calls = {"kept": 0, "renormalised": 0, "accumulated": 0}
    prepare, accumulate = layouts_mod.prepare_pair, lse_mod.forward_accumulated

    def spy_prepare(anchors: torch.Tensor, positives: torch.Tensor, candidates: torch.Tensor, **kw: object):  # type: ignore[no-untyped-def]
        pp = prepare(anchors, positives, candidates, **kw)  # type: ignore[arg-type]
        calls["kept" if pp.candidates is candidates else "renormalised"] += 1
        return pp

    def spy_accumulate(*args: object, **kw: object):  # type: ignore[no-untyped-def]
        calls["accumulated"] += 1
        return accumulate(*args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(layouts_mod, "prepare_pair", spy_prepare)
    monkeypatch.setattr(engines_mod, "prepare_pair", spy_prepare)
    monkeypatch.setattr(lse_mod, "forward_accumulated", spy_accumulate)
    return calls


@pytest.mark.parametrize("engine", ["materialised", "tiled"])
@pytest.mark.parametrize("beta", [None, 0.2, 1.0])
def test_unit_keys_and_accumulated_gradient_equal_the_plain_path_and_reference(
    monkeypatch: pytest.MonkeyPatch, engine: str, beta: float | None
) -> None:
    """The queue's unit keys enter the scores as they are, and (tiled) the queries' gradient is
    made in the forward pass: the value and the gradients (queries and keys) equal the path that
    normalises the keys again and recomputes the logits in its backward, and a float64
    re-derivation of MoCo's InfoNCE (uniform) or HCL's hard queue loss (Hard(β), τ⁺ = 0)."""
    g = torch.Generator().manual_seed(11)
    q = torch.randn(9, 6, generator=g, dtype=torch.float64, requires_grad=True)
    k = torch.randn(9, 6, generator=g, dtype=torch.float64, requires_grad=True)
    keys = torch.randn(70, 6, generator=g, dtype=torch.float64)
    queue = MemoryQueue(size=70, dim=6, dtype=torch.float64)
    queue.enqueue(nn.functional.normalize(keys, dim=1))
    neg = None if beta is None else Hard(beta=beta)
    loss_fn = ContrastiveLoss(temperature=0.2, negatives=neg, engine=engine, tile_size=8)
    calls = _spy_paths(monkeypatch)
    got = QueueLoss(loss_fn, queue)(q, k, enqueue=False)
    assert calls["kept"] == 1 and calls["renormalised"] == 0
    assert calls["accumulated"] == (engine == "tiled")
    g_got = torch.autograd.grad(got, (q, k))
    with torch.enable_grad():  # the plain path: the keys normalised again, a recomputing backward
        plain = loss_fn.pair(q, k, queue.candidates().requires_grad_(False), gather=False)
        g_plain = torch.autograd.grad(plain, (q, k))
    assert calls["renormalised"] == 1
    torch.testing.assert_close(got, plain, rtol=1e-12, atol=1e-12)
    for a, b in zip(g_got, g_plain):
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-13)
    want = _moco_reference(q, k, keys, 0.2) if beta is None else _hard_queue_reference(q, k, keys, 0.2, beta)
    g_want = torch.autograd.grad(want, (q, k))
    torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-12)
    for a, b in zip(g_got, g_want):
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-13)


def test_keys_of_another_precision_are_normalised_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """float32 keys scored against float64 queries are cast, hence normalised again: unchanged values."""
    calls = _spy_paths(monkeypatch)
    queue = MemoryQueue(size=6, dim=3)
    queue.enqueue(nn.functional.normalize(torch.randn(6, 3), dim=1))
    assert queue.keys_normalized()
    q, k = torch.randn(4, 3, dtype=torch.float64), torch.randn(4, 3, dtype=torch.float64)
    loss_fn = ContrastiveLoss(reduction="none")
    got = QueueLoss(loss_fn, queue)(q, k, enqueue=False)
    assert calls["renormalised"] == 1 and calls["kept"] == 0
    torch.testing.assert_close(got, loss_fn.pair(q, k, queue.candidates().double()), rtol=0, atol=0)
