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
import re
import typing
from importlib import resources
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from hardneg.config import (
    CompareConfig,
    ConfigError,
    DataSection,
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
from hardneg.modalities import Modality, get_modality
from hardneg.models.configured import check_model_keys

__all__ = [
    "COMPONENT_SECTIONS",
    "CompareConfig",
    "ConfigError",
    "DataSection",
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
    "flat_config",
    "load_config",
    "packaged_config_names",
    "parse_overrides",
    "read_yaml",
    "resolve_config_path",
    "validate",
    "with_overrides",
]

COMPONENT_SECTIONS = ("loss.negatives", "loss.objective")
_LEAF_DICTS = {"sweep.grid", "trainer", *COMPONENT_SECTIONS}  # dict-valued keys replaced as a whole
_FREE_SECTIONS = ("trainer",)  # any key (checked against lightning.Trainer by validate())
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
    if "data.dataset" in overrides:  # another modality's data section first, then its keys
        _retarget_data(data, overrides["data.dataset"])
        ordered.sort(key=lambda kv: kv[0] != "data.dataset")
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
        if len(parts) == 2 and parts[0] in _FREE_SECTIONS:
            node[leaf] = copy.deepcopy(value)
            continue
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


def flat_config(cfg: RunConfig) -> dict[str, Any]:
    """``{dotted key: value}`` of a config (``sweep.grid`` kept whole)."""
    return _flatten(config_to_dict(cfg))


def _flatten(d: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        key = f"{prefix}.{k}" if prefix else k
        if isinstance(v, dict) and key != "sweep.grid":
            out.update(_flatten(v, key))
        else:
            out[key] = v
    return out


def _modality(name: Any) -> Modality:
    try:
        return get_modality(name)
    except ValueError as err:
        raise ConfigError(f"invalid value for 'data.dataset': {err}") from None


def _data_defaults(dataset: str) -> dict[str, Any]:
    """The default ``data`` section of the modality serving ``dataset``."""
    section = _modality(dataset).section
    try:
        return section(dataset=dataset).model_dump(mode="python")
    except ValidationError as err:  # a section without defaults for every key
        raise from_validation_error(err, section, "data") from None


def _defaults(dataset: str = "digits") -> dict[str, Any]:
    base = RunConfig().model_dump(mode="python")
    base["data"] = _data_defaults(dataset)
    return base


def _retarget_data(data: dict[str, Any], dataset: Any) -> None:
    """``data.dataset`` set to a data set of another modality: start that modality's section anew,
    keeping the values of the keys both sections have (e.g. ``data.root``)."""
    old = data.get("data", {})
    if not isinstance(old, dict) or old.get("dataset") == dataset:
        return
    if get_modality_or_none(old.get("dataset")) is get_modality_or_none(dataset):
        return
    fresh = _data_defaults(dataset)
    for key, value in old.items():
        if key in fresh and key != "dataset" and not isinstance(value, dict):
            fresh[key] = value
    data["data"] = fresh


def get_modality_or_none(name: Any) -> Modality | None:
    """The modality of ``name``, or ``None`` when no modality serves it."""
    try:
        return get_modality(name)
    except (ValueError, TypeError):
        return None


def _import_plugins(modules: list[str]) -> None:
    for name in modules:
        try:
            importlib.import_module(name)
        except ImportError as err:
            raise ConfigError(f"invalid value for 'imports': cannot import module {name!r} ({err})") from None


def _check_component(cfg: RunConfig, section: str) -> None:
    """Validate a component section and build the component once (kept for :func:`build_loss`)."""
    from hardneg.pipeline.registry import NEGATIVES, OBJECTIVES

    registry = NEGATIVES if section == "loss.negatives" else OBJECTIVES
    attr = section.split(".")[1]
    raw = dict(getattr(cfg.loss, attr))
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
        built = component.factory(**params)  # the component's own range checks, at config time
    except (ValueError, TypeError) as err:
        raise ConfigError(f"invalid value in '{section}' ({name}): {err}") from None
    object.__setattr__(cfg.loss, attr, {"name": name, **params})
    cfg.loss.keep_built(attr, built)


def validate(data: dict[str, Any], *, check_groups: bool = False) -> RunConfig:
    """Validate a nested mapping into a :class:`RunConfig` (raises :class:`ConfigError`), once.

    ``data`` is validated with the section of the modality registered for ``data.dataset`` (a
    key that does not apply to it is an error naming the keys that do), the loss components are
    built once (kept in ``cfg.loss`` for :func:`~hardneg.pipeline.build.build_loss`), and
    the modality's own checks run. ``check_groups`` (``hardneg compare`` / ``sweep`` only) also
    validates every ``compare.strategies[i].overrides`` and ``sweep.grid`` point.
    """
    if not isinstance(data, dict):
        raise ConfigError(f"a config must be a mapping, got {type(data).__name__}")
    imports = data.get("imports") or []
    if isinstance(imports, list) and all(isinstance(m, str) for m in imports):
        _import_plugins(imports)
    raw_data = data.get("data", {})
    if not isinstance(raw_data, dict):
        raise ConfigError(f"invalid value for 'data': must be a mapping, got {raw_data!r}")
    modality = _modality(raw_data.get("dataset", "digits"))
    try:
        section = modality.section.model_validate(raw_data)
    except ValidationError as err:
        raise from_validation_error(err, modality.section, "data") from None
    try:
        cfg = RunConfig.model_validate({**data, "data": section})
    except ValidationError as err:
        raise from_validation_error(err, RunConfig) from None
    for name in COMPONENT_SECTIONS:
        _check_component(cfg, name)
    _check_cross(cfg, modality)
    modality.check(cfg)
    if check_groups:
        check_groups_of(cfg)
    return cfg


def check_groups_of(cfg: RunConfig) -> None:
    """Every compare strategy and sweep grid point must give a valid config from ``cfg``."""
    for key, values in cfg.sweep.grid.items():
        if not values:
            raise ConfigError(
                f"invalid value for 'sweep.grid.{key}': must be a non-empty list, got {values!r}"
            )
    for i, strategy in enumerate(cfg.compare.strategies):
        _check_dotted(cfg, strategy.overrides, f"compare.strategies[{i}].overrides")
    for key, values in cfg.sweep.grid.items():
        for value in values:
            _check_dotted(cfg, {key: value}, f"sweep.grid.{key}={value!r}")


def _check_cross(cfg: RunConfig, modality: Modality) -> None:
    """Checks across sections that hold for every modality."""
    name = f"data.dataset {cfg.data.dataset!r} ({modality.name})"
    if cfg.model.encoder not in modality.encoders:
        raise ConfigError(
            f"invalid value for 'model.encoder': {name} takes one of {sorted(modality.encoders)}, "
            f"got {cfg.model.encoder!r}"
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
    if modality.own_step(cfg):
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
    if modality.has_evaluate and cfg.eval.every_n_epochs > 0:
        raise ConfigError(
            f"invalid value for 'eval.every_n_epochs': {name} has no online kNN; must be 0, "
            f"got {cfg.eval.every_n_epochs}"
        )
    check_model_keys(cfg.model)
    if cfg.train.gradient_clip_norm is not None and cfg.train.grad_cache_chunk is not None:
        raise ConfigError(
            "invalid value for 'train.gradient_clip_norm': GradCache steps the optimiser itself; must be "
            f"null with train.grad_cache_chunk, got {cfg.train.gradient_clip_norm}"
        )
    if cfg.train.accumulate_grad_batches > 1 and cfg.train.grad_cache_chunk is not None:
        raise ConfigError(
            "invalid value for 'train.accumulate_grad_batches': GradCache steps the optimiser itself; must "
            f"be 1 with train.grad_cache_chunk, got {cfg.train.accumulate_grad_batches}"
        )
    if cfg.train.warmup_epochs >= cfg.train.epochs:
        raise ConfigError(
            f"invalid value for 'train.warmup_epochs': must be < train.epochs = {cfg.train.epochs}, "
            f"got {cfg.train.warmup_epochs}"
        )
    if cfg.trainer:
        from hardneg.pipeline.trainer_options import check_trainer_options

        check_trainer_options(cfg.trainer)


def _check_dotted(cfg: RunConfig, overrides: dict[str, Any], where: str) -> None:
    """The overrides of a compare strategy / sweep point must give a valid config from ``cfg``."""
    try:
        validate(apply_overrides(config_to_dict(cfg), overrides))
    except ConfigError as err:
        raise ConfigError(f"in {where}: {err}") from None


def packaged_config_names() -> list[str]:
    """Names of the configs shipped in ``hardneg/configs`` (usable as ``CONFIG``): ``digits``, …, and
    those of its folders as ``paper/cifar10_hard``, ``studies/k_digits``."""
    folder = resources.files("hardneg") / "configs"
    names = [p.name[:-5] for p in folder.iterdir() if p.name.endswith(".yaml")]
    for sub in folder.iterdir():
        if sub.is_dir():
            names += [f"{sub.name}/{p.name[:-5]}" for p in sub.iterdir() if p.name.endswith(".yaml")]
    return sorted(names)


def resolve_config_path(config: str | Path) -> Path:
    """A path to an existing YAML file, or the name of a packaged config (``.yaml`` optional)."""
    path = Path(config)
    if path.is_file():
        return path
    names = packaged_config_names()
    name = str(config).removesuffix(".yaml")
    if name.startswith("configs/"):  # the repository-relative path of a packaged config
        name = name.removeprefix("configs/")
    if name in names:
        return Path(str(resources.files("hardneg") / "configs" / f"{name}.yaml"))
    top = [n for n in names if "/" not in n]
    raise ConfigError(
        f"config file not found: '{config}' (no such file, and not a packaged config name; "
        f"packaged configs: {', '.join(top)}, and paper/…, studies/… (hardneg configs lists them all))"
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
    config: str | Path | None,
    overrides: typing.Sequence[str] | dict[str, Any] = (),
    *,
    check_groups: bool = False,
) -> RunConfig:
    """Load a YAML config (path or packaged name; ``None`` = defaults) and apply overrides.

    The defaults of ``data`` are those of the modality of the file's ``data.dataset`` (``digits``
    without one); an override of ``data.dataset`` to another modality's data set starts that
    modality's section anew, keeping the values of the keys both sections have. ``check_groups``:
    also validate the compare strategies and sweep points (the group runner validates the jobs of
    the group it runs anyway, before writing anything).
    """
    user = read_yaml(resolve_config_path(config)) if config is not None else {}
    ov = dict(overrides) if isinstance(overrides, dict) else parse_overrides(list(overrides))
    imports = ov.get("imports", user.get("imports")) or []
    if isinstance(imports, list) and all(isinstance(m, str) for m in imports):
        _import_plugins(imports)  # a user's modality must be registered before its defaults are read
    user_data = user.get("data")
    # the file's data set gives the defaults; an override of data.dataset retargets in apply_overrides
    dataset = user_data.get("dataset", "digits") if isinstance(user_data, dict) else "digits"
    base = _defaults(dataset if isinstance(dataset, str) else "digits")
    _deep_merge(base, user, "")
    apply_overrides(base, ov)
    _name_the_data(base, ov)
    return validate(base, check_groups=check_groups)


def _name_the_data(cfg: dict[str, Any], overrides: dict[str, Any]) -> None:
    """A run whose data set was changed by an override is named after it, unless ``name`` is given.

    ``hardneg train graphs data.dataset=tu data.name=MUTAG`` writes ``runs/graphs-tu-MUTAG``, not
    ``runs/graphs`` (and ``fashion_mnist data.dataset=mnist`` is not named Fashion-MNIST).
    """
    if "name" in overrides or not isinstance(cfg.get("data"), dict):
        return
    given = overrides.get("data")
    whole: dict[str, Any] = given if isinstance(given, dict) else {}
    if not any(f"data.{k}" in overrides or k in whole for k in ("dataset", "name")):
        return
    data = cfg["data"]
    parts = [str(data.get("dataset"))] + ([str(data["name"])] if data.get("name") else [])
    cfg["name"] = "-".join([str(cfg.get("name", "run")), *parts]).replace("/", "_")


def with_overrides(cfg: RunConfig, overrides: dict[str, Any]) -> RunConfig:
    """A new validated config: ``cfg`` with dotted overrides applied."""
    return validate(apply_overrides(config_to_dict(cfg), overrides))


def dump_yaml(cfg: RunConfig) -> str:
    """The config as YAML text (round-trips through :func:`load_config`)."""
    return yaml.safe_dump(config_to_dict(cfg), sort_keys=False)
