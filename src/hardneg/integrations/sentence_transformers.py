"""hardneg's negative distributions as sentence-transformers losses.

:class:`HardNegativesRankingLoss` is used like sentence-transformers' ``MultipleNegativesRankingLoss``
(MNRL; Henderson et al., 2017; van den Oord et al., 2018): the input columns are (anchor, positive,
optional mined negative 1, …, negative k); every anchor a_i is scored against the candidate pool of
all positives and all mined negatives of the batch; its own positive p_i is the positive, every
other candidate a negative. The negative term is the wrapped :class:`~hardneg.ContrastiveLoss`'s
— hard (Robinson et al., ICLR 2021), debiased (Chuang et al., NeurIPS 2020), entropic OT (Jiang,
Ishwar, Aeron), K-subsampled (Ash et al., AISTATS 2022) — through its pair layout
(:meth:`~hardneg.ContrastiveLoss.pair`). With the default InfoNCE objective and uniform negatives
it equals MNRL: cosine similarity × ``scale`` is ``⟨a/‖a‖, c/‖c‖⟩ / t`` with ``t = 1 / scale``.

:class:`CachedHardNegativesRankingLoss` is the same loss with gradient caching (GradCache; Gao,
Zhang, Han, Callan, RepL4NLP 2021): embeddings are computed in mini-batches without activations,
the loss and its gradient with respect to the embeddings on the whole batch, and the mini-batches
are re-run with gradients when the trainer calls ``backward`` (so gradient scaling and
accumulation apply as for any loss), replaying each mini-batch's random state (dropout). Its
gradients equal the uncached loss's.

Gathering across devices: the ContrastiveLoss's ``gather_distributed`` applies.

>>> import numpy as np
>>> from sentence_transformers import SentenceTransformer
>>> from sentence_transformers.sentence_transformer.modules import Pooling, WordEmbeddings
>>> from sentence_transformers.sentence_transformer.modules.tokenizer import WhitespaceTokenizer
>>> from hardneg import ContrastiveLoss, negatives
>>> from hardneg.integrations.sentence_transformers import HardNegativesRankingLoss
>>> vocab = ["red", "blue", "cat", "dog", "runs", "sits"]
>>> words = WordEmbeddings(tokenizer=WhitespaceTokenizer(vocab, stop_words=[]),
...                        embedding_weights=np.random.default_rng(0).normal(size=(7, 8)).astype("float32"))
>>> model = SentenceTransformer(modules=[words, Pooling(8, pooling_mode="mean")], device="cpu")
>>> loss = HardNegativesRankingLoss(model, loss=ContrastiveLoss(temperature=0.05,
...                                                             negatives=negatives.Hard(beta=1.0)))
>>> columns = [model.preprocess(["red cat", "blue dog"]), model.preprocess(["red cat runs", "blue dog sits"])]
>>> loss(columns, None).shape
torch.Size([])
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from functools import partial
from typing import Any

import torch
from torch import Tensor, nn

try:
    import sentence_transformers  # noqa: F401
except ImportError as err:  # pragma: no cover - depends on the installation
    raise ImportError(
        'hardneg.integrations.sentence_transformers needs sentence-transformers: '
        'pip install "hardneg[sentence-transformers]"'
    ) from err

from hardneg.gradcache import CachedPass, embed_without_graph
from hardneg.loss import ContrastiveLoss

__all__ = ["CachedHardNegativesRankingLoss", "HardNegativesRankingLoss"]


def _check_loss(loss: ContrastiveLoss | None) -> ContrastiveLoss:
    if loss is None:
        return ContrastiveLoss(temperature=0.05)  # MNRL's scale = 20
    if not isinstance(loss, ContrastiveLoss):
        raise TypeError(f"loss must be a hardneg.ContrastiveLoss, got {type(loss).__name__}")
    return loss


class HardNegativesRankingLoss(nn.Module):
    """MNRL's layout with hardneg's negative distributions; see the module.

    Args:
        model: the ``SentenceTransformer`` being trained.
        loss: the contrastive loss (temperature = 1 / MNRL's scale; negatives; objective);
            default ``ContrastiveLoss(temperature=0.05)``, MNRL's defaults.
    """

    def __init__(self, model: nn.Module, *, loss: ContrastiveLoss | None = None) -> None:
        super().__init__()
        self.model = model
        self.loss = _check_loss(loss)

    def forward(
        self, sentence_features: Iterable[Mapping[str, Tensor]], labels: Tensor | None = None
    ) -> Tensor:
        """``sentence_features``: the tokenised columns (anchor, positive, negatives…) → scalar."""
        embeddings = [self.model(dict(f))["sentence_embedding"] for f in sentence_features]
        return self.compute_loss_from_embeddings(embeddings, labels)

    def compute_loss_from_embeddings(self, embeddings: list[Tensor], labels: Tensor | None = None) -> Tensor:
        """The loss from the columns' embeddings: anchors (B, d), positives (B, d), negatives (B, d)…"""
        del labels  # MNRL's columns carry no labels
        if len(embeddings) < 2:
            raise ValueError(
                f"the inputs must have at least two columns (anchor, positive), got {len(embeddings)}"
            )
        anchors, positives = embeddings[0], embeddings[1]
        candidates = torch.cat(embeddings[1:], dim=0)
        b = anchors.shape[0]
        mask = torch.ones(b, candidates.shape[0], dtype=torch.bool, device=anchors.device)
        mask[torch.arange(b), torch.arange(b)] = False  # an anchor's own positive is not a negative
        return self.loss.pair(anchors, positives, candidates, mask=mask)

    def get_config_dict(self) -> dict[str, Any]:
        """For the model card: the wrapped loss."""
        return {"loss": repr(self.loss)}

    @property
    def citation(self) -> str:
        """The BibTeX entry sentence-transformers writes into the model card: Robinson, Chuang, Sra
        and Jegelka, *Contrastive Learning with Hard Negative Samples*, ICLR 2021."""
        return (
            "@inproceedings{robinson2021contrastive, title={Contrastive Learning with Hard Negative "
            "Samples}, author={Robinson, Joshua and Chuang, Ching-Yao and Sra, Suvrit and Jegelka, "
            "Stefanie}, booktitle={ICLR}, year={2021}}"
        )


class CachedHardNegativesRankingLoss(HardNegativesRankingLoss):
    """:class:`HardNegativesRankingLoss` with gradient caching over ``mini_batch_size`` rows.

    Memory: the activations of one mini-batch at a time, plus the (B, d) embeddings of each column.
    """

    def __init__(
        self, model: nn.Module, *, loss: ContrastiveLoss | None = None, mini_batch_size: int = 32
    ) -> None:
        super().__init__(model, loss=loss)
        if isinstance(mini_batch_size, bool) or not isinstance(mini_batch_size, int) or mini_batch_size < 1:
            raise ValueError(f"mini_batch_size must be an int >= 1, got {mini_batch_size!r}")
        self.mini_batch_size = mini_batch_size

    def forward(
        self, sentence_features: Iterable[Mapping[str, Tensor]], labels: Tensor | None = None
    ) -> Tensor:
        cached = embed_without_graph(
            self.model,
            list(sentence_features),
            chunk_size=self.mini_batch_size,
            embedding=_sentence_embedding,
        )
        value = self.compute_loss_from_embeddings(cached.embeddings, labels)
        if not torch.is_grad_enabled():
            return value
        grads = torch.autograd.grad(value, cached.embeddings)
        out = value.detach().requires_grad_()
        out.register_hook(partial(_recompute, cached, grads))
        return out


def _sentence_embedding(out: object) -> Tensor:
    """The ``sentence_embedding`` of a SentenceTransformer's output dict."""
    assert isinstance(out, Mapping)
    z: Tensor = out["sentence_embedding"]
    return z


def _recompute(cached: CachedPass, grads: tuple[Tensor, ...], grad_output: Tensor) -> None:
    """At ``loss.backward()``: re-run every mini-batch with gradients and back-propagate
    ``grad_output × ∂L/∂z`` (GradCache's step 3, :meth:`hardneg.gradcache.CachedPass.backward`)."""
    with torch.enable_grad():  # hooks run with gradients off
        cached.backward([g * grad_output for g in grads])
