"""YAML files and ``key=value`` overrides → a validated :class:`~hardneg.config.RunConfig`.

The config vocabulary (``RunConfig``, ``ConfigError``, the sections) has one import path,
:mod:`hardneg.config`; this module loads, checks and writes configs.

This is the edge of the pipeline: strings are parsed and checked here, once. A config file lists
only what it changes from the defaults; overrides use dotted keys (``loss.negatives.beta=0.5``,
``train.epochs=3``) and YAML values (``eval.kwise=[1,4]``). Every float literal a Python user
writes is a float (``1e-3`` too, which YAML 1.1 would read as a string); duplicate YAML keys are
an error. Component sections (``loss.negatives``, ``loss.objective``) are replaced as a whole by a
mapping, and setting their ``name`` to another component starts them afresh, so
``loss.negatives.name=ot`` never inherits ``beta`` from a previous ``hard``.

>>> from hardneg.config import ConfigError
>>> cfg = load_config(None, ["loss.negatives.name=hard", "loss.negatives.beta=0.5", "train.epochs=2"])
>>> cfg.loss.negatives, cfg.train.epochs
({'name': 'hard', 'beta': 0.5, 'detach_weights': False, 'rescale': False, 'target_ess': None}, 2)
>>> try:
...     load_config(None, ["loss.negatives.name=hard", "loss.negatives.epsilon=0.5"])
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
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from hardneg.config import (
    ConfigError,
    DataSection,
    ModelSection,
    RunConfig,
    Section,
    TrainConfig,
    from_validation_error,
    moco_section,
    shown,
    unknown_key,
)
from hardneg.config.errors import INT_TEXT_DIGITS
from hardneg.modalities import DEFAULT_DATASET, Modality, dataset_names, get_modality
from hardneg.modalities.base import trains_with_own_step
from hardneg.models.sections import encoder_section, encoder_section_names

__all__ = [
    "COMPONENT_SECTIONS",
    "Dependent",
    "apply_overrides",
    "config_to_dict",
    "dependent_sections",
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
_DEFAULT_DATASET: str = DEFAULT_DATASET  # the modalities' default: the shared schema names none
_DEFAULT_MODE: str = TrainConfig.model_fields["mode"].default
_DEFAULT_ENCODER: str = ModelSection.model_fields["encoder"].default
# the keys that choose the schema of a dependent section
_CHOOSERS = ("data.dataset", "train.mode", "model.encoder")
_FLOAT = re.compile(r"^[-+]?(\d[\d_]*\.?\d*|\.\d+)([eE][-+]?\d+)?$|^[-+]?(inf|nan)$", re.IGNORECASE)


#: Values that YAML aliases may add to a document (each alias counts the values of its anchor): enough
#: for any config that shares a section by ``&anchor``/``*alias``, far below a "billion laughs" bomb.
MAX_ALIAS_VALUES = 10_000
#: Nesting depth of a YAML document (a config nests about 5 levels; Python's recursion, ~1000 frames,
#: is what a deeper one would exhaust while it is copied and validated).
MAX_YAML_DEPTH = 64


class _Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """Safe YAML with duplicate keys refused and every Python float literal read as a float.

    Parsed by libyaml when PyYAML has it (``CSafeLoader``: about 10× faster, which a group's reuse
    check over hundreds of run folders' ``config.yaml`` notices), else in Python; the constructors
    (the checks above) are the same Python code either way. The composed document is checked before
    anything is constructed (:func:`_check_nodes`): aliases that would expand it by more than
    :data:`MAX_ALIAS_VALUES` values, a recursive alias and nesting deeper than :data:`MAX_YAML_DEPTH`
    are refused, in time and memory proportional to the text.
    """

    def get_single_data(self) -> Any:
        node = self.get_single_node()
        if node is None:
            return None
        _check_nodes(node)
        return self.construct_document(node)


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return list(node.value) if isinstance(node, yaml.SequenceNode) else []


def _check_nodes(root: yaml.Node) -> None:
    """Raise :class:`ConfigError` for a composed YAML document whose aliases expand it by more than
    :data:`MAX_ALIAS_VALUES` values, that holds a recursive alias, or that nests deeper than
    :data:`MAX_YAML_DEPTH`. An alias is the node of its anchor seen again, so sizes are counted once
    per distinct node (depth first, without recursion) and the expansion is never built."""
    size: dict[int, int] = {}  # id(node) -> values in the node once its aliases are expanded
    depth: dict[int, int] = {}
    open_: set[int] = set()  # nodes whose children are being counted: the path from the root
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, counted = stack.pop()
        key = id(node)
        if counted:
            kids = _children(node)
            size[key] = 1 + sum(size[id(k)] for k in kids)
            depth[key] = 1 + max((depth[id(k)] for k in kids), default=0)
            open_.discard(key)
            if depth[key] > MAX_YAML_DEPTH:
                raise ConfigError(f"it nests deeper than {MAX_YAML_DEPTH} levels (at line "
                                  f"{node.start_mark.line + 1}); a config nests a few levels")
            continue
        if key in size:
            continue
        if key in open_:
            raise ConfigError(f"the node anchored at line {node.start_mark.line + 1} holds an alias of "
                              "itself (a recursive YAML alias), which a config cannot hold")
        open_.add(key)
        stack.append((node, True))
        stack.extend((kid, False) for kid in _children(node) if id(kid) not in size)
    added = size[id(root)] - len(size)
    if added > MAX_ALIAS_VALUES:
        raise ConfigError(f"its YAML aliases expand it by {added} values, more than the {MAX_ALIAS_VALUES} "
                          "allowed (an alias bomb?); write the values out or share fewer of them")


def _construct_mapping(loader: _Loader, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
    seen: dict[Any, int] = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if not isinstance(key, typing.Hashable):
            raise ConfigError(f"the key at line {key_node.start_mark.line + 1} is a {type(key).__name__}; "
                              "a key must be a name (or another single value)")
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
        not node.style  # plain: None from PyYAML's parser, "" from libyaml's
        and isinstance(value, str)
        and _FLOAT.match(value)
        and any(c in value for c in ".eE")
    ):
        try:
            return float(value)
        except ValueError:
            return value
    return value


def _construct_int(loader: _Loader, node: yaml.ScalarNode) -> Any:
    """An integer; the text of one longer than Python converts (``train.epochs=1000…0``, a 5 000-digit one) is
    kept as text, which validation refuses naming the key and its range."""
    text = loader.construct_scalar(node)
    if len(text) > INT_TEXT_DIGITS:
        return text
    try:
        return loader.construct_yaml_int(node)
    except ValueError:  # a lower sys.set_int_max_str_digits() than Python's default
        return text


_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
_Loader.add_constructor("tag:yaml.org,2002:int", _construct_int)
_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SCALAR_TAG, _construct_str)


def _load_yaml_text(text: str, where: str) -> Any:
    try:
        return yaml.load(text, Loader=_Loader)
    except ConfigError as err:
        raise ConfigError(f"{where}: {err}") from None
    except yaml.YAMLError as err:
        raise ConfigError(f"{where} is not valid YAML: {err}") from None


def parse_overrides(items: typing.Sequence[str]) -> dict[str, Any]:
    """``["a.b=1", "c=[1,2]"]`` → ``{"a.b": 1, "c": [1, 2]}`` (values read as YAML; a value that is not
    YAML is its text; YAML that no config holds, as in a file, is an error naming the key)."""
    out: dict[str, Any] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ConfigError(
                f"override must look like key=value (e.g. loss.negatives.beta=0.5), got {shown(item)}"
            )
        try:
            out[key] = yaml.load(raw, Loader=_Loader) if raw.strip() else ""
        except yaml.YAMLError:  # not YAML: the text itself (name=a: b)
            out[key] = raw
        except ConfigError as err:  # YAML a config cannot hold (an alias bomb, a duplicate key)
            raise ConfigError(f"invalid value for '{key}': {err}") from None
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
    # another modality's data / eval sections (another mode's moco section, another encoder's model
    # section) first, then their keys
    _retarget(data, {k: overrides[k] for k in _CHOOSERS if k in overrides})
    ordered.sort(key=lambda kv: kv[0] not in _CHOOSERS)
    for dotted, value in ordered:
        parts = dotted.split(".")
        if len(parts) > 2 and parts[0] in _FREE_SECTIONS:
            raise ConfigError(f"'{parts[0]}' takes lightning.Trainer arguments one level deep "
                              f"({parts[0]}.{parts[1]}=VALUE); got override {dotted!r}")
        node = data
        for depth, part in enumerate(parts[:-1]):
            child = node.get(part)
            if not isinstance(child, dict):
                prefix = ".".join(parts[:depth])
                if part not in node:
                    raise _unknown(data, prefix, part, list(node))
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
            raise _unknown(data, ".".join(parts[:-1]), leaf, list(node))
        node[leaf] = copy.deepcopy(value)
    return data


def _deep_merge(
    base: dict[str, Any], new: dict[str, Any], prefix: str, root: dict[str, Any] | None = None
) -> None:
    root = base if root is None else root
    for key, value in new.items():
        if key not in base:
            raise _unknown(root, prefix, str(key), list(base))
        full = f"{prefix}.{key}" if prefix else str(key)
        if isinstance(base[key], dict) and isinstance(value, dict) and full not in _LEAF_DICTS:
            _deep_merge(base[key], value, full, root)
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


@dataclass(frozen=True)
class Dependent:
    """A section whose keys depend on a name chosen elsewhere in the config (a discriminated union).

    ``schema`` is the section's model for the chosen name, ``chosen_by`` says which name chose it
    (for messages), ``seed`` holds the keys the choice fixes inside the section (``data.dataset``)
    and ``owners(key)`` names the choices whose schema declares a key of the section (for messages).
    """

    schema: type[Section]
    chosen_by: str
    seed: dict[str, Any]
    owners: Callable[[str], list[str]]

    def defaults(self, where: str) -> dict[str, Any]:
        """The section's default mapping (``where``: its name, for the error of a key without default)."""
        try:
            return self.schema.model_validate(self.seed).model_dump(mode="python")
        except ValidationError as err:  # a section without defaults for every key
            raise from_validation_error(err, self.schema, where) from None


def _chosen(data: dict[str, Any], section: str, key: str, default: str) -> Any:
    node = data.get(section)
    return node.get(key, default) if isinstance(node, dict) else default


def _modalities_declaring(attr: str) -> Callable[[str], list[str]]:
    """``key`` → the names of the registered modalities whose ``attr`` section declares ``key``."""

    def owners(key: str) -> list[str]:
        found = [get_modality(name) for name in dataset_names()]
        names = [m.name for m in found if key in getattr(m, attr).model_fields]
        return list(dict.fromkeys(names))

    return owners


def _encoders_declaring(key: str) -> list[str]:
    return [name for name in encoder_section_names() if key in encoder_section(name).model_fields]


def _encoder(name: Any, modality: Modality, by: str) -> type[Section]:
    """The ``model`` section of the encoder ``name``, which the modality ``by`` names must accept."""
    try:
        return encoder_section(name)
    except ValueError as err:
        if isinstance(name, str) and name in modality.encoders:  # a user's encoder without its section
            raise ConfigError(f"invalid value for 'model.encoder': {err}") from None
        raise ConfigError(
            f"invalid value for 'model.encoder': {by} takes one of {sorted(modality.encoders)}, "
            f"got {shown(name)}"
        ) from None


def _moco_modes(key: str) -> list[str]:
    return [f"train.mode {mode!r}" for mode in typing.get_args(TrainConfig.model_fields["mode"].annotation)
            if key in moco_section(mode).model_fields]


def dependent_sections(data: dict[str, Any]) -> dict[str, Dependent]:
    """The name-dependent sections of the nested config ``data`` and their schemas, one mechanism
    for all: ``data`` and ``eval`` are the sections of the modality serving ``data.dataset``
    (:class:`~hardneg.modalities.Modality` ``section`` / ``eval_section``), ``moco`` is that of
    ``train.mode`` (:func:`~hardneg.config.schema.moco_section`), ``model`` that of
    ``model.encoder`` (:func:`~hardneg.models.sections.encoder_section`). Raises
    :class:`ConfigError` for a ``data.dataset`` no modality serves or a ``model.encoder`` without
    a registered section."""
    dataset = _chosen(data, "data", "dataset", _DEFAULT_DATASET)
    modality = _modality(dataset)
    by = f"data.dataset {dataset!r} ({modality.name})"
    mode = _chosen(data, "train", "mode", _DEFAULT_MODE)
    encoder = _chosen(data, "model", "encoder", _DEFAULT_ENCODER)
    return {
        "data": Dependent(modality.section, by, {"dataset": dataset}, _modalities_declaring("section")),
        "model": Dependent(_encoder(encoder, modality, by), f"model.encoder {encoder!r}",
                           {"encoder": encoder}, _encoders_declaring),
        "eval": Dependent(modality.eval_section, by, {}, _modalities_declaring("eval_section")),
        "moco": Dependent(moco_section(str(mode)), f"train.mode {mode!r}", {}, _moco_modes),
    }


def _unknown(data: dict[str, Any], prefix: str, key: str, valid: list[str]) -> ConfigError:
    """:func:`unknown_key`, which for a key of a name-dependent section also names the choice whose
    keys apply and the choices the key applies to."""
    top = prefix.split(".")[0]
    if prefix != top or top not in ("data", "model", "eval", "moco") or not isinstance(data, dict):
        return unknown_key(prefix, key, valid)  # a sub-section's keys do not depend on the choice
    try:
        dep = dependent_sections(data)[top]
    except ConfigError:
        return unknown_key(prefix, key, valid)
    full = f"{prefix}.{key}"
    owners = dep.owners(key)
    applies = f"; '{full}' applies to {', '.join(owners)}" if owners else ""
    if not valid:
        return ConfigError(
            f"unknown config key '{full}': '{prefix}' takes no keys with {dep.chosen_by}{applies}"
        )
    return ConfigError(f"{unknown_key(prefix, key, valid)} (those of {dep.chosen_by}){applies}")


def _defaults(
    dataset: str = _DEFAULT_DATASET, mode: str = _DEFAULT_MODE, encoder: str = _DEFAULT_ENCODER
) -> dict[str, Any]:
    base = RunConfig(data=DataSection(dataset=dataset)).model_dump(mode="python")
    choice = {"data": {"dataset": dataset}, "train": {"mode": mode}, "model": {"encoder": encoder}}
    for name, dep in dependent_sections(choice).items():
        base[name] = dep.defaults(name)
    return base


def _retarget(data: dict[str, Any], chosen: dict[str, Any]) -> None:
    """A name that chooses a section's schema set to another value (``data.dataset`` of another
    modality, another ``train.mode`` or ``model.encoder``): start each section whose schema changes
    anew, keeping the values of the keys both schemas have (e.g. ``data.root``, ``eval.batch_size``,
    ``model.feature_dim``)."""
    if not chosen:
        return
    after: dict[str, Any] = {k: dict(v) if isinstance(v, dict) else v for k, v in data.items()}
    for dotted, value in chosen.items():
        section, key = dotted.split(".")
        if not isinstance(after.get(section), dict):
            return  # a section that is not a mapping: validate() names it
        after[section][key] = value
    before_deps, after_deps = dependent_sections(data), dependent_sections(after)
    for name, dep in after_deps.items():
        old = data.get(name, {})
        if before_deps[name].schema is dep.schema or not isinstance(old, dict):
            continue
        fresh = dep.defaults(name)
        for key, value in old.items():
            if key in fresh and key not in dep.seed and not isinstance(value, dict):
                fresh[key] = value
        data[name] = fresh


def _drop_inapplicable(user: dict[str, Any], base: dict[str, Any]) -> None:
    """A run folder's ``config.yaml`` written before ``eval``, ``moco`` and ``model`` depended on the
    modality, the mode and the encoder holds every ``eval``, ``moco`` and ``model`` key; those that
    do not apply were ignored when the run trained (left at their defaults, for ``model``), and are
    dropped when it is read."""
    for name in ("eval", "moco", "model"):
        section, known = user.get(name), base.get(name)
        if isinstance(section, dict) and isinstance(known, dict):
            user[name] = {k: v for k, v in section.items() if k in known}


def _is_run_record(path: Path) -> bool:
    """Whether ``path`` is the ``config.yaml`` a run wrote into its folder (beside the folder's marker,
    ``provenance.json``, ``metrics.json`` or ``checkpoints/``)."""
    beside = (".hardneg-run", "provenance.json", "metrics.json", "checkpoints")
    return path.name == "config.yaml" and any((path.parent / name).exists() for name in beside)


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

    Each name-dependent section (:func:`dependent_sections`: ``data`` and ``eval`` by the modality
    of ``data.dataset``, ``moco`` by ``train.mode``) is validated with the schema of the chosen
    name (a key that does not apply is an error naming the keys that do), the loss components are
    built once (kept in ``cfg.loss`` for :func:`~hardneg.pipeline.build.build_loss`), and
    the modality's own checks run. ``check_groups`` (``hardneg compare`` / ``sweep`` only) also
    validates every ``compare.strategies[i].overrides`` and ``sweep.grid`` point.
    """
    if not isinstance(data, dict):
        raise ConfigError(f"a config must be a mapping, got {type(data).__name__}")
    imports = data.get("imports") or []
    if isinstance(imports, list) and all(isinstance(m, str) for m in imports):
        _import_plugins(imports)
    sections: dict[str, Section] = {}
    for name, dep in dependent_sections(data).items():
        raw = data.get(name, {})
        if not isinstance(raw, dict):
            raise ConfigError(f"invalid value for '{name}': must be a mapping, got {shown(raw)}")
        try:
            sections[name] = dep.schema.model_validate(raw)
        except ValidationError as err:
            first = err.errors()[0]
            if first["type"] == "extra_forbidden" and len(first["loc"]) == 1:
                raise _unknown(data, name, str(first["loc"][0]), list(dep.schema.model_fields)) from None
            raise from_validation_error(err, dep.schema, name) from None
    modality = _modality(_chosen(data, "data", "dataset", _DEFAULT_DATASET))
    try:
        cfg = RunConfig.model_validate({**data, **sections})
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
                f"invalid value for 'sweep.grid.{key}': must be a non-empty list, got {shown(values)}"
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
    if trains_with_own_step(modality, cfg):
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
    online = getattr(cfg.eval, "every_n_epochs", 0)  # the engine readouts' online kNN
    if modality.evaluates_itself and online > 0:
        raise ConfigError(
            f"invalid value for 'eval.every_n_epochs': {name} has no online kNN; must be 0, got {online}"
        )
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
    """Names of the configs shipped in ``hardneg/configs`` (usable as ``CONFIG``), those of its
    folders as ``<folder>/<name>`` (``paper/…``, ``studies/…``)."""
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

    The defaults of ``data`` and ``eval`` are those of the modality of the file's ``data.dataset``
    (:data:`hardneg.modalities.DEFAULT_DATASET` without one), those of ``moco`` those of its
    ``train.mode``, those of ``model`` those of its ``model.encoder``; an override of
    ``data.dataset`` to another modality's data set (of ``train.mode``, of ``model.encoder``) starts
    those sections anew, keeping the values of the keys both schemas have.
    A run folder's ``config.yaml`` written by an older hardneg may hold ``eval`` /
    ``moco`` / ``model`` keys that do not apply: they had no effect, and are dropped. ``check_groups``:
    also validate the compare strategies and sweep points (the group runner validates the jobs of
    the group it runs anyway, before writing anything).
    """
    path = resolve_config_path(config) if config is not None else None
    user = read_yaml(path) if path is not None else {}
    ov = dict(overrides) if isinstance(overrides, dict) else parse_overrides(list(overrides))
    imports = ov.get("imports", user.get("imports")) or []
    if isinstance(imports, list) and all(isinstance(m, str) for m in imports):
        _import_plugins(imports)  # a user's modality must be registered before its defaults are read
    # the file's data set and mode give the defaults; an override of either retargets in apply_overrides
    dataset = _chosen(user, "data", "dataset", _DEFAULT_DATASET)
    mode = _chosen(user, "train", "mode", _DEFAULT_MODE)
    encoder = _chosen(user, "model", "encoder", _DEFAULT_ENCODER)
    base = _defaults(dataset if isinstance(dataset, str) else _DEFAULT_DATASET,
                     mode if isinstance(mode, str) else _DEFAULT_MODE,
                     encoder if isinstance(encoder, str) else _DEFAULT_ENCODER)
    if path is not None and _is_run_record(path):
        _drop_inapplicable(user, base)
    _deep_merge(base, user, "")
    apply_overrides(base, ov)
    _name_the_data(base, ov)
    return validate(base, check_groups=check_groups)


def _name_the_data(cfg: dict[str, Any], overrides: dict[str, Any]) -> None:
    """A run whose data set was changed by an override is named after it, unless ``name`` is given.

    ``hardneg train CONFIG data.dataset=D data.name=N`` writes ``runs/<name>-D-N``, not
    ``runs/<name>``: a config of one data set run on another is not named after the first.
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


def __getattr__(name: str) -> Any:
    """The config vocabulary's 0.2 import path (``hardneg.pipeline.config.X``), with a warning
    (:data:`hardneg._deprecated.NAMES`)."""
    from hardneg._deprecated import moved_name

    return moved_name(__name__, name)
