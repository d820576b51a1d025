"""Host synchronisations per call: the CPU-side proxy of ``torch.cuda.set_sync_debug_mode``.

There is no GPU in CI, so every Python-level read of a tensor value that would block on a device
(``item``, ``__bool__``, ``tolist``, ``__int__``, ``__float__``, ``__index__``, ``cpu``, ``numpy``)
is wrapped with a counter for one forward + backward. The goal (issue 25, item 5): at most one per
materialised call (all of the call's data-dependent checks in one boolean reduction), none with
``validate=False``, and in the tiled engine a count that does not grow with the number of tiles
(the per-tile Python work reads no tensor value; what it needs is decided once per call).
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Iterator

import pytest
import torch

from hardneg import ContrastiveLoss, negatives
from hardneg.queue import MemoryQueue, QueueLoss

READS = ("item", "__bool__", "tolist", "__int__", "__float__", "__index__", "cpu", "numpy")

CASES: dict[str, dict[str, object]] = {
    "uniform": {},
    "hard": {"negatives": negatives.Hard(beta=1.0)},
    "debiased": {"tau_plus": 0.1},
    "hard_debiased": {"tau_plus": 0.1, "negatives": negatives.Hard(beta=1.0)},
}


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[Callable[[], object]], int]]:
    """``count(fn)``: the number of tensor reads while ``fn()`` runs."""
    counter: collections.Counter[str] = collections.Counter()
    active = [False]

    def wrap(name: str) -> None:
        real = getattr(torch.Tensor, name)

        def counted(self: torch.Tensor, *args: object, **kwargs: object) -> object:
            if active[0]:
                counter[name] += 1
            return real(self, *args, **kwargs)

        monkeypatch.setattr(torch.Tensor, name, counted)

    for name in READS:
        wrap(name)

    def count(fn: Callable[[], object]) -> int:
        counter.clear()
        active[0] = True
        try:
            fn()
        finally:
            active[0] = False
        return sum(counter.values())

    yield count


def _views(b: int = 24, d: int = 8) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    z1 = torch.randn(b, d, generator=g).requires_grad_(True)
    z2 = torch.randn(b, d, generator=g).requires_grad_(True)
    return z1, z2


def test_the_counter_sees_a_read(reads: Callable[[Callable[[], object]], int]) -> None:
    x = torch.ones(3)
    assert reads(lambda: bool(x.sum() > 0)) == 1
    assert reads(lambda: (x.sum().item(), x.tolist())) == 2


@pytest.mark.parametrize("case", sorted(CASES))
def test_materialised_forward_backward_reads_at_most_once(
    case: str, reads: Callable[[Callable[[], object]], int]
) -> None:
    z1, z2 = _views()
    loss_fn = ContrastiveLoss(engine="materialised", **CASES[case])  # type: ignore[arg-type]
    loss_fn(z1, z2).backward()  # warm caches (simclr_mask)
    assert reads(lambda: loss_fn(z1, z2).backward()) <= 1
    assert reads(lambda: ContrastiveLoss(validate=False, **CASES[case])(z1, z2).backward()) == 0  # type: ignore[arg-type]


def test_pair_layout_and_queue_read_at_most_once(reads: Callable[[Callable[[], object]], int]) -> None:
    g = torch.Generator().manual_seed(1)
    q, k = torch.randn(6, 8, generator=g).requires_grad_(True), torch.randn(6, 8, generator=g)
    cands = torch.randn(40, 8, generator=g)
    mask = torch.rand(6, 40, generator=g) > 0.3
    loss_fn = ContrastiveLoss(engine="materialised", negatives=negatives.Hard(beta=0.2))
    assert reads(lambda: loss_fn.pair(q, k, cands, mask=mask).backward()) <= 1
    queue = MemoryQueue(size=40, dim=8)
    queue.enqueue(torch.nn.functional.normalize(cands, dim=1))
    ql = QueueLoss(loss_fn, queue)
    assert reads(lambda: ql(q, k, enqueue=False).backward()) <= 1


@pytest.mark.parametrize("case", sorted(CASES))
def test_tiled_reads_do_not_grow_with_the_number_of_tiles(
    case: str, reads: Callable[[Callable[[], object]], int]
) -> None:
    z1, z2 = _views(b=48)
    counts = []
    for tile in (48, 16, 6):  # 4, 36 and 256 tile pairs over the 96 views
        loss_fn = ContrastiveLoss(engine="tiled", tile_size=tile, **CASES[case])  # type: ignore[arg-type]
        counts.append(reads(lambda fn=loss_fn: fn(z1, z2).backward()))  # type: ignore[misc]
    assert counts[0] == counts[1] == counts[2]
    assert counts[0] <= 5  # inputs, the tile plan, the valid counts, the backward's active exponents


def test_tiled_pair_layout_reads_do_not_grow_with_the_number_of_tiles(
    reads: Callable[[Callable[[], object]], int],
) -> None:
    g = torch.Generator().manual_seed(2)
    q, k = torch.randn(20, 8, generator=g).requires_grad_(True), torch.randn(20, 8, generator=g)
    cands = torch.randn(90, 8, generator=g)
    counts = [
        reads(
            lambda t=tile: (
                ContrastiveLoss(engine="tiled", tile_size=t, negatives=negatives.Hard(beta=0.2))
                .pair(q, k, cands)
                .backward()
            )
        )
        for tile in (90, 7)
    ]
    assert counts[0] == counts[1] <= 5


def test_validate_false_gives_the_same_values_on_ordinary_inputs() -> None:
    z1, z2 = _views()
    for kw in CASES.values():
        a = ContrastiveLoss(**kw)(z1, z2, details=True)  # type: ignore[arg-type]
        b = ContrastiveLoss(validate=False, **kw)(z1, z2, details=True)  # type: ignore[arg-type]
        torch.testing.assert_close(a.per_anchor, b.per_anchor, rtol=0, atol=0)


def test_validation_still_names_the_bad_input_with_one_read() -> None:
    z1, z2 = _views()
    bad = z2.detach().clone()
    bad[3, 1] = float("nan")
    with pytest.raises(ValueError, match=r"z2 must be finite, got 1 non-finite"):
        ContrastiveLoss()(z1, bad)
    with pytest.raises(ValueError, match=r"z2 must be finite"):
        ContrastiveLoss(engine="tiled", tile_size=8)(z1, bad)
    g = torch.Generator().manual_seed(3)
    q, k, c = (torch.randn(n, 8, generator=g) for n in (4, 4, 10))
    mask = torch.ones(4, 10, dtype=torch.bool)
    mask[2] = False
    with pytest.raises(ValueError, match=r"at least one valid negative; mask row 2 is empty"):
        ContrastiveLoss().pair(q, k, c, mask=mask)
    assert torch.isnan(ContrastiveLoss(validate=False)(z1, bad))  # the production switch: no check


def test_a_zero_row_takes_the_safe_normalisation_and_matches_float64() -> None:
    """A zero embedding is legal (its logits are 0): the one read sends the call down the rescaling
    path, whose value equals an independent float64 NT-Xent with the zero row's cosines set to 0."""
    z1, z2 = _views(b=6)
    z1 = z1.detach().clone()
    z1[2] = 0.0
    got = ContrastiveLoss(temperature=0.5)(z1, z2)
    v = torch.cat([z1, z2]).double()
    norms = v.norm(dim=1, keepdim=True)
    u = torch.where(norms > 0, v / norms.clamp_min(1e-300), torch.zeros_like(v))
    s = u @ u.T / 0.5
    n = v.shape[0]
    idx = torch.arange(n)
    pos = s[idx, (idx + n // 2) % n]
    s = s.masked_fill(torch.eye(n, dtype=torch.bool), float("-inf"))
    want = (torch.logsumexp(s, dim=1) - pos).mean()
    torch.testing.assert_close(got.double(), want, rtol=1e-6, atol=1e-6)
