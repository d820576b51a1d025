"""Arora et al.'s latent-class model in the training pipeline (``data.dataset: latent``).

Pairs ``(x, x⁺)`` are two samples of one latent class drawn from the simulator of
:mod:`hardneg.data.latent` (Arora et al., ICML 2019, §2: true positives, no augmentation), the
encoder an MLP with a projection head, the evaluation the engine's readouts (mean classifier,
average k-wise tasks, Arora et al.'s Table 1 grid with ``eval.latent_table``).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import Field

from hardneg.config.errors import ConfigError
from hardneg.config.schema import Section
from hardneg.modalities.base import DataSection, Modality
from hardneg.models.configured import configured_encoder

if TYPE_CHECKING:
    from torch import nn
    from torch.utils.data import Dataset

    from hardneg.config.schema import RunConfig

__all__ = ["Latent", "LatentConfig", "LatentData"]


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


class Latent(Modality):
    """The latent-class simulator (see the module docstring)."""

    name = "latent"
    datasets = ("latent",)
    encoders = ("mlp",)
    section = LatentData

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
        if lat.kind == "topics" and lat.topic_words > lat.vocab_size:
            raise ConfigError(
                f"invalid value for 'data.latent.topic_words': must be <= data.latent.vocab_size = "
                f"{lat.vocab_size}, got {lat.topic_words}"
            )

    def load(self, cfg: RunConfig) -> tuple[Any, Any]:
        from hardneg.data.vectors import load_latent_splits

        d: Any = cfg.data
        train, test = load_latent_splits(**d.latent.model_dump())
        return train.head(d.train_subset), test.head(d.test_subset)

    def dataset(self, train: Any, cfg: RunConfig) -> Dataset[Any]:
        from hardneg.data.vectors import BatchedPairs

        return BatchedPairs(train)

    def build_encoder(self, cfg: RunConfig, train: Any) -> nn.Module:
        return configured_encoder(cfg.model, in_dim=int(train.inputs.shape[1]))
