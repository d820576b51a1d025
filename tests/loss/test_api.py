"""One forward per layout: ``forward`` / ``pair`` / ``multi_positive`` (``details=True`` for a
LossOutput), MoCo's queue as the :class:`QueueLoss` wrapper; the names of 0.1 are gone (0.3)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
from torch import Tensor

from hardneg import ContrastiveLoss, negatives
from hardneg.queue import MemoryQueue, QueueLoss
from hardneg.reduction import LossOutput
from hardneg.scores import multi_positive_scores, pair_scores

LOSSES: dict[str, Callable[..., ContrastiveLoss]] = {
    "nt_xent": lambda **kw: ContrastiveLoss(temperature=0.3, **kw),
    "hard_debiased": lambda **kw: ContrastiveLoss(
        temperature=0.5, tau_plus=0.1, negatives=negatives.Hard(beta=1.0), **kw
    ),
    "subsampled_none": lambda **kw: ContrastiveLoss(num_negatives=4, reduction="none", **kw),
}


def _rand(g: torch.Generator, *shape: int) -> Tensor:
    return torch.randn(*shape, generator=g, dtype=torch.float64)


def _run(call: Callable[..., object], inputs: list[Tensor]) -> tuple[LossOutput | Tensor, list[Tensor]]:
    """The call on fresh leaves, and the gradients of its loss's sum with respect to them."""
    xs = [x.detach().clone().requires_grad_(True) for x in inputs]
    out = call(*xs)
    assert isinstance(out, (LossOutput, Tensor))
    loss = out.loss if isinstance(out, LossOutput) else out
    return out, list(torch.autograd.grad(loss.sum(), xs))


def _same(a: tuple[LossOutput | Tensor, list[Tensor]], b: tuple[LossOutput | Tensor, list[Tensor]]) -> None:
    (out_a, grads_a), (out_b, grads_b) = a, b
    if isinstance(out_a, LossOutput) and isinstance(out_b, LossOutput):
        torch.testing.assert_close(out_b.per_anchor, out_a.per_anchor, rtol=0, atol=0)
        assert out_b.diagnostics == out_a.diagnostics
    la = out_a.loss if isinstance(out_a, LossOutput) else out_a
    lb = out_b.loss if isinstance(out_b, LossOutput) else out_b
    torch.testing.assert_close(lb, la, rtol=0, atol=0)
    for x, y in zip(grads_a, grads_b, strict=True):
        torch.testing.assert_close(y, x, rtol=0, atol=0)


def _gen() -> torch.Generator:
    return torch.Generator().manual_seed(7)


@pytest.mark.parametrize("name", sorted(LOSSES))
@pytest.mark.parametrize("budget", [None, 0])  # materialised, tiled
def test_simclr_layout_forward_details_equals_plain_and_scores(name: str, budget: int | None) -> None:
    g = torch.Generator().manual_seed(0)
    z1, z2 = _rand(g, 10, 5), _rand(g, 10, 5)
    kw = {} if budget is None else {"memory_budget": budget, "tile_size": 3}
    loss_fn = LOSSES[name](**kw)
    new = _run(lambda a, b: loss_fn(a, b, generator=_gen(), details=True), [z1, z2])
    plain = _run(lambda a, b: loss_fn(a, b, generator=_gen()), [z1, z2])
    if name == "hard_debiased" and budget is None:
        # the plain call of a small batch is one fused node (hardneg.engines.fused_node): equal up to
        # float rounding, not bit for bit (tests/engines/test_fused_node.py)
        torch.testing.assert_close(plain[0], new[0].loss, rtol=1e-12, atol=0)  # type: ignore[union-attr]
        for x, y in zip(plain[1], new[1], strict=True):
            torch.testing.assert_close(x, y, rtol=1e-10, atol=1e-14)
    else:
        _same(plain, (new[0].loss, new[1]))  # type: ignore[union-attr]
    if budget is None:  # the low-level entry: step 1 then steps 2-4
        low = _run(
            lambda a, b: loss_fn.compute(loss_fn.scores(a, b), diagnostics=True, generator=_gen()), [z1, z2]
        )
        _same(new, low)


@pytest.mark.parametrize("name", sorted(LOSSES))
@pytest.mark.parametrize("budget", [None, 0])
def test_pair_layout_details_equals_plain_and_scores(name: str, budget: int | None) -> None:
    g = torch.Generator().manual_seed(1)
    a, p, c = _rand(g, 7, 4), _rand(g, 7, 4), _rand(g, 15, 4)
    mask = torch.rand(7, 15, generator=g) > 0.2
    kw = {} if budget is None else {"memory_budget": budget, "tile_size": 4}
    loss_fn = LOSSES[name](**kw)
    inputs = [a, p, c]
    new = _run(lambda *x: loss_fn.pair(*x, mask=mask, generator=_gen(), details=True), inputs)
    plain = _run(lambda *x: loss_fn.pair(*x, mask=mask, generator=_gen()), inputs)
    _same(plain, (new[0].loss, new[1]))  # type: ignore[union-attr]
    if budget is None:
        t = loss_fn.temperature
        low = _run(
            lambda *x: loss_fn.compute(
                pair_scores(*x, temperature=t, mask=mask), diagnostics=True, generator=_gen()
            ),
            inputs,
        )
        _same(new, low)


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_multi_positive_layout_details_equals_plain_and_scores(name: str) -> None:
    g = torch.Generator().manual_seed(2)
    a, c = _rand(g, 8, 4), _rand(g, 8, 4)
    idx = torch.arange(8)
    pm = (idx[:, None] - idx[None, :]).abs() == 1
    ex = torch.eye(8, dtype=torch.bool)
    loss_fn = LOSSES[name]()
    new = _run(
        lambda x, y: loss_fn.multi_positive(x, y, pm, exclude=ex, generator=_gen(), details=True), [a, c]
    )
    _same(
        _run(lambda x, y: loss_fn.multi_positive(x, y, pm, exclude=ex, generator=_gen()), [a, c]),
        (new[0].loss, new[1]),
    )  # type: ignore[union-attr]
    t = loss_fn.temperature
    low = _run(
        lambda x, y: loss_fn.compute(
            multi_positive_scores(x, y, pm, temperature=t, exclude=ex), diagnostics=True, generator=_gen()
        ),
        [a, c],
    )
    _same(new, low)


def _queue(g: torch.Generator, labels: bool) -> MemoryQueue:
    queue = MemoryQueue(size=12, dim=4, with_labels=labels, dtype=torch.float64)
    keys = _rand(g, 9, 4)
    queue.enqueue(keys, torch.arange(9) % 3 if labels else None)
    return queue


def _state(queue: MemoryQueue) -> dict[str, Tensor]:
    return {k: v.clone() for k, v in queue.state_dict().items()}


@pytest.mark.parametrize("name", sorted(LOSSES))
@pytest.mark.parametrize("with_labels", [False, True])
@pytest.mark.parametrize("budget", [None, 0])
def test_queue_loss_over_two_steps_is_the_pair_loss_then_the_keys_enqueued(
    name: str, with_labels: bool, budget: int | None
) -> None:
    """Values, gradients and the queue's state after each of two steps (the second wraps around)."""
    g = torch.Generator().manual_seed(3)
    init = _queue(g, with_labels)
    new_queue = MemoryQueue(12, 4, with_labels=with_labels, dtype=torch.float64)
    new_queue.load_state_dict(init.state_dict())
    kw = {} if budget is None else {"memory_budget": budget, "tile_size": 5}
    loss_fn = LOSSES[name](**kw)
    moco = QueueLoss(loss_fn, new_queue)
    for step in range(2):
        q, k = _rand(g, 4, 4), _rand(g, 4, 4) * 0.3
        labels = torch.tensor([0, 1, 2, 0]) if step == 0 else None  # labelled, then unknown (-1)
        before = new_queue.candidates().clone()
        new = _run(lambda x, y, y_=labels: moco(x, y, labels=y_, generator=_gen(), details=True), [q, k])
        # MoCo's order: the loss over the queue as it was, then the keys enqueued (normalised)
        ref = loss_fn.pair(q, k, before, generator=_gen())
        torch.testing.assert_close(new[0].loss, ref, rtol=0, atol=0)  # type: ignore[union-attr]
        torch.testing.assert_close(new_queue.ordered()[-4:], torch.nn.functional.normalize(k, dim=1))


def test_queue_loss_plain_call_equals_its_details_and_enqueue_false_keeps_the_queue() -> None:
    g = torch.Generator().manual_seed(4)
    qa, qb = _queue(g, False), MemoryQueue(12, 4, dtype=torch.float64)
    qb.load_state_dict(qa.state_dict())
    loss_fn = LOSSES["hard_debiased"]()
    q, k = _rand(g, 3, 4), _rand(g, 3, 4)
    new = _run(lambda x, y: QueueLoss(loss_fn, qa)(x, y), [q, k])
    detailed = _run(lambda x, y: QueueLoss(loss_fn, qb)(x, y, details=True), [q, k])
    _same(new, (detailed[0].loss, detailed[1]))  # type: ignore[union-attr]
    torch.testing.assert_close(qa.keys, qb.keys, rtol=0, atol=0)
    before = _state(qa)
    QueueLoss(loss_fn, qa)(q, k, enqueue=False)
    for key, value in _state(qa).items():
        assert torch.equal(value, before[key])


def test_queue_loss_owns_the_queue_and_checks_its_arguments() -> None:
    queue = MemoryQueue(size=4, dim=3)
    moco = QueueLoss(ContrastiveLoss(), queue)
    assert dict(moco.named_children()) == {"loss": moco.loss, "queue": queue}
    assert {"queue.keys", "queue.pointer", "queue.filled"} <= set(moco.state_dict())
    with pytest.raises(ValueError, match="queue is empty"):
        moco(torch.randn(2, 3), torch.randn(2, 3))
    with pytest.raises(TypeError, match=r"loss must be a hardneg\.ContrastiveLoss"):
        QueueLoss(torch.nn.MSELoss(), queue)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"queue must be a hardneg\.queue\.MemoryQueue"):
        QueueLoss(ContrastiveLoss(), torch.zeros(4, 3))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "old", ["detailed", "pair_forward", "pair_detailed", "multi_positive_detailed", "queue_forward",
            "queue_detailed"],
)
def test_the_names_of_0_1_are_gone(old: str) -> None:
    """Removed in 0.3, as the 0.2 CHANGELOG said (docs/loss_api.md lists their replacements)."""
    assert not hasattr(ContrastiveLoss(), old)


def test_infograph_loss_details() -> None:
    from hardneg.infograph.objective import InfoGraphLoss

    g = torch.Generator().manual_seed(5)
    local, global_ = _rand(g, 7, 4), _rand(g, 3, 4)
    batch = torch.tensor([0, 0, 1, 1, 1, 2, 2])
    loss = InfoGraphLoss(negatives=negatives.Hard(beta=1.0, rescale=True))
    out = loss(local, global_, batch, details=True)
    torch.testing.assert_close(out.loss, loss(local, global_, batch), rtol=0, atol=0)
    assert out.diagnostics and not hasattr(loss, "detailed")  # 0.1's name, removed in 0.3
