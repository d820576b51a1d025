"""Two gloo processes on CPU: spawn, free port, results saved per rank."""

from __future__ import annotations

import os
import socket
from collections.abc import Callable
from pathlib import Path

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

WORLD = 2


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now (bound to port 0, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _entry(rank: int, fn: Callable[[int], dict[str, object]], port: int, out_dir: str) -> None:
    os.environ["OMP_NUM_THREADS"] = "1"
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=WORLD)
    try:
        result = fn(rank)
        torch.save(result, Path(out_dir) / f"rank{rank}.pt")
    finally:
        dist.destroy_process_group()


def run_two_processes(fn: Callable[[int], dict[str, object]], tmp_path: Path) -> list[dict[str, object]]:
    """Run ``fn(rank)`` in 2 gloo processes; return the dicts they return, in rank order."""
    mp.spawn(_entry, args=(fn, free_port(), str(tmp_path)), nprocs=WORLD, join=True)
    return [torch.load(tmp_path / f"rank{r}.pt", weights_only=False) for r in range(WORLD)]
