r"""Negatives from an entropic optimal-transport coupling (Jiang, Ishwar, Aeron, arXiv:2111.03169, §VI).

The coupling between anchors and candidates with uniform marginals and a forbidden diagonal
(no self-coupling, never the positive) is computed by the batched log-domain Sinkhorn solver of
:mod:`hardneg.negatives.sinkhorn`.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import Tensor

from hardneg import _warnings
from hardneg._validation import check_positive
from hardneg.negatives.base import NegativeDistribution, normalize_log_weights
from hardneg.negatives.sinkhorn import METHODS, SinkhornResult, sinkhorn_log
from hardneg.negatives.tiling import SinkhornTiles, TileWeights
from hardneg.negatives.weighted import WeightedScores
from hardneg.scores import Scores

__all__ = ["OptimalTransport", "ground_cost", "ot_log_kernel", "ot_log_weights"]

CostFn = Callable[[Scores], Tensor]
COSTS = ("sqeuclidean", "exp")


def ground_cost(scores: Scores, cost: str = "sqeuclidean", *, kappa: float = 1.0) -> Tensor:
    r"""Ground cost (A, N) between anchors and candidates, read off the scores.

    - ``"sqeuclidean"``: ``C_ij = ‖â_i − ĉ_j‖² = 2 − 2 cos_ij`` between the L2-normalised
      embeddings, with ``cos_ij = s_ij t / (‖a_i‖ ‖c_j‖)`` recovered from the logits and the
      (detached) norms in :class:`Scores` — the authors' ``cost_fun`` on normalised outputs.
    - ``"exp"``: ``C_ij = exp(‖â_i − ĉ_j‖² − κ)`` (Jiang et al., §VII, the authors' ``new_cost``).

    Masked entries are not special here (the solver forbids them).

    Args:
        scores: the scores (logits, temperature and the embeddings' norms).
        cost: ``"sqeuclidean"`` (default) or ``"exp"``.
        kappa: κ of the ``"exp"`` cost (default 1).

    Shapes:
        ``scores`` (A, N) → (A, N), values in [0, 4] for ``"sqeuclidean"``.

    References:
        Jiang, Ishwar, Aeron, *Hard Negative Sampling via Regularized Optimal Transport for
        Contrastive Representation Learning*, arXiv:2111.03169, §VI (squared Euclidean cost)
        and §VII (exponential cost).

    Example:
        >>> import torch
        >>> from hardneg.scores import simclr_scores
        >>> scores = simclr_scores(torch.randn(4, 8), torch.randn(4, 8), temperature=0.5)
        >>> c = ground_cost(scores)
        >>> c.shape, bool(((c >= 0) & (c <= 4)).all())
        (torch.Size([8, 8]), True)
    """
    denom = (scores.anchor_norms[:, None] * scores.candidate_norms[None, :]).clamp_min(1e-12)
    cos = (scores.logits * scores.temperature / denom).clamp(-1.0, 1.0)
    d2 = 2.0 - 2.0 * cos
    if cost == "sqeuclidean":
        return d2
    if cost == "exp":
        return torch.exp(d2 - kappa)  # d2 ∈ [0, 4]: bounded, not a raw logit
    raise ValueError(f"cost must be one of {COSTS} or a callable Scores -> (A, N) tensor, got {cost!r}")


def ot_log_kernel(
    scores: Scores, *, epsilon: float, cost: str | CostFn = "sqeuclidean", kappa: float = 1.0
) -> Tensor:
    """``K = −C/ε`` (A, N) with ``−inf`` on invalid entries, up to an additive constant.

    For the default cost ``C = 2 − 2cos`` the constant ``−2/ε`` is dropped (it changes neither
    the coupling nor the weights): ``K_ij = 2 s_ij t / (ε ‖a_i‖ ‖c_j‖)``, one pass over the
    logits when the embeddings are normalised. A callable cost must return an (A, N) tensor.

    Args:
        scores: the scores (logits, mask, temperature, norms).
        epsilon: entropic regularisation ε > 0.
        cost: ``"sqeuclidean"`` (default), ``"exp"`` or a callable ``Scores -> (A, N)`` cost.
        kappa: κ of the ``"exp"`` cost (default 1).

    Shapes:
        ``scores`` (A, N) → (A, N), ``−inf`` off ``scores.mask``.

    References:
        Jiang, Ishwar, Aeron, arXiv:2111.03169, eq. (5)–(7) (the Gibbs kernel ``e^{−C/ε}`` of the
        entropic coupling); Cuturi, *Sinkhorn Distances*, NeurIPS 2013.

    Example:
        >>> import torch
        >>> from hardneg.scores import simclr_scores
        >>> scores = simclr_scores(torch.randn(4, 8), torch.randn(4, 8), temperature=0.5)
        >>> k = ot_log_kernel(scores, epsilon=0.5)
        >>> k.shape, bool(torch.isinf(k[~scores.mask]).all())
        (torch.Size([8, 8]), True)
    """
    if isinstance(cost, str) and cost == "sqeuclidean":
        scale = 2.0 * scores.temperature / epsilon
        an, cn = scores.anchor_norms, scores.candidate_norms
        if bool((an - 1).abs().amax() < 1e-5) and bool((cn - 1).abs().amax() < 1e-5):
            k = scores.logits * scale
        else:
            denom = (an[:, None] * cn[None, :]).clamp_min(1e-12)
            k = (scores.logits * scale / denom).clamp(-2.0 / epsilon, 2.0 / epsilon)
        return k.masked_fill(~scores.mask, float("-inf"))
    if callable(cost):
        c = cost(scores)
        if not isinstance(c, Tensor) or c.shape != scores.logits.shape:
            got = tuple(c.shape) if isinstance(c, Tensor) else type(c).__name__
            raise ValueError(
                f"cost callable must return a tensor of shape {tuple(scores.logits.shape)}, got {got}"
            )
        c = c.to(scores.logits.dtype)
    else:
        c = ground_cost(scores, cost, kappa=kappa)
    return (-c / epsilon).masked_fill(~scores.mask, float("-inf"))


def _all_active(mask: Tensor) -> bool:
    return bool(mask.all()) or (bool(mask.any(dim=1).all()) and bool(mask.any(dim=0).all()))


def ot_log_weights(
    log_kernel: Tensor,
    mask: Tensor,
    num_valid: Tensor,
    *,
    tol: float = 1e-6,
    max_iter: int = 1000,
    method: str = "stabilized",
    differentiable: bool = False,
) -> tuple[Tensor, SinkhornResult]:
    r"""Log weights ``ℓ_ij = log(N_i · P*(j | i))`` of the entropic coupling with uniform marginals.

    Jiang et al. (arXiv:2111.03169), eq. (5)–(7) and Lemma 3: with ``a = 1/A'`` over the anchors
    and ``b = 1/N'`` over the candidates (A', N': rows/columns with at least one valid entry),
    ``P*_ij = a_i b_j e^{f_i + K_ij + g_j}``, and

        ℓ_ij = K_ij + g_j − log Σ_{k valid} e^{K_ik + g_k} + log N_i   (−inf off the mask).

    The Sinkhorn iterations run on the active rows/columns only; with ``differentiable=False``
    the coupling is a constant (no graph), as in the authors' code (which solves it in numpy).

    Args:
        log_kernel: ``K = −C/ε`` with ``−inf`` off the mask (:func:`ot_log_kernel`).
        mask: each anchor's valid candidates.
        num_valid: ``N_i``, valid candidates per anchor.
        tol: stop when the row marginals' L1 error is ≤ tol (default 1e-6).
        max_iter: iteration cap (default 1000).
        method: ``"stabilized"`` (default) or ``"log"`` (:func:`sinkhorn_log`).
        differentiable: back-propagate through the iterations (default False: a constant).

    Shapes:
        ``log_kernel`` (A, N), ``mask`` (A, N) bool, ``num_valid`` (A,) →
        ``(ℓ (A, N), SinkhornResult)``.

    References:
        Jiang, Ishwar, Aeron, *Hard Negative Sampling via Regularized Optimal Transport for
        Contrastive Representation Learning*, arXiv:2111.03169, eq. (5)–(7) and Lemma 3.

    Example:
        >>> import torch
        >>> from hardneg.scores import simclr_scores
        >>> scores = simclr_scores(torch.randn(4, 8), torch.randn(4, 8), temperature=0.5)
        >>> k = ot_log_kernel(scores, epsilon=0.5)
        >>> ell, result = ot_log_weights(k, scores.mask, scores.num_valid())
        >>> result.converged, bool(torch.allclose(ell.exp().sum(1), scores.num_valid().to(ell.dtype)))
        (True, True)
    """
    with torch.set_grad_enabled(differentiable and torch.is_grad_enabled()):
        k = log_kernel
        active = _all_active(mask)
        rows = cols = None
        if active:
            kc = k
        else:
            rows = torch.nonzero(mask.any(dim=1)).flatten()
            cols = torch.nonzero(mask.any(dim=0)).flatten()
            kc = k[rows][:, cols]
        na, nc = kc.shape
        log_a = torch.full((na,), -math.log(na), dtype=k.dtype, device=k.device)
        log_b = torch.full((nc,), -math.log(nc), dtype=k.dtype, device=k.device)
        res = sinkhorn_log(kc, log_a, log_b, tol=tol, max_iter=max_iter, method=method)
        if rows is None or cols is None:
            g, row_lse = res.g, res.row_lse
        else:
            g = k.new_zeros(k.shape[1]).index_put((cols,), res.g)
            row_lse = k.new_zeros(k.shape[0]).index_put((rows,), res.row_lse)
        if differentiable:
            ell = normalize_log_weights(k + g[None, :], mask)
        else:  # two passes: K + g, then the row normaliser read off the last iteration
            ell = (k + g[None, :]).add_((num_valid.log() - row_lse)[:, None]).detach()
    return ell, res


class OptimalTransport(NegativeDistribution):
    r"""Hard negatives as the entropic OT coupling between anchors and candidates.

    Jiang, Ishwar, Aeron (arXiv:2111.03169), eq. (5)–(7), Lemma 3; the authors' ``OT_hard``.
    With ground cost ``C`` (A, N), infinite on forbidden pairs (``mask = False``: the anchor
    itself, its positive, and whatever else the mask excludes) and uniform marginals,

        P* = argmin_{P ∈ Π(a, b)} ⟨C, P⟩ + ε KL(P ‖ a ⊗ b),

    and the negatives of anchor i are weighted by the conditional coupling scaled to mean one,
    ``w_ij = N_i · P*(j | i)`` (:func:`ot_log_weights`). The authors multiply ``e^{s}`` by
    ``P* · 2B · N``, which is the same since ``Σ_j P*_ij = 1/2B``. Unlike the exponential tilt
    ``e^{β s_ij}`` of :class:`~hardneg.negatives.Hard`, the column potential ``g_j`` also
    enters: a candidate close to many anchors is shared among them (marginal constraint);
    without it the weights would be the tilt ``e^{β s_ij}`` with ``β = 2t/ε`` for the default cost
    ``‖â − ĉ‖² = 2 − 2cos`` (``K_ij = 2cos_ij/ε = 2t s_ij/ε``). The paper's cost is half of it,
    ``½‖f(x) − f(x⁻)‖²`` (eq. 7, normalised outputs): its ε is this one's ε / 2, so the paper's
    ε = 0.5 is ``epsilon=1.0`` here (``β = t/ε`` in the paper's scale).
    Smaller ε → harder negatives (ε → ∞: uniform). The paper uses ε ∈ [0.05, 1].

    Convergence is never silent: each call's iterations, marginal error and whether it converged
    are in the diagnostics (``ot_iterations``, ``ot_marginal_error``, ``ot_converged``), and a
    ``RuntimeWarning`` is raised when ``max_iter`` is reached before ``tol``. With arbitrary
    masks (e.g. after :class:`Subsample`) a coupling with uniform marginals may not exist; the
    warning says so.

    **Beyond the memory budget** (or ``engine="tiled"``) :class:`~hardneg.ContrastiveLoss` solves
    the same coupling without the (A, N) matrix (:mod:`hardneg.engines.tiled.coupling`: each Sinkhorn
    iteration
    one sweep over row strips recomputed from the embeddings, memory O((A + N)·d + strip)), with
    the same iterates, stopping rule, values and gradients, for ``differentiable=False``, a string
    ``cost`` and the objectives that read ``log Σ_j w_ij e^{s_ij}`` (InfoNCE, Debiased, Logistic).

    **Per rank** under DDP: each process solves the transport problem between its *local*
    anchors and the gathered candidates (the row marginal is that of the local batch), which is
    not the coupling of the concatenated batch; see :mod:`hardneg.distributed`.

    When to choose it: the marginal constraint keeps every candidate in use as some anchor's
    negative (no candidate is hard for everyone), at the price of a few Sinkhorn iterations per
    batch; for the plain exponential tilt use :class:`~hardneg.negatives.Hard`.

    Args:
        epsilon: entropic regularisation ε > 0 (the paper's ``reg``).
        cost: ``"sqeuclidean"`` (default, ``‖â − ĉ‖² = 2 − 2cos``, computed from the logits),
            ``"exp"`` (``exp(‖â − ĉ‖² − κ)``, Jiang et al. §VII), or a callable
            ``Scores -> (A, N)`` cost tensor.
        kappa: κ of the ``"exp"`` cost (the authors' default 1).
        tol: stop when the L1 error of the row marginals is ≤ tol.
        max_iter: iteration cap (one iteration = one row and one column update).
        differentiable: back-propagate through the unrolled Sinkhorn iterations (default False).
        method: ``"stabilized"`` (fast) or ``"log"`` (plain log-domain); see
            :func:`~hardneg.negatives.sinkhorn_log`.

    Shapes:
        ``scores`` (A, N) → :class:`~hardneg.negatives.WeightedScores`: log weights ℓ (A, N)
        (:func:`ot_log_weights`), ``info`` with the solve's iterations and marginal error.

    References:
        Jiang, Ishwar, Aeron, *Hard Negative Sampling via Regularized Optimal Transport for
        Contrastive Representation Learning*, arXiv:2111.03169, eq. (5)–(7), Lemma 3, §VI;
        Cuturi, *Sinkhorn Distances*, NeurIPS 2013.

    Example:
        >>> import torch
        >>> from hardneg import ContrastiveLoss
        >>> from hardneg.negatives import OptimalTransport
        >>> ot = ContrastiveLoss(temperature=0.5, negatives=OptimalTransport(epsilon=0.5))
        >>> loss = ot(torch.randn(8, 16), torch.randn(8, 16))
        >>> loss.shape, bool(torch.isfinite(loss))
        (torch.Size([]), True)
    """

    def __init__(
        self,
        *,
        epsilon: float,
        cost: str | CostFn = "sqeuclidean",
        kappa: float = 1.0,
        tol: float = 1e-6,
        max_iter: int = 1000,
        differentiable: bool = False,
        method: str = "stabilized",
    ):
        super().__init__()
        self.epsilon = check_positive("epsilon", epsilon)
        if not callable(cost) and cost not in COSTS:
            raise ValueError(
                f"cost must be one of {COSTS} or a callable Scores -> (A, N) tensor, got {cost!r}"
            )
        self.cost = cost
        if isinstance(kappa, bool) or not isinstance(kappa, (int, float)) or not math.isfinite(kappa):
            raise ValueError(f"kappa must be a finite real number, got {kappa!r}")
        self.kappa = float(kappa)
        self.tol = check_positive("tol", tol)
        if isinstance(max_iter, bool) or not isinstance(max_iter, int) or max_iter < 1:
            raise ValueError(f"max_iter must be an int >= 1, got {max_iter!r}")
        self.max_iter = max_iter
        self.differentiable = bool(differentiable)
        if method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, got {method!r}")
        self.method = method

    def log_kernel(self, scores: Scores) -> Tensor:
        """:func:`ot_log_kernel` with this distribution's ε, cost and κ."""
        with torch.set_grad_enabled(self.differentiable and torch.is_grad_enabled()):
            return ot_log_kernel(scores, epsilon=self.epsilon, cost=self.cost, kappa=self.kappa)

    def solve(self, scores: Scores) -> tuple[Tensor, SinkhornResult]:
        """``(ℓ, SinkhornResult)`` of prepared ``scores`` (warns when Sinkhorn did not converge)."""
        ell, res = ot_log_weights(
            self.log_kernel(scores), scores.mask, scores.num_valid(), tol=self.tol,
            max_iter=self.max_iter, method=self.method, differentiable=self.differentiable,
        )
        if not res.converged:
            self.warn_not_converged()
        return ell, res

    def warn_not_converged(self) -> None:
        """The ``RuntimeWarning`` of a solve that stopped at ``max_iter`` (both engines), at the
        user's line (:func:`hardneg._warnings.warn`)."""
        # one text per setting, so Python shows it once per process, not once per step; the
        # error of each call is in the SinkhornResult (``details``)
        _warnings.warn(
            f"OptimalTransport: Sinkhorn stopped at max_iter={self.max_iter} with a row-marginal "
            f"L1 error above tol={self.tol:g} (epsilon={self.epsilon:g}); increase max_iter or "
            "epsilon, or check that the mask admits a coupling with uniform marginals (shown "
            "once; each call's error is in its SinkhornResult)",
            RuntimeWarning,
        )

    def log_weights(self, scores: Scores) -> Tensor | None:
        return self.solve(scores)[0]

    def tile_weights(self) -> TileWeights | None:
        """A streamed Sinkhorn (:mod:`hardneg.engines.tiled.coupling`) for ``differentiable=False`` and a
        string
        ``cost``; ``None`` otherwise (:meth:`tile_refusal`)."""
        if self.differentiable or not isinstance(self.cost, str):
            return None
        spec = SinkhornTiles(
            epsilon=self.epsilon, cost=self.cost, kappa=self.kappa, tol=self.tol,
            max_iter=self.max_iter, method=self.method, warn_not_converged=self.warn_not_converged,
        )
        return TileWeights(sinkhorn=spec)

    def tile_refusal(self) -> str:
        """What keeps these settings from the streamed Sinkhorn."""
        problems = []
        if self.differentiable:
            problems.append("differentiable=True (gradients through the unrolled Sinkhorn iterations)")
        if not isinstance(self.cost, str):
            problems.append(f"a callable cost ({self.cost!r})")
        return (
            "the tiled engine computes OptimalTransport negatives with differentiable=False and a "
            "string cost; got " + "; ".join(problems)
        )

    def weigh(self, scores: Scores) -> WeightedScores:
        ell, res = self.solve(scores)
        info = {
            "ot_iterations": float(res.iterations),
            "ot_marginal_error": float(res.marginal_error),
            "ot_converged": 1.0 if res.converged else 0.0,
        }
        return WeightedScores(scores, log_weights=ell, info=info)

    def _config(self) -> dict[str, object]:
        cost = self.cost if isinstance(self.cost, str) else getattr(self.cost, "__name__", "callable")
        return {"epsilon": self.epsilon, "cost": cost, "tol": self.tol, "max_iter": self.max_iter}
