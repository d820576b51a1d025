"""A loss in a process group of 2 without gathering warns once per process (issue: "never
silently local"), at the user's line (the loss's call here); with gathering, or outside a process
group, it never warns."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
import torch

from hardneg import ContrastiveLoss
from hardneg.queue import MemoryQueue, QueueLoss

from .helpers import run_two_processes


def _calls(gather: bool) -> list[tuple[str, str]]:
    """Every layout twice, then the queue; the messages of the warnings raised and their files."""
    torch.manual_seed(0)
    loss = ContrastiveLoss(gather_distributed=gather)
    z1, z2 = torch.randn(4, 3), torch.randn(4, 3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(2):
            loss(z1, z2)
            loss.pair(z1, z2, torch.randn(4, 3))
            loss.multi_positive(z1, torch.randn(4, 3), torch.eye(4, dtype=torch.bool))
        memory = MemoryQueue(size=8, dim=3)
        memory.enqueue(torch.nn.functional.normalize(torch.randn(8, 3), dim=1))
        QueueLoss(ContrastiveLoss(gather_distributed=gather), memory)(z1, z2)
    return [(str(w.message), w.filename) for w in caught if "without gathering" in str(w.message)]


def _local(rank: int) -> dict[str, object]:
    return {"messages": _calls(gather=False)}


def _gathered(rank: int) -> dict[str, object]:
    return {"messages": _calls(gather=True)}


@pytest.mark.slow
def test_local_negatives_warn_once_per_process(tmp_path: Path) -> None:
    for result in run_two_processes(_local, tmp_path):
        messages = result["messages"]
        assert isinstance(messages, list) and len(messages) == 1, messages
        message, filename = messages[0]
        assert "process group of 2 processes" in message
        assert "gather_distributed=True" in message
        assert filename == __file__  # the user's line, not the loss's modules


@pytest.mark.slow
def test_gathering_never_warns(tmp_path: Path) -> None:
    for result in run_two_processes(_gathered, tmp_path):
        assert result["messages"] == []


def test_one_process_never_warns() -> None:
    assert _calls(gather=False) == []


def _pml_calls(rank: int) -> dict[str, object]:
    """Each call of the PML adapter in a fresh state of the once-per-process warning: its
    (message, file) pairs."""
    from pytorch_metric_learning.utils.distributed import DistributedLossWrapper

    from hardneg import distributed
    from hardneg.integrations import metric_learning as ml

    torch.manual_seed(rank)
    emb, labels = torch.randn(6, 3), torch.tensor([0, 0, 1, 1, 2, 2])

    def caught(call) -> list[tuple[str, str]]:  # type: ignore[no-untyped-def]
        distributed._warned_local = False  # as in a new process
        with warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("always")
            call()
        return [(str(w.message), w.filename) for w in record if "without gathering" in str(w.message)]

    return {
        "ntxent": caught(lambda: ml.NTXentLoss(0.1)(emb, labels)),
        "supcon": caught(lambda: ml.SupConLoss(0.1)(emb, labels)),
        "wrapped": caught(lambda: DistributedLossWrapper(ml.NTXentLoss(0.1))(emb, labels)),
        "wrapped_efficient": caught(
            lambda: DistributedLossWrapper(ml.SupConLoss(0.1), efficient=True)(emb, labels)
        ),
    }


@pytest.mark.slow
def test_the_pml_adapter_warns_as_the_core_outside_distributed_loss_wrapper(tmp_path: Path) -> None:
    """pytorch-metric-learning's adapter called directly warns once, naming DistributedLossWrapper,
    at the user's line; inside the wrapper (which gathers) it does not."""
    pytest.importorskip("pytorch_metric_learning")
    for result in run_two_processes(_pml_calls, tmp_path):
        for key in ("ntxent", "supcon"):
            messages = result[key]
            assert isinstance(messages, list) and len(messages) == 1, (key, messages)
            message, filename = messages[0]
            assert "process group of 2 processes" in message and "DistributedLossWrapper" in message
            assert filename == __file__, (key, filename)
        assert result["wrapped"] == result["wrapped_efficient"] == []
