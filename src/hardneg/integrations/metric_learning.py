"""hardneg's negative distributions as a pytorch-metric-learning loss.

:class:`MetricLearningLoss` has PML's signature, ``loss(embeddings, labels=None,
indices_tuple=None, ref_emb=None, ref_labels=None)``, and works with its miners (the pairs of
``indices_tuple``), reducers and embedding regularisers. The temperature, negative distribution
(uniform, hard, debiased, OT, K-subsampled) and objective are those of the wrapped
:class:`~hardneg.ContrastiveLoss`; the similarity is PML's ``distance`` with PML's meaning:

* ``CosineSimilarity()`` (the default when the loss normalises; ``normalize=False``:
  ``DotProductSimilarity(normalize_embeddings=False)``) and ``DotProductSimilarity`` with
  ``power=1`` are hardneg's own ``⟨a, c⟩ / t``, normalised (L2) as ``normalize_embeddings`` says;
* any other accepted distance — ``LpDistance`` (``s = −‖a − c‖_p^power / t``, the embeddings first
  L_p-normalised when ``normalize_embeddings``), a dot product with ``power ≠ 1`` or normalised
  with ``p ≠ 2`` — gives the logits PML's ``NTXentLoss`` and ``SupConLoss`` use, computed by the
  distance itself (its matrix over the temperature, negated for a distance), in float32 at least.

Only ``CosineSimilarity``, ``DotProductSimilarity`` and ``LpDistance`` are accepted (other
distances, subclasses included, are refused naming them); the distance's
``normalize_embeddings`` must equal the loss's ``normalize``, and entropic OT negatives, which
read cosines from the logits, need a dot product. Two layouts:

* ``positives="pairs"``: one term per positive pair (a, p), as PML's ``NTXentLoss``:
  ``−log(e^{s_ap} / (e^{s_ap} + Neg_a))`` with ``Neg_a`` the loss's negative term over the
  negatives paired with a (all other labels without a miner). Equal to ``NTXentLoss`` for
  InfoNCE with uniform negatives (β = 0, τ⁺ = 0). Default reducer: PML's ``MeanReducer``.
* ``positives="all"``: one term per anchor with all its positives, supervised contrastive
  learning (Khosla et al., NeurIPS 2020, eq. 2, ``L^sup_out``; see :mod:`hardneg.supervised`), as
  PML's ``SupConLoss``; equal to it for InfoNCE with uniform negatives. Default reducer:
  ``AvgNonZeroReducer`` (as SupConLoss).

Pairs whose anchor has no negative contribute 0 (as in PML, where the softmax holds the positive
alone).

**Miners with repeated pairs.** A miner's negatives are a *set* here: the negatives of anchor a
are the distinct n of the pairs (a, n) it returned, and the negative distribution weighs each of
them once. PML's ``NTXentLoss`` sums over the list instead, so a negative that a triplet miner
returns k times for an anchor (once per triplet (a, p, n) sharing a and n) enters its denominator
k times. Without repeated (a, n) pairs (every pair miner, no miner, ``BatchHardMiner``) the two
are equal; with ``TripletMarginMiner`` they differ by exactly that multiplicity.

**PML's wrappers.** ``CrossBatchMemory`` and ``SelfSupervisedLoss`` accept the losses whose class
*name* is on their lists; :class:`NTXentLoss` and :class:`SupConLoss` are this adapter under the
names of the PML losses they generalise (NTXent's and SupCon's layouts), so both wrappers take
them with any negative distribution, without touching PML's module state. They are siblings
(``isinstance(SupConLoss(), NTXentLoss)`` is False), as PML's classes are.

**Distributed training** is PML's ``DistributedLossWrapper``'s job (it gathers embeddings and
labels before calling the loss); a wrapped ``ContrastiveLoss(gather_distributed=True)`` is
refused rather than silently not gathering. Called in a process group of several processes
outside that wrapper (none of its methods on the call stack), the loss warns once per process,
as the core does (:func:`hardneg.distributed.warn_local_negatives`), at the user's line.
"""

from __future__ import annotations

import inspect
import sys
from typing import Any

import torch
from torch import Tensor

try:
    from pytorch_metric_learning.distances import CosineSimilarity, DotProductSimilarity, LpDistance
    from pytorch_metric_learning.losses import BaseMetricLossFunction
    from pytorch_metric_learning.reducers import AvgNonZeroReducer, MeanReducer
    from pytorch_metric_learning.utils import loss_and_miner_utils as lmu
    from pytorch_metric_learning.utils.distributed import DistributedLossWrapper
except ImportError as err:  # pragma: no cover - depends on the installation
    raise ImportError(
        'hardneg.integrations.metric_learning needs pytorch-metric-learning: pip install "hardneg[pml]"'
    ) from err

from hardneg import _warnings, distributed
from hardneg._numerics.lse import masked_logsumexp
from hardneg._validation import check_finite_tensor
from hardneg.engines.dispatch import full_precision
from hardneg.loss import ContrastiveLoss
from hardneg.negatives import OptimalTransport
from hardneg.scores import Scores, compute_dtype, multi_positive_scores, pair_scores
from hardneg.supervised import supervised_per_anchor

__all__ = ["DISTANCES", "LAYOUTS", "MetricLearningLoss", "NTXentLoss", "SupConLoss"]

LAYOUTS = ("pairs", "all")
DISTANCES = (CosineSimilarity, DotProductSimilarity, LpDistance)
"""The ``distance=`` classes accepted (``pytorch_metric_learning.distances``), with PML's meaning."""

_warnings.skip_package("pytorch_metric_learning")  # PML's forward calls the loss: warnings at the user's line
_GATHER_REMEDY = (
    "wrap the loss in pytorch_metric_learning.utils.distributed.DistributedLossWrapper to score every "
    "rank's embeddings"
)
_WRAPPER_CODE = frozenset(
    f.__code__ for f in vars(DistributedLossWrapper).values() if inspect.isfunction(f)
)


def check_distance(distance: object) -> Any:
    """``distance`` if it is one of :data:`DISTANCES` (exactly: a subclass may compute anything),
    else a ``ValueError`` naming ``distance``, the allowed classes and the value received."""
    if type(distance) not in DISTANCES:
        allowed = ", ".join(cls.__name__ for cls in DISTANCES)
        raise ValueError(
            f"distance must be one of pytorch_metric_learning.distances.{{{allowed}}}, "
            f"got {distance!r} ({type(distance).__name__})"
        )
    return distance


def describe_distance(distance: Any) -> str:
    """``LpDistance(normalize_embeddings=True, p=2, power=1)``: a PML distance with its settings."""
    return (f"{type(distance).__name__}(normalize_embeddings={distance.normalize_embeddings}, "
            f"p={distance.p}, power={distance.power})")


def core_normalize(distance: Any) -> bool | None:
    """The ``normalize`` of hardneg's own similarity ``⟨a, c⟩ / t`` that equals ``distance``: a dot
    product (``CosineSimilarity``, ``DotProductSimilarity``) with ``power=1``, L2-normalised or not;
    ``None`` when ``distance`` is another function (``LpDistance``, ``power ≠ 1``, ``p ≠ 2``)."""
    if not isinstance(distance, DotProductSimilarity) or distance.power != 1:
        return None
    if distance.normalize_embeddings and distance.p != 2:
        return None
    return bool(distance.normalize_embeddings)


def _default_loss(temperature: float, distance: Any) -> ContrastiveLoss:
    """The wrapped loss when none is given: InfoNCE at ``temperature``, normalising as ``distance``."""
    normalize = True if distance is None else bool(distance.normalize_embeddings)
    return ContrastiveLoss(temperature=temperature, normalize=normalize)


def _check_loss(loss: object, distance: Any) -> ContrastiveLoss:
    if not isinstance(loss, ContrastiveLoss):
        raise TypeError(f"loss must be a hardneg.ContrastiveLoss, got {type(loss).__name__}")
    if loss.gather_distributed:
        raise ValueError(
            "loss.gather_distributed must be False in a pytorch-metric-learning loss (PML gathers "
            "with pytorch_metric_learning.utils.distributed.DistributedLossWrapper: wrap this loss "
            "in it), got gather_distributed=True"
        )
    if distance is None:
        return loss
    if bool(distance.normalize_embeddings) != loss.normalize:
        raise ValueError(
            f"distance={describe_distance(distance)} disagrees with loss.normalize={loss.normalize}: "
            "normalize_embeddings and normalize must be the same setting"
        )
    transport = any(isinstance(m, OptimalTransport) for m in loss.negatives.modules())
    if transport and core_normalize(distance) is None:
        raise ValueError(
            "negatives=OptimalTransport reads cosines from the logits <a, c> / t: use distance="
            "CosineSimilarity() or DotProductSimilarity() with it, got "
            f"distance={describe_distance(distance)}"
        )
    return loss


def _gathered_by_pml() -> bool:
    """Whether this call runs inside PML's ``DistributedLossWrapper`` (one of its methods is on the
    stack), which gathers the embeddings of all ranks before calling the loss."""
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code in _WRAPPER_CODE:
            return True
        frame = frame.f_back  # type: ignore[assignment]
    return False


class MetricLearningLoss(BaseMetricLossFunction):
    """A pytorch-metric-learning loss computed by a :class:`~hardneg.ContrastiveLoss`; see the module.

    Args:
        loss: the contrastive loss (temperature, negatives, objective); its ``reduction`` is not
            used (PML's reducer reduces). Default: ``ContrastiveLoss(temperature=0.07)``, NTXent's,
            normalising as ``distance`` does.
        positives: ``"pairs"`` (NTXent's layout) or ``"all"`` (SupCon's).
        distance: PML's ``CosineSimilarity`` (default, or ``DotProductSimilarity(normalize_embeddings=
            False)`` for a ``loss`` with ``normalize=False``), ``DotProductSimilarity`` or ``LpDistance``,
            with PML's meaning (see the module); its ``normalize_embeddings`` must be ``loss.normalize``.
        **kwargs: PML's ``reducer``, ``embedding_regularizer``, …

    >>> import torch
    >>> from hardneg import ContrastiveLoss, negatives
    >>> from hardneg.integrations.metric_learning import MetricLearningLoss
    >>> hard = MetricLearningLoss(loss=ContrastiveLoss(temperature=0.1, negatives=negatives.Hard(beta=1.0)))
    >>> emb, labels = torch.randn(16, 8), torch.randint(0, 4, (16,))
    >>> hard(emb, labels).shape
    torch.Size([])
    """

    def __init__(
        self, *, loss: ContrastiveLoss | None = None, positives: str = "pairs", distance: Any = None,
        **kwargs: Any,
    ):
        if distance is not None:
            check_distance(distance)
        if positives not in LAYOUTS:
            raise ValueError(f"positives must be one of {LAYOUTS}, got {positives!r}")
        loss = _check_loss(_default_loss(0.07, distance) if loss is None else loss, distance)
        self.positives = positives
        self._normalize = loss.normalize  # the default distance's, read by get_default_distance
        super().__init__(distance=distance, **kwargs)
        self.loss = loss

    def get_default_distance(self) -> Any:
        """The similarity of the wrapped loss: ``CosineSimilarity`` when it normalises, else the dot
        product of the raw embeddings."""
        return CosineSimilarity() if self._normalize else DotProductSimilarity(normalize_embeddings=False)

    def get_default_reducer(self) -> Any:
        return MeanReducer() if self.positives == "pairs" else AvgNonZeroReducer()

    def compute_loss(
        self, embeddings: Tensor, labels: Tensor | None, indices_tuple: Any, ref_emb: Tensor, ref_labels: Any
    ) -> dict[str, Any]:
        if labels is None and indices_tuple is None:
            raise ValueError("labels or indices_tuple is required, got neither")
        if distributed.is_distributed(self.loss.process_group) and not _gathered_by_pml():
            distributed.warn_local_negatives(self.loss.process_group, remedy=_GATHER_REMEDY)
        a1, p, a2, n = lmu.convert_to_pairs(indices_tuple, labels, ref_labels)
        if len(a1) == 0 or len(a2) == 0:
            return self.zero_losses()
        shape = (embeddings.shape[0], ref_emb.shape[0])
        negative = torch.zeros(shape, dtype=torch.bool, device=embeddings.device)
        negative[a2, n] = True
        if self.positives == "pairs":
            return self._pairs(embeddings, ref_emb, a1, p, negative)
        positive = torch.zeros(shape, dtype=torch.bool, device=embeddings.device)
        positive[a1, p] = True
        return self._all(embeddings, ref_emb, positive, negative)

    def _logits(self, emb: Tensor, ref: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """``(s, anchor norms, candidate norms)``: PML's similarity matrix of ``distance`` over the
        temperature, ``s = sim / t`` (``−dist / t`` for a distance, as PML's NTXentLoss and
        SupConLoss negate it), in float32 at least and without autocast; the norms (detached) of
        the rows the distance compares."""
        if self.loss.validate:
            check_finite_tensor("embeddings", emb)
            check_finite_tensor("ref_emb", ref)
        dtype = compute_dtype(torch.promote_types(emb.dtype, ref.dtype))
        emb, ref = emb.to(dtype), ref.to(dtype)
        with full_precision(emb):
            sim = self.distance(emb, ref)
        sim = sim if self.distance.is_inverted else -sim
        norms = [self.distance.maybe_normalize(x.detach()).norm(dim=1) for x in (emb, ref)]
        return sim / self.loss.temperature, norms[0], norms[1]

    def _pair_scores(self, emb: Tensor, ref: Tensor, a1: Tensor, p: Tensor, mask: Tensor) -> Scores:
        """The scores of anchors ``emb[a1]`` with positives ``ref[p]`` against all of ``ref``."""
        normalize = core_normalize(self.distance)
        if normalize is not None:
            return pair_scores(emb[a1], ref[p], ref, temperature=self.loss.temperature, mask=mask,
                               normalize=normalize)
        s, a_norms, c_norms = self._logits(emb, ref)
        return Scores(positive=s[a1, p], logits=s[a1], mask=mask, temperature=self.loss.temperature,
                      anchor_norms=a_norms[a1], positive_norms=c_norms[p], candidate_norms=c_norms)

    def _multi_scores(self, emb: Tensor, ref: Tensor, rows: Tensor, pm: Tensor, exclude: Tensor) -> Scores:
        """The scores of anchors ``emb[rows]`` with positives ``pm`` among ``ref`` (SupCon's layout)."""
        normalize = core_normalize(self.distance)
        if normalize is not None:
            return multi_positive_scores(emb[rows], ref, pm, temperature=self.loss.temperature,
                                         exclude=exclude, normalize=normalize)
        s, a_norms, c_norms = self._logits(emb, ref)
        logits = s[rows]
        return Scores(positive=masked_logsumexp(logits, pm), logits=logits, mask=~pm & ~exclude,
                      temperature=self.loss.temperature, anchor_norms=a_norms[rows],
                      positive_norms=torch.ones_like(a_norms[rows]), candidate_norms=c_norms,
                      positive_mask=pm)

    def _pairs(self, emb: Tensor, ref: Tensor, a1: Tensor, p: Tensor, negative: Tensor) -> dict[str, Any]:
        mask = negative[a1]
        has = mask.any(dim=1)
        losses = torch.zeros(len(a1), dtype=torch.promote_types(emb.dtype, torch.float32), device=emb.device)
        if bool(has.any()):
            scores = self._pair_scores(emb, ref, a1[has], p[has], mask[has])
            losses = losses.index_put((has.nonzero()[:, 0],), self.loss.compute(scores).per_anchor)
        return {"loss": {"losses": losses, "indices": (a1, p), "reduction_type": "pos_pair"}}

    def _all(self, emb: Tensor, ref: Tensor, positive: Tensor, negative: Tensor) -> dict[str, Any]:
        rows = positive.any(dim=1) & negative.any(dim=1)
        losses = torch.zeros(len(emb), dtype=torch.promote_types(emb.dtype, torch.float32), device=emb.device)
        if bool(rows.any()):
            pm = positive[rows]
            scores = self._multi_scores(emb, ref, rows, pm, ~(pm | negative[rows]))
            losses = losses.index_put((rows.nonzero()[:, 0],), supervised_per_anchor(self.loss, scores))
        indices = torch.arange(len(emb), device=emb.device)
        return {"loss": {"losses": losses, "indices": indices, "reduction_type": "element"}}


class _NamedLayout(MetricLearningLoss):
    """:class:`MetricLearningLoss` in one layout under the name of the PML loss it generalises,
    with PML's positional ``temperature`` (the base of :class:`NTXentLoss` and :class:`SupConLoss`,
    which are siblings, not one a kind of the other)."""

    _layout: str
    _default_temperature: float

    def __init__(self, temperature: float | None = None, *, loss: ContrastiveLoss | None = None,
                 distance: Any = None, **kwargs: Any):
        if loss is None:
            if distance is not None:
                check_distance(distance)
            t = self._default_temperature if temperature is None else temperature
            loss = _default_loss(t, distance)
        elif temperature is not None and float(temperature) != loss.temperature:
            raise ValueError(
                f"temperature={temperature!r} disagrees with loss.temperature={loss.temperature!r}: "
                "give one of them"
            )
        super().__init__(loss=loss, positives=self._layout, distance=distance, **kwargs)


class NTXentLoss(_NamedLayout):
    """:class:`MetricLearningLoss` in NTXent's layout (``positives="pairs"``) under the name of PML's
    ``NTXentLoss``, which PML's ``CrossBatchMemory`` and ``SelfSupervisedLoss`` accept by name.

    Args:
        temperature: used when ``loss`` is not given (PML's default 0.07).
        loss: the contrastive loss; its temperature is used, and must agree with ``temperature``
            when both are given.
        distance: as :class:`MetricLearningLoss`'s (PML's ``distance``).
        **kwargs: PML's ``reducer``, ``embedding_regularizer``, …

    >>> import torch
    >>> from pytorch_metric_learning.losses import CrossBatchMemory
    >>> from hardneg import ContrastiveLoss, negatives
    >>> from hardneg.integrations.metric_learning import NTXentLoss
    >>> memory = CrossBatchMemory(NTXentLoss(loss=ContrastiveLoss(temperature=0.1,
    ...                           negatives=negatives.Hard(beta=1.0))), embedding_size=8, memory_size=32)
    >>> memory(torch.randn(16, 8), torch.randint(0, 4, (16,))).shape
    torch.Size([])
    """

    _layout = "pairs"
    _default_temperature = 0.07


class SupConLoss(_NamedLayout):
    """:class:`MetricLearningLoss` in SupCon's layout (``positives="all"``) under the name of PML's
    ``SupConLoss``, which PML's ``CrossBatchMemory`` and ``SelfSupervisedLoss`` accept by name.
    Arguments as :class:`NTXentLoss` (PML's default temperature 0.1)."""

    _layout = "all"
    _default_temperature = 0.1
