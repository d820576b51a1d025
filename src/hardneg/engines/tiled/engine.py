"""The loss engine without the (A, N) matrix: steps 1–4 with logits made one tile at a time.

Supported: every negative distribution that states its weights per tile through the tiling
protocol (:meth:`~hardneg.negatives.NegativeDistribution.tile_weights`,
:mod:`hardneg.negatives.tiling`) — an exponential tilt ``w_ij ∝ e^{β s_ij}`` (β of any sign) or a
streamed Sinkhorn coupling (:mod:`hardneg.engines.tiled.coupling`) — wrapped in any
:class:`~hardneg.negatives.CollisionFree` / :class:`~hardneg.negatives.Subsample`; objectives that
read only per-anchor statistics (``Objective.row_reducible``); every layout (SimCLR's 2B views,
explicit candidates, a memory queue, candidates gathered across processes). Which exported
distributions and objectives these are: :func:`hardneg.engines.capabilities.capability_table`
(derived from the components, never listed by hand). For a tilt the loss needs, per anchor, only
``s⁺_i``, ``N_i`` and

    log Σ_j w_ij e^{s_ij} = L_{1+β,i} − L_{β,i} + log N_i     (uniform: L_{1,i}),

which :func:`~hardneg.engines.tiled.lse.tiled_lse` streams (a negative exponent as the positive one of
the negated anchors, ``L_a(s) = L_{−a}(−s)``); the hinge/triplet family reads instead the
per-anchor mean ``Σ_j q_ij h(s_ij − s⁺_i)`` or the largest negative logit, which
:mod:`hardneg.engines.tiled.rowmean` streams. Values and gradients equal the materialised
engine's up to float round-off (tested to 1e-6 relative in float32, tighter in float64).
A distribution without ``tile_weights()`` raises ``ValueError`` quoting its ``tile_refusal()``
and the memory budget to raise (:func:`check_tileable`). Which engine
computes a batch: :mod:`hardneg.engines.choice`.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from hardneg._validation import check_rows_nonempty
from hardneg.engines.tiled.coupling import check_ot_objective, tiled_ot_loss
from hardneg.engines.tiled.lse import tiled_lse
from hardneg.engines.tiled.mask import TileMask
from hardneg.engines.tiled.rowmean import tiled_row_argmax, tiled_row_mean
from hardneg.engines.tiled.symmetric import tiled_lse_symmetric
from hardneg.negatives.base import NegativeDistribution
from hardneg.negatives.subsample import split_subsample
from hardneg.negatives.tiling import TileWeights
from hardneg.negatives.weighted import WeightedScores
from hardneg.objectives.base import Objective
from hardneg.reduction import LossOutput, reduce
from hardneg.reduction.diagnostics import positive_cosine
from hardneg.scores import Scores

__all__ = ["check_tileable", "speed_tile", "tile_for_budget", "tiled_loss"]


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
    fused: bool = False,
) -> LossOutput:
    """Steps 2–4 for prepared embeddings (normalised or not), never forming the (A, N) matrix.

    Shapes: ``anchors``, ``positives`` (A, d), ``candidates`` (N, d) — already in the compute
    dtype and normalised if asked; norms (A,), (A,), (N,) detached; ``excluded`` (A, E) int64
    candidate indices never valid for the anchor (−1 = none); ``mask`` optional (A, N) bool.
    ``symmetric=True`` says that the anchors are the candidates (SimCLR's 2B views, not gathered)
    and the exclusions pair up; the log-sum-exp then computes each tile pair once
    (:func:`~hardneg.engines.tiled.symmetric.tiled_lse_symmetric`) unless K-subsampling breaks the symmetry.
    ``compiled=True`` fuses each tile's element-wise work with ``torch.compile``
    (:mod:`hardneg.engines.tiled.compiled`; the first call compiles); ``fused=True`` computes the
    log-sum-exps with the fused Triton kernel instead (:mod:`hardneg.engines.tiled.fused`; the caller
    checked :func:`~hardneg.engines.tiled.fused.fused_refusal`). ``validate=False`` skips the one
    host read that checks every anchor has a valid negative. The per-tile work reads no tensor
    value: the tiles' exponent floors and the shared-shift safety are decided once per call
    (:func:`~hardneg.engines.tiled.lse.plan_tiles`).

    Args:
        anchors: the anchors, in the compute dtype, normalised if asked.
        positives: each anchor's positive, row-aligned.
        candidates: the candidate pool.
        temperature: t; logits are ``⟨a, c⟩ / t``.
        anchor_norms: the norms of ``anchors`` as given (1 when normalised; detached; diagnostics).
        positive_norms: the positives' norms (detached).
        candidate_norms: the candidates' norms (detached).
        excluded: candidate indices never valid for the anchor (−1 = none).
        negatives: a distribution that states its weights per tile.
        objective: a row-reducible objective.
        reduction: ``"mean"``, ``"sum"`` or ``"none"``.
        tile: the side of a tile.
        mask: optional bool mask, True = valid negative.
        anchor_labels: optional integer labels of the anchors.
        candidate_labels: optional integer labels of the candidates.
        diagnostics: fill the :class:`~hardneg.reduction.LossOutput`'s diagnostics.
        generator: the randomness of K-subsampling, or ``None``.
        symmetric: the anchors are the candidates (see above).
        compiled: fuse each tile's element-wise work with ``torch.compile``.
        validate: check that every anchor has a valid negative (one host read).
        fused: the log-sum-exps by the fused Triton kernel (``engine="fused"``).

    Shapes:
        ``anchors``, ``positives`` (A, d); ``candidates`` (N, d); norms (A,), (A,), (N,);
        ``excluded`` (A, E) int64; ``mask`` (A, N) bool; labels (A,), (N,) → a
        :class:`~hardneg.reduction.LossOutput` with per-anchor losses (A,).

    References:
        Milakov and Gimelshein, arXiv:1805.02867, 2018, Algorithm 3 (online normaliser); Cheng et
        al. (Inf-CL), arXiv:2410.17243, 2024, §3; Robinson, Chuang, Sra and Jegelka, ICLR 2021,
        eq. (4) (the hard-negative objective it computes exactly).

    Example:
        >>> import torch.nn.functional as F
        >>> from hardneg import negatives, objectives, pair_scores
        >>> from hardneg.functional import loss_from_scores
        >>> a, p, c = (F.normalize(torch.randn(n, 4), dim=1) for n in (3, 3, 6))
        >>> hard, nce = negatives.Hard(beta=1.0), objectives.InfoNCE()
        >>> tiled = tiled_loss(a, p, c, temperature=0.5, anchor_norms=torch.ones(3),
        ...                    positive_norms=torch.ones(3), candidate_norms=torch.ones(6),
        ...                    excluded=torch.full((3, 1), -1), negatives=hard, objective=nce, tile=2)
        >>> full = loss_from_scores(pair_scores(a, p, c, temperature=0.5), negatives=hard, objective=nce)
        >>> torch.allclose(tiled.per_anchor, full.per_anchor, atol=1e-5)
        True
    """
    weights = check_tileable(negatives, objective)
    _, sub, collision_free = split_subsample(negatives)
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
    if weights.sinkhorn is not None:
        return tiled_ot_loss(
            anchors, positives, candidates, negatives=weights.sinkhorn, objective=objective, rule=rule,
            temperature=temperature, anchor_norms=anchor_norms, positive_norms=positive_norms,
            candidate_norms=candidate_norms, reduction=reduction, tile=tile,
            anchor_labels=anchor_labels, candidate_labels=candidate_labels,
            diagnostics=diagnostics, validate=validate, source=repr(negatives),
        )
    beta = weights.effective_tilt(anchors.dtype)
    exponents = weights.exponents(diagnostics=diagnostics, dtype=anchors.dtype)
    at = anchors / temperature
    differenced = False  # whether column 0 holds L_{1+β} − L_β rather than L_{1+β}
    symmetric = symmetric and rule.subsample_index is None and rule.explicit is None and rule.symmetric_labels
    if fused:  # one kernel, exponents of any sign
        from hardneg.engines.tiled.fused import fused_lse, fused_lse_symmetric

        lse, counts = (
            fused_lse_symmetric(candidates, 1.0 / temperature, exponents, rule)
            if symmetric
            else fused_lse(at, candidates, exponents, rule)
        )
    elif min(exponents) <= 0:  # a negative tilt β: β (and 1 + β when β ≤ −1) is not positive
        lse, counts = _signed_lse(at, candidates, exponents, rule, tile=tile, compiled=compiled)
    else:
        # log Σ e^{a_e s} = log Σ e^{(a_e / u) (u s)}: the streamed logits are u·s with u the
        # smallest exponent (β for hard negatives), so that exponent needs no scaling pass per
        # tile and 1 + β = kβ is the integer power k of it (the anchors are scaled once, O(A·d))
        unit = min(exponents) if 1e-3 <= min(exponents) != 1.0 else 1.0
        streamed = tuple(e / unit for e in exponents)
        hard = differenced = beta != 0  # column 0 is L_{1+β} − L_β, computed as one quantity (tiled.lse)
        if symmetric:
            lse, counts = tiled_lse_symmetric(
                candidates, unit / temperature, streamed, rule, tile=tile, compiled=compiled, difference=hard
            )
        else:
            lse, counts = tiled_lse(
                at * unit if unit != 1.0 else at, candidates, streamed, rule, tile=tile, compiled=compiled,
                difference=hard,
            )
    if validate:
        check_rows_nonempty(counts)
    n_valid = counts.to(anchors.dtype)
    if beta == 0:
        lws = lse[:, 0]
    elif differenced:
        lws = lse[:, 0] + n_valid.log()
    else:
        lws = lse[:, 0] - lse[:, 1] + n_valid.log()
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
            ess = (2 * lse[:, 1] - lse[:, 2]).exp() if beta != 0 else n_valid
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


def _signed_lse(
    at: Tensor, candidates: Tensor, exponents: tuple[float, ...], rule: TileMask, *, tile: int, compiled: bool
) -> tuple[Tensor, Tensor]:
    """``(L, N)`` of :func:`~hardneg.engines.tiled.lse.tiled_lse` for exponents of any sign (a negative
    tilt): the positive ones on ``at``, the negative ones as ``L_a(s) = L_{−a}(−s)`` on ``−at``
    (one more streamed pass), and ``L_0 = log N_i``. Shapes: (A, d), (N, d) → (A, E), (A,)."""
    pos = tuple(e for e in exponents if e > 0)
    neg = tuple(-e for e in exponents if e < 0)
    lse_pos = lse_neg = None
    if pos:
        lse_pos, counts = tiled_lse(at, candidates, pos, rule, tile=tile, compiled=compiled)
    if neg:
        lse_neg, counts = tiled_lse(-at, candidates, neg, rule, tile=tile, compiled=compiled)
    log_n = counts.to(at.dtype).log()
    cols, i_pos, i_neg = [], 0, 0
    for e in exponents:
        if e > 0 and lse_pos is not None:
            cols.append(lse_pos[:, i_pos])
            i_pos += 1
        elif e < 0 and lse_neg is not None:
            cols.append(lse_neg[:, i_neg])
            i_neg += 1
        else:
            cols.append(log_n)
    return torch.stack(cols, dim=1), counts


def _no_weights() -> Tensor:
    raise ValueError("the tiled engine never forms the (A, N) weights; use a row-reducible objective")


def _row_reducible_objectives() -> list[str]:
    """The exported objectives whose class declares ``row_reducible`` (for an error message; the
    full table: :func:`hardneg.engines.capabilities.capability_table`)."""
    import hardneg.objectives as objectives

    return [name for name in objectives.__all__
            if getattr(getattr(objectives, name), "row_reducible", False) is True]


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
            f"{where} supports objectives that reduce row-wise (Objective.row_reducible: "
            f"{', '.join(_row_reducible_objectives())}); got objective={objective!r}. "
            "Raise memory_budget to materialise the score matrix"
        )
    if weights.sinkhorn is not None:
        check_ot_objective(objective)
    return weights


def speed_tile(kind: str, num_anchors: int, num_candidates: int) -> int:
    """The tile side when tiling for speed: on a CPU 512 up to 4096 rows or columns (at B = 1024 a
    fwd + bwd took 0.48 of the materialised time with tiles of 512 against 0.62 with 1024: more
    tile pairs share the symmetric saving), else 1024 (B = 4096: 0.37 with 1024, 0.39 with 512,
    0.44 with 2048; larger tiles leave the caches); 4096 on a GPU (where tiling happens for memory
    only: :attr:`~hardneg._numerics.thresholds.Thresholds.speed_crossover`)."""
    if kind != "cpu":
        return 4096
    return 512 if max(num_anchors, num_candidates) <= 4096 else 1024


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
