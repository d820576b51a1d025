"""``train.grad_cache_chunk`` under DDP (2 gloo processes, Lightning's DDP strategy).

Before the fix each rank back-propagated its chunks outside DDP's reducer, so the gradients were
never all-reduced and the ranks trained different models. Now the chunks but the last run under
``no_sync()`` and the last one all-reduces: both ranks hold the parameters of the unchunked DDP
step (and of one SGD step on the concatenated batch, computed here in one process), with exactly
one gradient all-reduce per bucket per step.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
from torch import Tensor, nn

from hardneg import ContrastiveLoss
from hardneg.negatives import Hard

from .helpers import WORLD, run_two_processes

B, D_IN, D_OUT, LR = 8, 6, 4, 0.5
CALLS: list[int] = []  # gradient all-reduces seen by the DDP comm hook in this process


class _Encoder(nn.Module):
    """``(h, z)`` of a small MLP; LayerNorm and no dropout, so chunking is exact."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.body = nn.Sequential(nn.Linear(D_IN, 16), nn.LayerNorm(16), nn.Tanh())
        self.head = nn.Linear(16, D_OUT)

    def forward(self, x: Tensor) -> tuple[Tensor, Tensor]:
        h = self.body(x)
        return h, self.head(h)


def _batch() -> tuple[Tensor, Tensor]:
    g = torch.Generator().manual_seed(3)
    x1 = torch.randn(WORLD * B, D_IN, generator=g, dtype=torch.float64)
    return x1, x1 + 0.2 * torch.randn(WORLD * B, D_IN, generator=g, dtype=torch.float64)


def _loss() -> ContrastiveLoss:
    return ContrastiveLoss(temperature=0.5, tau_plus=0.1, negatives=Hard(beta=1.0), gather_distributed=True)


def _counting_hook(state, bucket):  # type: ignore[no-untyped-def]  # DDP checks real annotations
    from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import allreduce_hook

    CALLS.append(1)
    return allreduce_hook(state, bucket)  # type: ignore[arg-type]


def _count_callback() -> type:
    import lightning as L

    class CountAllReduces(L.Callback):
        """Registers the counting comm hook on the DDP wrapper (Lightning registers its
        ``ddp_comm_hook`` on CUDA only)."""

        def on_train_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
            trainer.strategy.model.register_comm_hook(None, _counting_hook)  # type: ignore[union-attr]

    return CountAllReduces


def _train_one_step(rank: int, chunk: int | None) -> tuple[list[Tensor], int]:
    import lightning as L
    from lightning.pytorch.strategies import DDPStrategy
    from torch.utils.data import DataLoader, TensorDataset

    from hardneg.modalities.base import IdentityViews
    from hardneg.pipeline.module import ContrastiveModule

    _CountAllReduces = _count_callback()
    x1, x2 = _batch()
    rows = slice(rank * B, (rank + 1) * B)  # this rank's share of the global batch
    data = TensorDataset(x1[rows], x2[rows], torch.zeros(B, dtype=torch.long), torch.arange(B))
    module = ContrastiveModule(
        encoder=_Encoder().double(),
        loss=_loss(),
        views=IdentityViews(),
        optimizer="sgd",
        lr=LR,
        weight_decay=0.0,
        sgd_momentum=0.0,
        use_labels=False,
        grad_cache_chunk=chunk,
    )
    trainer = L.Trainer(
        accelerator="cpu",
        devices=WORLD,
        strategy=DDPStrategy(process_group_backend="gloo"),
        callbacks=[_CountAllReduces()],
        precision="64-true",
        max_steps=1,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        use_distributed_sampler=False,
    )
    CALLS.clear()
    trainer.fit(module, DataLoader(data, batch_size=B, shuffle=False))
    return [p.detach().clone() for p in module.encoder.parameters()], len(CALLS)


def _worker(rank: int) -> dict[str, object]:
    os.environ["LOCAL_RANK"] = str(rank)  # Lightning joins the process group opened here
    os.environ["NODE_RANK"] = "0"
    os.environ["WORLD_SIZE"] = str(WORLD)
    plain, plain_calls = _train_one_step(rank, None)
    chunked, chunked_calls = _train_one_step(rank, 3)  # chunks of 3, 3, 2 rows per view
    return {"plain": plain, "chunked": chunked, "plain_calls": plain_calls, "chunked_calls": chunked_calls}


@pytest.mark.slow
@pytest.mark.skipif(not dist.is_available(), reason="torch.distributed not available")
def test_grad_cache_under_ddp_equals_the_unchunked_step(tmp_path: Path) -> None:
    pytest.importorskip("lightning")
    results = run_two_processes(_worker, tmp_path)
    # one SGD step on the concatenated batch in one process (the loss of the global batch)
    enc = _Encoder().double()
    x1, x2 = _batch()
    _loss()(enc(x1)[1], enc(x2)[1]).backward()
    want = [(p - LR * p.grad).detach() for p in enc.parameters()]
    for r in results:
        for got_c, got_p, w in zip(r["chunked"], r["plain"], want):  # type: ignore[call-overload]
            torch.testing.assert_close(got_p, w, rtol=1e-6, atol=1e-6)
            torch.testing.assert_close(got_c, got_p, rtol=1e-6, atol=1e-6)
        # one all-reduce per gradient bucket per step (one bucket for this model), none per chunk
        assert r["plain_calls"] == 1
        assert r["chunked_calls"] == r["plain_calls"]
    for a, b in zip(results[0]["chunked"], results[1]["chunked"]):  # type: ignore[call-overload]
        torch.testing.assert_close(a, b, rtol=0, atol=0)
