"""Negatives gathered across processes: 2 gloo processes == 1 process on the concatenated batch."""

from __future__ import annotations

import os
import socket
import warnings
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn

from hardneg import ContrastiveLoss
from hardneg.distributed import gathered_simclr_scores, is_distributed
from hardneg.negatives import CollisionFree, Hard
from hardneg.objectives import Triplet

WORLD, B, D = 2, 3, 4


def _configs() -> dict[str, ContrastiveLoss]:
    return {
        "simclr": ContrastiveLoss(temperature=0.5, gather_distributed=True),
        "hcl": ContrastiveLoss(
            temperature=0.5, tau_plus=0.1, negatives=Hard(beta=1.0), gather_distributed=True
        ),
        "hcl_tiled": ContrastiveLoss(
            gather_distributed=True,
            temperature=0.5,
            tau_plus=0.1,
            negatives=Hard(beta=1.0),
            collision_free=True,
            memory_budget=0,
            tile_size=4,
        ),
        "oracle_triplet": ContrastiveLoss(
            gather_distributed=True,
            temperature=0.5, negatives=CollisionFree(base=Hard(beta=0.5)), objective=Triplet(margin=0.5)
        ),
    }


def _data() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    z1 = torch.randn(WORLD * B, D, generator=g, dtype=torch.float64)
    z2 = z1 + 0.3 * torch.randn(WORLD * B, D, generator=g, dtype=torch.float64)
    x = torch.randn(WORLD * B, 2, D, generator=g, dtype=torch.float64)
    labels = torch.tensor([0, 1, 2, 0, 1, 2])
    return z1, z2, x, labels


def _model() -> nn.Module:
    torch.manual_seed(1)
    return nn.Linear(D, D).double()


def _worker(rank: int, port: int, out_dir: str) -> None:
    os.environ["OMP_NUM_THREADS"] = "1"
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=WORLD)
    try:
        z1, z2, x, labels = _data()
        sl = slice(rank * B, (rank + 1) * B)
        result: dict[str, object] = {"is_distributed": is_distributed()}
        for name, loss_fn in _configs().items():
            a = z1[sl].clone().requires_grad_(True)
            b = z2[sl].clone().requires_grad_(True)
            with warnings.catch_warnings():  # no deprecated call (torch.distributed.nn warned)
                warnings.simplefilter("error", DeprecationWarning)
                warnings.simplefilter("error", FutureWarning)
                loss = loss_fn(a, b, labels=labels[sl])
                loss.backward()
            result[name] = (loss.detach(), a.grad, b.grad)
        scores = gathered_simclr_scores(z1[sl], z2[sl], temperature=0.5)
        result["mask"] = scores.mask
        # DDP: parameter gradients averaged over ranks == single-process gradients
        model = nn.parallel.DistributedDataParallel(_model())
        loss_fn = ContrastiveLoss(
            temperature=0.5, tau_plus=0.1, negatives=Hard(beta=1.0), gather_distributed=True
        )
        loss = loss_fn(model(x[sl, 0]), model(x[sl, 1]))
        loss.backward()
        result["ddp"] = [p.grad.detach().clone() for p in model.parameters()]
        off = ContrastiveLoss()(z1[sl], z2[sl])  # the default: not gathered
        result["off"] = off.detach()
        torch.save(result, Path(out_dir) / f"rank{rank}.pt")
    finally:
        dist.destroy_process_group()


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.slow
@pytest.mark.skipif(not dist.is_available(), reason="torch.distributed not available")
def test_two_processes_equal_one_process(tmp_path: Path) -> None:
    mp.spawn(_worker, args=(_free_port(), str(tmp_path)), nprocs=WORLD, join=True)
    results = [torch.load(tmp_path / f"rank{r}.pt", weights_only=False) for r in range(WORLD)]
    assert all(r["is_distributed"] for r in results)
    z1, z2, x, labels = _data()
    for name, loss_fn in _configs().items():
        a = z1.clone().requires_grad_(True)
        b = z2.clone().requires_grad_(True)
        loss = loss_fn(a, b, labels=labels)  # global mean over the 2·B·W anchors
        loss.backward()
        assert a.grad is not None and b.grad is not None
        ranks = [r[name] for r in results]
        # the mean of the per-rank losses is the single-process loss
        torch.testing.assert_close(sum(r[0] for r in ranks) / WORLD, loss.detach())
        for rank, (_, ga, gb) in enumerate(ranks):
            sl = slice(rank * B, (rank + 1) * B)
            # local gradient of the local mean = W × gradient of the global mean (DDP divides by W)
            torch.testing.assert_close(ga / WORLD, a.grad[sl])
            torch.testing.assert_close(gb / WORLD, b.grad[sl])
    # masks: anchor i of rank r never sees global candidate r·2B + i nor its positive
    for rank, r in enumerate(results):
        mask = r["mask"]
        assert mask.shape == (2 * B, 2 * B * WORLD)
        assert int((~mask).sum()) == 4 * B
        for i in range(2 * B):
            assert not mask[i, rank * 2 * B + i] and not mask[i, rank * 2 * B + (i + B) % (2 * B)]
    # DDP parameter gradients equal the single-process gradient
    model = _model()
    loss_fn = ContrastiveLoss(temperature=0.5, tau_plus=0.1, negatives=Hard(beta=1.0))
    loss_fn(model(x[:, 0]), model(x[:, 1])).backward()
    for rank_result in results:
        for got, p in zip(rank_result["ddp"], model.parameters()):
            torch.testing.assert_close(got, p.grad)
    # gather_distributed=False (the default): the local loss only
    torch.testing.assert_close(results[0]["off"], ContrastiveLoss()(z1[:B], z2[:B]))


def test_single_process_gathered_layout_equals_simclr() -> None:
    from hardneg import simclr_scores

    z1, z2, _, labels = _data()
    a = gathered_simclr_scores(z1, z2, temperature=0.5, labels=labels)
    b = simclr_scores(z1, z2, temperature=0.5, labels=labels)
    torch.testing.assert_close(a.logits, b.logits)
    torch.testing.assert_close(a.positive, b.positive)
    assert torch.equal(a.mask, b.mask) and torch.equal(a.candidate_labels, b.candidate_labels)
    assert not is_distributed()
