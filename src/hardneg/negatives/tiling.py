r"""The tiling protocol: what a negative distribution states so that an engine computes it by tiles.

The tiled engine (:mod:`hardneg.engines.tiled`) never forms the (A, N) logits, so it cannot call
:meth:`~hardneg.negatives.NegativeDistribution.log_weights`. A distribution tiles when it states
its weights per tile instead, through :meth:`~hardneg.negatives.NegativeDistribution.tile_weights`:

- an **exponential tilt** ``TileWeights(tilt=β)``: ``w_ij ∝ e^{β s_ij}`` on the valid mask,
  normalised to mean one over each anchor's ``N_i`` valid candidates, so that

  .. math:: \log \sum_j w_{ij} e^{s_{ij}} = L_{1+β,i} − L_{β,i} + \log N_i,
            \qquad L_{a,i} = \log \sum_{j\ \mathrm{valid}} e^{a s_{ij}},

  and the engine streams the log-sum-exps of the exponents :meth:`TileWeights.exponents`
  (``(1,)`` for β = 0, ``(1 + β, β)`` else, plus ``2β`` for the effective sample size). Uniform
  negatives are β = 0, the hard negatives of Robinson et al. (ICLR 2021, §3, eq. (4)) β > 0, and
  β < 0 up-weights the farthest candidates;
- a **streamed Sinkhorn** ``TileWeights(sinkhorn=SinkhornTiles(...))``: the entropic-OT coupling
  of Jiang, Ishwar, Aeron (arXiv:2111.03169, §VI, eq. (5)–(7)), solved by sweeps over row strips
  (:mod:`hardneg.engines.tiled.coupling`).

A distribution that cannot say either returns ``None`` and explains why in
:meth:`~hardneg.negatives.NegativeDistribution.tile_refusal`; the engines then refuse it with that
reason (or, under ``engine="auto"`` within the memory budget, materialise the scores). The
gathered engine (K drawn negatives per anchor, :mod:`hardneg.engines.gathered`) needs less: weights
that depend only on each anchor's own row (``per_anchor_weights = True``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import torch

__all__ = ["SinkhornTiles", "TileWeights"]


@dataclass(frozen=True)
class SinkhornTiles:
    """The settings of a streamed entropic-OT solve (:func:`hardneg.engines.tiled.coupling.tiled_sinkhorn`).

    Args:
        epsilon: entropic regularisation ε > 0.
        cost: the ground cost's name (``"sqeuclidean"`` or ``"exp"``; a callable cost needs the
            (A, N) matrix and does not tile).
        kappa: κ of the ``"exp"`` cost.
        tol: stop when the L1 error of the row marginals is ≤ ``tol``.
        max_iter: iteration cap.
        method: ``"stabilized"`` or ``"log"``.
        warn_not_converged: called when the solve stops at ``max_iter``.

    References:
        Jiang, Ishwar, Aeron, arXiv:2111.03169, §VI, eq. (5)–(7) (the coupling); Cuturi,
        *Sinkhorn Distances*, NeurIPS 2013 (the iterations).

    Example:
        >>> from hardneg.negatives import OptimalTransport
        >>> spec = OptimalTransport(epsilon=0.5).tile_weights().sinkhorn
        >>> spec.epsilon, spec.cost, spec.method
        (0.5, 'sqeuclidean', 'stabilized')
    """

    epsilon: float
    cost: str
    kappa: float
    tol: float
    max_iter: int
    method: str
    warn_not_converged: Callable[..., None] = field(compare=False, repr=False)


@dataclass(frozen=True)
class TileWeights:
    r"""A distribution's weights as an engine makes them per tile (see the module docstring).

    Args:
        tilt: β of ``w_ij ∝ e^{β s_ij}`` on the valid mask (any real; 0: uniform). Ignored
            when ``sinkhorn`` is given.
        sinkhorn: the settings of a streamed entropic-OT coupling instead of a tilt.

    References:
        Robinson, Chuang, Sra, Jegelka, ICLR 2021, §3, eq. (4) (the tilt ``e^{β s}``); Jiang,
        Ishwar, Aeron, arXiv:2111.03169, §VI (the coupling).

    Example:
        >>> from hardneg.negatives import TileWeights
        >>> TileWeights(tilt=0.5).exponents(diagnostics=True)
        (1.5, 0.5, 1.0)
        >>> TileWeights().exponents()
        (1.0,)
    """

    tilt: float = 0.0
    sinkhorn: SinkhornTiles | None = None

    @property
    def kind(self) -> str:
        """``"sinkhorn"`` or ``"tilt"``."""
        return "tilt" if self.sinkhorn is None else "sinkhorn"

    def effective_tilt(self, dtype: torch.dtype = torch.float64) -> float:
        """β, or 0 when ``|β|`` is below the dtype's smallest normal number (β·s would be 0)."""
        return self.tilt if abs(self.tilt) >= torch.finfo(dtype).tiny else 0.0

    def exponents(
        self, *, diagnostics: bool = False, dtype: torch.dtype = torch.float64
    ) -> tuple[float, ...]:
        """The exponents ``a`` of the log-sum-exps ``L_a = log Σ_{j valid} e^{a s_ij}`` to stream:
        ``(1,)`` for uniform weights, ``(1 + β, β)`` for a tilt, and ``2β`` after them with
        ``diagnostics`` (Kish's effective sample size ``e^{2 L_β − L_{2β}}``)."""
        beta = self.effective_tilt(dtype)
        if beta == 0.0:
            return (1.0,)
        return (1.0 + beta, beta, 2.0 * beta) if diagnostics else (1.0 + beta, beta)
