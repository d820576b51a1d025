"""The training pipeline: one engine above the modalities and the loss core.

Module map: ``config`` (YAML + overrides → a :class:`~hardneg.config.RunConfig` validated once,
with the data section of the modality of ``data.dataset``), ``registry`` (negative distributions
and objectives by name), ``build`` (config → loss, LightningModule, callbacks), ``module`` (the
LightningModule: the one training loop), ``data`` (the Lightning data module), ``engine`` (the
Trainer), ``experiment`` (train / evaluate a run), ``run_folder`` and ``checkpoints`` (its files),
``groups`` (compare and sweep: one runner for groups of runs), ``paired`` (seed-paired
statistics), ``callbacks``, ``history`` (the per-epoch ``metrics.csv``). The engine's readouts
(the evaluation of the modalities that have none of their own) are :mod:`hardneg.modalities.readouts`.

Submodules are imported lazily (``hardneg.pipeline.experiment`` pulls in Lightning), so
``import hardneg.pipeline`` stays cheap.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = [
    "ContrastiveModule",
    "RunResult",
    "build_loss",
    "build_module",
    "evaluate_run",
    "register_negatives",
    "register_objective",
    "run_compare",
    "run_sweep",
    "train_run",
]

_WHERE = {
    "ContrastiveModule": "hardneg.pipeline.module",
    "RunResult": "hardneg.pipeline.run_folder",
    "train_run": "hardneg.pipeline.experiment",
    "evaluate_run": "hardneg.pipeline.experiment",
    "build_loss": "hardneg.pipeline.build",
    "build_module": "hardneg.pipeline.build",
    "register_negatives": "hardneg.pipeline.registry",
    "register_objective": "hardneg.pipeline.registry",
    "run_compare": "hardneg.pipeline.groups",
    "run_sweep": "hardneg.pipeline.groups",
}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(importlib.import_module(_WHERE[name]), name)
    from hardneg._deprecated import moved_name  # register_modality's 0.2 path

    return moved_name(__name__, name)
