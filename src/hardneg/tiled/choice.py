"""Which engine computes a batch: materialised, tiled or gathered, and why.

:func:`choose_engine` decides from the batch's shape, the memory budget and what the negative
distribution declares through the tiling protocol (:mod:`hardneg.negatives.tiling`), never from
its class: :func:`check_tileable` asks ``tile_weights()`` (an exponential tilt, or a streamed
Sinkhorn coupling) and quotes ``tile_refusal()`` when there is none;
:func:`~hardneg.tiled.gathered.check_gatherable` asks ``per_anchor_weights``. The
:class:`EngineChoice` is what :meth:`hardneg.ContrastiveLoss.engine_for` returns.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch

from hardneg.negatives.base import NegativeDistribution
from hardneg.negatives.subsample import identity_unwrapped, split_subsample
from hardneg.negatives.tiling import TileWeights
from hardneg.objectives.base import Objective
from hardneg.tiled.coupling import check_ot_objective
from hardneg.tiled.fused import fused_refusal, require_triton
from hardneg.tiled.gathered import check_gatherable

__all__ = [
    "ENGINES",
    "GATHER_CROSSOVER",
    "SPEED_CROSSOVER",
    "EngineChoice",
    "check_tileable",
    "choose_engine",
    "materialised_bytes",
    "speed_tile",
    "tile_for_budget",
]

ENGINES = ("auto", "materialised", "tiled", "gathered", "fused")

# Anchors × candidates (A·N) from which the tiled engine is the faster one, per device type,
# for Uniform and Hard negatives, fwd + bwd, d = 128, float32 (``benchmarks/bench_tiled.py``
# prints default / faster per B; docs/loss_api.md has the table). CPU: SimCLR's layout (A = N = 2B)
# measured tiled / materialised = 1.15 (B = 256), 1.07 (512, tiles of 1024), 0.70 (1024), 0.46
# (4096) on 2 threads (issue 25), and with tiles of 512 on 1 thread 1.32 (B = 256), 1.07 (384),
# 0.78 (512), 0.70 (768), 0.48 (1024); a queue of 65 536 keys with A = 256 queries: 0.55–0.6. So
# from B = 512 (A·N = 1024²) on. ``cuda``: never by speed, only by memory. Measured on an NVIDIA
# H200 (torch 2.11, float32, d = 128, fwd + bwd, CUDA events; ``benchmarks/bench_gpu.py``),
# materialised / tiled = 0.39 (B = 512), 0.39 (1024), 0.46 (2048), 0.22 (4096), 0.28 (8192), 0.35
# (16 384) for SimCLR and 0.25–0.47 for hard + debiased: wherever the (A, N) matrices fit, the
# materialised engine is 2–4.5x faster (the tiled engine's per-tile element-wise passes cost
# 4.3x the matmul floor at B = 65 536; ``compile_tiles=True`` fuses them: 1.6–1.9x faster at
# B = 32 768).
SPEED_CROSSOVER: dict[str, int] = {"cpu": 1024 * 1024, "cuda": 1 << 62}

# K-subsampled negatives (Subsample(K) over Uniform / Hard): the gathered engine (only the A·K
# drawn logits, hardneg.tiled.gathered) when GATHER_CROSSOVER[device type] · K ≤ N, per device
# type. CPU (2 threads, d = 128, float32, Hard(β = 1), fwd + bwd, the same draw on both paths),
# gathered / materialised: B = 1024 (N = 2046): 0.32 (K = 64), 0.57 (128), 0.69 (256; N/K = 8),
# 1.03 (512; N/K = 4); B = 4096 (N = 8190): 0.08 (K = 64), 0.91 (1024; N/K = 8), 1.23 (2048;
# N/K = 4). So gathered from N/K = 8 on. ``cuda``: unmeasured, the CPU value.
GATHER_CROSSOVER: dict[str, int] = {"cpu": 8, "cuda": 8}


def speed_tile(kind: str, num_anchors: int, num_candidates: int) -> int:
    """The tile side when tiling for speed: on a CPU 512 up to 4096 rows or columns (at B = 1024 a
    fwd + bwd took 0.48 of the materialised time with tiles of 512 against 0.62 with 1024: more
    tile pairs share the symmetric saving), else 1024 (B = 4096: 0.37 with 1024, 0.39 with 512,
    0.44 with 2048; larger tiles leave the caches); 4096 on a GPU (where tiling happens for memory
    only: :data:`SPEED_CROSSOVER`)."""
    if kind != "cpu":
        return 4096
    return 512 if max(num_anchors, num_candidates) <= 4096 else 1024


class EngineChoice(NamedTuple):
    """Which engine computes a batch: ``engine`` (``"materialised"``, ``"tiled"``, ``"gathered"``
    or ``"fused"``), the tile side (``None`` unless tiled or fused: the fused engine's fallback
    streams use it) and the reason (``"memory budget"``, ``"speed crossover (…)"``,
    ``"K-subsampled (…)"``, ``"forced"``, ``"below the speed crossover (…)"``, ``"not supported by
    the tiled engine"`` or, asked for ``"fused"``, ``"not supported by the fused kernel (…)"``)."""

    engine: str
    tile: int | None
    reason: str


def choose_engine(
    num_anchors: int,
    num_candidates: int,
    dtype: torch.dtype,
    device: str | torch.device,
    *,
    negatives: NegativeDistribution,
    objective: Objective,
    memory_budget: int,
    tile_size: int | None = None,
    engine: str = "auto",
    num_valid: int | None = None,
) -> EngineChoice:
    """The engine (and tile side) for an (A, N) batch; see ``ContrastiveLoss.engine_for``.

    ``auto``: the gathered engine (:mod:`hardneg.tiled.gathered`) for K-subsampled negatives with
    per-anchor weights (``per_anchor_weights``: Uniform, Hard) when
    ``GATHER_CROSSOVER[device type] · K ≤ N`` and its (A, K) matrices fit ``memory_budget``;
    else the tiled engine when the materialised (A, N) matrices exceed ``memory_budget``
    (:func:`materialised_bytes`; tile side from the budget, :func:`tile_for_budget`), or when
    ``A·N ≥ SPEED_CROSSOVER[device type]`` and the distribution itself states an exponential
    tilt (``tile_weights()``: Uniform, Hard — the configurations measured faster tiled; a
    ``Subsample`` whose K is at least ``num_valid``, the most valid candidates an anchor can
    have, is the identity and counts as its base; wrappers and OT's Sinkhorn tile only by
    memory); else the materialised engine.
    ``materialised`` raises ``ValueError`` beyond the budget; ``tiled`` raises ``ValueError`` for
    what the tiled engine does not support (:func:`check_tileable`), ``gathered`` for what the
    gathered one does not (:func:`~hardneg.tiled.gathered.check_gatherable`). ``fused`` (opt-in;
    ``auto`` never picks it: :mod:`hardneg.tiled.fused`) raises as ``tiled`` does, and
    ``ModuleNotFoundError`` without triton; what its kernel does not express falls back to the
    gathered engine (K-subsampled, as ``auto`` would) or the tiled one, the reason saying why
    (:func:`~hardneg.tiled.fused.fused_refusal`). ``tile_size``
    overrides every tile side. Shapes: A anchors × N candidates; the materialised engine holds
    about four (A, N) matrices (:func:`materialised_bytes`), the tiled one (online softmax,
    Milakov & Gimelshein, arXiv:1805.02867, 2018; tiled as in Inf-CL, Cheng et al.,
    arXiv:2410.17243, 2024) a few tile² buffers, the gathered one about four (A, K) matrices.
    """
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {ENGINES}, got {engine!r}")
    kind = torch.device(device).type
    over = materialised_bytes(num_anchors, num_candidates, dtype) > memory_budget
    budget_tile = tile_size or tile_for_budget(memory_budget, dtype)
    fast_tile = tile_size or speed_tile(kind, num_anchors, num_candidates)
    if engine == "materialised":
        if over:
            raise ValueError(
                f"engine='materialised' needs {materialised_bytes(num_anchors, num_candidates, dtype)} "
                f"bytes for the ({num_anchors}, {num_candidates}) score matrices, above memory_budget="
                f"{memory_budget}; raise memory_budget or use engine='auto' or 'tiled'"
            )
        return EngineChoice("materialised", None, "forced")
    if engine == "tiled":
        check_tileable(negatives, objective)
        return EngineChoice("tiled", budget_tile if over else fast_tile, "forced")
    if engine == "gathered":
        check_gatherable(negatives)
        return EngineChoice("gathered", None, "forced")
    if engine == "fused":
        require_triton()
        check_tileable(negatives, objective)
        why = fused_refusal(negatives, objective, kind, num_valid=num_valid)
        tile = budget_tile if over else fast_tile
        if why is None:
            return EngineChoice("fused", tile, "forced")
        gathered = _gather_choice(num_anchors, num_candidates, dtype, kind, negatives, memory_budget)
        if gathered is None:
            return EngineChoice("tiled", tile, f"not supported by the fused kernel ({why})")
        return gathered._replace(reason=f"not supported by the fused kernel ({why}); {gathered.reason}")
    gathered = _gather_choice(num_anchors, num_candidates, dtype, kind, negatives, memory_budget)
    if gathered is not None:
        return gathered
    if over:  # the tiled engine raises for what it does not support, naming the budget
        return EngineChoice("tiled", budget_tile, "memory budget")
    try:
        check_tileable(negatives, objective)
    except ValueError:
        return EngineChoice("materialised", None, "not supported by the tiled engine")
    crossover = SPEED_CROSSOVER.get(kind, SPEED_CROSSOVER["cuda"])
    where = f"A·N = {crossover} on {kind}"
    # a tilt stated by the outermost distribution itself (not a mask wrapper, not OT's Sinkhorn)
    weights = identity_unwrapped(negatives, num_valid).tile_weights()
    plain = weights is not None and weights.sinkhorn is None
    if plain and num_anchors * num_candidates >= crossover:
        return EngineChoice("tiled", fast_tile, f"speed crossover (tiled faster above {where})")
    return EngineChoice("materialised", None, f"below the speed crossover ({where})")


def _gather_choice(
    num_anchors: int,
    num_candidates: int,
    dtype: torch.dtype,
    kind: str,
    negatives: NegativeDistribution,
    memory_budget: int,
) -> EngineChoice | None:
    """The gathered engine if ``negatives`` is K-subsampled with per-anchor weights and
    ``GATHER_CROSSOVER · K ≤ N`` and (A, K) matrices within the budget, else ``None``."""
    try:
        _, sub, _ = check_gatherable(negatives)
    except ValueError:
        return None
    ratio = GATHER_CROSSOVER.get(kind, GATHER_CROSSOVER["cuda"])
    k = sub.num_negatives
    if ratio * k > num_candidates or materialised_bytes(num_anchors, k, dtype) > memory_budget:
        return None
    return EngineChoice(
        "gathered", None, f"K-subsampled ({ratio}·K ≤ N on {kind}: only the A·K drawn logits)"
    )


def check_tileable(negatives: NegativeDistribution, objective: Objective, *, budget: str = "") -> TileWeights:
    """The :class:`~hardneg.negatives.TileWeights` the tiled engine streams for ``negatives`` (its
    base once :class:`~hardneg.negatives.Subsample` / :class:`~hardneg.negatives.CollisionFree`
    are split off, :func:`~hardneg.negatives.subsample.split_subsample`) with ``objective``.

    ``ValueError`` when the base distribution states no weights per tile (quoting its
    ``tile_refusal()``: the reason, and what a distribution implements to tile), or the objective
    does not reduce row-wise (``Objective.row_reducible``), or a Sinkhorn coupling meets an
    objective that reads more than ``log Σ_j w_ij e^{s_ij}``.

    Args:
        negatives: the negative distribution (possibly wrapped in Subsample / CollisionFree).
        objective: the objective it feeds.
        budget: text appended to the error's "beyond memory_budget" (e.g. ``" = 4 GiB"``).

    References:
        Robinson, Chuang, Sra and Jegelka, ICLR 2021, §3, eq. (4) (the tilt ``w_ij ∝ e^{β s_ij}``);
        Milakov and Gimelshein, arXiv:1805.02867, 2018, Algorithm 3 (what makes a tilted
        log-sum-exp streamable); Cuturi, "Sinkhorn Distances", NeurIPS 2013 (the Sinkhorn coupling).

    Example:
        >>> from hardneg import negatives, objectives
        >>> tw = check_tileable(negatives.Hard(beta=1.0), objectives.InfoNCE())
        >>> type(tw).__name__
        'TileWeights'
    """
    base, _, _ = split_subsample(negatives)
    weights = base.tile_weights()
    where = f"the tiled engine (batches beyond memory_budget{budget})"
    if weights is None:
        raise ValueError(
            f"{where} cannot compute negatives={negatives!r}: {base.tile_refusal()}. A distribution "
            "tiles when its tile_weights() states its weights per tile (hardneg.negatives.tiling). "
            "Raise memory_budget to materialise the score matrix"
        )
    if not getattr(objective, "row_reducible", False):
        raise ValueError(
            f"{where} supports objectives that reduce "
            "row-wise (InfoNCE, Debiased, Logistic, LogisticMPair, Hinge, Triplet); "
            f"got objective={objective!r}. "
            "Raise memory_budget to materialise the score matrix"
        )
    if weights.sinkhorn is not None:
        check_ot_objective(objective)
    return weights


def materialised_bytes(num_anchors: int, num_candidates: int, dtype: torch.dtype) -> int:
    """Peak bytes the materialised engine needs for an (A, N) batch, roughly four matrices.

    Four (A, N) floating matrices (logits, weights and their gradients) and one bool mask.

    Args:
        num_anchors: A.
        num_candidates: N.
        dtype: the compute dtype of the logits.

    Shapes:
        the batch's score matrices are (A, N); returns a number of bytes (int).

    References:
        Cheng et al. (Inf-CL), arXiv:2410.17243, 2024, §3 (the O(A·N) memory of the full
        similarity matrix that tiling removes).

    Example:
        >>> materialised_bytes(1000, 1000, torch.float32)    # 4 · 4 B + 1 B per entry
        17000000
    """
    return 4 * num_anchors * num_candidates * torch.finfo(dtype).bits // 8 + num_anchors * num_candidates


def tile_for_budget(memory_budget: int, dtype: torch.dtype) -> int:
    """Side of a square tile whose working set (about eight tile-sized buffers) fits the budget,
    between 64 and 1024: beyond 1024 the element-wise passes over a tile leave the CPU caches, and
    a fwd+bwd at B = 8192 took 1.70 s with tiles of 1024 against 2.06 s with 2048 (2 threads).

    Args:
        memory_budget: bytes the tiled engine's per-tile buffers may take.
        dtype: the compute dtype of the logits.

    Shapes:
        returns T, the side of the (T, T) tiles of logits.

    References:
        Dao, Fu, Ermon, Rudra and Ré, "FlashAttention", NeurIPS 2022, §3.1 (tile sizes chosen to
        fit fast memory); Cheng et al. (Inf-CL), arXiv:2410.17243, 2024, §3.

    Example:
        >>> tile_for_budget(0, torch.float32), tile_for_budget(1 << 20, torch.float32)
        (64, 181)
        >>> tile_for_budget(4 << 30, torch.float32)
        1024
    """
    side = math.isqrt(max(1, memory_budget // (8 * torch.finfo(dtype).bits // 8)))
    return max(64, min(1024, side))
