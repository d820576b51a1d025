"""Arora et al.'s latent-class model in the training pipeline (``data.dataset: latent``).

Pairs ``(x, x⁺)`` are two samples of one latent class drawn from the simulator of
:mod:`hardneg.data.latent` (Arora et al., ICML 2019, §2: true positives, no augmentation), the
encoder an MLP with a projection head, the evaluation the engine's readouts (mean classifier,
average k-wise tasks, Arora et al.'s Table 1 grid with ``eval.latent_table``).

Two layouts of the loss (``data.layout``; the modality is both kinds, :meth:`Latent.own_step`
says which step trains):

- ``two_views`` (default): SimCLR's — both points of every pair are anchors, each against the
  other 2B − 2 points of the batch (K of them with ``loss.num_negatives``): the engine's
  two-view step, unchanged;
- ``tuples``: Arora et al.'s ``(x, x⁺, x⁻_1..x⁻_k)`` (eq. (2)) — each item's x_i is the anchor,
  its positive x⁺_i, its candidate negatives the other B − 1 items' positives, so each anchor's
  negatives are i.i.d. draws of 𝒟_neg (a K-subset with ``loss.num_negatives``: Ash et al.,
  AISTATS 2022, §4). With ``data.block_size = b`` an item carries b positives, the positive is
  the mean of their embeddings and so is every negative block: Arora et al.'s block loss (§6.3,
  eq. (12); with ``loss.objective: logistic`` and ``loss.num_negatives: 1`` exactly eq. (12)).
  The embeddings are normalised (``loss.normalize``) before a block is averaged, not after.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Annotated, Any, Literal

import torch
from pydantic import Field

from hardneg.config import DataSection
from hardneg.config.errors import ConfigError
from hardneg.config.schema import Section
from hardneg.data.vectors import LabeledVectors
from hardneg.modalities.base import OwnStepModality, TwoViewModality
from hardneg.modalities.memory import FLOAT, MemoryTerm, training_state
from hardneg.modalities.readouts import ClassTableEval
from hardneg.models.configured import configured_encoder

if TYPE_CHECKING:
    from torch import Tensor, nn
    from torch.utils.data import Dataset

    from hardneg.config.schema import RunConfig
    from hardneg.loss import ContrastiveLoss
    from hardneg.reduction import LossOutput

__all__ = ["Latent", "LatentConfig", "LatentData", "tuple_loss"]

_FLOAT64 = 8  # bytes of the simulator's float64 arrays


class LatentConfig(Section):
    """``data.latent`` — Arora et al.'s latent-class simulator (ICML 2019, §2)."""

    num_classes: int = Field(10, ge=2, description="number of latent classes C")
    class_probs: list[Annotated[float, Field(ge=0.0)]] | None = Field(
        None, description="class prior rho: C numbers summing to 1 (None = uniform)"
    )
    kind: Literal["gaussian", "topics"] = Field(
        "gaussian", description="gaussian (mu_c + sigma eps) or topics"
    )
    input_dim: int = Field(32, ge=1, description="gaussian: input dimension D")
    mean_scale: float = Field(1.0, ge=0.0, description="gaussian: class means mu_c ~ N(0, mean_scale^2 I)")
    noise_std: float = Field(1.0, ge=0.0, description="gaussian: noise sigma")
    vocab_size: int = Field(2000, ge=2, description="topics: vocabulary size")
    topic_words: int = Field(20, ge=1, description="topics: words per class topic (<= vocab_size)")
    doc_length: int = Field(40, ge=1, description="topics: words per document")
    background: float = Field(0.2, ge=0.0, le=1.0, description="topics: weight of the uniform background")
    train_size: int = Field(4096, ge=2, description="training pairs (x, x+) drawn from the simulator")
    test_size: int = Field(1024, ge=2, description="labelled test samples")
    seed: int = Field(0, ge=0, le=2**32 - 1, description="seed of the simulator")


class LatentData(DataSection):
    """``data`` of the latent-class model."""

    train_subset: int | None = Field(None, ge=2, description="use only the first N training pairs")
    test_subset: int | None = Field(None, ge=2, description="use only the first N test items")
    latent: LatentConfig = Field(default_factory=LatentConfig)
    layout: Literal["two_views", "tuples"] = Field(
        "two_views",
        description="two_views: SimCLR's, 2B - 2 in-batch negatives; tuples: Arora et al.'s (x, x+, "
        "x-_1..x-_k), each anchor's negatives the other B - 1 items' positives (i.i.d. draws of D_neg)",
    )
    block_size: int = Field(
        1, ge=1, description="tuples: b positives per item, averaged (Arora et al.'s block loss, eq. 12)"
    )


class Latent(OwnStepModality[LabeledVectors, LabeledVectors],
             TwoViewModality[LabeledVectors, LabeledVectors]):
    """The latent-class simulator (see the module docstring): both kinds, its own step with
    ``data.layout: tuples``, the engine's two-view step (the pairs are the views) otherwise."""

    name = "latent"
    datasets = ("latent",)
    encoders = ("mlp",)
    section = LatentData
    eval_section = ClassTableEval

    def check(self, cfg: RunConfig) -> None:
        lat: LatentConfig = cfg.data.latent  # type: ignore[attr-defined]
        if lat.class_probs is not None:
            if len(lat.class_probs) != lat.num_classes:
                raise ConfigError(
                    f"invalid value for 'data.latent.class_probs': must have data.latent.num_classes = "
                    f"{lat.num_classes} entries, got {len(lat.class_probs)}: {lat.class_probs!r}"
                )
            total = math.fsum(lat.class_probs)
            if abs(total - 1.0) > 1e-6:
                raise ConfigError(
                    f"invalid value for 'data.latent.class_probs': must sum to 1, got sum {total!r}"
                )
        d: LatentData = cfg.data  # type: ignore[assignment]
        if d.block_size > 1 and d.layout != "tuples":
            raise ConfigError(
                f"invalid value for 'data.block_size': blocks need data.layout = 'tuples', must be 1 with "
                f"data.layout = {d.layout!r}, got {d.block_size}"
            )
        k = cfg.loss.num_negatives
        if d.layout == "tuples" and k is not None and k > cfg.train.batch_size - 1:
            raise ConfigError(
                f"invalid value for 'loss.num_negatives': must be <= train.batch_size - 1 = "
                f"{cfg.train.batch_size - 1} (the other items of a batch, data.layout = 'tuples'), got {k}"
            )
        if d.layout == "tuples" and not cfg.train.drop_last:
            size = min(lat.train_size, d.train_subset or lat.train_size)
            last = size % cfg.train.batch_size
            if 0 < last <= (k or 1):
                raise ConfigError(
                    f"invalid value for 'train.drop_last': the last batch would hold {last} item(s), fewer "
                    f"than the {(k or 1) + 1} an anchor and its negatives need (data.layout = 'tuples'); "
                    f"must be true, got false"
                )
        if lat.kind == "topics" and lat.topic_words > lat.vocab_size:
            raise ConfigError(
                f"invalid value for 'data.latent.topic_words': must be <= data.latent.vocab_size = "
                f"{lat.vocab_size}, got {lat.topic_words}"
            )

    def describe(self, cfg: RunConfig) -> str:
        d: LatentData = cfg.data  # type: ignore[assignment]
        lat = d.latent
        prior = "uniform" if lat.class_probs is None else "non-uniform"
        layout = ""
        if d.layout == "tuples":
            layout = ", tuples" if d.block_size == 1 else f", tuples with blocks of {d.block_size}"
        return (
            f"latent ({lat.kind}, {lat.num_classes} classes, {prior} prior, {lat.train_size} pairs, "
            f"seed {lat.seed}{layout})"
        )

    def load(self, cfg: RunConfig) -> tuple[LabeledVectors, LabeledVectors]:
        from hardneg.data.vectors import load_latent_splits

        d: Any = cfg.data
        block = d.block_size if d.layout == "tuples" else None
        train, test = load_latent_splits(**d.latent.model_dump(), block_size=block)
        return train.head(d.train_subset), test.head(d.test_subset)

    def own_step(self, cfg: RunConfig) -> bool:
        """``data.layout: tuples`` trains with :meth:`step`; ``two_views``, the engine's step."""
        return cfg.data.layout == "tuples"  # type: ignore[attr-defined]

    def dataset(self, cfg: RunConfig, train: LabeledVectors) -> Dataset[Any]:
        from hardneg.data.vectors import BatchedLatent, BatchedPairs

        return BatchedLatent(train) if self.own_step(cfg) else BatchedPairs(train)

    def memory(self, cfg: RunConfig) -> list[MemoryTerm]:
        """The simulated pairs (materialised) and the MLP's training state (counted on ``meta``)."""
        lat: LatentConfig = cfg.data.latent  # type: ignore[attr-defined]
        dim, dim_key = ((lat.input_dim, "data.latent.input_dim") if lat.kind == "gaussian"
                        else (lat.vocab_size, "data.latent.vocab_size"))
        with torch.device("meta"):
            encoder = configured_encoder(cfg.model, in_dim=dim)
        params = sum(p.numel() for p in encoder.parameters())
        keys = [dim_key, *(f"model.{k}" for k in ("width", "feature_dim", "hidden_dim")
                           if getattr(cfg.model, k, None) is not None)]
        block = cfg.data.block_size  # type: ignore[attr-defined]
        pairs = (lat.train_size + lat.test_size) * (1 + block) * dim * FLOAT
        what = "means" if lat.kind == "gaussian" else "topics"
        terms = [MemoryTerm("the simulated pairs", pairs,
                            ("data.latent.train_size", "data.latent.test_size", dim_key)),
                 MemoryTerm(f"the {lat.num_classes} latent classes' {what} (float64)",
                            lat.num_classes * dim * _FLOAT64, ("data.latent.num_classes", dim_key)),
                 training_state(params, cfg.train.optimizer, "the MLP encoder", keys)]
        if lat.kind == "topics":  # one uniform draw per word of each document
            words = max(lat.train_size, lat.test_size) * lat.doc_length * _FLOAT64
            terms.append(MemoryTerm("the word draws of the simulated documents (float64)", words,
                                    ("data.latent.doc_length", "data.latent.train_size")))
        return terms

    def build_encoder(self, cfg: RunConfig, train: LabeledVectors) -> nn.Module:
        return configured_encoder(cfg.model, in_dim=int(train.inputs.shape[1]))

    def step(
        self,
        cfg: RunConfig,
        encoder: nn.Module,
        loss: ContrastiveLoss,
        x: Any,
        *,
        labels: Tensor | None,
        generator: torch.Generator,
    ) -> LossOutput:
        """``data.layout: tuples``: a :class:`~hardneg.data.vectors.LatentBatch` of anchors and blocks
        ``(B, b, D)`` to :func:`tuple_loss` (``two_views`` trains with the engine's two-view step)."""
        anchors, positives = x
        return tuple_loss(encoder, loss, anchors, positives, labels=labels, generator=generator)


def tuple_loss(
    encoder: nn.Module,
    loss: ContrastiveLoss,
    anchors: Tensor,
    blocks: Tensor,
    *,
    labels: Tensor | None = None,
    generator: torch.Generator | None = None,
) -> LossOutput:
    """Arora et al.'s tuple layout (ICML 2019, eq. (2); with blocks, §6.3, eq. (12)).

    Anchor i is ``z(x_i)``, its positive the mean ``z̄_i = (1/b) Σ_l z(x⁺_il)`` of its block, its
    candidate negatives the other items' blocks ``z̄_j`` (j ≠ i; class c_j ∼ ρ independent of
    c_i, so each anchor's negatives are i.i.d. draws of 𝒟_neg), to which ``loss`` applies its
    negative distribution, K-subsampling, collision-free oracle and objective. Each ``z`` is
    normalised first when ``loss.normalize`` (the block mean is not renormalised: eq. (12)).

    Shapes: ``anchors`` (B, D), ``blocks`` (B, b, D), ``labels`` (B,) → :class:`LossOutput`
    (per-anchor losses (B,)).
    """
    import torch.nn.functional as F

    from hardneg.scores import pair_scores

    n, b, dim = blocks.shape
    _, za = encoder(anchors)
    _, zp = encoder(blocks.reshape(n * b, dim))
    zp = zp.reshape(n, b, -1)
    if loss.normalize:
        za, zp = F.normalize(za, dim=-1), F.normalize(zp, dim=-1)
    means = zp.mean(dim=1)
    others = ~torch.eye(n, dtype=torch.bool, device=za.device)
    scores = pair_scores(
        za,
        means,
        means,
        temperature=loss.temperature,
        mask=others,
        normalize=False,
        anchor_labels=labels,
        candidate_labels=labels,
    )
    return loss.compute(scores, diagnostics=True, generator=generator)
