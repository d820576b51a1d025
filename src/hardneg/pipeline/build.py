"""From a validated config to plain objects: the loss, the encoder, the Lightning module.

Configuration is resolved here and nowhere else: every name goes through a registry
(:mod:`hardneg.pipeline.registry` for distributions and objectives, :mod:`hardneg.modalities.base`
for data sets, :mod:`hardneg.models` for encoders), and K-subsampling / collision-free wrapping
is left to :class:`~hardneg.ContrastiveLoss`, the one place that does it.
"""

from __future__ import annotations

import importlib
from typing import Any

import lightning as L

from hardneg.loss import ContrastiveLoss
from hardneg.schedules import BetaAnnealing
from hardneg.pipeline.callbacks import BetaAnnealingCallback
from hardneg.pipeline.config import ConfigError, RunConfig
from hardneg.modalities.base import Modality, get_modality
from hardneg.pipeline.module import ContrastiveModule
from hardneg.pipeline.registry import NEGATIVES, OBJECTIVES

__all__ = ["build_encoder", "build_loss", "build_module"]


def build_loss(cfg: RunConfig) -> ContrastiveLoss:
    """``ContrastiveLoss`` of ``cfg.loss``: registered distribution and objective, shared keys."""
    lc = cfg.loss
    neg = dict(lc.negatives)
    obj = dict(lc.objective)
    negatives = NEGATIVES.build(neg.pop("name"), neg)
    objective = OBJECTIVES.build(obj.pop("name"), obj)
    return ContrastiveLoss(
        temperature=lc.temperature,
        negatives=negatives,
        objective=objective,
        normalize=lc.normalize,
        num_negatives=lc.num_negatives,
        collision_free=lc.collision_free,
        gather_distributed=lc.gather_distributed,
        memory_budget=lc.memory_budget,
    )


def build_encoder(cfg: RunConfig, modality: Modality, train: Any) -> Any:
    """The encoder ``model.encoder`` with its projection head, sized for the modality's inputs."""
    from hardneg.models import build_encoder as build

    m = cfg.model
    if m.encoder not in modality.encoders:
        raise ConfigError(
            f"invalid value for 'model.encoder': data.dataset {cfg.data.dataset!r} ({modality.name}) takes "
            f"one of {sorted(modality.encoders)}, got {m.encoder!r}"
        )
    if modality.build_encoder is not None:
        return modality.build_encoder(cfg, train)
    kwargs: dict[str, Any] = dict(modality.encoder_kwargs(cfg, train))
    if m.stem_stride is not None and m.encoder != "small_cnn":
        raise ConfigError(
            f"invalid value for 'model.stem_stride': only used by small_cnn, got encoder {m.encoder!r}"
        )
    if m.encoder == "mlp":
        if m.width is not None:
            kwargs["hidden_dims"] = (m.width,)
        if m.feature_dim is not None:
            kwargs["feature_dim"] = m.feature_dim
    elif m.encoder == "small_cnn":
        if m.width is not None:
            kwargs["width"] = m.width
        if m.feature_dim is not None:
            kwargs["feature_dim"] = m.feature_dim
        if m.stem_stride is not None:
            kwargs["stem_stride"] = m.stem_stride
    elif m.width is not None or m.feature_dim is not None:
        raise ConfigError(
            "invalid value for 'model.width'/'model.feature_dim': only used by small_cnn and mlp, "
            f"got encoder {m.encoder!r}"
        )
    return build(m.encoder, projection_dim=m.projection_dim, hidden_dim=m.hidden_dim, **kwargs)


def build_module(cfg: RunConfig, train: Any) -> tuple[ContrastiveModule, list[L.Callback]]:
    """The LightningModule (data part, encoder, loss) and the config-driven callbacks."""
    for name in cfg.imports:  # user registrations (also in spawned compare/sweep workers)
        importlib.import_module(name)
    modality = get_modality(cfg.data.dataset)
    loss = build_loss(cfg)
    callbacks: list[L.Callback] = []
    if cfg.loss.anneal.enabled:
        a = cfg.loss.anneal
        beta = float(getattr(loss.negatives, "beta"))  # noqa: B009 - set on annealable distributions
        schedule = BetaAnnealing(
            beta=beta, num_changes=a.changes, num_epochs=cfg.train.epochs, direction=a.direction
        )
        callbacks.append(BetaAnnealingCallback(schedule))
    t = cfg.train
    module = ContrastiveModule(
        encoder=build_encoder(cfg, modality, train),
        loss=loss,
        views=modality.views(cfg, train),
        mode=t.mode,
        seed=cfg.seed,
        optimizer=t.optimizer,
        lr=t.lr,
        weight_decay=t.weight_decay,
        sgd_momentum=t.sgd_momentum,
        queue_size=cfg.moco.queue_size,
        moco_momentum=cfg.moco.momentum,
        use_labels=cfg.data.dataset != "random",
        grad_cache_chunk=t.grad_cache_chunk,
        step=modality.step,
    )
    return module, callbacks

