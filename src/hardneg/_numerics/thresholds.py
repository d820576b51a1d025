"""The one table of size thresholds behind every engine decision (:data:`THRESHOLDS`).

Each value was measured by the benchmark script named in its field's description; the
measurements themselves are in ``docs/loss_api.md`` ("Which engine") and in the benchmarks'
docstrings, not here. Every module reads the thresholds from :data:`THRESHOLDS`; none keeps a
copy.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["THRESHOLDS", "Thresholds"]


@dataclass(frozen=True)
class Thresholds:
    """The size thresholds of the engines, in one frozen table.

    Attributes:
        dense_lse_max: (A, N) matrices of at most this many entries (B = 128 in SimCLR's layout)
            take ATen's one-call log-sum-exp, keep a logits-sized additive mask and the small
            cross-entropy route (``benchmarks/bench_core.py --per-call``).
        fused_max: the largest (2B, 2B) matrix the fused debiased node from the views takes
            (B ≤ 256; ``benchmarks/bench_core.py --per-call``).
        default_memory_budget: bytes the materialised engine's (A, N) matrices may take by default
            (about B = 8000 in SimCLR's layout; ``benchmarks/bench_tiled.py``, peak memory).
        speed_crossover_cpu, speed_crossover_cuda: A·N from which the tiled engine is the faster
            one, per device type
            (``benchmarks/bench_tiled.py`` on a CPU, ``benchmarks/bench_gpu.py`` on a GPU: there
            never by speed, only by memory).
        gather_crossover_cpu, gather_crossover_cuda: K-subsampled negatives take the gathered engine when
            ``gather_crossover · K ≤ N``, per device type (``benchmarks/bench_tiled.py``
            ``--subsample-sizes``; ``cuda``: unmeasured, the CPU value).

    Shapes:
        none (numbers).

    References:
        Milakov and Gimelshein, "Online normalizer calculation for softmax", arXiv:1805.02867,
        2018 (the tiled engine the crossovers choose); Cheng et al. (Inf-CL), arXiv:2410.17243,
        2024, §3 (the O(A·N) memory the budget bounds).

    Example:
        >>> THRESHOLDS.small_max == max(THRESHOLDS.fused_max, THRESHOLDS.dense_lse_max)
        True
        >>> THRESHOLDS.crossover("speed", "mps") == THRESHOLDS.speed_crossover["cuda"]
        True
    """

    dense_lse_max: int = 1 << 16
    fused_max: int = 1 << 18
    default_memory_budget: int = 4 << 30
    # per device type as plain numbers, not a mapping: torch.compile(fullgraph=True) traces
    # crossover() without a graph break (a read-only mapping proxy breaks it)
    speed_crossover_cpu: int = 1024 * 1024
    speed_crossover_cuda: int = 1 << 62
    gather_crossover_cpu: int = 8
    gather_crossover_cuda: int = 8

    @property
    def speed_crossover(self) -> dict[str, int]:
        """``speed_crossover`` per device type (a copy; read by :meth:`crossover`)."""
        return {"cpu": self.speed_crossover_cpu, "cuda": self.speed_crossover_cuda}

    @property
    def gather_crossover(self) -> dict[str, int]:
        """``gather_crossover`` per device type (a copy; read by :meth:`crossover`)."""
        return {"cpu": self.gather_crossover_cpu, "cuda": self.gather_crossover_cuda}

    @property
    def small_max(self) -> int:
        """The largest (2B, 2B) matrix any small-batch route takes (the fused node's or the
        cross-entropy's)."""
        return max(self.fused_max, self.dense_lse_max)

    def crossover(self, which: str, device_type: str) -> int:
        """``speed_crossover`` or ``gather_crossover`` (``which``: ``"speed"``, ``"gather"``) of a
        device type; an unlisted type (``mps``, ``xpu``) reads the ``cuda`` entry."""
        if which == "speed":
            return self.speed_crossover_cpu if device_type == "cpu" else self.speed_crossover_cuda
        return self.gather_crossover_cpu if device_type == "cpu" else self.gather_crossover_cuda


#: The thresholds in use (frozen; tests that need other values pass them explicitly).
THRESHOLDS = Thresholds()
