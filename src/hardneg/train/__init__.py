"""The training pipeline: config, registries, the modality seam, the Lightning module, run folders.

Module map: ``config/`` (schema, errors, loading), ``registry`` (distributions, objectives),
``modality`` (data sets: the seam), ``build`` (config → loss, encoder, module), ``module``
(the LightningModule), ``data`` / ``latent`` (batches), ``seeding`` (the one seed mixer),
``engine`` (the Trainer), ``experiment`` (train / evaluate a run), ``run_folder`` (its files),
``compare`` / ``sweep`` (groups of runs), ``callbacks``, ``evaluation``, ``figures``.

Submodules are imported lazily (``hardneg.train.experiment`` pulls in Lightning), so
``import hardneg.train`` stays cheap.
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
    "register_dataset",
    "register_negatives",
    "register_objective",
    "run_compare",
    "run_sweep",
    "train_run",
]

_WHERE = {
    "ContrastiveModule": "hardneg.train.module",
    "RunResult": "hardneg.train.run_folder",
    "train_run": "hardneg.train.experiment",
    "evaluate_run": "hardneg.train.experiment",
    "build_loss": "hardneg.train.build",
    "build_module": "hardneg.train.build",
    "register_negatives": "hardneg.train.registry",
    "register_objective": "hardneg.train.registry",
    "register_dataset": "hardneg.train.modality",
    "run_compare": "hardneg.train.compare",
    "run_sweep": "hardneg.train.sweep",
}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(importlib.import_module(_WHERE[name]), name)
    raise AttributeError(f"module 'hardneg.train' has no attribute {name!r}")
