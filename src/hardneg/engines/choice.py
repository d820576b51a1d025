"""The one chooser: which engine computes a batch, and why.

:func:`choose_engine` decides from the batch's shape, the one table of thresholds
(:data:`~hardneg._numerics.thresholds.THRESHOLDS`) and what the components declare, never from
their class: the negative distribution through the tiling protocol (:mod:`hardneg.negatives.tiling`:
``tile_weights()`` states an exponential tilt or a streamed Sinkhorn coupling, ``tile_refusal()``
says why not, ``per_anchor_weights`` admits the gathered engine), the objective through
``row_reducible`` and :meth:`~hardneg.objectives.Objective.row_form` (its closed form on the row
statistics). Its routes: the small-batch routes (:func:`small_route`, SimCLR's layout), the
materialised, tiled, gathered and fused engines. The :class:`EngineChoice` is what
:meth:`hardneg.ContrastiveLoss.engine_for` returns. The chooser imports the engines; no engine
imports it.
"""

from __future__ import annotations

from typing import NamedTuple

import torch

from hardneg._numerics.thresholds import THRESHOLDS
from hardneg.engines.gathered import check_gatherable
from hardneg.engines.materialised import hooked, materialised_bytes
from hardneg.engines.small import CROSS_ENTROPY, TILTED_DEBIASED, SmallRoute
from hardneg.engines.tiled.engine import check_tileable, speed_tile, tile_for_budget
from hardneg.engines.tiled.fused import fused_refusal, require_triton
from hardneg.negatives.base import NegativeDistribution
from hardneg.negatives.subsample import identity_unwrapped
from hardneg.objectives.base import Objective

__all__ = [
    "CROSS_ENTROPY",
    "ENGINES",
    "TILTED_DEBIASED",
    "EngineChoice",
    "SmallRoute",
    "choose_engine",
    "small_route",
]

ENGINES = ("auto", "materialised", "tiled", "gathered", "fused")

def small_route(
    negatives: NegativeDistribution, objective: Objective, dtype: torch.dtype = torch.float32
) -> SmallRoute | None:
    """The small-batch route of SimCLR's layout for these components, or ``None``: asked of the
    components, never of their class, at every call (a β schedule or a reassigned setting is seen
    at once).

    The distribution must state an exponential tilt itself (``tile_weights()`` returning
    ``TileWeights(tilt=β)``: not a mask wrapper, not a Sinkhorn coupling; its refusals, e.g.
    ``Hard(rescale=True)``, are its own) and the objective a row form
    (:meth:`~hardneg.objectives.Objective.row_form`): ``"nce"`` with β = 0 takes the
    cross-entropy route, ``"debiased"`` with τ⁺ > 0 the fused node of any β. Hooks on either
    module keep the general path (the routes do not call the modules).

    Args:
        negatives: the loss's negative distribution.
        objective: the loss's objective.
        dtype: the compute dtype (a |β| below its smallest normal number weighs uniformly).

    Shapes:
        none (settings only).

    References:
        Chen, Kornblith, Norouzi and Hinton, ICML 2020, eq. (1); Robinson, Chuang, Sra and
        Jegelka, ICLR 2021, eq. (3)–(4).

    Example:
        >>> from hardneg.negatives import Hard, Uniform
        >>> from hardneg.objectives import Debiased, InfoNCE
        >>> tuple(small_route(Uniform(), InfoNCE()))
        ('cross_entropy', 0.0, 0.0)
        >>> tuple(small_route(Hard(beta=1.0), Debiased(tau_plus=0.1)))
        ('tilted_debiased', 1.0, 0.1)
        >>> small_route(Hard(beta=1.0), InfoNCE()) is None  # hard InfoNCE: the general path
        True
    """
    weights = negatives.tile_weights()
    if weights is None or weights.sinkhorn is not None:
        return None
    form = objective.row_form()
    if form is None or hooked(negatives) or hooked(objective):
        return None
    beta = weights.effective_tilt(dtype)
    if form.kind == "nce" and beta == 0.0:
        return SmallRoute(CROSS_ENTROPY, 0.0, 0.0)
    if form.kind == "debiased" and form.tau_plus > 0.0:
        return SmallRoute(TILTED_DEBIASED, beta, form.tau_plus)
    return None


def _small_choice(
    num_anchors: int,
    dtype: torch.dtype,
    kind: str,
    negatives: NegativeDistribution,
    objective: Objective,
    *,
    auto: bool,
) -> EngineChoice | None:
    """``EngineChoice("small", …)`` when SimCLR's layout of ``num_anchors`` views takes a small route."""
    b = num_anchors // 2
    entries = num_anchors * num_anchors
    if b < 2 or entries > THRESHOLDS.small_max:
        return None
    if auto and entries >= THRESHOLDS.crossover("speed", kind):
        return None
    route = small_route(negatives, objective, dtype)
    if route is None or entries > route.max_entries:
        return None
    return EngineChoice("small", None, f"small batch ({route.name}: 4B² ≤ {route.max_entries})")


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
    two_views: bool = False,
) -> EngineChoice:
    """The engine (and tile side) for an (A, N) batch; see ``ContrastiveLoss.engine_for``.

    ``two_views``: SimCLR's layout of B = A/2 views per side (A = N, one process, no labels, no
    diagnostics, normalised views): the small-batch route (:func:`small_route`,
    :mod:`hardneg.engines.small`) is considered first, for ``"auto"`` and ``"materialised"``,
    within the memory budget and below the speed crossover.

    ``auto``: the gathered engine (:mod:`hardneg.engines.gathered`) for K-subsampled negatives with
    per-anchor weights (``per_anchor_weights``: Uniform, Hard) when
    ``THRESHOLDS.gather_crossover[device type] · K ≤ N`` and its (A, K) matrices fit ``memory_budget``;
    else the tiled engine when the materialised (A, N) matrices exceed ``memory_budget``
    (:func:`materialised_bytes`; tile side from the budget, :func:`tile_for_budget`), or when
    ``A·N ≥ THRESHOLDS.speed_crossover[device type]`` and the distribution itself states an exponential
    tilt (``tile_weights()``: Uniform, Hard — the configurations measured faster tiled; a
    ``Subsample`` whose K is at least ``num_valid``, the most valid candidates an anchor can
    have, is the identity and counts as its base; wrappers and OT's Sinkhorn tile only by
    memory); else the materialised engine.
    ``materialised`` raises ``ValueError`` beyond the budget; ``tiled`` raises ``ValueError`` for
    what the tiled engine does not support (:func:`check_tileable`), ``gathered`` for what the
    gathered one does not (:func:`~hardneg.engines.gathered.check_gatherable`). ``fused`` (opt-in;
    ``auto`` never picks it: :mod:`hardneg.engines.tiled.fused`) raises as ``tiled`` does, and
    ``ModuleNotFoundError`` without triton; what its kernel does not express falls back to the
    gathered engine (K-subsampled, as ``auto`` would) or the tiled one, the reason saying why
    (:func:`~hardneg.engines.tiled.fused.fused_refusal`). ``tile_size``
    overrides every tile side. Shapes: A anchors × N candidates; the materialised engine holds
    about four (A, N) matrices (:func:`materialised_bytes`), the tiled one (online softmax,
    Milakov & Gimelshein, arXiv:1805.02867, 2018; tiled as in Inf-CL, Cheng et al.,
    arXiv:2410.17243, 2024) a few tile² buffers, the gathered one about four (A, K) matrices.
    """
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {ENGINES}, got {engine!r}")
    kind = torch.device(device).type
    over = materialised_bytes(num_anchors, num_candidates, dtype) > memory_budget
    if two_views and engine in ("auto", "materialised") and not over and num_anchors == num_candidates:
        small = _small_choice(num_anchors, dtype, kind, negatives, objective, auto=engine == "auto")
        if small is not None:
            return small
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
    crossover = THRESHOLDS.crossover("speed", kind)
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
    ``THRESHOLDS.gather_crossover · K ≤ N`` and (A, K) matrices within the budget, else ``None``."""
    try:
        _, sub, _ = check_gatherable(negatives)
    except ValueError:
        return None
    ratio = THRESHOLDS.crossover("gather", kind)
    k = sub.num_negatives
    if ratio * k > num_candidates or materialised_bytes(num_anchors, k, dtype) > memory_budget:
        return None
    return EngineChoice(
        "gathered", None, f"K-subsampled ({ratio}·K ≤ N on {kind}: only the A·K drawn logits)"
    )


