"""Every layout gathered over 2 gloo processes equals one process on the concatenated batch.

Per rank r the anchors are rows ``r·B … (r+1)·B − 1`` of a global batch; the reference is the
single-process loss on the whole batch, with the masks of the gathered layout written out for
the concatenated candidates (a rank's masks cover its own candidates; the other ranks'
candidates are negatives). The mean of the ranks' losses equals the reference loss, and each
rank's gradient of its local loss is W times the reference gradient of its rows (DDP divides by
W), in float64 to 1e-10.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
import torch
import torch.distributed as dist

from hardneg import ContrastiveLoss
from hardneg.distributed import all_gather_with_grad, is_distributed
from hardneg.negatives import Hard
from hardneg.queue import MemoryQueue, QueueLoss

from .helpers import WORLD, run_two_processes

B, N, D = 3, 4, 5  # anchors and candidates per rank, embedding dimension
TOL = {"rtol": 1e-10, "atol": 1e-10}


def _data() -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    rand = lambda *s: torch.randn(*s, generator=g, dtype=torch.float64)  # noqa: E731
    z1 = rand(WORLD * B, D)
    return {
        "z1": z1,
        "z2": z1 + 0.3 * rand(WORLD * B, D),
        "anchors": rand(WORLD * B, D),
        "positives": rand(WORLD * B, D),
        "candidates": rand(WORLD * N, D),
        "mask": torch.rand(WORLD * B, N, generator=g) > 0.3,  # per rank: (B, N) about its candidates
        "labels": torch.tensor([0, 1, 2, 0, 1, 1]),
        "cand_labels": torch.tensor([0, 1, 2, 3, 2, 1, 0, 3]),
        "pos_mask": torch.rand(WORLD * B, N, generator=g) > 0.5,
        "exclude": torch.zeros(WORLD * B, N, dtype=torch.bool),
        "queue": torch.nn.functional.normalize(rand(8, D), dim=1),
        "q": rand(2, WORLD * B, D),
        "k": rand(2, WORLD * B, D),
    }


def _fixed(d: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    d["mask"][:, 0] = True  # every anchor has a local negative
    d["pos_mask"][:, 0] = True  # every anchor has a positive
    d["pos_mask"][:, -1] = False  # and a local negative
    d["exclude"][:, 1] = ~d["pos_mask"][:, 1]
    return d


def _losses(gather: bool, group: object | None = None) -> dict[str, ContrastiveLoss]:
    kw: dict[str, object] = {"gather_distributed": gather, "process_group": group, "temperature": 0.5}
    return {
        "simclr": ContrastiveLoss(**kw),  # type: ignore[arg-type]
        "hcl": ContrastiveLoss(tau_plus=0.1, negatives=Hard(beta=1.0), **kw),  # type: ignore[arg-type]
        "hcl_tiled": ContrastiveLoss(  # type: ignore[arg-type]
            tau_plus=0.1, negatives=Hard(beta=1.0), collision_free=True, memory_budget=0, tile_size=4, **kw
        ),
    }


def _block(local: torch.Tensor, fill: bool) -> torch.Tensor:
    """(W·B, N) per-rank masks → the (W·B, W·N) mask of the concatenated batch."""
    out = torch.full((WORLD * B, WORLD * N), fill)
    for r in range(WORLD):
        out[r * B : (r + 1) * B, r * N : (r + 1) * N] = local[r * B : (r + 1) * B]
    return out


def _leaves(d: dict[str, torch.Tensor], names: list[str], rows: dict[str, slice]) -> list[torch.Tensor]:
    return [d[n][rows[n]].clone().requires_grad_(True) for n in names]


def _run(loss_fn: ContrastiveLoss, layout: str, d: dict[str, torch.Tensor], rank: int | None) -> tuple:
    """One layout's loss and gradients, on rank ``rank``'s rows (``None``: the whole batch)."""
    a_rows = slice(None) if rank is None else slice(rank * B, (rank + 1) * B)
    c_rows = slice(None) if rank is None else slice(rank * N, (rank + 1) * N)

    def local(x: torch.Tensor, fill: bool) -> torch.Tensor:
        return _block(x, fill) if rank is None else x[a_rows]

    if layout == "forward":
        z1, z2 = _leaves(d, ["z1", "z2"], {"z1": a_rows, "z2": a_rows})
        loss = loss_fn(z1, z2, labels=d["labels"][a_rows])
        leaves = [z1, z2]
    elif layout in ("pair", "pair_tiled"):
        a, p, c = _leaves(
            d,
            ["anchors", "positives", "candidates"],
            {"anchors": a_rows, "positives": a_rows, "candidates": c_rows},
        )
        loss = loss_fn.pair(
            a,
            p,
            c,
            mask=local(d["mask"], True),
            anchor_labels=d["labels"][a_rows],
            candidate_labels=d["cand_labels"][c_rows],
        )
        leaves = [a, p, c]
    elif layout == "multi_positive":
        a, c = _leaves(d, ["anchors", "candidates"], {"anchors": a_rows, "candidates": c_rows})
        loss = loss_fn.multi_positive(a, c, local(d["pos_mask"], False), exclude=local(d["exclude"], False))
        leaves = [a, c]
    else:  # the queue: two steps, the second over the keys the first enqueued (gathered)
        queue = MemoryQueue(16, D, dtype=torch.float64)
        queue.enqueue(d["queue"])
        moco = QueueLoss(loss_fn, queue)
        moco(d["q"][0][a_rows], d["k"][0][a_rows])
        (q,) = _leaves({"q": d["q"][1]}, ["q"], {"q": a_rows})
        loss = moco(q, d["k"][1][a_rows], enqueue=False)
        loss.backward()
        return loss.detach(), [q.grad], queue.ordered()
    loss.backward()
    return loss.detach(), [x.grad for x in leaves], None


CASES = [
    ("simclr", "forward"),
    ("hcl", "forward"),
    ("hcl_tiled", "forward"),
    ("hcl", "pair"),
    ("hcl_tiled", "pair_tiled"),
    ("hcl", "multi_positive"),
    ("hcl", "queue"),
]


def _worker(rank: int) -> dict[str, object]:
    d = _fixed(_data())
    result: dict[str, object] = {"is_distributed": is_distributed()}
    group = dist.new_group([0, 1])
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        warnings.simplefilter("error", FutureWarning)
        for name, layout in CASES:
            result[f"{name}/{layout}"] = _run(_losses(True)[name], layout, d, rank)
        result["group"] = _run(_losses(True, group)["hcl"], "pair", d, rank)
    for layout in ("forward", "pair", "multi_positive"):
        result[f"off/{layout}"] = _run(_losses(False)["hcl"], layout, d, rank)
    # unequal local sizes: every rank raises, naming the sizes of both ranks
    c = torch.randn(N + rank, D, dtype=torch.float64)
    try:
        _losses(True)["simclr"].pair(c[:2], c[:2], c)
    except ValueError as e:
        result["unequal"] = str(e)
    return result


@pytest.mark.slow
@pytest.mark.skipif(not dist.is_available(), reason="torch.distributed not available")
def test_every_layout_gathered_equals_one_process(tmp_path: Path) -> None:
    results = run_two_processes(_worker, tmp_path)
    assert all(r["is_distributed"] for r in results)
    d = _fixed(_data())
    rows = {
        "forward": [B, B],
        "pair": [B, B, N],
        "pair_tiled": [B, B, N],
        "multi_positive": [B, N],
        "queue": [B],
    }
    checks = [(f"{n}/{lay}", n, lay) for n, lay in CASES] + [("group", "hcl", "pair")]
    for key, name, layout in checks:
        want_loss, want_grads, want_keys = _run(_losses(False)[name], layout, d, None)
        got = [r[key] for r in results]
        # the mean of the ranks' local losses is the loss of the concatenated batch
        torch.testing.assert_close(sum(g[0] for g in got) / WORLD, want_loss, **TOL, msg=key)
        for rank, (_, grads, keys) in enumerate(got):
            for gr, want, n in zip(grads, want_grads, rows[layout]):
                # local gradient of the local mean = W × the global gradient of this rank's rows
                torch.testing.assert_close(gr / WORLD, want[rank * n : (rank + 1) * n], **TOL, msg=key)
            if want_keys is not None:  # the queue after the enqueue of the gathered keys
                torch.testing.assert_close(keys, want_keys, **TOL)
    # gather_distributed=False (the default): each rank's loss is its local single-process loss
    assert ContrastiveLoss().gather_distributed is False
    for layout in ("forward", "pair", "multi_positive"):
        for rank, r in enumerate(results):
            local = {k: v for k, v in d.items()}
            a_rows, c_rows = slice(rank * B, (rank + 1) * B), slice(rank * N, (rank + 1) * N)
            for k in ("z1", "z2", "anchors", "positives", "mask", "labels", "pos_mask", "exclude"):
                local[k] = d[k][a_rows]
            local["candidates"], local["cand_labels"] = d["candidates"][c_rows], d["cand_labels"][c_rows]
            want = _run_local(layout, local)
            torch.testing.assert_close(r[f"off/{layout}"][0], want, **TOL)
    for r in results:
        assert "got shapes per rank [(4, 5), (5, 5)]" in str(r["unequal"])


def _run_local(layout: str, d: dict[str, torch.Tensor]) -> torch.Tensor:
    """The single-process loss of one rank's rows (an un-gathered reference)."""
    fn = _losses(False)["hcl"]
    if layout == "forward":
        return fn(d["z1"], d["z2"], labels=d["labels"])
    if layout == "pair":
        return fn.pair(
            d["anchors"], d["positives"], d["candidates"], mask=d["mask"],
            anchor_labels=d["labels"], candidate_labels=d["cand_labels"],
        )
    return fn.multi_positive(d["anchors"], d["candidates"], d["pos_mask"], exclude=d["exclude"])


def test_one_process_gather_is_the_identity() -> None:
    x = torch.randn(3, 2, dtype=torch.float64, requires_grad=True)
    assert not is_distributed() and all_gather_with_grad(x) is x
