"""The training pipeline: config, registries, the modality seam, the Lightning module, run folders.

Module map: ``config/`` (schema, errors, loading), ``registry`` (distributions, objectives),
``modality`` (data sets: the seam), ``build`` (config → loss, encoder, module), ``module``
(the LightningModule), ``data`` / ``latent`` (batches), ``seeding`` (the one seed mixer),
``engine`` (the Trainer), ``experiment`` (train / evaluate a run), ``run_folder`` (its files),
``compare`` / ``sweep`` (groups of runs), ``callbacks``, ``evaluation``, ``figures``.

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
    "register_dataset",
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
    "register_dataset": "hardneg.modalities.base",
    "run_compare": "hardneg.pipeline.groups",
    "run_sweep": "hardneg.pipeline.groups",
}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(importlib.import_module(_WHERE[name]), name)
    raise AttributeError(f"module 'hardneg.pipeline' has no attribute {name!r}")
