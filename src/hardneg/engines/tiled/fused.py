"""``engine="fused"``: the tiled engine with its log-sum-exps computed by one fused Triton kernel.

The kernel (:mod:`hardneg.engines.tiled.triton_lse`, imported only when it runs) replaces
:func:`~hardneg.engines.tiled.lse.tiled_lse` and :func:`~hardneg.engines.tiled.symmetric.tiled_lse_symmetric`
under the same tiling protocol: the distribution declares its tilt
(:meth:`~hardneg.negatives.NegativeDistribution.tile_weights`, :mod:`hardneg.negatives.tiling`),
the objective its row form (``Objective.row_reducible``), and the kernel streams the
log-sum-exps of the exponents the tilt declares — of any sign, so Uniform, Hard at any β and a
user's tilted distribution run on it without a kernel of their own. What it does not express
falls back, with the reason in :meth:`hardneg.ContrastiveLoss.engine_for`
(:func:`fused_refusal`): a streamed Sinkhorn coupling (optimal-transport negatives) and
objectives that read the ramp mean or the largest logit (Hinge, Triplet) go to the tiled engine,
K-subsampled negatives to the gathered engine (as ``engine="auto"`` does) or the tiled one, and
a batch on a device without CUDA to the tiled engine (Triton compiles for GPUs; its interpreter,
``TRITON_INTERPRET=1``, runs the kernel on a CPU for tests).

This module imports no triton: without the ``gpu`` extra the package is unchanged, and
``engine="fused"`` raises one ``ModuleNotFoundError`` naming ``engine`` and the extra
(:func:`require_triton`). ``engine="auto"`` never picks the fused engine: no device measurement
of it exists yet (``benchmarks/bench_gpu.py`` makes one).
"""

from __future__ import annotations

import os

from torch import Tensor

from hardneg._packages import require_extra
from hardneg.engines.tiled.coupling import check_ot_objective
from hardneg.engines.tiled.mask import TileMask
from hardneg.negatives.base import NegativeDistribution
from hardneg.negatives.subsample import identity_unwrapped, split_subsample
from hardneg.objectives.base import Objective

__all__ = [
    "TRITON_MIN", "fused_lse", "fused_lse_symmetric", "fused_refusal", "interpreting", "require_triton",
    "triton_too_old",
]

# The oldest triton the kernels are tested on: the interpreter of triton 3.0–3.6 passes runtime
# scalars as one-element arrays and refuses the kernels' loops (measured: the interpreter tests fail
# on 3.0.0, 3.2.0, 3.3.1, 3.4.0, 3.5.1, 3.6.0 and pass on 3.7.1, 3.8.0, 3.9.0).
TRITON_MIN = "3.7"


def _release(version: str) -> tuple[int, ...]:
    """``"3.7.1+git"`` → ``(3, 7, 1)``: the leading numeric release of a version string."""
    parts = []
    for piece in version.split("+")[0].split("."):
        digits = "".join(c for c in piece if c.isdigit()) if piece[:1].isdigit() else ""
        if not digits:
            break
        parts.append(int(digits))
    return tuple(parts)


def triton_too_old(version: str) -> bool:
    """Whether ``version`` (triton's) is older than :data:`TRITON_MIN`.

    Example:
        >>> triton_too_old("3.0.0"), triton_too_old("3.7.1"), triton_too_old("3.10.0+git1")
        (True, False, False)
    """
    return _release(version) < _release(TRITON_MIN)


def require_triton() -> None:
    """``ModuleNotFoundError`` naming ``engine='fused'`` and the ``gpu`` extra when triton is not
    installed (``find_spec`` only: nothing is imported), or is older than :data:`TRITON_MIN`
    (read from its installed metadata).

    Example:
        >>> from hardneg._packages import is_installed
        >>> require_triton() if is_installed("triton") else None
    """
    require_extra("gpu", "engine='fused'", modules=["triton"])
    from importlib.metadata import version

    installed = version("triton")
    if triton_too_old(installed):
        raise ModuleNotFoundError(
            f"engine='fused' needs triton>={TRITON_MIN} (the gpu extra: pip install \"hardneg[gpu]\"), "
            f"got triton {installed}", name="triton")


def interpreting() -> bool:
    """Whether Triton's interpreter is on (``TRITON_INTERPRET`` set to 1 / true / on / yes, as
    triton reads it): the kernels then run on CPU tensors."""
    return os.environ.get("TRITON_INTERPRET", "").strip().lower() in {"1", "true", "on", "yes"}


def fused_refusal(
    negatives: NegativeDistribution, objective: Objective, device_type: str, *, num_valid: int | None = None
) -> str | None:
    """Why the fused kernel does not compute this batch (``None``: it does), for a distribution and
    objective the tiled engine accepts (:func:`~hardneg.engines.choice.check_tileable`).

    Args:
        negatives: the negative distribution (possibly wrapped in Subsample / CollisionFree).
        objective: the objective it feeds.
        device_type: the embeddings' device type (``"cuda"``, ``"cpu"``, …).
        num_valid: the most valid candidates an anchor can have (a ``Subsample`` with K at least
            this is the identity and counts as its base).

    Shapes:
        none (decided from the settings alone).

    References:
        Dao, Fu, Ermon, Rudra and Ré, "FlashAttention", NeurIPS 2022, Algorithm 1 (the fused tile
        loop, which keeps per-row statistics only: a Sinkhorn coupling's column marginals and a
        drawn mask are not per-row statistics of the tile).

    Example:
        >>> from hardneg import negatives, objectives
        >>> fused_refusal(negatives.Hard(beta=1.0), objectives.InfoNCE(), "cuda") is None
        True
        >>> fused_refusal(negatives.Hard(beta=1.0), objectives.Hinge(), "cuda")[:48]
        "objective=Hinge(margin=1.0, aggregate='max') rea"
        >>> fused_refusal(negatives.Subsample(num_negatives=8), objectives.InfoNCE(), "cuda")
        'K-subsampled negatives: the kernel makes no drawn mask'
    """
    if device_type != "cuda" and not interpreting():
        return (
            f"device type {device_type!r}: Triton compiles the kernel for CUDA devices "
            "(TRITON_INTERPRET=1 runs it on a CPU)"
        )
    base, sub, _ = split_subsample(identity_unwrapped(negatives, num_valid))
    if sub is not None:
        return "K-subsampled negatives: the kernel makes no drawn mask"
    weights = base.tile_weights()
    if weights is not None and weights.sinkhorn is not None:
        return "a streamed Sinkhorn coupling: its column marginals are not row statistics of a tile"
    try:
        check_ot_objective(objective)  # the objectives that read only log Σ_j w_ij e^{s_ij}
    except ValueError:
        return (
            f"objective={objective!r} reads the ramp mean or the largest logit, "
            "not only log Σ_j w_ij e^{s_ij}"
        )
    return None


def fused_lse(
    anchors: Tensor, candidates: Tensor, exponents: tuple[float, ...], rule: TileMask
) -> tuple[Tensor, Tensor]:
    """``(L, N)`` of :func:`~hardneg.engines.tiled.lse.tiled_lse` (masked ``log Σ_j e^{a_e s_ij}`` (A, E)
    and valid counts (A,) int64) by the fused kernel, exponents of any sign.

    Shapes: ``anchors`` (A, d) (divided by the temperature), ``candidates`` (N, d) → (A, E), (A,).
    """
    require_triton()
    from hardneg.engines.tiled.triton_lse import lse

    return lse(anchors, candidates, exponents, rule)


def fused_lse_symmetric(
    v: Tensor, scale: float, exponents: tuple[float, ...], rule: TileMask
) -> tuple[Tensor, Tensor]:
    """``(L, N)`` of :func:`~hardneg.engines.tiled.symmetric.tiled_lse_symmetric` (logits ``scale·⟨v_i,
    v_j⟩``, a symmetric mask) by the fused kernel; the backward is one row-block kernel.

    Shapes: ``v`` (n, d) → (n, E), (n,).
    """
    require_triton()
    from hardneg.engines.tiled.triton_lse import lse_symmetric

    return lse_symmetric(v, scale, exponents, rule)
