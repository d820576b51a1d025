"""The configuration vocabulary: the pydantic sections of a run and the one error type of bad config.

Loading, overrides and validation live in :mod:`hardneg.pipeline.config`; this package holds only
the schema (:mod:`hardneg.config.schema`) and :class:`ConfigError` (:mod:`hardneg.config.errors`),
so that a modality can declare its own data section without importing the pipeline.
"""

from hardneg.config.errors import ConfigError, from_validation_error, shown, unknown_key
from hardneg.config.schema import (
    CompareConfig,
    DataSection,
    EvalSection,
    LossConfig,
    MocoConfig,
    MocoSection,
    ModelSection,
    RunConfig,
    Section,
    SweepConfig,
    TrainConfig,
    UserPath,
    moco_section,
)

__all__ = [
    "CompareConfig",
    "ConfigError",
    "DataSection",
    "EvalSection",
    "LossConfig",
    "MocoConfig",
    "MocoSection",
    "ModelSection",
    "RunConfig",
    "Section",
    "SweepConfig",
    "TrainConfig",
    "UserPath",
    "from_validation_error",
    "moco_section",
    "shown",
    "unknown_key",
]
