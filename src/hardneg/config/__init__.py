"""The configuration vocabulary: the pydantic sections of a run and the one error type of bad config.

Loading, overrides and validation live in :mod:`hardneg.pipeline.config`; this package holds only
the schema (:mod:`hardneg.config.schema`) and :class:`ConfigError` (:mod:`hardneg.config.errors`),
so that a modality can declare its own data section without importing the pipeline.
"""

from hardneg.config.errors import ConfigError, from_validation_error, unknown_key
from hardneg.config.schema import (
    CompareConfig,
    DataSection,
    EvalConfig,
    LossConfig,
    MocoConfig,
    ModelConfig,
    RunConfig,
    Section,
    SweepConfig,
    TrainConfig,
)

__all__ = [
    "CompareConfig",
    "ConfigError",
    "DataSection",
    "EvalConfig",
    "LossConfig",
    "MocoConfig",
    "ModelConfig",
    "RunConfig",
    "Section",
    "SweepConfig",
    "TrainConfig",
    "from_validation_error",
    "unknown_key",
]
