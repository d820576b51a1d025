"""The engines behind :class:`~hardneg.ContrastiveLoss`: its settings prepared once, one entry per layout.

:class:`PreparedLoss` is a loss's settings (temperature, negatives, objective, engine choice,
gathering), validated by :class:`~hardneg.ContrastiveLoss` and passed whole to the engines. Each
layout has one function that gathers candidates across processes when asked, asks
:meth:`PreparedLoss.engine_for` which engine computes the batch
(:func:`hardneg.engines.choice.choose_engine`) and runs it:

- the **materialised** engine: :class:`~hardneg.scores.Scores` with the (A, N) logits, then
  :func:`~hardneg.functional.loss_from_scores` (every distribution and objective);
- the **tiled** engine (:func:`hardneg.engines.tiled.engine.tiled_loss`): the same values and gradients
  without the (A, N) matrix, for the distributions that state their weights per tile
  (:mod:`hardneg.negatives.tiling`) and the row-reducible objectives;
- the **gathered** engine (:func:`hardneg.engines.gathered.gathered_loss`): only the A·K logits of
  K-subsampled negatives;
- the **fused** engine (opt-in): the tiled engine with its log-sum-exps by one Triton kernel
  (:mod:`hardneg.engines.tiled.fused`).

:func:`two_view_loss` is SimCLR's layout, :func:`pair_loss` given positives and a candidate pool,
:func:`multi_positive_loss` several positives per anchor (materialised only).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch
from torch import Tensor

from hardneg import distributed
from hardneg._numerics.thresholds import THRESHOLDS
from hardneg.engines.choice import choose_engine, small_route
from hardneg.engines.materialised import loss_from_scores, materialised_bytes
from hardneg.engines.small import small_simclr_loss
from hardneg.negatives.base import NegativeDistribution
from hardneg.objectives.base import Objective
from hardneg.reduction import LossOutput
from hardneg.scores import (
    Scores,
    check_two_views,
    compute_dtype,
    multi_positive_scores,
    pair_scores,
    prepare_pair,
    simclr_scores,
)
from hardneg.scores.layouts import simclr_layout

if TYPE_CHECKING:
    from hardneg.engines.choice import EngineChoice

__all__ = [
    "DEFAULT_MEMORY_BUDGET",
    "PreparedLoss",
    "full_precision",
    "multi_positive_loss",
    "pair_loss",
    "two_view_loss",
]

DEFAULT_MEMORY_BUDGET = THRESHOLDS.default_memory_budget  # the table's value, named for the public API


def full_precision(like: Tensor) -> contextlib.AbstractContextManager[object]:
    """Mixed precision off inside the loss: under ``torch.autocast`` the similarity matmuls would
    run in bf16 / fp16 (autocast recasts them whatever their inputs), and every exponent after them
    would carry a 1e-2 error at t = 0.1. The embeddings are upcast to float32 by
    :func:`~hardneg.scores.compute_dtype` and every operation of the loss, in every engine, runs in
    float32; the gradient flows back to the half-precision embeddings as usual.

    Args:
        like: a tensor on the device whose autocast state is switched off (the embeddings).

    Shapes:
        ``like``: any shape; only its device is read.

    References:
        Micikevicius et al., "Mixed Precision Training", ICLR 2018, §3.3 (reductions and
        exponentials kept in float32); fp16's 10-bit mantissa (IEEE 754-2008) gives the 1e-2 error.

    Example:
        >>> z = torch.randn(2, 3)
        >>> with torch.autocast("cpu", dtype=torch.bfloat16):
        ...     with full_precision(z):
        ...         (z @ z.T).dtype
        torch.float32
    """
    device = like.device.type if isinstance(like, Tensor) else None  # a bad input: validated later
    if device is not None and torch.is_autocast_enabled(device):
        return torch.autocast(device_type=device, enabled=False)
    return contextlib.nullcontext()


@dataclass(frozen=True, eq=False)
class PreparedLoss:
    """A loss's settings as the engines read them, validated once by :class:`~hardneg.ContrastiveLoss`.

    The settings mean what :class:`~hardneg.ContrastiveLoss`'s arguments of the same names mean.

    Args:
        temperature: t; logits are ``⟨a, c⟩ / t``.
        normalize: L2-normalise the embeddings first.
        reduction: ``"mean"``, ``"sum"`` or ``"none"``.
        negatives: the distribution, already wrapped in ``CollisionFree`` / ``Subsample`` as asked.
        objective: the objective, already resolved from ``tau_plus``.
        validate: check the inputs' values in one host read per call.
        engine: ``"auto"``, ``"materialised"``, ``"tiled"``, ``"gathered"`` or ``"fused"``.
        memory_budget: bytes the (A, N) score matrices may take.
        tile_size: the tile side, or ``None`` to derive it from ``memory_budget``.
        compile_tiles: fuse the tiled engine's per-tile work with ``torch.compile``.
        collision_free: labels are required in every call.
        gather_distributed: gather the candidates of all ranks when a process group is active.
        process_group: the ``torch.distributed`` group (``None``: the default one).

    Shapes:
        :meth:`scores` takes ``z1``, ``z2`` (B, d) and ``labels`` (B,) → :class:`Scores` of
        (2B, 2B); :meth:`compute` takes :class:`Scores` of (A, N) → per-anchor losses (A,).

    References:
        Chen, Kornblith, Norouzi and Hinton, "A Simple Framework for Contrastive Learning of
        Visual Representations", ICML 2020, eq. (1) (NT-Xent, the default settings); Robinson,
        Chuang, Sra and Jegelka, ICLR 2021, eq. (4) (hard negatives with ``tau_plus``).

    Example:
        >>> from hardneg import ContrastiveLoss
        >>> p = ContrastiveLoss(temperature=0.5).prepared
        >>> p.temperature, p.reduction, type(p.objective).__name__
        (0.5, 'mean', 'InfoNCE')
        >>> p.compute(p.scores(torch.randn(4, 3), torch.randn(4, 3))).per_anchor.shape
        torch.Size([8])
    """

    temperature: float
    normalize: bool
    reduction: str
    negatives: NegativeDistribution
    objective: Objective
    validate: bool = True
    engine: str = "auto"
    memory_budget: int = DEFAULT_MEMORY_BUDGET
    tile_size: int | None = None
    compile_tiles: bool = False
    collision_free: bool = False
    gather_distributed: bool = False
    process_group: object | None = None

    def check_labels_given(self, labels: object, name: str = "labels") -> None:
        """``ValueError`` when collision-free negatives lack their labels."""
        if self.collision_free and labels is None:
            raise ValueError(
                f"collision_free=True needs {name}: pass integer labels to the call, got {name}=None"
            )

    def gathers(self) -> bool:
        """Whether this call gathers candidates across the ranks of ``process_group`` (a call
        that could but does not warns once per process: :func:`hardneg.distributed.warn_local_negatives`)."""
        if self.gather_distributed:
            return distributed.is_distributed(self.process_group)
        distributed.warn_local_negatives(self.process_group)
        return False

    def surely_materialised(
        self, num_anchors: int, num_candidates: int, dtype: torch.dtype, device: torch.device
    ) -> bool:
        """Whether :meth:`engine_for` picks the materialised engine for an (A, N) batch whatever the
        distribution's mutable settings: ``engine`` forced or ``"auto"`` without an outermost
        ``Subsample`` (the gathered engine's condition), within ``memory_budget`` and, for
        ``"auto"``, below the speed crossover (the tiled engine's). Depends only on the shape and
        these frozen settings, so it is decided once per (A, N, dtype, device) and cached: the
        per-call path skips :func:`~hardneg.engines.choice.choose_engine`."""
        cache: dict[tuple[object, ...], bool] = self.__dict__.setdefault("_materialised", {})
        key = (num_anchors, num_candidates, dtype, device)
        known = cache.get(key)
        if known is None:
            from hardneg.negatives.subsample import Subsample

            kind = torch.device(device).type
            fits = materialised_bytes(num_anchors, num_candidates, compute_dtype(dtype)) <= self.memory_budget
            below = num_anchors * num_candidates < THRESHOLDS.crossover("speed", kind)
            auto = self.engine == "auto" and below and not isinstance(self.negatives, Subsample)
            known = fits and (self.engine == "materialised" or auto)
            if len(cache) < 64:  # a handful of shapes in practice
                cache[key] = known
        return known

    def engine_for(
        self,
        num_anchors: int,
        num_candidates: int,
        dtype: torch.dtype = torch.float32,
        device: str | torch.device = "cpu",
        *,
        num_valid: int | None = None,
        two_views: bool = False,
    ) -> EngineChoice:
        """:func:`hardneg.engines.choice.choose_engine` with these settings (half precision counts as
        float32, the dtype it is computed in)."""
        return choose_engine(
            int(num_anchors),
            int(num_candidates),
            compute_dtype(dtype),
            device,
            negatives=self.negatives,
            objective=self.objective,
            memory_budget=self.memory_budget,
            tile_size=self.tile_size,
            engine=self.engine,
            num_valid=num_valid,
            two_views=two_views,
        )

    def scores(self, z1: Tensor, z2: Tensor, labels: Tensor | None = None) -> Scores:
        """Step 1 in SimCLR's 2B-view layout (candidates gathered from all ranks when asked)."""
        self.check_labels_given(labels)
        with full_precision(z1):
            if self.gathers():
                return distributed.gathered_simclr_scores(
                    z1, z2, temperature=self.temperature, normalize=self.normalize, labels=labels,
                    group=self.process_group,
                )
            return simclr_scores(
                z1, z2, temperature=self.temperature, normalize=self.normalize, labels=labels,
                validate=self.validate,
            )

    def compute(
        self, scores: Scores, *, diagnostics: bool = False, generator: torch.Generator | None = None
    ) -> LossOutput:
        """Steps 2–4 on precomputed :class:`~hardneg.scores.Scores` (the materialised engine)."""
        with full_precision(scores.logits):
            return loss_from_scores(
                scores,
                negatives=self.negatives,
                objective=self.objective,
                reduction=self.reduction,
                diagnostics=diagnostics,
                generator=generator,
                validate=self.validate,
            )


def _streamed(
    p: PreparedLoss,
    anchors: Tensor,
    positives: Tensor,
    candidates: Tensor,
    *,
    tile: int | None,
    excluded: Tensor,
    mask: Tensor | None = None,
    anchor_labels: Tensor | None = None,
    candidate_labels: Tensor | None = None,
    diagnostics: bool,
    generator: torch.Generator | None,
    symmetric: bool = False,
    positive_roll: int = 0,
    report: list[tuple[str, Tensor]] | None = None,
    candidates_normalized: bool = False,
    fused: bool = False,
) -> LossOutput:
    """The tiled engine (``tile`` given; its log-sum-exps by the fused kernel with ``fused``) or the
    gathered one (``tile=None``) on prepared inputs;
    ``positive_roll`` ≠ 0: the positives are the prepared anchors rolled by that many rows
    (SimCLR's partner views, prepared once); ``candidates_normalized``: unit candidates, not
    normalised again (:func:`~hardneg.scores.prepare_pair`). Shapes: anchors, positives (A, d);
    candidates (N, d);
    ``excluded`` (A, E) int64 (−1 = none); ``mask`` (A, N) bool; labels (A,), (N,)."""
    from hardneg.engines.gathered import gathered_loss
    from hardneg.engines.tiled.engine import tiled_loss

    pp = prepare_pair(
        anchors, positives, candidates, temperature=p.temperature, mask=mask, normalize=p.normalize,
        anchor_labels=anchor_labels, candidate_labels=candidate_labels, validate=p.validate,
        report=report, candidates_normalized=candidates_normalized,
    )
    positives, positive_norms = pp.positives, pp.positive_norms
    if positive_roll:
        positives, positive_norms = positives.roll(positive_roll, 0), positive_norms.roll(positive_roll, 0)
    prepared = (pp.anchors, positives, pp.candidates)
    common: dict[str, Any] = dict(  # the arguments both engines take
        temperature=pp.temperature,
        anchor_norms=pp.anchor_norms,
        positive_norms=positive_norms,
        candidate_norms=pp.candidate_norms,
        excluded=excluded,
        negatives=p.negatives,
        objective=p.objective,
        reduction=p.reduction,
        mask=pp.mask,
        anchor_labels=pp.anchor_labels,
        candidate_labels=pp.candidate_labels,
        diagnostics=diagnostics,
        generator=generator,
    )
    if tile is None:
        return gathered_loss(*prepared, **common)
    return tiled_loss(
        *prepared, tile=tile, symmetric=symmetric, compiled=p.compile_tiles, validate=p.validate,
        fused=fused, **common,
    )


def two_view_loss(
    p: PreparedLoss,
    z1: Tensor,
    z2: Tensor,
    labels: Tensor | None,
    generator: torch.Generator | None,
    diagnostics: bool,
) -> LossOutput:
    """SimCLR's layout (Chen et al., ICML 2020): 2B views, each view's partner its positive, the
    other 2B − 2 views (of all ranks when gathering) its candidates; materialised, tiled or
    gathered as :meth:`PreparedLoss.engine_for` chooses.

    Args:
        p: the prepared settings (:attr:`hardneg.ContrastiveLoss.prepared`).
        z1: the first views.
        z2: the second views, row-aligned with ``z1``.
        labels: optional integer labels shared by both views (``< 0``: unknown).
        generator: the randomness of random distributions (K-subsampling), or ``None``.
        diagnostics: fill the :class:`~hardneg.reduction.LossOutput`'s diagnostics.

    Shapes:
        ``z1``, ``z2`` (B, d); ``labels`` (B,) → a :class:`~hardneg.reduction.LossOutput` with
        per-anchor losses (2B,) and the loss reduced by ``p.reduction``.

    References:
        Chen, Kornblith, Norouzi and Hinton, ICML 2020, eq. (1) and Algorithm 1 (NT-Xent over 2B
        views); tiled engine: the online softmax normaliser of Milakov and Gimelshein,
        arXiv:1805.02867, 2018, Algorithm 3.

    Example:
        >>> from hardneg import ContrastiveLoss
        >>> p = ContrastiveLoss(temperature=0.5).prepared
        >>> out = two_view_loss(p, torch.randn(4, 3), torch.randn(4, 3), None, None, diagnostics=False)
        >>> out.loss.shape, out.per_anchor.shape
        (torch.Size([]), torch.Size([8]))
    """
    p.check_labels_given(labels)
    b = check_two_views(z1, z2, check_finite=False)  # finiteness: in the one host read
    gathered = p.gathers()
    world = distributed.world_size(p.process_group) if gathered else 1
    n = 2 * b * world
    fast = p.surely_materialised(2 * b, n, z1.dtype, z1.device)
    if (
        fast and not gathered and 4 * b * b <= THRESHOLDS.small_max and labels is None and not diagnostics
        and p.normalize and not torch.compiler.is_compiling()
    ):  # a small batch of the two common settings: the same operators without the structures
        same = z1.dtype == z2.dtype  # (torch.promote_types is itself a dispatched operator)
        dtype = compute_dtype(z1.dtype if same else torch.promote_types(z1.dtype, z2.dtype))
        route = small_route(p.negatives, p.objective, dtype)
        if route is not None:
            out = small_simclr_loss(
                z1, z2, b, route, dtype=dtype, temperature=p.temperature, validate=p.validate,
                reduction=p.reduction,
            )
            if out is not None:
                return out
    choice = None if fast else p.engine_for(2 * b, n, z1.dtype, z1.device, num_valid=n - 2)
    if choice is None or choice.engine == "materialised":
        if gathered:
            return p.compute(p.scores(z1, z2, labels), diagnostics=diagnostics, generator=generator)
        # the local layout straight to the engine: the checks above are not made twice
        scores = simclr_layout(
            z1, z2, b, temperature=p.temperature, normalize=p.normalize, labels=labels, validate=p.validate
        )
        return loss_from_scores(
            scores, negatives=p.negatives, objective=p.objective, reduction=p.reduction,
            diagnostics=diagnostics, generator=generator, validate=p.validate,
        )
    if b < 2 and world == 1:
        raise ValueError(f"batch size B (z1.shape[0]) must be >= 2 to have negatives, got {b}")
    v = torch.cat([z1, z2], dim=0)
    rank = distributed.rank(p.process_group) if gathered else 0
    idx = torch.arange(2 * b, device=v.device)
    excluded = torch.stack([rank * 2 * b + idx, rank * 2 * b + (idx + b) % (2 * b)], dim=1)
    view_labels = None if labels is None else torch.cat([labels, labels]).to(v.device)
    candidates, cand_labels = v, view_labels
    if gathered:
        distributed.check_equal_sizes("the views z1, z2", z1, p.process_group)
        candidates = distributed.all_gather_with_grad(v, group=p.process_group)
        cand_labels = (
            None
            if view_labels is None
            else distributed.all_gather_no_grad(view_labels, group=p.process_group)
        )
    return _streamed(
        p,
        v,
        v,  # rolled by b once prepared: each view's partner
        candidates,
        tile=choice.tile,
        excluded=excluded,
        anchor_labels=view_labels,
        candidate_labels=cand_labels,
        diagnostics=diagnostics,
        generator=generator,
        symmetric=not gathered,
        positive_roll=b,
        report=[("z1", z1), ("z2", z2)],
        fused=choice.engine == "fused",
    )


def pair_loss(
    p: PreparedLoss,
    anchors: Tensor,
    positives: Tensor,
    candidates: Tensor,
    *,
    mask: Tensor | None,
    anchor_labels: Tensor | None,
    candidate_labels: Tensor | None,
    generator: torch.Generator | None,
    diagnostics: bool,
    gather: bool = True,
    candidates_normalized: bool = False,
) -> LossOutput:
    """The pair layout (:func:`~hardneg.scores.pair_scores`), materialised, tiled or gathered as
    :meth:`PreparedLoss.engine_for` chooses; with ``gather`` (and ``gather_distributed``) the
    candidates, their labels and the mask are gathered.

    Args:
        p: the prepared settings (:attr:`hardneg.ContrastiveLoss.prepared`).
        anchors: the anchors.
        positives: each anchor's positive, row-aligned.
        candidates: the candidate pool (the negatives where ``mask`` allows).
        mask: optional bool mask, True = valid negative (default: all valid).
        anchor_labels: optional integer labels of the anchors.
        candidate_labels: optional integer labels of the candidates.
        generator: the randomness of random distributions (K-subsampling), or ``None``.
        diagnostics: fill the :class:`~hardneg.reduction.LossOutput`'s diagnostics.
        gather: gather the candidates across ranks when ``p.gather_distributed`` (``False``: a
            pool already shared by every rank, as MoCo's queue).
        candidates_normalized: the candidates are unit rows already (a queue's keys; ignored
            when gathered): not normalised again (:func:`~hardneg.scores.prepare_pair`).

    Shapes:
        ``anchors``, ``positives`` (A, d); ``candidates`` (N, d); ``mask`` (A, N) bool; labels (A,)
        and (N,) → a :class:`~hardneg.reduction.LossOutput` with per-anchor losses (A,).

    References:
        Oord, Li and Vinyals, "Representation Learning with Contrastive Predictive Coding",
        arXiv:1807.03748, 2018, eq. (4) (InfoNCE over a candidate set); He et al., CVPR 2020,
        eq. (1) (a queue of candidates).

    Example:
        >>> from hardneg import ContrastiveLoss
        >>> p = ContrastiveLoss(temperature=0.5).prepared
        >>> a, c = torch.randn(3, 4), torch.randn(5, 4)
        >>> out = pair_loss(p, a, a + 0.1, c, mask=None, anchor_labels=None, candidate_labels=None,
        ...                 generator=None, diagnostics=False)
        >>> out.per_anchor.shape
        torch.Size([3])
    """
    p.check_labels_given(anchor_labels, "anchor_labels")
    p.check_labels_given(candidate_labels, "candidate_labels")
    if gather and p.gathers() and isinstance(candidates, Tensor):
        group = p.process_group
        distributed.check_equal_sizes("the candidates", candidates, group)
        if mask is not None and isinstance(mask, Tensor) and mask.dim() == 2:
            mask = distributed.local_block(mask, fill=True, group=group)
        if candidate_labels is not None and isinstance(candidate_labels, Tensor):
            candidate_labels = distributed.all_gather_no_grad(candidate_labels, group=group)
        candidates = distributed.all_gather_with_grad(candidates, group=group)
        candidates_normalized = False
    shape = (
        (int(anchors.shape[0]), int(candidates.shape[0]))
        if anchors.dim() == 2 and isinstance(candidates, Tensor) and candidates.dim() == 2
        else None
    )
    choice = (
        p.engine_for(*shape, anchors.dtype, anchors.device)
        if shape is not None and not p.surely_materialised(*shape, anchors.dtype, anchors.device)
        else None
    )
    if choice is not None and choice.engine != "materialised":
        excluded = torch.full((anchors.shape[0], 1), -1, dtype=torch.int64, device=anchors.device)
        return _streamed(
            p, anchors, positives, candidates, tile=choice.tile, excluded=excluded, mask=mask,
            anchor_labels=anchor_labels, candidate_labels=candidate_labels, diagnostics=diagnostics,
            generator=generator, candidates_normalized=candidates_normalized,
            fused=choice.engine == "fused",
        )
    scores = pair_scores(
        anchors, positives, candidates, temperature=p.temperature, mask=mask, normalize=p.normalize,
        anchor_labels=anchor_labels, candidate_labels=candidate_labels, validate=p.validate,
        candidates_normalized=candidates_normalized,
    )
    return p.compute(scores, diagnostics=diagnostics, generator=generator)


def multi_positive_loss(
    p: PreparedLoss,
    anchors: Tensor,
    candidates: Tensor,
    positive_mask: Tensor,
    *,
    exclude: Tensor | None,
    generator: torch.Generator | None,
    diagnostics: bool,
) -> LossOutput:
    """Several positives per anchor among one candidate pool
    (:func:`~hardneg.scores.multi_positive_scores`), materialised; with ``gather_distributed`` the
    candidates of all ranks.

    Args:
        p: the prepared settings (:attr:`hardneg.ContrastiveLoss.prepared`).
        anchors: the anchors.
        candidates: the candidate pool.
        positive_mask: True where a candidate is one of the anchor's positives (≥ 1 per row).
        exclude: optional bool mask of candidates that are neither positive nor negative.
        generator: the randomness of random distributions (K-subsampling), or ``None``.
        diagnostics: fill the :class:`~hardneg.reduction.LossOutput`'s diagnostics.

    Shapes:
        ``anchors`` (A, d), ``candidates`` (N, d), ``positive_mask`` and ``exclude`` (A, N) bool →
        a :class:`~hardneg.reduction.LossOutput` with per-anchor losses (A,).

    References:
        Robinson, Chuang, Sra and Jegelka, ICLR 2021, §3 (the estimator with M positives);
        Logeswaran and Lee, "An efficient framework for learning sentence representations",
        ICLR 2018 (quick-thoughts' neighbouring sentences as positives).

    Example:
        >>> from hardneg import ContrastiveLoss
        >>> p = ContrastiveLoss(temperature=0.5).prepared
        >>> x = torch.randn(4, 3)
        >>> pos = torch.eye(4, dtype=torch.bool).roll(1, dims=1)
        >>> out = multi_positive_loss(p, x, x, pos, exclude=torch.eye(4, dtype=torch.bool),
        ...                           generator=None, diagnostics=False)
        >>> out.per_anchor.shape
        torch.Size([4])
    """
    if p.collision_free:
        raise ValueError("collision_free needs labels; multi_positive takes none")
    if p.gathers() and isinstance(candidates, Tensor):
        group = p.process_group
        distributed.check_equal_sizes("the candidates", candidates, group)
        if isinstance(positive_mask, Tensor) and positive_mask.dim() == 2:
            positive_mask = distributed.local_block(positive_mask, fill=False, group=group)
        if isinstance(exclude, Tensor) and exclude.dim() == 2:
            exclude = distributed.local_block(exclude, fill=False, group=group)
        candidates = distributed.all_gather_with_grad(candidates, group=group)
    with full_precision(anchors):
        scores = multi_positive_scores(
            anchors, candidates, positive_mask, temperature=p.temperature, exclude=exclude,
            normalize=p.normalize,
        )
        return p.compute(scores, diagnostics=diagnostics, generator=generator)
