"""Arora et al.'s block loss (ICML 2019, §6.3, eq. (12)).

A block is b points of one class represented by the mean of their representations
(:func:`block_means`); :func:`block_loss` is the paper's loss on given blocks. The training
pipeline's ``data.text.block_size`` (``data.dataset: articles``) averages its anchor and positive
blocks with :func:`block_means` and hands the means to the configured
:class:`~hardneg.ContrastiveLoss` (the other blocks of the batch are the negatives): with InfoNCE
at temperature 1 on unnormalised scores that is :func:`block_loss` (logistic, base e) whose
anchor is its own block's mean, m = 2B − 2 negative blocks.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor

from hardneg._validation import check_finite_tensor, check_positive
from hardneg.objectives.hinge import hinge_max

__all__ = ["BLOCK_LOSSES", "block_differences", "block_loss", "block_means"]

BLOCK_LOSSES = ("hinge", "logistic")


def _check(name: str, x: object, dims: int) -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if not x.dtype.is_floating_point:
        raise TypeError(f"{name} must have a floating dtype, got {x.dtype}")
    if x.dim() != dims:
        raise ValueError(f"{name} must have {dims} dimensions, got shape {tuple(x.shape)}")
    check_finite_tensor(name, x)
    return x


def block_means(z: Tensor, block_size: int) -> Tensor:
    """``(N·b, d)`` rows, block-major (block i is rows ``i·b .. i·b + b − 1``) → ``(N, d)`` block means.

    The representation of a block (Arora et al., ICML 2019, §6.3: ``(1/b) Σ_l f(x_l)``).

    Args:
        z: the representations, block-major.
        block_size: b ≥ 1 points per block (1: ``z`` unchanged).

    Shapes:
        ``z`` (N·b, d) → (N, d).

    References:
        Arora, Khandeparkar, Khodak, Plevrakis, Saunshi, *A Theoretical Analysis of Contrastive
        Unsupervised Representation Learning*, ICML 2019, §6.3.

    Example:
        >>> import torch
        >>> block_means(torch.arange(8.0).reshape(4, 2), 2)
        tensor([[1., 2.],
                [5., 6.]])
    """
    if isinstance(block_size, bool) or not isinstance(block_size, int) or block_size < 1:
        raise ValueError(f"block_size must be an int >= 1, got {block_size!r}")
    if z.dim() != 2 or z.shape[0] % block_size:
        raise ValueError(f"z must have shape (N * {block_size}, d), got {tuple(z.shape)}")
    if block_size == 1:
        return z
    return z.reshape(z.shape[0] // block_size, block_size, z.shape[1]).mean(dim=1)


def block_differences(
    anchors: Tensor, positive_blocks: Tensor, negative_blocks: Tensor, *, normalize: bool = False
) -> Tensor:
    r"""``v_ik = f(x_i)ᵀ( (1/b) Σ_l f(x⁺_il) − (1/b) Σ_l f(x⁻_ikl) )`` (A, m).

    Args:
        anchors: the anchors' representations ``f(x_i)``.
        positive_blocks: each anchor's positive block of b points.
        negative_blocks: each anchor's m negative blocks of b points.
        normalize: L2-normalise every representation first (default False, as in the paper).

    Shapes:
        ``anchors`` (A, d), ``positive_blocks`` (A, b, d), ``negative_blocks`` (A, m, b, d) →
        (A, m).

    References:
        Arora, Khandeparkar, Khodak, Plevrakis, Saunshi, ICML 2019, §6.3, eq. (12).

    Example:
        >>> import torch
        >>> v = block_differences(torch.ones(1, 2), torch.ones(1, 3, 2), torch.zeros(1, 4, 3, 2))
        >>> v
        tensor([[2., 2., 2., 2.]])
    """
    _check("anchors", anchors, 2)
    _check("positive_blocks", positive_blocks, 3)
    _check("negative_blocks", negative_blocks, 4)
    a, d = anchors.shape
    if positive_blocks.shape[0] != a or positive_blocks.shape[2] != d:
        raise ValueError(f"positive_blocks must have shape ({a}, b, {d}), got {tuple(positive_blocks.shape)}")
    b = positive_blocks.shape[1]
    if negative_blocks.shape[0] != a or negative_blocks.shape[2] != b or negative_blocks.shape[3] != d:
        raise ValueError(
            f"negative_blocks must have shape ({a}, m, {b}, {d}) (block size b = {b} as the positives), "
            f"got {tuple(negative_blocks.shape)}"
        )
    if normalize:
        anchors = F.normalize(anchors, dim=-1)
        positive_blocks = F.normalize(positive_blocks, dim=-1)
        negative_blocks = F.normalize(negative_blocks, dim=-1)
    m = negative_blocks.shape[1]
    pos_mean = block_means(positive_blocks.reshape(a * b, d), b)  # (A, d)
    neg_mean = block_means(negative_blocks.reshape(a * m * b, d), b).reshape(a, m, d)  # (A, m, d)
    return (anchors * pos_mean).sum(-1)[:, None] - torch.einsum("ad,amd->am", anchors, neg_mean)


def block_loss(
    anchors: Tensor,
    positive_blocks: Tensor,
    negative_blocks: Tensor,
    *,
    loss: str = "logistic",
    margin: float = 1.0,
    base: float = 2.0,
    normalize: bool = False,
    reduction: str = "mean",
) -> Tensor:
    r"""The block contrastive loss ``L_un^block`` of Arora et al. (ICML 2019), eq. (12).

        L_i = ℓ( {v_ik}_{k=1..m} ),   v_ik = f(x_i)ᵀ( mean_l f(x⁺_il) − mean_l f(x⁻_ikl) ),

    with ℓ the k-way hinge ``max{0, margin + max_k(−v_ik)}`` or logistic
    ``log_base(1 + Σ_k e^{−v_ik})`` loss of Def. 2.3 — base 2 by default, as in Def. 2.3, so that
    ℓ(0) = 1 and the value can be fed to the bounds of :mod:`hardneg.theory.arora` (Proposition 6.2);
    ``base=math.e`` is the natural-log form the training objectives (``Logistic``) optimise.
    m = 1 is eq. (12) and m > 1 the extension "analogous to Equation (5)". The anchor x is the first
    point of its block, the b positives the rest; averaging a block's representations makes the
    loss a tighter surrogate of the supervised loss than pairs (Proposition 6.2). Choose it when
    the data come in blocks of same-class points (sentences of a paragraph, Wiki-3029 articles).

    The inputs are small, so the blocks are given explicitly rather than as a candidate pool.

    Args:
        anchors: the anchors' representations ``f(x_i)``.
        positive_blocks: each anchor's positive block of b points.
        negative_blocks: each anchor's m negative blocks of b points.
        loss: ``"logistic"`` (default) or ``"hinge"``.
        margin: the hinge's margin ≥ 0 (default 1).
        base: the logistic loss's logarithm base > 1 (default 2, Def. 2.3).
        normalize: L2-normalise every representation first (default False).
        reduction: ``"mean"`` (default), ``"sum"`` or ``"none"``.

    Shapes:
        ``anchors`` (A, d), ``positive_blocks`` (A, b, d), ``negative_blocks`` (A, m, b, d)
        → scalar, or (A,) with ``reduction="none"``.

    References:
        Arora, Khandeparkar, Khodak, Plevrakis, Saunshi, *A Theoretical Analysis of Contrastive
        Unsupervised Representation Learning*, ICML 2019, §6.3, eq. (12), Def. 2.3 and
        Proposition 6.2.

    Example:
        >>> import torch
        >>> anchors, pos, neg = torch.zeros(3, 2), torch.randn(3, 4, 2), torch.randn(3, 5, 4, 2)
        >>> block_loss(anchors, pos, neg)  # v = 0: log₂(1 + m) with m = 5 negative blocks
        tensor(2.5850)
        >>> block_loss(anchors, pos, neg, loss="hinge", reduction="none")
        tensor([1., 1., 1.])
    """
    if loss not in BLOCK_LOSSES:
        raise ValueError(f"loss must be one of {BLOCK_LOSSES}, got {loss!r}")
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"reduction must be one of ('mean', 'sum', 'none'), got {reduction!r}")
    if check_positive("base", base) <= 1.0:
        raise ValueError(f"base must be a finite number > 1, got {base!r}")
    margin = check_positive("margin", margin, strict=False)
    v = block_differences(anchors, positive_blocks, negative_blocks, normalize=normalize)
    if loss == "hinge":
        per = hinge_max(v, torch.ones_like(v, dtype=torch.bool), margin=margin)
    else:
        per = F.softplus(torch.logsumexp(-v, dim=1)) / math.log(base)
    if reduction == "mean":
        return per.mean()
    if reduction == "sum":
        return per.sum()
    return per
