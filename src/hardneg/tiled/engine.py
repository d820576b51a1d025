"""The loss engine without the (A, N) matrix: steps 1–4 with logits made one tile at a time.

Supported: negative distributions :class:`~hardneg.negatives.Uniform`,
:class:`~hardneg.negatives.Hard` (any β; not ``rescale``/``detach_weights``) and
:class:`~hardneg.negatives.OptimalTransport` (streamed Sinkhorn, :mod:`hardneg.tiled.ot`), wrapped in any
:class:`~hardneg.negatives.CollisionFree` / :class:`~hardneg.negatives.Subsample`; objectives
that read only per-anchor statistics (``Objective.row_reducible``: InfoNCE, Debiased, Logistic,
LogisticMPair, Hinge, Triplet); every layout (SimCLR's 2B views, explicit candidates, a memory
queue, candidates gathered across processes). For these the loss needs, per anchor, only ``s⁺_i``, ``N_i`` and

    log Σ_j w_ij e^{s_ij} = L_{1+β,i} − L_{β,i} + log N_i     (hard; uniform: L_{1,i}),

which :func:`~hardneg.tiled.lse.tiled_lse` streams; the hinge/triplet family reads instead the
per-anchor mean ``Σ_j q_ij h(s_ij − s⁺_i)`` or the largest negative logit, which
:mod:`hardneg.tiled.rowmean` streams. Values and gradients equal the materialised
engine's up to float round-off (tested to 1e-6 relative in float32, tighter in float64).
Anything else raises ``ValueError`` naming what is unsupported and the memory budget to raise.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch
from torch import Tensor

from hardneg._validation import check_rows_nonempty
from hardneg.negatives.base import NegativeDistribution
from hardneg.negatives.hard import Hard
from hardneg.negatives.ot import OptimalTransport
from hardneg.negatives.subsample import Subsample, split_subsample
from hardneg.negatives.uniform import Uniform
from hardneg.negatives.weighted import WeightedScores
from hardneg.objectives.base import Objective
from hardneg.reduction import LossOutput, reduce
from hardneg.reduction.diagnostics import positive_cosine
from hardneg.scores import Scores
from hardneg.tiled.gathered import check_gatherable
from hardneg.tiled.lse import tiled_lse
from hardneg.tiled.mask import TileMask
from hardneg.tiled.ot import check_ot_tileable, tiled_ot_loss
from hardneg.tiled.rowmean import tiled_row_argmax, tiled_row_mean
from hardneg.tiled.symmetric import tiled_lse_symmetric

__all__ = [
    "ENGINES",
    "GATHER_CROSSOVER",
    "SPEED_CROSSOVER",
    "EngineChoice",
    "check_tileable",
    "choose_engine",
    "speed_tile",
    "tiled_loss",
]

ENGINES = ("auto", "materialised", "tiled", "gathered")

# Anchors × candidates (A·N) from which the tiled engine is the faster one, per device type,
# for Uniform and Hard negatives, fwd + bwd, d = 128, float32 (``benchmarks/bench_tiled.py``
# prints default / faster per B; docs/loss_api.md has the table). CPU: SimCLR's layout (A = N = 2B)
# measured tiled / materialised = 1.15 (B = 256), 1.07 (512, tiles of 1024), 0.70 (1024), 0.46
# (4096) on 2 threads (issue 25), and with tiles of 512 on 1 thread 1.32 (B = 256), 1.07 (384),
# 0.78 (512), 0.70 (768), 0.48 (1024); a queue of 65 536 keys with A = 256 queries: 0.55–0.6. So
# from B = 512 (A·N = 1024²) on. ``cuda``: unmeasured; a conservative guess (a GPU's element-wise
# passes over the materialised matrices are fast up to its memory), to be replaced by a
# measurement.
SPEED_CROSSOVER: dict[str, int] = {"cpu": 1024 * 1024, "cuda": 16384 * 16384}

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
    0.44 with 2048; larger tiles leave the caches); 4096 on a GPU (unmeasured)."""
    if kind != "cpu":
        return 4096
    return 512 if max(num_anchors, num_candidates) <= 4096 else 1024


class EngineChoice(NamedTuple):
    """Which engine computes a batch: ``engine`` (``"materialised"``, ``"tiled"`` or
    ``"gathered"``), the tile side (``None`` unless tiled) and the reason (``"memory budget"``,
    ``"speed crossover (…)"``, ``"K-subsampled (…)"``, ``"forced"``, ``"below the speed crossover
    (…)"`` or ``"not supported by the tiled engine"``)."""

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

    ``auto``: the gathered engine (:mod:`hardneg.tiled.gathered`) for K-subsampled Uniform / Hard
    negatives when ``GATHER_CROSSOVER[device type] · K ≤ N`` and its (A, K) matrices fit
    ``memory_budget``; else the tiled engine when the materialised (A, N) matrices exceed
    ``memory_budget`` (:func:`materialised_bytes`; tile side from the budget,
    :func:`tile_for_budget`), or when ``A·N ≥ SPEED_CROSSOVER[device type]`` and the distribution
    is plain Uniform or Hard (the configurations measured faster tiled; a ``Subsample`` whose K is
    at least ``num_valid``, the most valid candidates an anchor can have, is the identity and
    counts as its base; others, e.g. OT, tile only by memory); else the materialised engine.
    ``materialised`` raises ``ValueError`` beyond the budget; ``tiled`` raises ``ValueError`` for
    what the tiled engine does not support (:func:`check_tileable`), ``gathered`` for what the
    gathered one does not (:func:`~hardneg.tiled.gathered.check_gatherable`). ``tile_size``
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
    plain = type(_identity_unwrapped(negatives, num_valid)) in (Uniform, Hard)
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
    """The gathered engine if ``negatives`` is K-subsampled Uniform / Hard with
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


def _identity_unwrapped(negatives: NegativeDistribution, num_valid: int | None) -> NegativeDistribution:
    """``negatives`` without an outermost :class:`~hardneg.negatives.Subsample` whose K is at
    least ``num_valid`` (such a draw keeps every valid candidate, or raises)."""
    if isinstance(negatives, Subsample) and num_valid is not None and negatives.num_negatives >= num_valid:
        return negatives.base
    return negatives


def check_tileable(negatives: NegativeDistribution, objective: Objective, *, budget: str = "") -> None:
    """Raise ``ValueError`` unless the tiled engine computes this distribution and objective."""
    base, _, _ = split_subsample(negatives)
    if isinstance(base, OptimalTransport):  # streamed Sinkhorn (hardneg.tiled.ot)
        check_ot_tileable(base, objective)
        return
    ok = isinstance(base, Uniform) or (
        isinstance(base, Hard) and not base.rescale and not base.detach_weights and base.target_ess is None
    )
    if not ok:
        raise ValueError(
            f"the tiled engine (batches beyond memory_budget{budget}) supports Uniform and Hard negatives "
            "(without rescale/detach_weights/target_ess) and OptimalTransport (hardneg.tiled.ot), "
            "optionally wrapped in CollisionFree/Subsample; "
            "got "
            f"negatives={negatives!r}. Raise memory_budget to materialise the score matrix"
        )
    if not getattr(objective, "row_reducible", False):
        raise ValueError(
            f"the tiled engine (batches beyond memory_budget{budget}) supports objectives that reduce "
            "row-wise (InfoNCE, Debiased, Logistic, LogisticMPair, Hinge, Triplet); "
            f"got objective={objective!r}. "
            "Raise memory_budget to materialise the score matrix"
        )


def tiled_loss(
    anchors: Tensor,
    positives: Tensor,
    candidates: Tensor,
    *,
    temperature: float,
    anchor_norms: Tensor,
    positive_norms: Tensor,
    candidate_norms: Tensor,
    excluded: Tensor,
    negatives: NegativeDistribution,
    objective: Objective,
    reduction: str = "mean",
    tile: int = 1024,
    mask: Tensor | None = None,
    anchor_labels: Tensor | None = None,
    candidate_labels: Tensor | None = None,
    diagnostics: bool = False,
    generator: torch.Generator | None = None,
    symmetric: bool = False,
    compiled: bool = False,
    validate: bool = True,
) -> LossOutput:
    """Steps 2–4 for prepared embeddings (normalised or not), never forming the (A, N) matrix.

    Shapes: ``anchors``, ``positives`` (A, d), ``candidates`` (N, d) — already in the compute
    dtype and normalised if asked; norms (A,), (A,), (N,) detached; ``excluded`` (A, E) int64
    candidate indices never valid for the anchor (−1 = none); ``mask`` optional (A, N) bool.
    ``symmetric=True`` says that the anchors are the candidates (SimCLR's 2B views, not gathered)
    and the exclusions pair up; the log-sum-exp then computes each tile pair once
    (:func:`~hardneg.tiled.symmetric.tiled_lse_symmetric`) unless K-subsampling breaks the symmetry.
    ``compiled=True`` fuses each tile's element-wise work with ``torch.compile``
    (:mod:`hardneg.tiled.compiled`; the first call compiles). ``validate=False`` skips the one
    host read that checks every anchor has a valid negative. The per-tile work reads no tensor
    value: the tiles' exponent floors and the shared-shift safety are decided once per call
    (:func:`~hardneg.tiled.lse.plan_tiles`).
    """
    check_tileable(negatives, objective)
    base, sub, collision_free = split_subsample(negatives)
    a_n, n_n = anchors.shape[0], candidates.shape[0]
    rule = TileMask(
        num_anchors=a_n,
        num_candidates=n_n,
        excluded=excluded,
        explicit=mask,
        anchor_labels=anchor_labels,
        candidate_labels=candidate_labels,
        collision_free=collision_free,
    )
    if sub is not None:
        seed = sub.draw_seed(generator, candidates.device)
        rule = rule.with_subsample(seed, sub.num_negatives, tile)
    if isinstance(base, OptimalTransport):
        return tiled_ot_loss(
            anchors, positives, candidates, negatives=base, objective=objective, rule=rule,
            temperature=temperature, anchor_norms=anchor_norms, positive_norms=positive_norms,
            candidate_norms=candidate_norms, reduction=reduction, tile=tile,
            anchor_labels=anchor_labels, candidate_labels=candidate_labels,
            diagnostics=diagnostics, validate=validate, source=repr(negatives),
        )
    beta = base.beta if isinstance(base, Hard) and base.beta >= torch.finfo(anchors.dtype).tiny else 0.0
    exponents: tuple[float, ...] = (1.0 + beta, beta) if beta > 0 else (1.0,)
    if diagnostics and beta > 0:
        exponents += (2.0 * beta,)
    at = anchors / temperature
    # log Σ e^{a_e s} = log Σ e^{(a_e / u) (u s)}: the streamed logits are u·s with u the smallest
    # exponent (β for hard negatives), so that exponent needs no scaling pass per tile and
    # 1 + β = kβ is the integer power k of it (the anchors are scaled once, O(A·d))
    unit = min(exponents) if 1e-3 <= min(exponents) != 1.0 else 1.0
    streamed = tuple(e / unit for e in exponents)
    if symmetric and rule.subsample_index is None and rule.explicit is None and rule.symmetric_labels:
        lse, counts = tiled_lse_symmetric(
            candidates, unit / temperature, streamed, rule, tile=tile, compiled=compiled
        )
    else:
        lse, counts = tiled_lse(
            at * unit if unit != 1.0 else at, candidates, streamed, rule, tile=tile, compiled=compiled
        )
    if validate:
        check_rows_nonempty(counts)
    n_valid = counts.to(anchors.dtype)
    lws = lse[:, 0] - lse[:, 1] + n_valid.log() if beta > 0 else lse[:, 0]
    positive = (at * positives).sum(dim=1)
    scores = Scores.streamed(
        positive,
        temperature=temperature,
        anchor_norms=anchor_norms,
        positive_norms=positive_norms,
        candidate_norms=candidate_norms,
        valid_counts=counts,
        anchor_labels=anchor_labels,
        candidate_labels=candidate_labels,
    )
    weighted = WeightedScores(
        scores,
        log_weights=None if beta == 0 else _no_weights,
        log_weighted_sum=lws,
        source=repr(negatives),
        mean_of=lambda ramp: tiled_row_mean(
            at, candidates, positive, beta=beta, ramp=ramp, rule=rule, tile=tile
        ),
        max_logit=lambda: (at * candidates[tiled_row_argmax(at, candidates, rule, tile=tile)]).sum(dim=1),
    )
    per_anchor = objective(weighted)
    diag: dict[str, float] = {}
    if diagnostics:
        with torch.no_grad():
            ess = (2 * lse[:, 1] - lse[:, 2]).exp() if beta > 0 else n_valid
            diag = {
                "num_negatives": float(n_valid.mean()),
                "ess": float(ess.mean()),
                "ess_fraction": float((ess / n_valid).mean()),
                "pos_cosine": float(positive_cosine(scores).mean()),
                "tiled": 1.0,
            }
            diag.update({str(k): float(v) for k, v in objective.diagnostics(weighted).items()})
        diag["loss"] = float(per_anchor.detach().mean())
    return LossOutput(loss=reduce(per_anchor, reduction), per_anchor=per_anchor, diagnostics=diag)


def _no_weights() -> Tensor:
    raise ValueError("the tiled engine never forms the (A, N) weights; use a row-reducible objective")


def materialised_bytes(num_anchors: int, num_candidates: int, dtype: torch.dtype) -> int:
    """Peak bytes the materialised engine needs for an (A, N) batch, roughly four matrices."""
    return 4 * num_anchors * num_candidates * torch.finfo(dtype).bits // 8 + num_anchors * num_candidates


def tile_for_budget(memory_budget: int, dtype: torch.dtype) -> int:
    """Side of a square tile whose working set (about eight tile-sized buffers) fits the budget,
    between 64 and 1024: beyond 1024 the element-wise passes over a tile leave the CPU caches, and
    a fwd+bwd at B = 8192 took 1.70 s with tiles of 1024 against 2.06 s with 2048 (2 threads)."""
    side = math.isqrt(max(1, memory_budget // (8 * torch.finfo(dtype).bits // 8)))
    return max(64, min(1024, side))
