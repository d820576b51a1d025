"""YAML files and ``key=value`` overrides → a validated :class:`~hardneg.pipeline.config.RunConfig`.

This is the edge of the pipeline: strings are parsed and checked here, once. A config file lists
only what it changes from the defaults; overrides use dotted keys (``loss.negatives.beta=0.5``,
``train.epochs=3``) and YAML values (``eval.kwise=[1,4]``). Every float literal a Python user
writes is a float (``1e-3`` too, which YAML 1.1 would read as a string); duplicate YAML keys are
an error. Component sections (``loss.negatives``, ``loss.objective``) are replaced as a whole by a
mapping, and setting their ``name`` to another component starts them afresh, so
``loss.negatives.name=ot`` never inherits ``beta`` from a previous ``hard``.

>>> cfg = load_config("digits", ["loss.negatives.name=hard", "loss.negatives.beta=0.5", "train.epochs=2"])
>>> cfg.loss.negatives, cfg.train.epochs
({'name': 'hard', 'beta': 0.5, 'detach_weights': False, 'rescale': False, 'target_ess': None}, 2)
>>> try:
...     load_config("digits", ["loss.negatives.name=hard", "loss.negatives.epsilon=0.5"])
... except ConfigError as err:
...     for part in str(err).split("; "):
...         print(part)
unknown config key 'loss.negatives.epsilon'
valid keys in 'loss.negatives': beta, detach_weights, rescale, target_ess
"""

from __future__ import annotations

import copy
import importlib
import math
import re
import typing
from importlib import resources
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from hardneg.config import (
    CompareConfig,
    DataSection,
    ConfigError,
    EvalConfig,
    LossConfig,
    MocoConfig,
    ModelConfig,
    RunConfig,
    SweepConfig,
    TrainConfig,
    from_validation_error,
    unknown_key,
)

__all__ = [
    "COMPONENT_SECTIONS",
    "CompareConfig",
    "DataSection",
    "ConfigError",
    "EvalConfig",
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

COMPONENT_SECTIONS = ("loss.negatives", "loss.objective")
_LEAF_DICTS = {"sweep.grid", *COMPONENT_SECTIONS}  # dict-valued keys replaced as a whole
_FLOAT = re.compile(r"^[-+]?(\d[\d_]*\.?\d*|\.\d+)([eE][-+]?\d+)?$|^[-+]?(inf|nan)$", re.IGNORECASE)


class _Loader(yaml.SafeLoader):
    """Safe YAML with duplicate keys refused and every Python float literal read as a float."""


def _construct_mapping(loader: _Loader, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
    seen: dict[Any, int] = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise ConfigError(
                f"duplicate key {key!r} at line {key_node.start_mark.line + 1} (first at line {seen[key]}); "
                "each key may appear once"
            )
        seen[key] = key_node.start_mark.line + 1
    return loader.construct_mapping(node, deep=deep)


def _construct_str(loader: _Loader, node: yaml.ScalarNode) -> Any:
    value = loader.construct_scalar(node)
    if (
        node.style is None
        and isinstance(value, str)
        and _FLOAT.match(value)
        and any(c in value for c in ".eE")
    ):
        try:
            return float(value)
        except ValueError:
            return value
    return value


_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SCALAR_TAG, _construct_str)


def _load_yaml_text(text: str, where: str) -> Any:
    try:
        return yaml.load(text, Loader=_Loader)
    except ConfigError as err:
        raise ConfigError(f"{where}: {err}") from None
    except yaml.YAMLError as err:
        raise ConfigError(f"{where} is not valid YAML: {err}") from None


def parse_overrides(items: typing.Sequence[str]) -> dict[str, Any]:
    """``["a.b=1", "c=[1,2]"]`` → ``{"a.b": 1, "c": [1, 2]}`` (values read as YAML)."""
    out: dict[str, Any] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ConfigError(
                f"override must look like key=value (e.g. loss.negatives.beta=0.5), got {item!r}"
            )
        try:
            out[key] = _load_yaml_text(raw, f"override {item!r}") if raw.strip() else ""
        except ConfigError:
            out[key] = raw
    return out


def _component_section(parts: list[str]) -> str | None:
    for section in COMPONENT_SECTIONS:
        if ".".join(parts[:2]) == section:
            return section
    return None


def apply_overrides(data: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    """Set dotted keys in a nested dict in place (and return it); unknown sections are rejected.

    A component's ``name`` is set before its other keys, and a new name starts the section anew.
    """
    ordered = sorted(overrides.items(), key=lambda kv: not kv[0].endswith(".name"))
    for dotted, value in ordered:
        parts = dotted.split(".")
        node = data
        for depth, part in enumerate(parts[:-1]):
            child = node.get(part)
            if not isinstance(child, dict):
                prefix = ".".join(parts[:depth])
                if part not in node:
                    raise unknown_key(prefix, part, list(node))
                raise ConfigError(
                    f"'{'.'.join(parts[: depth + 1])}' is a value, not a section; got override {dotted!r}"
                )
            node = child
        leaf = parts[-1]
        section = _component_section(parts)
        if section is not None and len(parts) == 3:
            if leaf == "name":
                if node.get("name") != value:
                    node.clear()
                node["name"] = value
            else:
                node[leaf] = value  # checked against the component's parameters by validate()
            continue
        if leaf not in node:
            raise unknown_key(".".join(parts[:-1]), leaf, list(node))
        node[leaf] = copy.deepcopy(value)
    return data


def _deep_merge(base: dict[str, Any], new: dict[str, Any], prefix: str) -> None:
    for key, value in new.items():
        if key not in base:
            raise unknown_key(prefix, str(key), list(base))
        full = f"{prefix}.{key}" if prefix else str(key)
        if isinstance(base[key], dict) and isinstance(value, dict) and full not in _LEAF_DICTS:
            _deep_merge(base[key], value, full)
        else:
            base[key] = value


def config_to_dict(cfg: RunConfig) -> dict[str, Any]:
    """Plain nested dict of a config (what is written to ``config.yaml``)."""
    return cfg.model_dump(mode="python")


def _defaults() -> dict[str, Any]:
    return config_to_dict(RunConfig())


def _import_plugins(modules: list[str]) -> None:
    for name in modules:
        try:
            importlib.import_module(name)
        except ImportError as err:
            raise ConfigError(f"invalid value for 'imports': cannot import module {name!r} ({err})") from None


def _check_component(cfg: RunConfig, section: str) -> None:
    from hardneg.pipeline.registry import NEGATIVES, OBJECTIVES

    registry = NEGATIVES if section == "loss.negatives" else OBJECTIVES
    raw = dict(getattr(cfg.loss, section.split(".")[1]))
    name = raw.pop("name", None)
    if name is None:
        raise ConfigError(f"missing config key '{section}.name': one of {list(registry.names())}")
    try:
        component = registry.get(name)
    except ValueError as err:
        raise ConfigError(f"invalid value for '{section}.name': {err}") from None
    try:
        params = registry.validate(name, raw)
    except ValidationError as err:
        raise from_validation_error(err, component.params, section) from None
    try:
        component.factory(**params)  # the component's own range checks, at config time
    except (ValueError, TypeError) as err:
        raise ConfigError(f"invalid value in '{section}' ({name}): {err}") from None
    object.__setattr__(cfg.loss, section.split(".")[1], {"name": name, **params})


def validate(data: dict[str, Any], *, check_groups: bool = True) -> RunConfig:
    """Validate a nested mapping into a :class:`RunConfig` (raises :class:`ConfigError`).

    ``check_groups`` also validates every ``compare.strategies[i].overrides`` and
    ``sweep.grid`` point applied to the defaults.
    """
    if not isinstance(data, dict):
        raise ConfigError(f"a config must be a mapping, got {type(data).__name__}")
    imports = data.get("imports") or []
    if isinstance(imports, list) and all(isinstance(m, str) for m in imports):
        _import_plugins(imports)
    try:
        cfg = RunConfig.model_validate(data)
    except ValidationError as err:
        raise from_validation_error(err, RunConfig) from None
    for section in COMPONENT_SECTIONS:
        _check_component(cfg, section)
    _check_cross(cfg, check_groups=check_groups)
    return cfg


def _check_cross(cfg: RunConfig, *, check_groups: bool) -> None:
    from hardneg.models import ENCODER_NAMES
    from hardneg.modalities.base import get_modality

    try:
        modality = get_modality(cfg.data.dataset)
    except ValueError as err:
        raise ConfigError(f"invalid value for 'data.dataset': {err}") from None
    if cfg.model.encoder not in ENCODER_NAMES and cfg.model.encoder not in modality.encoders:
        raise ConfigError(
            "invalid value for 'model.encoder': must be one of "
            f"{sorted({*ENCODER_NAMES, *modality.encoders})}, got {cfg.model.encoder!r}"
        )
    for key, values in cfg.sweep.grid.items():
        if not values:
            raise ConfigError(
                f"invalid value for 'sweep.grid.{key}': must be a non-empty list, got {values!r}"
            )
    if cfg.loss.collision_free and cfg.data.dataset == "random":
        raise ConfigError(
            "invalid value for 'loss.collision_free': needs labelled data, got dataset 'random'"
        )
    if cfg.loss.anneal.enabled:
        from hardneg.pipeline.registry import NEGATIVES

        if cfg.loss.negatives.get("target_ess") is not None:
            raise ConfigError(
                "invalid value for 'loss.anneal.enabled': beta is chosen per batch from "
                f"loss.negatives.target_ess={cfg.loss.negatives['target_ess']!r}; anneal a fixed beta instead"
            )

        if "annealable" not in NEGATIVES.get(cfg.loss.negatives["name"]).tags:
            raise ConfigError(
                "invalid value for 'loss.anneal.enabled': annealing needs a distribution with beta "
                f"(e.g. 'hard'), got loss.negatives.name={cfg.loss.negatives['name']!r}"
            )
    if cfg.model.encoder not in modality.encoders:
        raise ConfigError(
            f"invalid value for 'model.encoder': data.dataset {cfg.data.dataset!r} ({modality.name}) takes "
            f"one of {sorted(modality.encoders)}, got {cfg.model.encoder!r}"
        )
    if cfg.data.dataset == "latent":
        _check_latent(cfg)
    _check_modality_hooks(cfg, modality)
    if check_groups:
        for i, strategy in enumerate(cfg.compare.strategies):
            _check_dotted(cfg, strategy.overrides, f"compare.strategies[{i}].overrides")
        _check_dotted(cfg, {k: v[0] for k, v in cfg.sweep.grid.items()}, "sweep.grid")


def _check_modality_hooks(cfg: RunConfig, modality: Any) -> None:
    """Settings that a modality with its own step, encoder or evaluation cannot honour."""
    name = f"data.dataset {cfg.data.dataset!r} ({modality.name})"
    if modality.step is not None:
        if cfg.train.mode != "simclr":
            raise ConfigError(
                f"invalid value for 'train.mode': {name} trains with its own step; use 'simclr', "
                f"got {cfg.train.mode!r}"
            )
        if cfg.train.grad_cache_chunk is not None:
            raise ConfigError(
                f"invalid value for 'train.grad_cache_chunk': {name} trains with its own step; must be "
                f"null, got {cfg.train.grad_cache_chunk}"
            )
    if modality.evaluate is not None and cfg.eval.every_n_epochs > 0:
        raise ConfigError(
            f"invalid value for 'eval.every_n_epochs': {name} has no online kNN; must be 0, "
            f"got {cfg.eval.every_n_epochs}"
        )
    if cfg.model.bidirectional and cfg.model.encoder != "gru":
        raise ConfigError(
            f"invalid value for 'model.bidirectional': only used by gru, got encoder {cfg.model.encoder!r}"
        )
    if cfg.train.gradient_clip_norm is not None and cfg.train.grad_cache_chunk is not None:
        raise ConfigError(
            "invalid value for 'train.gradient_clip_norm': GradCache steps the optimiser itself; must be "
            f"null with train.grad_cache_chunk, got {cfg.train.gradient_clip_norm}"
        )
    if "gin" not in modality.encoders and cfg.model.layers is not None:
        raise ConfigError(
            f"invalid value for 'model.layers': only used by gin; must be null, got {cfg.model.layers}"
        )


def _check_latent(cfg: RunConfig) -> None:
    lat = cfg.data.latent
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
    if cfg.model.encoder != "mlp":
        raise ConfigError(
            f"invalid value for 'model.encoder': data.dataset 'latent' yields vectors; use 'mlp', "
            f"got {cfg.model.encoder!r}"
        )
    if cfg.data.augment not in ("auto", "none"):
        raise ConfigError(
            "invalid value for 'data.augment': the views of data.dataset 'latent' are two samples of one "
            f"latent class (no augmentation); use 'auto' or 'none', got {cfg.data.augment!r}"
        )
    if cfg.data.oracle_positive:
        raise ConfigError(
            "invalid value for 'data.oracle_positive': the views of data.dataset 'latent' already are "
            "true positives; must be false, got True"
        )


def _check_dotted(cfg: RunConfig, overrides: dict[str, Any], where: str) -> None:
    """The overrides of a compare strategy / sweep point must give a valid config from ``cfg``."""
    try:
        validate(apply_overrides(config_to_dict(cfg), overrides), check_groups=False)
    except ConfigError as err:
        raise ConfigError(f"in {where}: {err}") from None


def packaged_config_names() -> list[str]:
    """Names of the configs shipped in ``hardneg/configs`` (usable as ``CONFIG``)."""
    folder = resources.files("hardneg") / "configs"
    return sorted(p.name[:-5] for p in folder.iterdir() if p.name.endswith(".yaml"))


def resolve_config_path(config: str | Path) -> Path:
    """A path to an existing YAML file, or the name of a packaged config."""
    path = Path(config)
    if path.is_file():
        return path
    names = packaged_config_names()
    name = str(config)
    if name.endswith(".yaml") and not path.exists() and Path(name).stem in names and "/" not in name:
        name = Path(name).stem
    if name in names:
        return Path(str(resources.files("hardneg") / "configs" / f"{name}.yaml"))
    raise ConfigError(
        f"config file not found: '{config}' (no such file, and not a packaged config name; "
        f"packaged configs: {', '.join(names)})"
    )


def read_yaml(path: Path) -> dict[str, Any]:
    """A config file's mapping (errors name the file; non-UTF-8 and duplicate keys refused)."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        raise ConfigError(
            f"config file '{path}' is not UTF-8 text ({err.reason} at byte {err.start})"
        ) from None
    except OSError as err:
        raise ConfigError(f"config file '{path}' cannot be read: {err.strerror or err}") from None
    data = _load_yaml_text(text, f"config file '{path}'")
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(
            f"config file '{path}' must hold a mapping at the top level, got {type(data).__name__}"
        )
    return data


def load_config(
    config: str | Path | None, overrides: typing.Sequence[str] | dict[str, Any] = ()
) -> RunConfig:
    """Load a YAML config (path or packaged name; ``None`` = defaults) and apply overrides."""
    base = _defaults()
    if config is not None:
        _deep_merge(base, read_yaml(resolve_config_path(config)), "")
    ov = dict(overrides) if isinstance(overrides, dict) else parse_overrides(list(overrides))
    apply_overrides(base, ov)
    return validate(base)


def with_overrides(cfg: RunConfig, overrides: dict[str, Any]) -> RunConfig:
    """A new validated config: ``cfg`` with dotted overrides applied."""
    return validate(apply_overrides(config_to_dict(cfg), overrides))


def dump_yaml(cfg: RunConfig) -> str:
    """The config as YAML text (round-trips through :func:`load_config`)."""
    return yaml.safe_dump(config_to_dict(cfg), sort_keys=False)
