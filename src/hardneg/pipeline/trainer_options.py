"""The ``trainer:`` section: further ``lightning.Trainer`` arguments, checked before any training.

Any keyword of ``lightning.Trainer`` may be given (``trainer.num_nodes=2``, ``trainer.max_time=…``,
``trainer.limit_train_batches=0.1``, ``trainer.profiler=simple``, …) except those the pipeline sets
from its own keys or needs for its guarantees (resume from the last finished epoch, atomic
checkpoints, one log per run folder): those are refused with the key to use instead. A value must be
of the type the argument declares (``trainer.max_steps=[1]`` is refused naming the key, not by a
traceback of Lightning's).
"""

from __future__ import annotations

import inspect
import types
import typing
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from pydantic import ConfigDict, TypeAdapter, ValidationError

from hardneg.config.errors import ConfigError, shown

__all__ = ["OWNED", "check_trainer_options", "check_training_steps"]

OWNED: dict[str, str] = {
    "max_epochs": "train.epochs",
    "accelerator": "train.accelerator",
    "devices": "train.devices",
    "strategy": "train.strategy",
    "precision": "train.precision",
    "deterministic": "train.deterministic",
    "log_every_n_steps": "train.log_every_n_steps",
    "enable_progress_bar": "train.progress",
    "gradient_clip_val": "train.gradient_clip_norm",
    "gradient_clip_algorithm": "train.gradient_clip_norm",
    "accumulate_grad_batches": "train.accumulate_grad_batches",
    "default_root_dir": "out_dir and name (the run folder)",
    "logger": "the run folder's CSV and TensorBoard logs (set by the pipeline)",
    "callbacks": "the pipeline's callbacks (checkpoints every epoch, online evaluation)",
    "plugins": "the pipeline's atomic checkpoint writer",
    "enable_checkpointing": "the pipeline's checkpoints (needed to resume)",
    "use_distributed_sampler": "the pipeline's seeded sampler",
    "num_sanity_val_steps": "nothing: the pipeline has no validation loop",
    "limit_val_batches": "nothing: the pipeline has no validation loop",
    "benchmark": "train.deterministic",
}


@lru_cache(maxsize=1)
def _trainer_parameters() -> tuple[str, ...]:
    import lightning as L

    return tuple(p for p in inspect.signature(L.Trainer.__init__).parameters if p != "self")


@lru_cache(maxsize=64)
def _argument_type(key: str) -> tuple[Any, TypeAdapter[Any]]:
    """The annotation of ``lightning.Trainer``'s argument ``key`` and a strict validator of it (a
    number is not a string, ``true`` not an integer, ``inf`` not a number)."""
    import lightning as L

    annotation = typing.get_type_hints(L.Trainer.__init__).get(key, Any)
    strict = ConfigDict(strict=True, arbitrary_types_allowed=True, allow_inf_nan=False)
    return annotation, TypeAdapter(annotation, config=strict)


def _type_text(annotation: Any) -> str:
    """``Optional[Union[int, float]]`` → ``float or int or null`` (members sorted: typing caches a union
    by its set of members, so their order depends on which equal union was written first)."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        members = sorted(_type_text(a) for a in typing.get_args(annotation) if a is not type(None))
        return " or ".join(members + ["null"] * (type(None) in typing.get_args(annotation)))
    if annotation is type(None):
        return "null"
    return annotation.__name__ if isinstance(annotation, type) else str(annotation).replace("typing.", "")


def check_trainer_options(options: Mapping[str, Any]) -> None:
    """Raise :class:`ConfigError` for a key that is not a ``lightning.Trainer`` argument, one the
    pipeline owns (naming the key to use instead), or a value not of the argument's declared type."""
    if not options:
        return
    valid = _trainer_parameters()
    for key, value in options.items():
        if key in OWNED:
            raise ConfigError(f"invalid key 'trainer.{key}': the pipeline sets it; use {OWNED[key]}")
        if key not in valid:
            allowed = sorted(k for k in valid if k not in OWNED)
            raise ConfigError(f"unknown key 'trainer.{key}': lightning.Trainer takes {allowed}")
        annotation, adapter = _argument_type(key)
        try:
            adapter.validate_python(value)
        except ValidationError:
            raise ConfigError(f"invalid value for 'trainer.{key}': lightning.Trainer takes "
                              f"{_type_text(annotation)}, got {shown(value)}") from None


def check_training_steps(options: Mapping[str, Any], *, batches_per_epoch: int, epochs: int) -> None:
    """Raise :class:`ConfigError` when the settings give no training step at all, naming the key.

    ``batches_per_epoch`` is the loader's length (``train.batch_size`` and ``data.*`` decide it);
    ``trainer.limit_train_batches`` (a count, or a fraction of the batches rounded down) and
    ``trainer.max_steps`` can each bring it to zero. A run of zero steps would evaluate its
    untrained encoder and report the configured number of epochs.
    """
    if epochs > 0 and batches_per_epoch <= 0:
        raise ConfigError(
            "invalid key 'train.batch_size': the training set gives 0 batches per epoch "
            "(batch size larger than the training set, with train.drop_last); nothing would be trained"
        )
    limit = options.get("limit_train_batches")
    if limit is not None and not isinstance(limit, bool) and isinstance(limit, int | float):
        whole = isinstance(limit, int) or float(limit) > 1.0  # a count; else a fraction of the batches
        batches = int(limit) if whole else int(batches_per_epoch * limit)
        if min(batches, batches_per_epoch) <= 0:
            raise ConfigError(
                f"invalid key 'trainer.limit_train_batches': it must leave at least one training batch "
                f"per epoch (the loader has {batches_per_epoch}), got {limit!r}"
            )
    steps = options.get("max_steps")
    if steps is not None and not isinstance(steps, bool) and isinstance(steps, int) and steps == 0:
        raise ConfigError("invalid key 'trainer.max_steps': 0 trains nothing; use -1 (no limit) or a "
                          "positive number of optimiser steps, got 0")
