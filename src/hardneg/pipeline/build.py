"""From a validated config to plain objects: the loss, the encoder, the Lightning module.

The config was validated once (:func:`hardneg.pipeline.config.validate`, which also built the
loss components: they are taken from it here, not built again); names go through the registries
(:mod:`hardneg.pipeline.registry` for distributions and objectives, :mod:`hardneg.modalities` for
data sets, whose modality builds its encoder), and K-subsampling / collision-free wrapping is left
to :class:`~hardneg.ContrastiveLoss`, the one place that does it.
"""

from __future__ import annotations

import functools
import importlib
from typing import Any

import lightning as L

from hardneg.config import MocoConfig, RunConfig
from hardneg.loss import ContrastiveLoss
from hardneg.modalities import get_modality
from hardneg.modalities.base import TwoViewModality, ViewMaker, trains_with_own_step
from hardneg.pipeline.callbacks import BetaAnnealingCallback
from hardneg.pipeline.module import ContrastiveModule
from hardneg.pipeline.registry import NEGATIVES, OBJECTIVES
from hardneg.schedules import BetaAnnealing

__all__ = ["build_loss", "build_module"]


def build_loss(cfg: RunConfig) -> ContrastiveLoss:
    """``ContrastiveLoss`` of ``cfg.loss``: registered distribution and objective, shared keys."""
    lc = cfg.loss
    neg = dict(lc.negatives)
    obj = dict(lc.objective)
    # the components built when the config was validated, else fresh ones (a config used twice)
    negatives = lc.take_built("negatives")
    if negatives is None:
        negatives = NEGATIVES.build(neg.pop("name"), neg)
    objective = lc.take_built("objective")
    if objective is None:
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


def build_module(cfg: RunConfig, train: Any) -> tuple[ContrastiveModule, list[L.Callback]]:
    """The LightningModule (data part, encoder, loss) and the config-driven callbacks."""
    for name in cfg.imports:  # user registrations (also in spawned compare/sweep workers)
        importlib.import_module(name)
    modality = get_modality(cfg.data.dataset)
    step: Any = None  # the modality's own step, or the engine's two-view step with its views
    views: ViewMaker | None = None
    if trains_with_own_step(modality, cfg):
        step = functools.partial(modality.step, cfg)
    elif isinstance(modality, TwoViewModality):
        views = modality.views(cfg, train)
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
    moco = cfg.moco if isinstance(cfg.moco, MocoConfig) else MocoConfig()  # train.mode=moco's keys
    module = ContrastiveModule(
        encoder=modality.build_encoder(cfg, train),
        loss=loss,
        views=views,
        mode=t.mode,
        seed=cfg.seed,
        optimizer=t.optimizer,
        lr=t.lr,
        weight_decay=t.weight_decay,
        sgd_momentum=t.sgd_momentum,
        queue_size=moco.queue_size,
        moco_momentum=moco.momentum,
        use_labels=modality.uses_labels(cfg),
        grad_cache_chunk=t.grad_cache_chunk,
        step=step,
        lr_schedule=t.lr_schedule,
        warmup_epochs=t.warmup_epochs,
        num_epochs=t.epochs,
    )
    return module, callbacks

