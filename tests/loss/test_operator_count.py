"""Operators per loss call: the fixed cost at small batches, counted (not timed).

At B = 64 a fwd+bwd call costs as much in Python dispatch and kernel launches as in arithmetic
(issue 37): every ATen operator is a kernel launch on a GPU, every host read a stall. These
tests count the ATen operators one forward + backward dispatches (a
``TorchDispatchMode``, which sees the backward's operators too) and the host reads among them
(``aten._local_scalar_dense``, what ``.item()``, ``bool(t)`` and ``float(t)`` call), and fail
when a change adds operators beyond a small headroom over today's counts. The bounds are the
counts measured after the per-call cuts of issue 37 (SimCLR 74 → 63 → 50 → 47, hard + debiased
142 → 102 → 92 → 56 at the time of writing: cached mask/count constants, a three-operator range
check, the debiased term as one autograd node; then SimCLR as a cross-entropy over the logits and
hard + debiased as one node from the logits, its two log-sum-exps in one call; then the
small-batch route, ``hardneg.engines.small``; then hard + debiased as one node from the views,
``hardneg.engines.fused_node``, with a closed-form backward to the views) plus headroom; lower them when
a change removes operators.
"""

from __future__ import annotations

import collections

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from hardneg import ContrastiveLoss, negatives

HOST_READ = "aten._local_scalar_dense"

# the most operators one fwd+bwd call may dispatch (today's count + 3)
BOUNDS = {"simclr": 50, "hard_debiased": 59}


class _Count(TorchDispatchMode):
    """Counts every ATen operator dispatched while active, by name."""

    def __init__(self) -> None:
        super().__init__()
        self.ops: collections.Counter[str] = collections.Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        self.ops[str(func.overloadpacket._qualified_op_name).replace("::", ".")] += 1
        return func(*args, **(kwargs or {}))


def _loss(case: str, *, validate: bool = True) -> ContrastiveLoss:
    if case == "simclr":
        return ContrastiveLoss(temperature=0.5, validate=validate)
    return ContrastiveLoss(
        temperature=0.5, tau_plus=0.1, negatives=negatives.Hard(beta=1.0), validate=validate
    )


def _count(loss: ContrastiveLoss, b: int = 8, d: int = 4) -> collections.Counter[str]:
    g = torch.Generator().manual_seed(0)
    z1 = torch.randn(b, d, generator=g, requires_grad=True)
    z2 = torch.randn(b, d, generator=g, requires_grad=True)
    loss(z1, z2).backward()  # caches (masks, counts) filled outside the count
    mode = _Count()
    with mode:
        loss(z1, z2).backward()
    return mode.ops


def test_the_counter_counts_forward_and_backward_operators() -> None:
    x = torch.ones(3, requires_grad=True)
    mode = _Count()
    with mode:
        (x * 2).sum().backward()
    assert mode.ops["aten.mul"] >= 2  # the forward's mul and the backward's
    assert mode.ops["aten.sum"] == 1


@pytest.mark.parametrize("case", sorted(BOUNDS))
def test_operators_per_call_stay_within_the_bound(case: str) -> None:
    ops = _count(_loss(case))
    total = sum(ops.values())
    assert total <= BOUNDS[case], f"{case}: {total} operators per fwd+bwd call, bound {BOUNDS[case]}: {ops}"


@pytest.mark.parametrize("case", sorted(BOUNDS))
def test_operators_do_not_grow_with_the_batch(case: str) -> None:
    assert sum(_count(_loss(case), b=8).values()) == sum(_count(_loss(case), b=40).values())


@pytest.mark.parametrize("case", sorted(BOUNDS))
def test_one_host_read_when_validating_none_without(case: str) -> None:
    assert _count(_loss(case))[HOST_READ] == 1  # the call's one data-dependent check
    assert _count(_loss(case, validate=False))[HOST_READ] == 0


def test_diagnostics_are_not_computed_when_not_asked() -> None:
    """``details=True`` adds the diagnostics' operators; the plain call has none of them."""
    loss = _loss("hard_debiased")
    g = torch.Generator().manual_seed(0)
    z1 = torch.randn(8, 4, generator=g, requires_grad=True)
    z2 = torch.randn(8, 4, generator=g, requires_grad=True)
    plain, detailed = _Count(), _Count()
    with plain:
        loss(z1, z2)
    with detailed:
        loss(z1, z2, details=True)
    assert sum(detailed.ops.values()) > sum(plain.ops.values())
    assert plain.ops[HOST_READ] == 1 < detailed.ops[HOST_READ]
