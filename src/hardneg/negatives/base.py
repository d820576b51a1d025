"""The negative-distribution interface (step 2 of the loss engine).

A negative distribution turns :class:`~hardneg.scores.Scores` into a
:class:`~hardneg.negatives.WeightedScores`: the scores it samples from plus **log importance
weights** ``ℓ_ij = log q(c_j | a_i) − log p(c_j)`` normalised to mean one over each anchor's
``N_i`` valid candidates (``log Σ_{j valid} e^{ℓ_ij} = log N_i``).

Calling a distribution runs two stages, once per loss evaluation:

1. :meth:`NegativeDistribution.prepare` may *change the mask* (K-subsampling, collision-free
   negatives); its randomness comes only from the ``generator`` argument.
2. :meth:`NegativeDistribution.weigh` builds the value object. By default it wraps
   :meth:`NegativeDistribution.log_weights` lazily, so a new distribution only implements
   ``log_weights``; a distribution with a closed form for ``log Σ_j w_ij e^{s_ij}`` overrides
   ``weigh`` to supply it.

An engine that never forms the (A, N) scores (the tiled and gathered engines of
:mod:`hardneg.engines.tiled`) asks the distribution what it needs instead of checking its class
(:mod:`hardneg.negatives.tiling`): :meth:`NegativeDistribution.tile_weights` states the weights
per tile (an exponential tilt, or a streamed Sinkhorn coupling), :meth:`~NegativeDistribution.tile_refusal`
says why a distribution cannot, and ``per_anchor_weights`` declares weights that read only the
anchor's own row (enough for the gathered engine's K drawn negatives).

The math of each distribution lives in a pure function of tensors (``hard_log_weights``,
``ot_log_weights``, ``subsample_mask``, ``collision_free_mask``); the modules hold parameters.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from hardneg.negatives.tiling import TileWeights
from hardneg.negatives.weighted import WeightedScores
from hardneg.scores import Scores, count_valid

__all__ = ["NegativeDistribution", "normalize_log_weights"]


def normalize_log_weights(raw: Tensor, mask: Tensor) -> Tensor:
    """Normalise unnormalised log weights to mean one over the valid entries of each row.

    ``ℓ_ij = raw_ij − log Σ_{k valid} e^{raw_ik} + log N_i`` on valid entries, ``−inf`` elsewhere,
    so that ``Σ_{j valid} e^{ℓ_ij} = N_i``.

    Args:
        raw: unnormalised log weights (any finite values on the valid entries).
        mask: which candidates are valid negatives of each anchor (at least one per row).

    Shapes:
        ``raw`` (A, N) float, ``mask`` (A, N) bool → (A, N).

    References:
        Robinson, Chuang, Sra, Jegelka, *Contrastive Learning with Hard Negative Samples*,
        ICLR 2021, §3, eq. (4): the importance weights ``q_β / p`` of the N in-batch negatives.

    Example:
        >>> import torch
        >>> ell = normalize_log_weights(torch.tensor([[0.0, 1.0, 5.0]]), torch.tensor([[True, True, False]]))
        >>> round(float(ell[0, :2].exp().sum()), 4), bool(ell[0, 2] == float("-inf"))
        (2.0, True)
    """
    raw = raw.masked_fill(~mask, float("-inf"))
    n_valid = count_valid(mask).to(raw.dtype)[:, None]
    return raw - torch.logsumexp(raw, dim=1, keepdim=True) + n_valid.log()


class NegativeDistribution(nn.Module):
    """Base class: ``distribution(scores, generator=None) -> WeightedScores``.

    Subclasses implement :meth:`log_weights` (the simplest extension point) or override
    :meth:`weigh`; mask-changing distributions override :meth:`prepare`. To be computed without
    the (A, N) matrix (:mod:`hardneg.engines.tiled`), a distribution implements :meth:`tile_weights`
    (and sets ``per_anchor_weights = True`` when its weights read only each anchor's own row).

    Attributes:
        per_anchor_weights: the weights of anchor i depend only on row i of the (prepared)
            scores, so the gathered engine may weigh each anchor's K drawn negatives alone
            (:mod:`hardneg.engines.gathered`). ``False`` by default (e.g. optimal transport, whose
            column marginals need every row).

    Shapes:
        ``scores`` (A, N) :class:`~hardneg.scores.Scores` → :class:`WeightedScores` (A, N): log
        weights ℓ (A, N), the weighted negative sum ``log Σ_j w_ij e^{s_ij}`` (A,).

    References:
        Robinson, Chuang, Sra, Jegelka, *Contrastive Learning with Hard Negative Samples*,
        ICLR 2021, §3: negatives drawn from ``q(x⁻ | x)`` estimated by importance weights over
        the batch's samples from ``p``.

    Example:
        >>> import torch
        >>> from hardneg.objectives import InfoNCE
        >>> from hardneg.scores import simclr_scores
        >>> class Closest(NegativeDistribution):  # all weight on each anchor's two closest negatives
        ...     def log_weights(self, scores):
        ...         top = scores.logits.masked_fill(~scores.mask, float("-inf")).topk(2, dim=1).indices
        ...         keep = torch.zeros_like(scores.mask).scatter(1, top, True) & scores.mask
        ...         return normalize_log_weights(torch.zeros_like(scores.logits), keep)
        >>> scores = simclr_scores(torch.randn(8, 16), torch.randn(8, 16), temperature=0.5)
        >>> weighted = Closest()(scores)  # step 2: WeightedScores
        >>> loss = InfoNCE()(weighted)  # step 3: one loss per anchor
        >>> loss.shape, bool(torch.isfinite(loss).all())
        (torch.Size([16]), True)
    """

    per_anchor_weights: bool = False

    def prepare(self, scores: Scores, *, generator: torch.Generator | None = None) -> Scores:
        """The scores with the mask this distribution samples from (default: unchanged)."""
        return scores

    def log_weights(self, scores: Scores) -> Tensor | None:
        """Log importance weights ℓ (A, N), ``−inf`` off the mask; ``None`` means uniform.

        ``scores`` has already been through :meth:`prepare`.
        """
        raise NotImplementedError(f"{type(self).__name__} must implement log_weights or weigh")

    def weigh(self, scores: Scores) -> WeightedScores:
        """The value object of prepared ``scores`` (weights computed lazily, at most once)."""
        return WeightedScores(scores, log_weights=lambda: self._checked_log_weights(scores))

    def _checked_log_weights(self, scores: Scores) -> Tensor:
        ell = self.log_weights(scores)
        if ell is None:  # a subclass that says "uniform" only at call time
            return torch.zeros_like(scores.logits).masked_fill(~scores.mask, float("-inf"))
        if not isinstance(ell, Tensor) or ell.shape != scores.logits.shape:
            got = tuple(ell.shape) if isinstance(ell, Tensor) else type(ell).__name__
            raise ValueError(
                f"{type(self).__name__}.log_weights must return a tensor of shape "
                f"{tuple(scores.logits.shape)} or None, got {got}"
            )
        return ell

    def forward(self, scores: Scores, *, generator: torch.Generator | None = None) -> WeightedScores:
        """:meth:`prepare` then :meth:`weigh`. Shapes: scores (A, N) → WeightedScores (A, N)."""
        weighted = self.weigh(self.prepare(scores, generator=generator))
        if not torch.compiler.is_compiling():  # a message only; Dynamo before 2.5 breaks on repr
            weighted.source = weighted.source or repr(self)
        return weighted

    def tile_weights(self) -> TileWeights | None:
        """How the tiled engine makes these weights per tile, or ``None`` if it cannot.

        Return ``TileWeights(tilt=β)`` when ``log_weights`` is ``β s_ij`` normalised to mean one
        over each anchor's valid candidates (:func:`normalize_log_weights`), or
        ``TileWeights(sinkhorn=...)`` for a streamed optimal-transport coupling
        (:mod:`hardneg.negatives.tiling`). Asked once per call: the answer may follow mutable
        settings (a β schedule). Default ``None``: not tiled (see :meth:`tile_refusal`).
        """
        return None

    def tile_refusal(self) -> str:
        """Why :meth:`tile_weights` is ``None`` (quoted by the engines' errors)."""
        return (
            f"{type(self).__name__} does not state its weights per tile: implement "
            "tile_weights() returning hardneg.negatives.TileWeights(tilt=beta) when its log weights "
            "are beta * s_ij normalised per anchor (w_ij proportional to exp(beta s_ij) on the "
            "valid mask)"
        )

    def diagnostics(self, weighted: WeightedScores) -> dict[str, float]:
        """Facts of this call to log (default: the value object's ``info``, e.g. Sinkhorn's)."""
        return dict(weighted.info)

    def extra_repr(self) -> str:
        return ", ".join(f"{k}={v!r}" for k, v in self._config().items())

    def _config(self) -> dict[str, object]:
        return {}
