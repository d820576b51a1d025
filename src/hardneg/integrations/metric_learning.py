"""hardneg's negative distributions as a pytorch-metric-learning loss.

:class:`MetricLearningLoss` has PML's signature, ``loss(embeddings, labels=None,
indices_tuple=None, ref_emb=None, ref_labels=None)``, and works with its miners (the pairs of
``indices_tuple``), reducers and embedding regularisers. The similarity, temperature, negative
distribution (uniform, hard, debiased, OT, K-subsampled) and objective are those of the wrapped
:class:`~hardneg.ContrastiveLoss` (``normalize=True``: the cosine similarity of PML's
``CosineSimilarity``). Two layouts:

* ``positives="pairs"``: one term per positive pair (a, p), as PML's ``NTXentLoss``:
  ``−log(e^{s_ap} / (e^{s_ap} + Neg_a))`` with ``Neg_a`` the loss's negative term over the
  negatives paired with a (all other labels without a miner). Equal to ``NTXentLoss`` for
  InfoNCE with uniform negatives (β = 0, τ⁺ = 0). Default reducer: PML's ``MeanReducer``.
* ``positives="all"``: one term per anchor with all its positives, supervised contrastive
  learning (Khosla et al., NeurIPS 2020, eq. 2, ``L^sup_out``; see :mod:`hardneg.supervised`), as
  PML's ``SupConLoss``; equal to it for InfoNCE with uniform negatives. Default reducer:
  ``AvgNonZeroReducer`` (as SupConLoss).

Pairs whose anchor has no negative contribute 0 (as in PML).

**Miners with repeated pairs.** A miner's negatives are a *set* here: the negatives of anchor a
are the distinct n of the pairs (a, n) it returned, and the negative distribution weighs each of
them once. PML's ``NTXentLoss`` sums over the list instead, so a negative that a triplet miner
returns k times for an anchor (once per triplet (a, p, n) sharing a and n) enters its denominator
k times. Without repeated (a, n) pairs (every pair miner, no miner, ``BatchHardMiner``) the two
are equal; with ``TripletMarginMiner`` they differ by exactly that multiplicity.

**PML's wrappers.** ``CrossBatchMemory`` and ``SelfSupervisedLoss`` accept the losses whose class
*name* is on their lists; :class:`NTXentLoss` and :class:`SupConLoss` are this adapter under the
names of the PML losses they generalise (NTXent's and SupCon's layouts), so both wrappers take
them with any negative distribution, without touching PML's module state.

**Distributed training** is PML's ``DistributedLossWrapper``'s job (it gathers embeddings and
labels before calling the loss); a wrapped ``ContrastiveLoss(gather_distributed=True)`` is
refused rather than silently not gathering.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

try:
    from pytorch_metric_learning.losses import BaseMetricLossFunction
    from pytorch_metric_learning.reducers import AvgNonZeroReducer, MeanReducer
    from pytorch_metric_learning.utils import loss_and_miner_utils as lmu
except ImportError as err:  # pragma: no cover - depends on the installation
    raise ImportError(
        'hardneg.integrations.metric_learning needs pytorch-metric-learning: pip install "hardneg[pml]"'
    ) from err

from hardneg.loss import ContrastiveLoss
from hardneg.scores import multi_positive_scores, pair_scores
from hardneg.supervised import supervised_per_anchor

__all__ = ["LAYOUTS", "MetricLearningLoss", "NTXentLoss", "SupConLoss"]

LAYOUTS = ("pairs", "all")


class MetricLearningLoss(BaseMetricLossFunction):
    """A pytorch-metric-learning loss computed by a :class:`~hardneg.ContrastiveLoss`; see the module.

    Args:
        loss: the contrastive loss (temperature, negatives, objective); its ``reduction`` is not
            used (PML's reducer reduces). Default: ``ContrastiveLoss(temperature=0.07)``, NTXent's.
        positives: ``"pairs"`` (NTXent's layout) or ``"all"`` (SupCon's).
        **kwargs: PML's ``reducer``, ``embedding_regularizer``, … (``distance`` is refused: the
            similarity is the loss's).

    >>> import torch
    >>> from hardneg import ContrastiveLoss, negatives
    >>> from hardneg.integrations.metric_learning import MetricLearningLoss
    >>> hard = MetricLearningLoss(loss=ContrastiveLoss(temperature=0.1, negatives=negatives.Hard(beta=1.0)))
    >>> emb, labels = torch.randn(16, 8), torch.randint(0, 4, (16,))
    >>> hard(emb, labels).shape
    torch.Size([])
    """

    def __init__(self, *, loss: ContrastiveLoss | None = None, positives: str = "pairs", **kwargs: Any):
        if "distance" in kwargs:
            raise ValueError(
                "distance is not used: the similarity is the ContrastiveLoss's (cosine when "
                f"normalize=True), got distance={kwargs['distance']!r}"
            )
        if positives not in LAYOUTS:
            raise ValueError(f"positives must be one of {LAYOUTS}, got {positives!r}")
        if loss is not None and not isinstance(loss, ContrastiveLoss):
            raise TypeError(f"loss must be a hardneg.ContrastiveLoss, got {type(loss).__name__}")
        if loss is not None and loss.gather_distributed:
            raise ValueError(
                "loss.gather_distributed must be False in a pytorch-metric-learning loss (PML gathers "
                "with pytorch_metric_learning.utils.distributed.DistributedLossWrapper: wrap this loss "
                "in it), got gather_distributed=True"
            )
        self.positives = positives
        super().__init__(**kwargs)
        self.loss = ContrastiveLoss(temperature=0.07) if loss is None else loss

    def get_default_reducer(self) -> Any:
        return MeanReducer() if self.positives == "pairs" else AvgNonZeroReducer()

    def compute_loss(
        self, embeddings: Tensor, labels: Tensor | None, indices_tuple: Any, ref_emb: Tensor, ref_labels: Any
    ) -> dict[str, Any]:
        if labels is None and indices_tuple is None:
            raise ValueError("labels or indices_tuple is required, got neither")
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

    def _pairs(self, emb: Tensor, ref: Tensor, a1: Tensor, p: Tensor, negative: Tensor) -> dict[str, Any]:
        mask = negative[a1]
        has = mask.any(dim=1)
        losses = torch.zeros(len(a1), dtype=torch.promote_types(emb.dtype, torch.float32), device=emb.device)
        if bool(has.any()):
            scores = pair_scores(emb[a1[has]], ref[p[has]], ref, temperature=self.loss.temperature,
                                 mask=mask[has], normalize=self.loss.normalize)
            losses = losses.index_put((has.nonzero()[:, 0],), self.loss.compute(scores).per_anchor)
        return {"loss": {"losses": losses, "indices": (a1, p), "reduction_type": "pos_pair"}}

    def _all(self, emb: Tensor, ref: Tensor, positive: Tensor, negative: Tensor) -> dict[str, Any]:
        rows = positive.any(dim=1) & negative.any(dim=1)
        losses = torch.zeros(len(emb), dtype=torch.promote_types(emb.dtype, torch.float32), device=emb.device)
        if bool(rows.any()):
            pm = positive[rows]
            scores = multi_positive_scores(emb[rows], ref, pm, temperature=self.loss.temperature,
                                           exclude=~(pm | negative[rows]), normalize=self.loss.normalize)
            losses = losses.index_put((rows.nonzero()[:, 0],), supervised_per_anchor(self.loss, scores))
        indices = torch.arange(len(emb), device=emb.device)
        return {"loss": {"losses": losses, "indices": indices, "reduction_type": "element"}}


class NTXentLoss(MetricLearningLoss):
    """:class:`MetricLearningLoss` in NTXent's layout (``positives="pairs"``) under the name of PML's
    ``NTXentLoss``, which PML's ``CrossBatchMemory`` and ``SelfSupervisedLoss`` accept by name.

    Args:
        temperature: used when ``loss`` is not given (PML's default 0.07).
        loss: the contrastive loss; its temperature is used, and must agree with ``temperature``
            when both are given.
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

    def __init__(self, temperature: float | None = None, *, loss: ContrastiveLoss | None = None,
                 **kwargs: Any):
        if loss is None:
            t = self._default_temperature if temperature is None else temperature
            loss = ContrastiveLoss(temperature=t)
        elif temperature is not None and float(temperature) != loss.temperature:
            raise ValueError(
                f"temperature={temperature!r} disagrees with loss.temperature={loss.temperature!r}: "
                "give one of them"
            )
        super().__init__(loss=loss, positives=self._layout, **kwargs)


class SupConLoss(NTXentLoss):
    """:class:`MetricLearningLoss` in SupCon's layout (``positives="all"``) under the name of PML's
    ``SupConLoss``, which PML's ``CrossBatchMemory`` and ``SelfSupervisedLoss`` accept by name.
    Arguments as :class:`NTXentLoss` (PML's default temperature 0.1)."""

    _layout = "all"
    _default_temperature = 0.1

