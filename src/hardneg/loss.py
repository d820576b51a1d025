"""``ContrastiveLoss``: the public ``nn.Module`` (scores → negatives → objective → reduction).

One method per layout of the scores (docs/loss_api.md), each returning the loss, or a
:class:`LossOutput` with ``details=True``: :meth:`ContrastiveLoss.forward` (SimCLR's two views),
:meth:`~ContrastiveLoss.pair` (given positives, a separate candidate pool),
:meth:`~ContrastiveLoss.multi_positive` (several positives per anchor) and, the low-level entry,
:meth:`~ContrastiveLoss.compute` on precomputed :class:`Scores`; MoCo's queue is a wrapper,
:class:`hardneg.queue.QueueLoss`. The settings become one :class:`~hardneg.engines.dispatch.PreparedLoss`,
which :mod:`hardneg.engines.dispatch` hands to the materialised, tiled or gathered engine.
"""

from __future__ import annotations

from typing import Any, Literal, overload

import torch
from torch import Tensor, nn

from hardneg._validation import check_in_interval, check_temperature
from hardneg.engines.choice import ENGINES, EngineChoice
from hardneg.engines.dispatch import (
    DEFAULT_MEMORY_BUDGET,
    PreparedLoss,
    full_precision,
    multi_positive_loss,
    pair_loss,
    two_view_loss,
)
from hardneg.engines.tiled.fused import require_triton
from hardneg.functional import resolve_objective
from hardneg.negatives.base import NegativeDistribution
from hardneg.negatives.oracle import CollisionFree
from hardneg.negatives.subsample import Subsample
from hardneg.negatives.uniform import Uniform
from hardneg.objectives.base import Objective
from hardneg.reduction import LossOutput, check_reduction
from hardneg.scores import Scores

__all__ = ["DEFAULT_MEMORY_BUDGET", "ContrastiveLoss"]

_T = Tensor | None
_G = torch.Generator | None
_SETTINGS = frozenset(PreparedLoss.__dataclass_fields__)  # assigning one re-prepares the loss


class ContrastiveLoss(nn.Module):
    """Contrastive loss with a controllable negative distribution.

    ``ContrastiveLoss(temperature=0.5)`` is SimCLR's NT-Xent; ``tau_plus > 0`` is the debiased
    loss (Chuang et al., NeurIPS 2020); ``negatives=Hard(beta)`` with ``tau_plus`` is the hard-negative
    objective of Robinson et al. (ICLR 2021), eq. (4).

    A setting has one spelling: the composition of a negative distribution and an objective.
    ``tau_plus``, ``num_negatives`` and ``collision_free`` are exact shorthands of one composition
    each (same values and gradients, tested):

    - ``tau_plus=τ`` is ``objective=Debiased(tau_plus=τ)`` (``0``: the default objective, InfoNCE);
    - ``num_negatives=K`` is ``negatives=Subsample(num_negatives=K, base=negatives)``;
    - ``collision_free=True`` is ``negatives=CollisionFree(base=negatives)``, inside the
      ``Subsample`` when both are given.

    Every call takes ``generator=``, the only randomness (K-subsampling): a per-step generator
    reproduces.

    Args:
        temperature: t ∈ [1e-4, 1e4]; logits are ``⟨a, c⟩ / t``.
        tau_plus: class prior τ⁺ ∈ [0, 1) of the debiased estimator: shorthand of
            ``objective=Debiased(tau_plus)``. With ``objective`` given it must be ``0``
            (``ValueError``: the prior belongs to the objective, ``Debiased(tau_plus)``).
        negatives: a :class:`~hardneg.negatives.NegativeDistribution` (default uniform).
        objective: an :class:`~hardneg.objectives.Objective` (default: InfoNCE when
            ``tau_plus == 0``, else :class:`~hardneg.objectives.Debiased`).
        normalize: L2-normalise embeddings first (SimCLR). ``False`` for unnormalised
            embeddings (graphs, sentences), typically with ``Hard(rescale=True)``.
        reduction: ``"mean"``, ``"sum"`` or ``"none"``.
        num_negatives: K — keep K negatives per anchor, drawn uniformly without replacement from
            its valid candidates, independently per anchor (Ash et al., AISTATS 2022, §4):
            shorthand of ``negatives=Subsample(num_negatives=K, base=negatives)``. ``None`` keeps all.
        collision_free: drop candidates sharing the anchor's label (oracle negatives): shorthand of
            ``negatives=CollisionFree(base=negatives)``, applied before the K-subsampling. Needs
            ``labels`` in every call.
        memory_budget: bytes the (A, N) score matrices may take (default 4 GiB, ~B = 8000 in SimCLR's
            layout); beyond it the tiled engine (:mod:`hardneg.engines.tiled`: memory
            O((A + N)·d + tile²), the same values and gradients; ``0`` always tiles) for the
            distributions stating per-tile weights (:mod:`hardneg.negatives.tiling`) with the
            row-reducible objectives (which ones: :func:`hardneg.engines.capabilities.capability_table`);
            others raise, saying why.
        tile_size: override the tile side derived from ``memory_budget``.
        compile_tiles: fuse the tiled engine's per-tile work with ``torch.compile`` (the first call
            compiles for tens of seconds; a C++ compiler on a CPU). Off: no consistent CPU speed-up.
        gather_distributed: under a ``torch.distributed`` group of several processes, use the
            candidates of all ranks (with gradients); the reduction is over this rank's anchors, so
            DDP's averaging gives the single-process gradient with ``reduction="mean"``. Off by
            default (since 0.2): gathered embeddings must not be gathered twice (docs/loss_api.md).
        process_group: the ``torch.distributed`` group to gather over (``None``: the default).
        engine: ``"auto"`` (default): the faster engine within ``memory_budget`` — tiled beyond it
            and, for Uniform and Hard, from a measured speed crossover on (CPU: B = 512 in SimCLR's
            layout); gathered for K-subsampled negatives with ``8·K ≤ N``; ``"materialised"``
            (``ValueError`` beyond the budget), ``"tiled"``, ``"gathered"`` force one (:meth:`engine_for`);
            ``"fused"`` (opt-in, never chosen by ``"auto"``; the ``gpu`` extra: triton) is the tiled
            engine with one fused Triton kernel per pass (:mod:`hardneg.engines.tiled.fused`), falling back
            to the tiled or gathered engine, with the reason, for what its kernel does not express.
        validate: check the values (finite embeddings, no empty row of ``mask``, the logit range of
            unnormalised embeddings, a negative for every anchor) in one host read per call.
            ``False``, the production switch: no check, no host read (NaN inputs give a NaN loss;
            docs/loss_api.md, "Validation"). Shape, dtype and device checks are always made.

    Shapes:
        ``forward``: ``z1``, ``z2`` (B, d), ``labels`` (B,) → scalar, (2B,) with ``reduction="none"``;
        ``pair``: anchors, positives (A, d), candidates (N, d), ``mask`` (A, N) → scalar or (A,);
        ``multi_positive``: anchors (A, d), candidates (N, d), masks (A, N) → scalar or (A,).

    References:
        Chen et al., "A Simple Framework for Contrastive Learning of Visual Representations", ICML
        2020, eq. (1) (NT-Xent); Chuang et al., "Debiased Contrastive Learning", NeurIPS 2020, §3;
        Robinson et al., "Contrastive Learning with Hard Negative Samples", ICLR 2021, eq. (4); tiled
        engine: Milakov & Gimelshein, arXiv:1805.02867, 2018 (online softmax normaliser).

    Example:
        >>> from hardneg import negatives
        >>> loss_fn = ContrastiveLoss(temperature=0.5, tau_plus=0.1, negatives=negatives.Hard(beta=1.0))
        >>> z1, z2 = torch.randn(16, 32), torch.randn(16, 32)
        >>> loss_fn(z1, z2).shape                           # two views, (B, d) each -> scalar
        torch.Size([])
        >>> out = loss_fn(z1, z2, details=True)             # per-anchor losses and diagnostics
        >>> out.per_anchor.shape, sorted(out.diagnostics)[:3]
        (torch.Size([32]), ['clamp_fraction', 'ess', 'ess_fraction'])
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
        if engine not in ENGINES:
            raise ValueError(f"engine must be one of {ENGINES}, got {engine!r}")
        if engine == "fused":
            require_triton()
        if isinstance(memory_budget, bool) or not isinstance(memory_budget, int) or memory_budget < 0:
            raise ValueError(f"memory_budget must be an int >= 0 (bytes), got {memory_budget!r}")
        if tile_size is not None and (
            isinstance(tile_size, bool) or not isinstance(tile_size, int) or tile_size < 1
        ):
            raise ValueError(f"tile_size must be None or an int >= 1, got {tile_size!r}")
        if negatives is not None and not isinstance(negatives, NegativeDistribution):
            raise TypeError(
                f"negatives must be a hardneg.negatives.NegativeDistribution, got {type(negatives).__name__}"
            )
        if objective is not None and not isinstance(objective, Objective):
            raise TypeError(
                f"objective must be a hardneg.objectives.Objective, got {type(objective).__name__}"
            )
        check_reduction(reduction)
        self.temperature = check_temperature(temperature)
        self.tau_plus = check_in_interval("tau_plus", tau_plus, low=0.0, high=1.0)
        neg: NegativeDistribution = Uniform() if negatives is None else negatives
        if collision_free:
            neg = CollisionFree(base=neg)
        if num_negatives is not None:
            neg = Subsample(num_negatives=num_negatives, base=neg)
        self.negatives, self.num_negatives, self.objective = neg, num_negatives, resolve_objective(
            self.tau_plus, objective
        )
        self.engine, self.validate, self.compile_tiles = engine, bool(validate), bool(compile_tiles)
        self.memory_budget, self.tile_size, self.reduction = memory_budget, tile_size, reduction
        self.collision_free, self.normalize = bool(collision_free), bool(normalize)
        self.gather_distributed, self.process_group = bool(gather_distributed), process_group

    def __setattr__(self, name: str, value: Any) -> None:
        super().__setattr__(name, value)
        if name in _SETTINGS:
            self.__dict__.pop("_prepared", None)

    @property
    def prepared(self) -> PreparedLoss:
        """The settings as the engines read them (:class:`~hardneg.engines.dispatch.PreparedLoss`),
        made once and again only after a setting is assigned."""
        p = self.__dict__.get("_prepared")
        if p is None:
            p = PreparedLoss(**{name: getattr(self, name) for name in _SETTINGS})
            self.__dict__["_prepared"] = p
        return p

    def scores(self, z1: Tensor, z2: Tensor, *, labels: Tensor | None = None) -> Scores:
        """Step 1 in SimCLR's 2B-view layout (candidates gathered from all ranks when distributed).

        ``compute(scores(z1, z2))`` is ``forward(z1, z2, details=True)`` without the tiled engine.
        Shapes: ``z1``, ``z2`` (B, d); ``labels`` (B,) → :class:`Scores` of (2B, 2B).
        """
        return self.prepared.scores(z1, z2, labels)

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
        """Which engine computes an (A, N) batch, its tile side and why:
        :func:`hardneg.engines.choice.choose_engine` with this loss's settings (reasons ``"memory
        budget"``, ``"speed crossover (…)"``, ``"K-subsampled (…)"``, ``"forced"``, ``"below the
        speed crossover (…)"``, ``"not supported by the tiled engine"``, ``"not supported by the
        fused kernel (…)"``, with ``two_views=True`` ``"small batch (…)"``; the crossovers are
        :data:`~hardneg._numerics.thresholds.THRESHOLDS`' ``speed_crossover`` and
        ``gather_crossover``). Every engine gives the same values and
        gradients; the tiled one is the online-softmax recurrence (Milakov & Gimelshein,
        arXiv:1805.02867, 2018) over tiles, as in Inf-CL (Cheng et al., arXiv:2410.17243, 2024,
        §3). ``num_valid``: the most valid candidates an anchor has (2B − 2 in SimCLR's layout);
        a ``Subsample`` with K ≥ ``num_valid`` counts as its base. SimCLR's layout, B per view:
        ``engine_for(2 * B, 2 * B)`` (times the world size for gathered candidates); :meth:`pair`:
        ``engine_for(A, N)``; ``dtype``: the embeddings'. Returns an
        :class:`~hardneg.engines.choice.EngineChoice` ``(engine, tile, reason)``."""
        return self.prepared.engine_for(
            num_anchors, num_candidates, dtype, device, num_valid=num_valid, two_views=two_views
        )

    # -- one forward per layout: the loss, or a LossOutput with details=True --------------------
    @overload
    def forward(self, z1: Tensor, z2: Tensor, *, labels: _T = ..., generator: _G = ...,
                details: Literal[False] = ...) -> Tensor: ...  # fmt: skip
    @overload
    def forward(self, z1: Tensor, z2: Tensor, *, labels: _T = ..., generator: _G = ...,
                details: Literal[True]) -> LossOutput: ...  # fmt: skip
    @overload
    def forward(self, z1: Tensor, z2: Tensor, *, labels: _T = ..., generator: _G = ...,
                details: bool = ...) -> Tensor | LossOutput: ...  # fmt: skip

    def forward(
        self, z1: Tensor, z2: Tensor, *, labels: _T = None, generator: _G = None, details: bool = False
    ) -> Tensor | LossOutput:
        """SimCLR's layout: two views, each view's partner its positive, the other 2B − 2 views
        (of all ranks when distributed) its candidate negatives.

        ``details=True`` returns a :class:`LossOutput`: the loss, the per-anchor losses (2B,) and
        the diagnostics (ESS, cosines, collision rates with ``labels``).

        Shapes: ``z1``, ``z2`` (B, d); ``labels`` optional (B,) → scalar (or (2B,) with
        ``reduction="none"``).
        """
        with full_precision(z1):
            out = two_view_loss(self.prepared, z1, z2, labels, generator, diagnostics=details)
        return out if details else out.loss

    @overload
    def pair(self, anchors: Tensor, positives: Tensor, candidates: Tensor, *, mask: _T = ...,
             anchor_labels: _T = ..., candidate_labels: _T = ..., generator: _G = ...,
             details: Literal[False] = ..., gather: bool = ...,
             candidates_normalized: bool = ...) -> Tensor: ...  # fmt: skip
    @overload
    def pair(self, anchors: Tensor, positives: Tensor, candidates: Tensor, *, mask: _T = ...,
             anchor_labels: _T = ..., candidate_labels: _T = ..., generator: _G = ...,
             details: Literal[True], gather: bool = ...,
             candidates_normalized: bool = ...) -> LossOutput: ...  # fmt: skip
    @overload
    def pair(self, anchors: Tensor, positives: Tensor, candidates: Tensor, *, mask: _T = ...,
             anchor_labels: _T = ..., candidate_labels: _T = ..., generator: _G = ...,
             details: bool = ..., gather: bool = ...,
             candidates_normalized: bool = ...) -> Tensor | LossOutput: ...  # fmt: skip

    def pair(
        self,
        anchors: Tensor,
        positives: Tensor,
        candidates: Tensor,
        *,
        mask: _T = None,
        anchor_labels: _T = None,
        candidate_labels: _T = None,
        generator: _G = None,
        details: bool = False,
        gather: bool = True,
        candidates_normalized: bool = False,
    ) -> Tensor | LossOutput:
        """The pair layout: any given positives and a separate candidate pool (:func:`pair_scores`).

        For true positives drawn from the anchor's class (Arora et al., ICML 2019; Ash et al.,
        AISTATS 2022), explicit negatives, local–global pairs (InfoGraph) or a memory queue
        (:class:`~hardneg.queue.QueueLoss`). With ``gather_distributed`` under DDP the candidates
        (and ``candidate_labels``) of all ranks are gathered, with gradients; ``mask`` is about the
        local candidates (the other ranks' candidates are valid negatives) and the anchors and
        positives stay local; ``gather=False`` keeps this call's candidates local (a pool that
        is already the same on every rank, as MoCo's queue). ``candidates_normalized=True``: the
        candidates are unit rows already, finite, in the compute dtype (MoCo's queue stores its
        keys normalised): with ``normalize`` they are not normalised (nor checked) again.

        Shapes: ``anchors``, ``positives`` (A, d); ``candidates`` (N, d); ``mask`` (A, N) bool;
        labels (A,) and (N,) → scalar (or (A,) with ``reduction="none"``); a :class:`LossOutput`
        with ``details=True``.
        """
        with full_precision(anchors):
            out = pair_loss(
                self.prepared, anchors, positives, candidates, mask=mask, anchor_labels=anchor_labels,
                candidate_labels=candidate_labels, generator=generator, diagnostics=details, gather=gather,
                candidates_normalized=candidates_normalized,
            )
        return out if details else out.loss

    @overload
    def multi_positive(self, anchors: Tensor, candidates: Tensor, positive_mask: Tensor, *,
                       exclude: _T = ..., generator: _G = ...,
                       details: Literal[False] = ...) -> Tensor: ...  # fmt: skip
    @overload
    def multi_positive(self, anchors: Tensor, candidates: Tensor, positive_mask: Tensor, *,
                       exclude: _T = ..., generator: _G = ...,
                       details: Literal[True]) -> LossOutput: ...  # fmt: skip
    @overload
    def multi_positive(self, anchors: Tensor, candidates: Tensor, positive_mask: Tensor, *,
                       exclude: _T = ..., generator: _G = ...,
                       details: bool = ...) -> Tensor | LossOutput: ...  # fmt: skip

    def multi_positive(self, anchors: Tensor, candidates: Tensor, positive_mask: Tensor, *,
                       exclude: _T = None, generator: _G = None,
                       details: bool = False) -> Tensor | LossOutput:
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
        out = multi_positive_loss(
            self.prepared, anchors, candidates, positive_mask, exclude=exclude, generator=generator,
            diagnostics=details,
        )
        return out if details else out.loss

    def compute(self, scores: Scores, *, diagnostics: bool = False, generator: _G = None) -> LossOutput:
        """Steps 2–4 on precomputed :class:`Scores` (any layout; the low-level entry).

        Always a :class:`LossOutput`; ``diagnostics=True`` fills its diagnostics. Materialised (no
        tiling): build the scores with :meth:`scores` (SimCLR's layout),
        :func:`~hardneg.scores.pair_scores` or :func:`~hardneg.scores.multi_positive_scores`.
        Shapes: :class:`Scores` of (A, N) → per-anchor losses (A,).
        """
        return self.prepared.compute(scores, diagnostics=diagnostics, generator=generator)

    def extra_repr(self) -> str:
        return (
            f"temperature={self.temperature}, normalize={self.normalize}, reduction={self.reduction!r}, "
            f"gather_distributed={self.gather_distributed}, engine={self.engine!r}"
            + ("" if self.validate else ", validate=False")
        )
