"""Experiment configuration: schema (pydantic), errors, loading and overrides.

``load_config("digits", ["loss.negatives.name=hard", "loss.negatives.beta=0.5"])`` gives a
validated :class:`RunConfig`; everything downstream takes plain Python values from it.
"""

from hardneg.train.config.errors import ConfigError
from hardneg.train.config.loading import (
    COMPONENT_SECTIONS,
    apply_overrides,
    config_to_dict,
    dump_yaml,
    load_config,
    packaged_config_names,
    parse_overrides,
    read_yaml,
    resolve_config_path,
    validate,
    with_overrides,
)
from hardneg.train.config.schema import (
    CompareConfig,
    DataConfig,
    EvalConfig,
    GraphDataConfig,
    LatentConfig,
    LossConfig,
    MocoConfig,
    ModelConfig,
    RunConfig,
    SweepConfig,
    TrainConfig,
)

__all__ = [
    "COMPONENT_SECTIONS",
    "CompareConfig",
    "ConfigError",
    "DataConfig",
    "EvalConfig",
    "GraphDataConfig",
    "LatentConfig",
    "LossConfig",
    "MocoConfig",
    "ModelConfig",
    "RunConfig",
    "SweepConfig",
    "TrainConfig",
    "apply_overrides",
    "config_to_dict",
    "dump_yaml",
    "load_config",
    "packaged_config_names",
    "parse_overrides",
    "read_yaml",
    "resolve_config_path",
    "validate",
    "with_overrides",
]
