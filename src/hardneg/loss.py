"""``ContrastiveLoss``: the public ``nn.Module`` (scores → negatives → objective → reduction).

>>> import torch
>>> from hardneg import ContrastiveLoss, negatives
>>> loss_fn = ContrastiveLoss(temperature=0.5, tau_plus=0.1, negatives=negatives.Hard(beta=1.0))
>>> z1, z2 = torch.randn(16, 32), torch.randn(16, 32)
>>> loss = loss_fn(z1, z2)                     # two views, (B, d) each -> scalar
>>> out = loss_fn(z1, z2, details=True)        # per-anchor losses and diagnostics
>>> out.per_anchor.shape, sorted(out.diagnostics)[:3]
(torch.Size([32]), ['clamp_fraction', 'ess', 'ess_fraction'])

One method per layout of the scores, each returning the loss, or a :class:`LossOutput` with
``details=True``: :meth:`ContrastiveLoss.forward` (SimCLR's two views), :meth:`~ContrastiveLoss.pair`
(given positives, a separate candidate pool), :meth:`~ContrastiveLoss.multi_positive` (several
positives per anchor); :meth:`~ContrastiveLoss.compute` on precomputed :class:`Scores` is the
low-level entry. MoCo's queue is a wrapper that owns its enqueue, :class:`hardneg.queue.QueueLoss`.
The names of 0.1 (``detailed``, ``pair_forward``, ``pair_detailed``, ``multi_positive_detailed``,
``queue_forward``, ``queue_detailed``) still work and warn (``DeprecationWarning``); they are
removed in 0.3.
"""

from __future__ import annotations

import contextlib
import warnings
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Literal, overload

import torch
from torch import Tensor, nn

from hardneg import distributed
from hardneg._validation import check_in_interval, check_temperature
from hardneg.functional import loss_from_scores, resolve_objective
from hardneg.negatives.base import NegativeDistribution
from hardneg.negatives.oracle import CollisionFree
from hardneg.negatives.subsample import Subsample
from hardneg.negatives.uniform import Uniform
from hardneg.objectives.base import Objective
from hardneg.reduction import LossOutput, check_reduction
from hardneg.scores import Scores, check_two_views, compute_dtype, pair_scores, prepare_pair, simclr_scores

if TYPE_CHECKING:
    from hardneg.queue import MemoryQueue
    from hardneg.tiled.engine import EngineChoice

__all__ = ["DEFAULT_MEMORY_BUDGET", "ContrastiveLoss"]

DEFAULT_MEMORY_BUDGET = 4 << 30  # bytes: the (A, N) matrices of the materialised engine at ~B = 8000
REMOVED_IN = "0.3"  # the release that drops the deprecated names of 0.1


def _deprecated(old: str, new: str) -> None:
    """Warn that ``ContrastiveLoss.<old>`` is deprecated in favour of ``new`` (at the caller's line)."""
    warnings.warn(
        f"ContrastiveLoss.{old} is deprecated; use {new} — removed in {REMOVED_IN}",
        DeprecationWarning,
        stacklevel=3,
    )


def full_precision(like: Tensor) -> contextlib.AbstractContextManager[object]:
    """Mixed precision off inside the loss: under ``torch.autocast`` the similarity matmuls would
    run in bf16 / fp16 (autocast recasts them whatever their inputs), and every exponent after them
    would carry a 1e-2 error at t = 0.1. The embeddings are upcast to float32 by
    :func:`~hardneg.scores.compute_dtype` and every operation of the loss, in both engines, runs in
    float32; the gradient flows back to the half-precision embeddings as usual.
    """
    device = like.device.type if isinstance(like, Tensor) else None  # a bad input: validated later
    if device is not None and torch.is_autocast_enabled(device):
        return torch.autocast(device_type=device, enabled=False)
    return contextlib.nullcontext()


class ContrastiveLoss(nn.Module):
    """Contrastive loss with a controllable negative distribution.

    ``ContrastiveLoss(temperature=0.5)`` is SimCLR's NT-Xent; ``tau_plus > 0`` is the debiased
    loss (Chuang et al., NeurIPS 2020); ``negatives=Hard(beta)`` with ``tau_plus`` is the hard-negative
    objective of Robinson et al. (ICLR 2021), eq. (4).

    K-subsampling and collision-free negatives are wrapped around ``negatives`` here and only
    here (:class:`~hardneg.negatives.CollisionFree` inside :class:`~hardneg.negatives.Subsample`).
    Every call accepts ``generator=``: the only source of randomness of random distributions
    (K-subsampling), so a training loop that passes a per-step generator is reproducible.

    Args:
        temperature: t ∈ [1e-4, 1e4]; logits are ``⟨a, c⟩ / t``.
        tau_plus: class prior τ⁺ ∈ [0, 1) of the debiased estimator (ignored if ``objective``
            is given — pass it to the objective instead).
        negatives: a :class:`~hardneg.negatives.NegativeDistribution` (default uniform).
        objective: an :class:`~hardneg.objectives.Objective` (default: InfoNCE when
            ``tau_plus == 0``, else :class:`~hardneg.objectives.Debiased`).
        normalize: L2-normalise embeddings first (SimCLR). ``False`` for unnormalised
            embeddings (graphs, sentences), typically with ``Hard(rescale=True)``.
        reduction: ``"mean"``, ``"sum"`` or ``"none"``.
        num_negatives: K — keep K negatives per anchor, drawn uniformly without replacement from
            its valid candidates, independently per anchor (Ash et al., AISTATS 2022, §4): wraps
            ``negatives`` in :class:`~hardneg.negatives.Subsample`. ``None`` keeps all.
        collision_free: drop candidates sharing the anchor's label (oracle negatives, wraps in
            :class:`~hardneg.negatives.CollisionFree`; applied before the K-subsampling). Needs
            ``labels`` in every call.
        memory_budget: bytes the (A, N) score matrices may take (default 4 GiB, about B = 8000 in
            SimCLR's layout). Beyond it the loss is computed by the tiled engine (and from the
            speed crossover on, see ``engine``)
            (:mod:`hardneg.tiled`: memory O((A + N)·d + tile²), the same values and gradients),
            with the tile side derived from the budget; ``0`` always tiles. The tiled engine
            supports Uniform/Hard negatives (wrapped in CollisionFree/Subsample) with the
            row-reducible objectives (InfoNCE, Debiased, Logistic, LogisticMPair).
        tile_size: override the tile side derived from ``memory_budget``.
        compile_tiles: fuse the tiled engine's element-wise work per tile with ``torch.compile``
            (:mod:`hardneg.tiled.compiled`); the first call compiles for tens of seconds (a C++
            compiler is needed on a CPU). Off by default: on a 2-core CPU the matrix products
            dominate and it gave no consistent speed-up.
        gather_distributed: when a ``torch.distributed`` process group with more than one
            process is active, use the candidates of all ranks (with gradients) in every layout
            (two views, :meth:`pair`, :meth:`multi_positive`, both engines); the reduction is over
            this rank's anchors, so that DDP's gradient averaging gives exactly the
            single-process gradient with ``reduction="mean"`` (see :mod:`hardneg.distributed`).
            Off by default (since 0.2; as in lightly and sentence-transformers): embeddings
            already gathered by the training loop must not be gathered twice.
        process_group: the ``torch.distributed`` process group to gather over (``None``: the
            default group).
        engine: ``"auto"`` (default): the faster engine within ``memory_budget`` — tiled beyond
            the budget, and for plain Uniform/Hard negatives also from a measured speed crossover
            on (on a CPU from B = 512 in SimCLR's layout); ``"materialised"`` (``ValueError``
            beyond the budget) or ``"tiled"`` to force one. :meth:`engine_for` says which engine
            a batch gets and why.
        validate: check the inputs' values (finite embeddings, no empty row of ``mask``, the logit
            range of unnormalised embeddings, a valid negative for every anchor). ``True``
            (default): all of a call's data-dependent checks are one boolean reduction read back
            once (one host synchronisation per call on a GPU; the tiled engine's per-tile work
            reads no tensor value); inside ``torch.compile`` they become one
            ``torch._assert_async`` (no graph break). ``False``, the production switch: no check
            and no host read (NaN/Inf inputs give a NaN loss, not an error; embeddings of norm
            beyond ~1e19 or below ~1e-19 in float32 are not rescaled before normalising).
            Shape, dtype and device checks are free and always made.
    """

    def __init__(
        self,
        *,
        temperature: float = 0.5,
        tau_plus: float = 0.0,
        negatives: NegativeDistribution | None = None,
        objective: Objective | None = None,
        normalize: bool = True,
        reduction: str = "mean",
        num_negatives: int | None = None,
        collision_free: bool = False,
        gather_distributed: bool = False,
        process_group: object | None = None,
        memory_budget: int = DEFAULT_MEMORY_BUDGET,
        tile_size: int | None = None,
        compile_tiles: bool = False,
        engine: str = "auto",
        validate: bool = True,
    ):
        super().__init__()
        from hardneg.tiled.engine import ENGINES

        if engine not in ENGINES:
            raise ValueError(f"engine must be one of {ENGINES}, got {engine!r}")
        self.engine = engine
        self.validate = bool(validate)
        self.compile_tiles = bool(compile_tiles)
        if isinstance(memory_budget, bool) or not isinstance(memory_budget, int) or memory_budget < 0:
            raise ValueError(f"memory_budget must be an int >= 0 (bytes), got {memory_budget!r}")
        if tile_size is not None and (
            isinstance(tile_size, bool) or not isinstance(tile_size, int) or tile_size < 1
        ):
            raise ValueError(f"tile_size must be None or an int >= 1, got {tile_size!r}")
        self.memory_budget = memory_budget
        self.tile_size = tile_size
        self.temperature = check_temperature(temperature)
        self.tau_plus = check_in_interval("tau_plus", tau_plus, low=0.0, high=1.0)
        if negatives is not None and not isinstance(negatives, NegativeDistribution):
            raise TypeError(
                f"negatives must be a hardneg.negatives.NegativeDistribution, got {type(negatives).__name__}"
            )
        if objective is not None and not isinstance(objective, Objective):
            raise TypeError(
                f"objective must be a hardneg.objectives.Objective, got {type(objective).__name__}"
            )
        check_reduction(reduction)
        neg: NegativeDistribution = Uniform() if negatives is None else negatives
        if collision_free:
            neg = CollisionFree(base=neg)
        if num_negatives is not None:
            neg = Subsample(num_negatives=num_negatives, base=neg)
        self.negatives = neg
        self.num_negatives = num_negatives
        self.collision_free = bool(collision_free)
        self.gather_distributed = bool(gather_distributed)
        self.process_group = process_group
        self.objective = resolve_objective(self.tau_plus, objective)
        self.normalize = bool(normalize)
        self.reduction = reduction

    def _check_labels_given(self, labels: object, name: str = "labels") -> None:
        if self.collision_free and labels is None:
            raise ValueError(
                f"collision_free=True needs {name}: pass integer labels to the call, got {name}=None"
            )

    def scores(self, z1: Tensor, z2: Tensor, *, labels: Tensor | None = None) -> Scores:
        """Step 1 in SimCLR's 2B-view layout (candidates gathered from all ranks when distributed).

        ``compute(scores(z1, z2))`` is ``forward(z1, z2, details=True)`` without the tiled engine.
        """
        self._check_labels_given(labels)
        with full_precision(z1):
            if self._gathers():
                return distributed.gathered_simclr_scores(
                    z1,
                    z2,
                    temperature=self.temperature,
                    normalize=self.normalize,
                    labels=labels,
                    group=self.process_group,
                )
            return simclr_scores(
                z1,
                z2,
                temperature=self.temperature,
                normalize=self.normalize,
                labels=labels,
                validate=self.validate,
            )

    def _gathers(self) -> bool:
        """Whether this call gathers candidates across the ranks of ``process_group`` (a call
        that could but does not warns once per process: :func:`hardneg.distributed.warn_local_negatives`)."""
        if self.gather_distributed:
            return distributed.is_distributed(self.process_group)
        distributed.warn_local_negatives(self.process_group)
        return False

    def engine_for(
        self,
        num_anchors: int,
        num_candidates: int,
        dtype: torch.dtype = torch.float32,
        device: str | torch.device = "cpu",
        *,
        num_valid: int | None = None,
    ) -> EngineChoice:
        """Which engine computes an (A, N) batch, its tile side and why.

        ``engine="auto"`` (the default): the tiled engine (:mod:`hardneg.tiled`) when the
        materialised (A, N) matrices would exceed ``memory_budget`` (reason ``"memory budget"``),
        or, for plain Uniform / Hard negatives with a row-reducible objective, when
        ``A·N ≥ SPEED_CROSSOVER[device type]``, where it is the faster engine (reason ``"speed
        crossover (…)"``; on a CPU from B = 512 in SimCLR's layout, A = N = 2B; the table
        is in :data:`hardneg.tiled.engine.SPEED_CROSSOVER` and docs/loss_api.md); else the
        materialised one. ``engine="materialised"`` / ``"tiled"`` force one (reason ``"forced"``;
        the former raises ``ValueError`` beyond ``memory_budget``, the latter for what the tiled
        engine does not support). Both engines give the same values and gradients; the tiled one
        is the online-softmax recurrence (Milakov & Gimelshein, arXiv:1805.02867, 2018) over
        tiles, as in Inf-CL (Cheng et al., arXiv:2410.17243, 2024, §3), so its cost is the
        A·N·d products without the (A, N) memory traffic.

        K-subsampled negatives (``num_negatives=K`` / :class:`~hardneg.negatives.Subsample` over
        Uniform or Hard, optionally collision-free) take the gathered engine
        (:mod:`hardneg.tiled.gathered`, reason ``"K-subsampled (…)"``) when
        ``GATHER_CROSSOVER[device type] · K ≤ N`` (:data:`hardneg.tiled.engine.GATHER_CROSSOVER`)
        and its (A, K) matrices fit ``memory_budget``: it computes only the A·K drawn logits
        (O(A·K·d)) and draws the same K negatives as the other engines for the same generator.
        ``engine="gathered"`` forces it (``ValueError`` without such a ``Subsample``).
        ``num_valid``: the most valid candidates an anchor has (2B − 2 in SimCLR's layout, which
        :meth:`forward` passes); a ``Subsample`` with K ≥ ``num_valid`` keeps everything and is
        chosen for as its base.

        SimCLR's layout with B views per side: ``engine_for(2 * B, 2 * B)`` (times the world size
        for the candidates when gathering across ranks); :meth:`pair`: ``engine_for(A, N)``.
        ``dtype``: the embeddings' dtype (half precision is computed in float32). Returns an
        :class:`~hardneg.tiled.engine.EngineChoice` ``(engine, tile, reason)``.
        """
        from hardneg.tiled.engine import choose_engine

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
        )

    def _tiled(
        self,
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
    ) -> LossOutput:
        """The tiled engine (``tile`` given) or the gathered one (``tile=None``) on prepared
        inputs; ``positive_roll`` ≠ 0: the positives are the prepared anchors rolled by that many
        rows (SimCLR's partner views, prepared once)."""
        from hardneg.tiled.engine import tiled_loss
        from hardneg.tiled.gathered import gathered_loss

        pp = prepare_pair(
            anchors,
            positives,
            candidates,
            temperature=self.temperature,
            mask=mask,
            normalize=self.normalize,
            anchor_labels=anchor_labels,
            candidate_labels=candidate_labels,
            validate=self.validate,
            report=report,
        )
        positives, positive_norms = pp.positives, pp.positive_norms
        if positive_roll:
            positives, positive_norms = (
                positives.roll(positive_roll, 0),
                positive_norms.roll(positive_roll, 0),
            )
        common: dict[str, Any] = dict(  # the arguments both engines take
            temperature=pp.temperature,
            anchor_norms=pp.anchor_norms,
            positive_norms=positive_norms,
            candidate_norms=pp.candidate_norms,
            excluded=excluded,
            negatives=self.negatives,
            objective=self.objective,
            reduction=self.reduction,
            mask=pp.mask,
            anchor_labels=pp.anchor_labels,
            candidate_labels=pp.candidate_labels,
            diagnostics=diagnostics,
            generator=generator,
        )
        if tile is None:
            return gathered_loss(pp.anchors, positives, pp.candidates, **common)
        return tiled_loss(
            pp.anchors,
            positives,
            pp.candidates,
            tile=tile,
            symmetric=symmetric,
            compiled=self.compile_tiles,
            validate=self.validate,
            **common,
        )

    def _two_view_loss(
        self,
        z1: Tensor,
        z2: Tensor,
        labels: Tensor | None,
        generator: torch.Generator | None,
        diagnostics: bool,
    ) -> LossOutput:
        """SimCLR's layout, materialised, tiled or gathered as :meth:`engine_for` chooses."""
        self._check_labels_given(labels)
        b = check_two_views(z1, z2, check_finite=False)  # finiteness: in the one host read
        gathered = self._gathers()
        world = distributed.world_size(self.process_group) if gathered else 1
        n = 2 * b * world
        choice = self.engine_for(2 * b, n, z1.dtype, z1.device, num_valid=n - 2)
        if choice.engine == "materialised":
            return self.compute(
                self.scores(z1, z2, labels=labels), diagnostics=diagnostics, generator=generator
            )
        if b < 2 and world == 1:
            raise ValueError(f"batch size B (z1.shape[0]) must be >= 2 to have negatives, got {b}")
        v = torch.cat([z1, z2], dim=0)
        rank = distributed.rank(self.process_group) if gathered else 0
        idx = torch.arange(2 * b, device=v.device)
        excluded = torch.stack([rank * 2 * b + idx, rank * 2 * b + (idx + b) % (2 * b)], dim=1)
        view_labels = None if labels is None else torch.cat([labels, labels]).to(v.device)
        candidates, cand_labels = v, view_labels
        if gathered:
            distributed.check_equal_sizes("the views z1, z2", z1, self.process_group)
            candidates = distributed.all_gather_with_grad(v, group=self.process_group)
            cand_labels = (
                None
                if view_labels is None
                else distributed.all_gather_no_grad(view_labels, group=self.process_group)
            )
        return self._tiled(
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
        )

    def _pair_loss(
        self,
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
    ) -> LossOutput:
        """The pair layout, materialised, tiled or gathered as :meth:`engine_for` chooses; with
        ``gather`` (and ``gather_distributed``) the candidates, their labels and the mask are
        gathered."""
        self._check_labels_given(anchor_labels, "anchor_labels")
        self._check_labels_given(candidate_labels, "candidate_labels")
        if gather and self._gathers() and isinstance(candidates, Tensor):
            group = self.process_group
            distributed.check_equal_sizes("the candidates", candidates, group)
            if mask is not None and isinstance(mask, Tensor) and mask.dim() == 2:
                mask = distributed.local_block(mask, fill=True, group=group)
            if candidate_labels is not None and isinstance(candidate_labels, Tensor):
                candidate_labels = distributed.all_gather_no_grad(candidate_labels, group=group)
            candidates = distributed.all_gather_with_grad(candidates, group=group)
        choice = (
            self.engine_for(int(anchors.shape[0]), int(candidates.shape[0]), anchors.dtype, anchors.device)
            if anchors.dim() == 2 and isinstance(candidates, Tensor) and candidates.dim() == 2
            else None
        )
        if choice is not None and choice.engine != "materialised":
            excluded = torch.full((anchors.shape[0], 1), -1, dtype=torch.int64, device=anchors.device)
            return self._tiled(
                anchors,
                positives,
                candidates,
                tile=choice.tile,
                excluded=excluded,
                mask=mask,
                anchor_labels=anchor_labels,
                candidate_labels=candidate_labels,
                diagnostics=diagnostics,
                generator=generator,
            )
        scores = pair_scores(
            anchors,
            positives,
            candidates,
            temperature=self.temperature,
            mask=mask,
            normalize=self.normalize,
            anchor_labels=anchor_labels,
            candidate_labels=candidate_labels,
            validate=self.validate,
        )
        return self.compute(scores, diagnostics=diagnostics, generator=generator)

    # -- one forward per layout ----------------------------------------------------------------
    @overload
    def forward(
        self,
        z1: Tensor,
        z2: Tensor,
        *,
        labels: Tensor | None = ...,
        generator: torch.Generator | None = ...,
        details: Literal[False] = ...,
    ) -> Tensor: ...

    @overload
    def forward(
        self,
        z1: Tensor,
        z2: Tensor,
        *,
        labels: Tensor | None = ...,
        generator: torch.Generator | None = ...,
        details: Literal[True],
    ) -> LossOutput: ...

    @overload
    def forward(
        self,
        z1: Tensor,
        z2: Tensor,
        *,
        labels: Tensor | None = ...,
        generator: torch.Generator | None = ...,
        details: bool = ...,
    ) -> Tensor | LossOutput: ...

    def forward(
        self,
        z1: Tensor,
        z2: Tensor,
        *,
        labels: Tensor | None = None,
        generator: torch.Generator | None = None,
        details: bool = False,
    ) -> Tensor | LossOutput:
        """SimCLR's layout: two views, each view's partner its positive, the other 2B − 2 views
        (of all ranks when distributed) its candidate negatives.

        ``details=True`` returns a :class:`LossOutput`: the loss, the per-anchor losses (2B,) and
        the diagnostics (ESS, cosines, collision rates with ``labels``).

        Shapes: ``z1``, ``z2`` (B, d); ``labels`` optional (B,) → scalar (or (2B,) with
        ``reduction="none"``).
        """
        with full_precision(z1):
            out = self._two_view_loss(z1, z2, labels, generator, diagnostics=details)
        return out if details else out.loss

    @overload
    def pair(
        self,
        anchors: Tensor,
        positives: Tensor,
        candidates: Tensor,
        *,
        mask: Tensor | None = ...,
        anchor_labels: Tensor | None = ...,
        candidate_labels: Tensor | None = ...,
        generator: torch.Generator | None = ...,
        details: Literal[False] = ...,
        gather: bool = ...,
    ) -> Tensor: ...

    @overload
    def pair(
        self,
        anchors: Tensor,
        positives: Tensor,
        candidates: Tensor,
        *,
        mask: Tensor | None = ...,
        anchor_labels: Tensor | None = ...,
        candidate_labels: Tensor | None = ...,
        generator: torch.Generator | None = ...,
        details: Literal[True],
        gather: bool = ...,
    ) -> LossOutput: ...

    @overload
    def pair(
        self,
        anchors: Tensor,
        positives: Tensor,
        candidates: Tensor,
        *,
        mask: Tensor | None = ...,
        anchor_labels: Tensor | None = ...,
        candidate_labels: Tensor | None = ...,
        generator: torch.Generator | None = ...,
        details: bool = ...,
        gather: bool = ...,
    ) -> Tensor | LossOutput: ...

    def pair(
        self,
        anchors: Tensor,
        positives: Tensor,
        candidates: Tensor,
        *,
        mask: Tensor | None = None,
        anchor_labels: Tensor | None = None,
        candidate_labels: Tensor | None = None,
        generator: torch.Generator | None = None,
        details: bool = False,
        gather: bool = True,
    ) -> Tensor | LossOutput:
        """The pair layout: any given positives and a separate candidate pool (:func:`pair_scores`).

        For true positives drawn from the anchor's class (Arora et al., ICML 2019; Ash et al.,
        AISTATS 2022), explicit negatives, local–global pairs (InfoGraph) or a memory queue
        (:class:`~hardneg.queue.QueueLoss`). With ``gather_distributed`` under DDP the candidates
        (and ``candidate_labels``) of all ranks are gathered, with gradients; ``mask`` is about the
        local candidates (the other ranks' candidates are valid negatives) and the anchors and
        positives stay local; ``gather=False`` keeps this call's candidates local (a pool that
        is already the same on every rank, as MoCo's queue).

        Shapes: ``anchors``, ``positives`` (A, d); ``candidates`` (N, d); ``mask`` (A, N) bool;
        labels (A,) and (N,) → scalar (or (A,) with ``reduction="none"``); a :class:`LossOutput`
        with ``details=True``.
        """
        with full_precision(anchors):
            out = self._pair_loss(
                anchors,
                positives,
                candidates,
                mask=mask,
                anchor_labels=anchor_labels,
                candidate_labels=candidate_labels,
                generator=generator,
                diagnostics=details,
                gather=gather,
            )
        return out if details else out.loss

    @overload
    def multi_positive(
        self,
        anchors: Tensor,
        candidates: Tensor,
        positive_mask: Tensor,
        *,
        exclude: Tensor | None = ...,
        generator: torch.Generator | None = ...,
        details: Literal[False] = ...,
    ) -> Tensor: ...

    @overload
    def multi_positive(
        self,
        anchors: Tensor,
        candidates: Tensor,
        positive_mask: Tensor,
        *,
        exclude: Tensor | None = ...,
        generator: torch.Generator | None = ...,
        details: Literal[True],
    ) -> LossOutput: ...

    @overload
    def multi_positive(
        self,
        anchors: Tensor,
        candidates: Tensor,
        positive_mask: Tensor,
        *,
        exclude: Tensor | None = ...,
        generator: torch.Generator | None = ...,
        details: bool = ...,
    ) -> Tensor | LossOutput: ...

    def multi_positive(
        self,
        anchors: Tensor,
        candidates: Tensor,
        positive_mask: Tensor,
        *,
        exclude: Tensor | None = None,
        generator: torch.Generator | None = None,
        details: bool = False,
    ) -> Tensor | LossOutput:
        """Several positives per anchor among one candidate pool (quick-thoughts).

        ``L_i = −log( Σ_m e^{s⁺_im} / (Σ_m e^{s⁺_im} + Neg_i) )`` with ``Neg_i`` the weighted
        (hard, debiased, OT, K-subsampled) negative term over the candidates that are neither
        positive nor excluded — Robinson et al.'s estimator with M positives (ICLR 2021, §3,
        Fig. 13–14); see :func:`~hardneg.scores.multi_positive_scores`. InfoNCE and Debiased (fixed
        τ⁺) objectives only; materialised (no tiling); the collision-free option needs labels and
        is not available here. With ``gather_distributed`` under DDP the candidates of all ranks
        are gathered (with gradients); ``positive_mask`` and ``exclude`` are about the local
        candidates (the other ranks' candidates are negatives).

        Shapes: ``anchors`` (A, d), ``candidates`` (N, d), ``positive_mask`` and ``exclude`` (A, N)
        bool → scalar (or (A,) with ``reduction="none"``); a :class:`LossOutput` with
        ``details=True``.
        """
        from hardneg.scores import multi_positive_scores

        if self.collision_free:
            raise ValueError("collision_free needs labels; multi_positive takes none")
        if self._gathers() and isinstance(candidates, Tensor):
            group = self.process_group
            distributed.check_equal_sizes("the candidates", candidates, group)
            if isinstance(positive_mask, Tensor) and positive_mask.dim() == 2:
                positive_mask = distributed.local_block(positive_mask, fill=False, group=group)
            if isinstance(exclude, Tensor) and exclude.dim() == 2:
                exclude = distributed.local_block(exclude, fill=False, group=group)
            candidates = distributed.all_gather_with_grad(candidates, group=group)
        with full_precision(anchors):
            scores = multi_positive_scores(
                anchors,
                candidates,
                positive_mask,
                temperature=self.temperature,
                exclude=exclude,
                normalize=self.normalize,
            )
            out = self.compute(scores, diagnostics=details, generator=generator)
        return out if details else out.loss

    def compute(
        self, scores: Scores, *, diagnostics: bool = False, generator: torch.Generator | None = None
    ) -> LossOutput:
        """Steps 2–4 on precomputed :class:`Scores` (any layout; the low-level entry).

        Always a :class:`LossOutput`; ``diagnostics=True`` fills its diagnostics. Materialised (no
        tiling): build the scores with :meth:`scores` (SimCLR's layout),
        :func:`~hardneg.scores.pair_scores` or :func:`~hardneg.scores.multi_positive_scores`.
        """
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

    # -- deprecated names (0.1): one-line delegates, removed in 0.3 ----------------------------
    def detailed(
        self,
        z1: Tensor,
        z2: Tensor,
        *,
        labels: Tensor | None = None,
        generator: torch.Generator | None = None,
    ) -> LossOutput:
        """Deprecated: ``loss_fn(z1, z2, details=True)`` (:meth:`forward`)."""
        _deprecated("detailed", "loss_fn(z1, z2, details=True)")
        return self.forward(z1, z2, labels=labels, generator=generator, details=True)

    def pair_detailed(
        self,
        anchors: Tensor,
        positives: Tensor,
        candidates: Tensor,
        *,
        mask: Tensor | None = None,
        anchor_labels: Tensor | None = None,
        candidate_labels: Tensor | None = None,
        generator: torch.Generator | None = None,
    ) -> LossOutput:
        """Deprecated: :meth:`pair` with ``details=True``."""
        _deprecated("pair_detailed", "pair(..., details=True)")
        return self.pair(
            anchors,
            positives,
            candidates,
            mask=mask,
            anchor_labels=anchor_labels,
            candidate_labels=candidate_labels,
            generator=generator,
            details=True,
        )

    def pair_forward(
        self,
        anchors: Tensor,
        positives: Tensor,
        candidates: Tensor,
        *,
        mask: Tensor | None = None,
        anchor_labels: Tensor | None = None,
        candidate_labels: Tensor | None = None,
        generator: torch.Generator | None = None,
    ) -> Tensor:
        """Deprecated: :meth:`pair`."""
        _deprecated("pair_forward", "pair(...)")
        return self.pair(
            anchors,
            positives,
            candidates,
            mask=mask,
            anchor_labels=anchor_labels,
            candidate_labels=candidate_labels,
            generator=generator,
        )

    def multi_positive_detailed(
        self,
        anchors: Tensor,
        candidates: Tensor,
        positive_mask: Tensor,
        *,
        exclude: Tensor | None = None,
        generator: torch.Generator | None = None,
    ) -> LossOutput:
        """Deprecated: :meth:`multi_positive` with ``details=True``."""
        _deprecated("multi_positive_detailed", "multi_positive(..., details=True)")
        return self.multi_positive(
            anchors, candidates, positive_mask, exclude=exclude, generator=generator, details=True
        )

    def queue_detailed(
        self,
        q: Tensor,
        k: Tensor,
        queue: MemoryQueue,
        *,
        labels: Tensor | None = None,
        enqueue: bool = True,
        generator: torch.Generator | None = None,
        diagnostics: bool = True,
    ) -> LossOutput:
        """Deprecated: ``QueueLoss(loss_fn, queue)(q, k, details=True)`` (:mod:`hardneg.queue`)."""
        from hardneg.queue import QueueLoss

        _deprecated("queue_detailed", "hardneg.queue.QueueLoss(loss_fn, queue)(q, k, details=True)")
        out = QueueLoss(self, queue)(q, k, labels=labels, enqueue=enqueue, generator=generator, details=True)
        return out if diagnostics else replace(out, diagnostics={})

    def queue_forward(
        self,
        q: Tensor,
        k: Tensor,
        queue: MemoryQueue,
        *,
        labels: Tensor | None = None,
        enqueue: bool = True,
        generator: torch.Generator | None = None,
    ) -> Tensor:
        """Deprecated: ``QueueLoss(loss_fn, queue)(q, k)`` (:mod:`hardneg.queue`)."""
        from hardneg.queue import QueueLoss

        _deprecated("queue_forward", "hardneg.queue.QueueLoss(loss_fn, queue)(q, k)")
        return QueueLoss(self, queue)(q, k, labels=labels, enqueue=enqueue, generator=generator)

    def extra_repr(self) -> str:
        return (
            f"temperature={self.temperature}, normalize={self.normalize}, reduction={self.reduction!r}, "
            f"gather_distributed={self.gather_distributed}, engine={self.engine!r}"
            + ("" if self.validate else ", validate=False")
        )
