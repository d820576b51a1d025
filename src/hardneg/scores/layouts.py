"""Score layouts: from embeddings to :class:`~hardneg.scores.Scores` (step 1 of the loss engine).

Two layouts: SimCLR's 2B views, each view an anchor and every other view a candidate
(:func:`simclr_scores`), and the general one with separate anchors, positives and a candidate
pool — a memory queue, gathered candidates, explicit negatives (:func:`pair_scores`).

Memory is O(anchors × candidates): embeddings are never copied into an (A, K, d) tensor.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import NamedTuple

import torch
from torch import Tensor

from hardneg._numerics.constants import cached_tensors, constant
from hardneg._numerics.thresholds import THRESHOLDS
from hardneg._validation import (
    check_embeddings,
    check_finite_tensor,
    check_same_device,
    check_temperature,
)
from hardneg.scores.value import Scores


@dataclass(frozen=True)
class PreparedPair:
    """Inputs of the pair layout after checks: embeddings in the compute dtype (normalised when
    asked), their detached norms, the optional (A, N) mask, labels and the temperature.

    Args:
        anchors: the anchors, in the compute dtype (normalised when asked).
        positives: each anchor's positive, row-aligned.
        candidates: the candidate pool.
        anchor_norms: the norms of ``anchors`` as stored here (1 when normalised; detached).
        positive_norms: the positives' norms (detached).
        candidate_norms: the candidates' norms (detached).
        mask: optional bool mask, True = valid negative.
        anchor_labels: optional integer labels of the anchors.
        candidate_labels: optional integer labels of the candidates.
        temperature: the checked temperature t.

    Shapes:
        ``anchors``, ``positives`` (A, d); ``candidates`` (N, d); norms (A,), (A,), (N,);
        ``mask`` (A, N) bool; labels (A,), (N,).

    References:
        Oord, Li and Vinyals, arXiv:1807.03748, 2018, eq. (4) (InfoNCE over a candidate set);
        He, Fan, Wu, Xie and Girshick, CVPR 2020, eq. (1) (a queue of candidates).

    Example:
        >>> pp = prepare_pair(torch.ones(2, 3), torch.ones(2, 3), torch.ones(4, 3), temperature=0.5)
        >>> type(pp).__name__, pp.candidates.shape, [round(v, 4) for v in pp.anchor_norms.tolist()]
        ('PreparedPair', torch.Size([4, 3]), [1.0, 1.0])
    """

    anchors: Tensor
    positives: Tensor
    candidates: Tensor
    anchor_norms: Tensor
    positive_norms: Tensor
    candidate_norms: Tensor
    mask: Tensor | None
    anchor_labels: Tensor | None
    candidate_labels: Tensor | None
    temperature: float


__all__ = [
    "PreparedPair",
    "branch_free_normalised",
    "check_two_views",
    "compute_dtype",
    "normalised_rows",
    "norms_in_range",
    "pair_scores",
    "prepare_pair",
    "safe_normalize",
    "simclr_constants",
    "simclr_counts",
    "simclr_layout",
    "simclr_mask",
    "simclr_scores",
]


def compute_dtype(dtype: torch.dtype) -> torch.dtype:
    """The dtype scores are computed in: float32 for float16/bfloat16 inputs, else ``dtype``.

    Half-precision logits lose ~3 significant digits, which at small temperatures makes the
    log-sum-exp meaningless; the (n, d) embeddings are upcast once, before the matmul.

    Args:
        dtype: the embeddings' dtype.

    References:
        Micikevicius et al., "Mixed Precision Training", ICLR 2018, §3.3 (reductions and
        exponentials in float32); Kalamkar et al., "A Study of BFLOAT16 for Deep Learning
        Training", arXiv:1905.12322, 2019 (bfloat16's 8-bit significand).

    Example:
        >>> compute_dtype(torch.bfloat16), compute_dtype(torch.float64)
        (torch.float32, torch.float64)
    """
    return torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype


def safe_normalize(x: Tensor) -> tuple[Tensor, Tensor]:
    """Rows scaled to unit L2 norm without overflow, and the rows' norms (detached).

    Fast path: ``x_i / ‖x_i‖`` when every norm is finite and non-zero (two passes). Otherwise
    ``x̂_i = y_i / ‖y_i‖`` with ``y_i = x_i / max_k |x_ik|``: the same direction (and the same
    gradient: the scale is a detached constant of a scale-invariant map), but ``‖y_i‖ ∈ [1, √d]``
    never overflows or underflows (inputs of magnitude 1e19 made ``F.normalize`` return 0 in
    float32). A zero row stays zero with a bounded gradient (the norm is clamped at 1, which no
    other row can fall below): its direction is undefined, so it contributes logits 0, and its
    gradient is the upstream gradient, not ``1/eps``.

    Shapes: (n, d) → ((n, d), (n,)).
    """
    norm = torch.linalg.vector_norm(x, dim=1, keepdim=True)
    n_det = norm.detach()
    if bool(torch.isfinite(n_det).all()) and bool((n_det > torch.finfo(x.dtype).tiny).all()):
        return x / norm, n_det[:, 0]
    scale = x.detach().abs().amax(dim=1, keepdim=True)
    scale = torch.where(scale > 0, scale, torch.ones_like(scale))
    y = x / scale
    norm = y.norm(dim=1, keepdim=True)
    return y / norm.clamp_min(1.0), (scale * norm.detach())[:, 0]


def _prepare(x: Tensor, normalize: bool, dtype: torch.dtype | None = None) -> tuple[Tensor, Tensor]:
    x = x.to(dtype or compute_dtype(x.dtype))
    if normalize:
        unit, norms = safe_normalize(x)
        return unit, (norms > 0).to(unit.dtype)  # the norms of the normalised rows: 1 (0 for a zero row)
    return x, safe_normalize(x.detach())[1]


def _prepare_many(
    named: list[tuple[str, Tensor]],
    normalize: bool,
    dtype: torch.dtype,
    *,
    temperature: float,
    validate: bool = True,
    mask: Tensor | None = None,
    report: list[tuple[str, Tensor]] | None = None,
) -> list[tuple[Tensor, Tensor]]:
    """:func:`_prepare` of several inputs with every data-dependent check of the call in **one**
    host read (one device synchronisation on a GPU).

    One boolean reduction says whether every input is finite, every row norm lies in
    ``(tiny, ∞)`` (so the two-pass normalisation is exact), the logits of unnormalised inputs stay
    in range (:func:`_check_logit_range`) and no row of ``mask`` is empty. The first input is the
    anchors, the others are checked against it for the logit range. When that read is ``False``
    (a bad input, or a zero / extreme row, which is legal), the inputs are checked one by one
    (raising ``ValueError`` naming the input, or the tensor of ``report`` it was made from) and
    normalised by :func:`safe_normalize`.

    ``validate=False`` reads nothing: the branch-free two-pass normalisation (rows of norm
    ``≤ tiny`` stay zero; norms beyond the dtype's range overflow) and no checks. Inside
    ``torch.compile`` (``validate=True``) the checks become one ``torch._assert_async`` (no graph
    break; a device-side assert on a GPU, ``RuntimeError`` on a CPU) and the two-pass path is taken.
    """
    compiling = torch.compiler.is_compiling()
    if len(named) == 1 and normalize and validate and mask is None and not compiling:
        return _prepare_one(named, dtype, temperature=temperature, report=report)
    xs = [x if x.dtype == dtype else x.to(dtype) for _, x in named]
    # (r, 1) norms when normalising: x / n divides without an unsqueeze (and its backward)
    norms = [
        torch.linalg.vector_norm(x, dim=1, keepdim=True)
        if normalize
        else torch.linalg.vector_norm(x.detach(), dim=1)
        for x in xs
    ]
    checked = False  # every norm known to lie in (tiny, ∞): the plain two-pass normalisation is exact
    if validate:
        finfo = torch.finfo(dtype)
        if compiling:
            flags = [torch.isfinite(n.detach()).all() for n in norms]
            if mask is not None:
                flags.append(mask.any(dim=1).all())
            if not normalize:
                flags.append(_logit_bound(norms, temperature) <= finfo.max / 1e7)
            torch._assert_async(
                torch.stack(flags).all(), "hardneg: non-finite input, logits out of range or empty mask row"
            )
        else:
            with torch.no_grad():  # the flags need no graph (and no detach of the norms)
                # one flag per input: min > tiny and max ≤ finfo.max (NaN fails both comparisons)
                flag = norms_in_range(norms[0], finfo)
                for n in norms[1:]:
                    flag = flag & norms_in_range(n, finfo)
                if mask is not None:
                    flag = flag & mask.any(dim=1).all()
                if not normalize:
                    flag = flag & (_logit_bound(norms, temperature) <= finfo.max / 1e7)
            if not bool(flag):  # the call's one host read
                return _prepare_checked(
                    named, normalize, dtype, temperature=temperature, mask=mask, report=report or named
                )
            checked = True
    if not normalize:
        return [(x, n.detach()) for x, n in zip(xs, norms, strict=True)]
    if checked:  # no zero row: one division per input, unit norms (a cached constant)
        return [(x / n, unit_norms(x.shape[0], dtype, x.device)) for x, n in zip(xs, norms, strict=True)]
    out = []
    for x, n in zip(xs, norms, strict=True):
        unit, nonzero = branch_free_normalised(x, n)
        out.append((unit, nonzero[:, 0].to(dtype)))
    return out


def normalised_rows(x: Tensor, dtype: torch.dtype) -> Tensor | None:
    """``x_i / ‖x_i‖`` in ``dtype`` when every row norm lies in range (:func:`norms_in_range`,
    read once: the call's one host read), else ``None``: the caller takes the checked path
    (:func:`safe_normalize`, or an error naming the input).

    Args:
        x: the rows.
        dtype: the dtype they are normalised in (:func:`compute_dtype`).

    Shapes:
        ``x`` (r, d) → (r, d), or ``None``.

    References:
        Chen, Kornblith, Norouzi and Hinton, ICML 2020, §2.1 (ℓ2-normalised projections).

    Example:
        >>> normalised_rows(torch.tensor([[3.0, 4.0]]), torch.float32).tolist()
        [[0.6000000238418579, 0.800000011920929]]
        >>> normalised_rows(torch.zeros(1, 2), torch.float32) is None  # a zero row: checked path
        True
    """
    x = x if x.dtype == dtype else x.to(dtype)
    n = torch.linalg.vector_norm(x, dim=1, keepdim=True)
    with torch.no_grad():
        ok = norms_in_range(n, torch.finfo(dtype))
    return x / n if bool(ok) else None


def branch_free_normalised(x: Tensor, norms: Tensor) -> tuple[Tensor, Tensor]:
    """``(x_i / ‖x_i‖, nonzero)`` without a host read: a row of norm ≤ tiny (zero, or below float
    underflow) is divided by 1 and stays (near) zero, with the upstream gradient; ``nonzero``
    says which rows were divided by their norm (``validate=False``).

    Args:
        x: the rows, in their compute dtype.
        norms: their norms, keeping the reduced dimension.

    Shapes:
        ``x`` (r, d), ``norms`` (r, 1) → (r, d) and a bool (r, 1).

    References:
        Chen, Kornblith, Norouzi and Hinton, ICML 2020, §2.1 (ℓ2-normalised projections).

    Example:
        >>> x = torch.tensor([[3.0, 4.0], [0.0, 0.0]])
        >>> unit, nonzero = branch_free_normalised(x, torch.linalg.vector_norm(x, dim=1, keepdim=True))
        >>> unit.tolist(), nonzero[:, 0].tolist()
        ([[0.6000000238418579, 0.800000011920929], [0.0, 0.0]], [True, False])
    """
    nonzero = norms.detach() > torch.finfo(x.dtype).tiny
    return x / torch.where(nonzero, norms, 1.0), nonzero


def _prepare_one(
    named: list[tuple[str, Tensor]],
    dtype: torch.dtype,
    *,
    temperature: float,
    report: list[tuple[str, Tensor]] | None,
) -> list[tuple[Tensor, Tensor]]:
    """:func:`_prepare_many` of one input, normalised and checked (SimCLR's 2B views, the common
    call): the same operators and values without the general path's loops."""
    unit = normalised_rows(named[0][1], dtype)
    if unit is None:  # a norm out of range: checked one by one
        report = report or named
        return _prepare_checked(named, True, dtype, temperature=temperature, mask=None, report=report)
    return [(unit, unit_norms(unit.shape[0], dtype, unit.device))]


@cached_tensors(16)
def unit_norms(rows: int, dtype: torch.dtype, device: torch.device) -> Tensor:
    """(rows,) ones: the norms of normalised rows, one cached constant per shape (never modified
    in place; a traced graph (``torch.compile``) never takes this path).

    Args:
        rows: the number of rows.
        dtype: the norms' dtype.
        device: where they live.

    Shapes:
        → (rows,).

    References:
        Chen, Kornblith, Norouzi and Hinton, ICML 2020, §2.1 (ℓ2-normalised projections).

    Example:
        >>> unit_norms(3, torch.float32, torch.device("cpu")).tolist()
        [1.0, 1.0, 1.0]
    """
    return torch.ones(rows, dtype=dtype, device=device)


def norms_in_range(norms: Tensor, finfo: torch.finfo) -> Tensor:
    """``tiny < min(norms)`` and ``max(norms) ≤ finfo.max`` as one 0-dim bool (NaN gives False):
    the row norms of a batch that the plain two-pass normalisation ``x / ‖x‖`` divides exactly.

    Args:
        norms: the row norms.
        finfo: ``torch.finfo`` of their dtype.

    Shapes:
        ``norms`` any shape → a 0-dim bool tensor.

    References:
        IEEE 754-2008 (normal numbers: a norm above the smallest one divides without a subnormal
        quotient; a norm of ``inf`` or NaN is out of range).

    Example:
        >>> f = torch.finfo(torch.float32)
        >>> bool(norms_in_range(torch.tensor([1.0, 2.0]), f))
        True
        >>> bool(norms_in_range(torch.tensor([0.0, 1.0]), f))  # a zero row: the checked path
        False
    """
    if norms.numel() == 0:  # no rows: nothing out of range
        return torch.ones((), dtype=torch.bool, device=norms.device)
    # clamped into [the float after tiny, max] they are unchanged: three operators (NaN ≠ NaN)
    return norms.clamp(_above_tiny(norms.dtype), finfo.max).eq(norms).all()


@functools.lru_cache(maxsize=8)
def _above_tiny(dtype: torch.dtype) -> float:
    """The smallest number of ``dtype`` above its smallest normal number (exact as a float)."""
    tiny = torch.tensor(torch.finfo(dtype).tiny, dtype=dtype)
    return float(torch.nextafter(tiny, torch.ones((), dtype=dtype)))


def _logit_bound(norms: list[Tensor], temperature: float) -> Tensor:
    """``max‖a‖ · max‖c‖ / t`` (Cauchy–Schwarz) with the anchors' norms first, 0-dim."""
    others = torch.stack([n.detach().amax() for n in norms[1:] or norms[:1]])
    return norms[0].detach().amax() * others.amax() / temperature


def _prepare_checked(
    named: list[tuple[str, Tensor]],
    normalize: bool,
    dtype: torch.dtype,
    *,
    temperature: float,
    mask: Tensor | None,
    report: list[tuple[str, Tensor]],
) -> list[tuple[Tensor, Tensor]]:
    """The slow path of :func:`_prepare_many`: per-input checks (raising) and :func:`safe_normalize`."""
    for name, x in report:
        check_finite_tensor(name, x)
    if mask is not None and not bool(mask.any(dim=1).all()):
        row = int((~mask.any(dim=1)).nonzero()[0, 0])
        raise ValueError(
            f"every anchor needs at least one valid negative; mask row {row} is empty (all False)"
        )
    out = [_prepare(x, normalize, dtype) for _, x in named]
    if not normalize:
        names = ", ".join(name for name, _ in named)
        others = torch.cat([n for _, n in out[1:] or out[:1]])
        _check_logit_range(names, out[0][1], others, temperature, dtype)
    return out


def _check_logit_range(name: str, a_norms: Tensor, c_norms: Tensor, t: float, dtype: torch.dtype) -> None:
    """Refuse unnormalised inputs whose logits could overflow: ``max‖a‖·max‖c‖/t`` (Cauchy–Schwarz)
    must stay below ``finfo.max / 1e7`` so that even the hard-negative tilt ``(1+β)·s`` with
    β ≤ 1e6 is finite."""
    bound = float(a_norms.max()) * float(c_norms.max()) / t
    limit = torch.finfo(dtype).max / 1e7
    if not bound <= limit:
        raise ValueError(
            f"{name}: with normalize=False the logits |<a, c>|/t may reach {bound:.3g}, above the "
            f"{dtype} limit {limit:.3g}; scale the embeddings down, raise the temperature, or use "
            "normalize=True"
        )


def _check_labels(name: str, labels: Tensor | None, n: int) -> Tensor | None:
    if labels is None:
        return None
    if not isinstance(labels, Tensor):
        raise TypeError(f"{name} must be a torch.Tensor of integer labels, got {type(labels).__name__}")
    if labels.dtype.is_floating_point or labels.dtype == torch.bool or labels.dtype.is_complex:
        raise TypeError(f"{name} must hold integer labels, got dtype {labels.dtype}")
    if labels.shape != (n,):
        raise ValueError(f"{name} must have shape ({n},), got shape {tuple(labels.shape)}")
    return labels


def _simclr_mask(b: int, device: torch.device, *, rank: int = 0, world_size: int = 1) -> Tensor:
    """:func:`simclr_mask` without the cache (what ``torch.compile`` traces into its graph)."""
    idx = torch.arange(2 * b, device=device)
    mask = torch.ones(2 * b, 2 * b * world_size, dtype=torch.bool, device=device)
    mask[idx, rank * 2 * b + idx] = False
    mask[idx, rank * 2 * b + (idx + b) % (2 * b)] = False
    return mask


@cached_tensors(8)
def simclr_mask(b: int, device: torch.device, *, rank: int = 0, world_size: int = 1) -> Tensor:
    """(2B, 2B·W) validity mask of SimCLR's layout: local view ``i`` is candidate ``rank·2B + i``
    and its other view is candidate ``rank·2B + (i + B) mod 2B``; both are invalid.

    ``W = world_size`` ranks of 2B views each (negatives gathered across processes); W = 1 is the
    single-process (2B, 2B) mask. Cached; never modified in place (distributions that change the
    mask build a new one).
    """
    return _simclr_mask(b, device, rank=rank, world_size=world_size)


def _simclr_counts(b: int, device: torch.device) -> Tensor:
    """:func:`simclr_counts` without the cache (what ``torch.compile`` traces into its graph)."""
    return torch.full((2 * b,), 2 * b - 2, dtype=torch.int32, device=device)


@cached_tensors(8)
def simclr_counts(b: int, device: torch.device) -> Tensor:
    """(2B,) int32 valid-negative counts of SimCLR's single-process layout: 2B − 2 each.
    Cached, as :func:`simclr_mask`; never modified in place."""
    return _simclr_counts(b, device)


def check_two_views(z1: Tensor, z2: Tensor, *, check_finite: bool = True) -> int:
    """Check two row-aligned views (floating (B, d), same shape and device, finite); return B.

    ``check_finite=False`` leaves the finiteness to the caller (:func:`simclr_scores` folds it
    into its one host read).

    Args:
        z1: the first views.
        z2: the second views, row-aligned with ``z1``.
        check_finite: also check that every entry is finite (one host read each).

    Shapes:
        ``z1``, ``z2`` (B, d) → B (int).

    References:
        Chen, Kornblith, Norouzi and Hinton, "A Simple Framework for Contrastive Learning of
        Visual Representations", ICML 2020, eq. (1) and Algorithm 1 (two augmented views per input).

    Example:
        >>> check_two_views(torch.zeros(4, 3), torch.zeros(4, 3))
        4
    """
    check_embeddings("z1", z1, check_finite=False)
    check_embeddings("z2", z2, check_finite=False)
    if z1.shape != z2.shape:
        raise ValueError(
            f"z1 and z2 must have the same shape (B, d), got {tuple(z1.shape)} and {tuple(z2.shape)}"
        )
    check_same_device(z1=z1, z2=z2)
    if check_finite:
        check_finite_tensor("z1", z1)
        check_finite_tensor("z2", z2)
    return int(z1.shape[0])


def simclr_scores(
    z1: Tensor,
    z2: Tensor,
    *,
    temperature: float,
    normalize: bool = True,
    labels: Tensor | None = None,
    validate: bool = True,
) -> Scores:
    """SimCLR's 2B-view layout (Chen et al., ICML 2020; Robinson et al., ICLR 2021, §3, App. D).

    The 2B views ``v = [z1; z2]`` are both the anchors and the candidates: ``s = v vᵀ / t``,
    anchor ``i`` has positive ``(i + B) mod 2B`` and its valid negatives are the other 2B − 2
    views (never itself, never its positive).

    Shapes:
        - ``z1``, ``z2``: (B, d), B ≥ 2 — two views of the same B inputs, row-aligned.
        - ``labels``: optional (B,) integer labels, shared by both views.
        - returns :class:`Scores` with A = N = 2B.

    One (2B × d)·(d × 2B) matmul; the positive logits are row dot products (O(B·d)).
    The data-dependent checks (finite inputs, the logit range of unnormalised inputs) take one
    host read; ``validate=False`` skips them (no host read; see :func:`_prepare_many`).

    Args:
        z1: the first views.
        z2: the second views, row-aligned with ``z1``.
        temperature: t; logits are ``⟨v_i, v_j⟩ / t``.
        normalize: L2-normalise the views first (cosine similarities).
        labels: optional integer labels shared by both views (``< 0``: unknown).
        validate: make the data-dependent checks (one host read).

    References:
        Chen, Kornblith, Norouzi and Hinton, "A Simple Framework for Contrastive Learning of
        Visual Representations", ICML 2020, eq. (1) and Algorithm 1 (NT-Xent over 2B
        views); Robinson, Chuang, Sra and Jegelka, ICLR 2021, §3 and App. D.

    Example:
        >>> s = simclr_scores(torch.randn(3, 4), torch.randn(3, 4), temperature=0.5)
        >>> s.logits.shape, s.mask.sum(dim=1).tolist()
        (torch.Size([6, 6]), [4, 4, 4, 4, 4, 4])
    """
    t = check_temperature(temperature)
    b = check_two_views(z1, z2, check_finite=False)
    return simclr_layout(z1, z2, b, temperature=t, normalize=normalize, labels=labels, validate=validate)


def simclr_layout(
    z1: Tensor,
    z2: Tensor,
    b: int,
    *,
    temperature: float,
    normalize: bool = True,
    labels: Tensor | None = None,
    validate: bool = True,
) -> Scores:
    """:func:`simclr_scores` after its shape checks: the caller has run :func:`check_two_views`
    (which returned ``b``) and checked the temperature, as :func:`hardneg.engines.dispatch.two_view_loss`
    does before it chooses the engine, so a call makes them once. ``B ≥ 2`` and the labels are
    checked here.

    Args:
        z1: the first views.
        z2: the second views, row-aligned with ``z1``.
        b: B, ``z1.shape[0]`` as :func:`check_two_views` returned it.
        temperature: the checked t.
        normalize: L2-normalise the views first.
        labels: optional integer labels shared by both views.
        validate: make the data-dependent checks (one host read).

    Shapes:
        ``z1``, ``z2`` (B, d); ``labels`` (B,) → :class:`Scores` with A = N = 2B.

    References:
        Chen, Kornblith, Norouzi and Hinton, ICML 2020, eq. (1) and Algorithm 1.

    Example:
        >>> z1, z2 = torch.randn(3, 4), torch.randn(3, 4)
        >>> s = simclr_layout(z1, z2, check_two_views(z1, z2), temperature=0.5)
        >>> s.logits.shape
        torch.Size([6, 6])
    """
    t = temperature
    if b < 2:
        raise ValueError(f"batch size B (z1.shape[0]) must be >= 2 to have negatives, got {b}")
    labels = _check_labels("labels", labels, b)

    v = torch.cat([z1, z2], dim=0)
    ((v, norms),) = _prepare_many(
        [("z1, z2", v)],
        normalize,
        compute_dtype(v.dtype),
        temperature=t,
        validate=validate,
        report=[("z1", z1), ("z2", z2)],
    )
    vt = v / constant(t, v)  # scale the (2B, d) side, not the (2B, 2B) product
    logits = vt @ v.T  # (2B, 2B)
    positive = (vt * v.roll(b, dims=0)).sum(dim=1)  # (2B,): row dots, no gather from the matrix
    all_labels = None if labels is None else torch.cat([labels, labels]).to(v.device)
    if torch.compiler.is_compiling():
        # traced into the graph: Dynamo does not trace through functools.lru_cache (and older
        # Dynamo cannot read its __wrapped__)
        return Scores(
            positive=positive, logits=logits, mask=_simclr_mask(b, v.device), temperature=t,
            anchor_norms=norms, positive_norms=norms.roll(b, dims=0), candidate_norms=norms,
            anchor_labels=all_labels, candidate_labels=all_labels,
            valid_counts=_simclr_counts(b, v.device), nonempty=True,
        )
    # eager: the mask, its additive form, N_i and log N_i are cached constants of (B, dtype, device)
    constants = simclr_constants(b, logits.dtype, v.device)
    unit = norms is unit_norms(2 * b, norms.dtype, norms.device)  # the checked path's constant ones
    scores = Scores(
        positive=positive,
        logits=logits,
        mask=constants.mask,
        temperature=t,
        anchor_norms=norms,
        positive_norms=norms if unit else norms.roll(b, dims=0),  # the partner's: (i + B) mod 2B
        candidate_norms=norms,
        anchor_labels=all_labels,
        candidate_labels=all_labels,
        valid_counts=constants.counts,
        nonempty=True,  # 2B − 2 ≥ 2 negatives per anchor
        fill=constants.fill,
        positive_index=constants.partner,  # InfoNCE's cross-entropy form (hardneg.objectives.nce)
        positive_fill=constants.partner_fill,
    )
    return scores.with_counts(constants.num_valid, constants.log_num_valid)


class SimCLRConstants(NamedTuple):
    """What SimCLR's layout at one (B, dtype, device) needs besides the embeddings: the (2B, 2B)
    mask (:func:`simclr_mask`), its additive form ``fill`` (0 valid, −inf invalid), the int32
    counts (:func:`simclr_counts`), ``N_i = 2B − 2`` and ``log N_i`` in the logits' dtype, each
    view's partner ``(i + B) mod 2B`` (int64) and ``partner_fill``, the additive mask of the valid
    negatives and the partner (``−inf`` on the diagonal only).

    The two additive (2B, 2B) masks save operators only on small matrices, the route of
    :meth:`~hardneg.scores.Scores.small_dense` (at most
    :attr:`~hardneg._numerics.thresholds.Thresholds.dense_lse_max`
    entries): above it they are ``None`` (the mask is applied by ``masked_fill``, the same values),
    so the cache never keeps a logits-sized tensor (256 MiB each at B = 4096)."""

    mask: Tensor
    fill: Tensor | None
    counts: Tensor
    num_valid: Tensor
    log_num_valid: Tensor
    partner: Tensor | None
    partner_fill: Tensor | None


@cached_tensors(8)
def simclr_constants(b: int, dtype: torch.dtype, device: torch.device) -> SimCLRConstants:
    """:class:`SimCLRConstants` of B views per side, made once per (B, dtype, device) and cached
    (never modified in place): a call of the layout then builds no mask and converts no count.

    Args:
        b: B, the views per side.
        dtype: the logits' dtype (of ``fill``, ``num_valid`` and ``log_num_valid``).
        device: where the constants live.

    Shapes:
        mask, fill and partner_fill (2B, 2B); counts, num_valid, log_num_valid and partner (2B,);
        fill, partner and partner_fill ``None`` above ``THRESHOLDS.dense_lse_max`` entries.

    References:
        Chen, Kornblith, Norouzi and Hinton, ICML 2020, eq. (1) (the 2B − 2 negatives of each view).

    Example:
        >>> c = simclr_constants(3, torch.float32, torch.device("cpu"))
        >>> c.num_valid.tolist(), c.fill[0].tolist()
        ([4.0, 4.0, 4.0, 4.0, 4.0, 4.0], [-inf, 0.0, 0.0, -inf, 0.0, 0.0])
    """
    mask = simclr_mask(b, device)
    counts = simclr_counts(b, device)
    num_valid = counts.to(dtype)
    if mask.numel() > THRESHOLDS.dense_lse_max:  # large: no logits-sized constant kept (see SimCLRConstants)
        return SimCLRConstants(mask, None, counts, num_valid, num_valid.log(), None, None)
    fill = torch.zeros(mask.shape, dtype=dtype, device=device).masked_fill_(~mask, float("-inf"))
    partner = (torch.arange(2 * b, device=device) + b) % (2 * b)
    partner_fill = torch.zeros(mask.shape, dtype=dtype, device=device).fill_diagonal_(float("-inf"))
    return SimCLRConstants(mask, fill, counts, num_valid, num_valid.log(), partner, partner_fill)


def prepare_pair(
    anchors: Tensor,
    positives: Tensor,
    candidates: Tensor,
    *,
    temperature: float,
    mask: Tensor | None = None,
    normalize: bool = True,
    anchor_labels: Tensor | None = None,
    candidate_labels: Tensor | None = None,
    validate: bool = True,
    report: list[tuple[str, Tensor]] | None = None,
    candidates_normalized: bool = False,
) -> PreparedPair:
    """Validated, promoted (and, if asked, normalised) inputs of :func:`pair_scores`.

    Everything :func:`pair_scores` does except the (A, N) matmul: the tiled engine starts here.
    The data-dependent checks (finite inputs, no empty row of ``mask``, the logit range of
    unnormalised inputs) take one host read together; ``validate=False`` skips them
    (:func:`_prepare_many`). ``report``: the ``(name, tensor)`` pairs an error names, when the
    inputs were made from them (SimCLR's ``z1``, ``z2`` concatenated); default the inputs.

    Used for a memory queue (MoCo-v2; Robinson et al., ICLR 2021, App. C.1), negatives gathered
    from other processes,
    explicit per-anchor negatives (give a ``mask``), or any pairing a user builds.

    Shapes:
        - ``anchors``, ``positives``: (A, d), row-aligned.
        - ``candidates``: (N, d).
        - ``mask``: optional (A, N) bool, True = valid negative (default: all valid).
        - ``anchor_labels`` (A,), ``candidate_labels`` (N,): optional integer labels.

    Mixed floating dtypes are promoted to the widest one (as :func:`torch.cat` does in
    :func:`simclr_scores`); half precision is computed in float32 (:func:`compute_dtype`).

    Args:
        anchors: the anchors.
        positives: each anchor's positive, row-aligned.
        candidates: the candidate pool.
        temperature: t; logits are ``⟨a, c⟩ / t``.
        mask: optional bool mask, True = valid negative.
        normalize: L2-normalise the embeddings first.
        anchor_labels: optional integer labels of the anchors.
        candidate_labels: optional integer labels of the candidates.
        validate: make the data-dependent checks (one host read).
        report: the ``(name, tensor)`` pairs an error names (default: the inputs).
        candidates_normalized: the caller vouches that the candidates are unit rows, finite,
            already in the compute dtype (MoCo's queue stores its keys normalised): with
            ``normalize`` they are neither normalised again nor checked (their norms are taken
            as 1). Ignored unless ``normalize`` and the candidates' dtype is the compute dtype.

    References:
        Oord, Li and Vinyals, arXiv:1807.03748, 2018, eq. (4); He, Fan, Wu, Xie and Girshick,
        CVPR 2020, eq. (1) (a queue of candidates).

    Example:
        >>> pp = prepare_pair(torch.randn(2, 3), torch.randn(2, 3), torch.randn(5, 3), temperature=0.5)
        >>> pp.anchors.shape, pp.mask is None, pp.temperature
        (torch.Size([2, 3]), True, 0.5)
    """
    t = check_temperature(temperature)
    check_embeddings("anchors", anchors, check_finite=False)
    check_embeddings("positives", positives, check_finite=False)
    check_embeddings("candidates", candidates, check_finite=False)
    if anchors.shape != positives.shape:
        raise ValueError(
            "anchors and positives must have the same shape (A, d), got "
            f"{tuple(anchors.shape)} and {tuple(positives.shape)}"
        )
    if candidates.shape[1] != anchors.shape[1]:
        raise ValueError(
            f"candidates must have shape (N, {anchors.shape[1]}) to match the anchors' dimension, "
            f"got {tuple(candidates.shape)}"
        )
    check_same_device(anchors=anchors, positives=positives, candidates=candidates)
    a_n, n_n = anchors.shape[0], candidates.shape[0]
    if mask is not None and (
        not isinstance(mask, Tensor) or mask.dtype != torch.bool or mask.shape != (a_n, n_n)
    ):
        got = (
            f"{mask.dtype} of shape {tuple(mask.shape)}" if isinstance(mask, Tensor) else type(mask).__name__
        )
        raise ValueError(f"mask must be a bool tensor of shape ({a_n}, {n_n}), got {got}")
    anchor_labels = _check_labels("anchor_labels", anchor_labels, a_n)
    candidate_labels = _check_labels("candidate_labels", candidate_labels, n_n)

    widest = torch.promote_types(torch.promote_types(anchors.dtype, positives.dtype), candidates.dtype)
    dtype = compute_dtype(widest)
    named = [("anchors", anchors)]  # the same tensor is checked (and prepared) once
    named += [] if positives is anchors else [("positives", positives)]
    unit = candidates_normalized and normalize and candidates.dtype == dtype and candidates is not anchors
    named += [] if candidates is anchors or unit else [("candidates", candidates)]
    prepared = dict(
        zip(
            [name for name, _ in named],
            _prepare_many(
                named, normalize, dtype, temperature=t, validate=validate, mask=mask, report=report
            ),
            strict=True,
        )
    )
    a, a_norms = prepared["anchors"]
    p, p_norms = prepared.get("positives", (a, a_norms))
    if unit:  # unit rows already (a queue's keys): the same values, without a pass over N·d
        c, c_norms = candidates, torch.ones(n_n, dtype=dtype, device=candidates.device)
    else:
        c, c_norms = prepared.get("candidates", (a, a_norms))
    return PreparedPair(
        anchors=a,
        positives=p,
        candidates=c,
        anchor_norms=a_norms,
        positive_norms=p_norms,
        candidate_norms=c_norms,
        mask=mask,
        anchor_labels=anchor_labels,
        candidate_labels=candidate_labels,
        temperature=t,
    )


def pair_scores(
    anchors: Tensor,
    positives: Tensor,
    candidates: Tensor,
    *,
    temperature: float,
    mask: Tensor | None = None,
    normalize: bool = True,
    anchor_labels: Tensor | None = None,
    candidate_labels: Tensor | None = None,
    validate: bool = True,
    candidates_normalized: bool = False,
) -> Scores:
    """General layout: anchors, their positives, and a separate candidate pool.

    Used for a memory queue (MoCo-v2; Robinson et al., ICLR 2021, App. C.1), negatives gathered
    from other processes, explicit per-anchor negatives (give a ``mask``), or any pairing a user
    builds.

    Shapes:
        - ``anchors``, ``positives``: (A, d), row-aligned.
        - ``candidates``: (N, d).
        - ``mask``: optional (A, N) bool, True = valid negative (default: all valid).
        - ``anchor_labels`` (A,), ``candidate_labels`` (N,): optional integer labels.

    Mixed floating dtypes are promoted to the widest one (as :func:`torch.cat` does in
    :func:`simclr_scores`); half precision is computed in float32 (:func:`compute_dtype`).

    Args:
        anchors: the anchors.
        positives: each anchor's positive, row-aligned.
        candidates: the candidate pool.
        temperature: t; logits are ``⟨a, c⟩ / t``.
        mask: optional bool mask, True = valid negative.
        normalize: L2-normalise the embeddings first.
        anchor_labels: optional integer labels of the anchors.
        candidate_labels: optional integer labels of the candidates.
        validate: make the data-dependent checks (one host read).
        candidates_normalized: the candidates are unit rows already (:func:`prepare_pair`).

    References:
        Oord, Li and Vinyals, arXiv:1807.03748, 2018, eq. (4) (InfoNCE over a candidate set);
        He, Fan, Wu, Xie and Girshick, CVPR 2020, eq. (1); Robinson, Chuang, Sra and Jegelka,
        ICLR 2021, App. C.1.

    Example:
        >>> a, mask = torch.eye(2), torch.tensor([[False, True], [True, True]])
        >>> s = pair_scores(a, a, torch.eye(2), temperature=0.5, mask=mask)
        >>> s.positive.tolist(), s.logits.tolist(), s.mask.sum(dim=1).tolist()
        ([2.0, 2.0], [[2.0, 0.0], [0.0, 2.0]], [1, 2])
    """
    pp = prepare_pair(
        anchors,
        positives,
        candidates,
        temperature=temperature,
        mask=mask,
        normalize=normalize,
        anchor_labels=anchor_labels,
        candidate_labels=candidate_labels,
        validate=validate,
        candidates_normalized=candidates_normalized,
    )
    t = pp.temperature
    at = pp.anchors / t
    positive = (at * pp.positives).sum(dim=1)
    logits = at @ pp.candidates.T
    if pp.mask is None:
        valid = torch.ones(logits.shape, dtype=torch.bool, device=logits.device)
    else:
        valid = pp.mask.to(logits.device)
    return Scores(
        positive=positive,
        logits=logits,
        mask=valid,
        temperature=t,
        anchor_norms=pp.anchor_norms,
        positive_norms=pp.positive_norms,
        candidate_norms=pp.candidate_norms,
        anchor_labels=pp.anchor_labels,
        candidate_labels=pp.candidate_labels,
        nonempty=validate or pp.mask is None,  # N ≥ 1; a mask's rows were checked with the inputs
    )
