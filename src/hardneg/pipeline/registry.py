"""One registry per kind of component: names → factories, with declared parameters.

The config names components (``loss.negatives: {name: hard, beta: 1.0}``); the registry turns
a name and its parameters into an object. A factory's parameters are read from its keyword-only
signature (types and defaults) into a pydantic model that forbids unknown keys, so a parameter
that does not belong to the chosen component is an error naming the key and the valid ones.

Classes defined outside the package register the same way, from the user's own module, which a
config lists under ``imports:`` so that the CLI imports it before validating:

>>> from hardneg.negatives import NegativeDistribution, normalize_log_weights
>>> class Farthest(NegativeDistribution):
...     def __init__(self, *, gamma: float = 1.0):
...         super().__init__()
...         self.gamma = gamma
...     def log_weights(self, scores):
...         return normalize_log_weights(-self.gamma * scores.logits, scores.mask)
>>> NEGATIVES.register("farthest", Farthest, description="up-weights far negatives")
>>> NEGATIVES.params("farthest")
{'gamma': 1.0}
>>> NEGATIVES.build("farthest", {"gamma": 2.0}).gamma
2.0
>>> NEGATIVES.unregister("farthest")
"""

from __future__ import annotations

import difflib
import inspect
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, create_model

from hardneg.config.errors import shown

__all__ = [
    "NEGATIVES",
    "OBJECTIVES",
    "Component",
    "Registry",
    "register_negatives",
    "register_objective",
]


@dataclass(frozen=True)
class Component:
    """A registered factory, the pydantic model of its parameters, and a one-line description."""

    name: str
    factory: Callable[..., Any]
    params: type[BaseModel]
    description: str = ""
    tags: frozenset[str] = field(default_factory=frozenset)


def _yaml_type(tp: Any) -> Any:
    """A parameter type a config can hold: callables (e.g. a cost function) are code-only."""
    if _is_plain(tp):
        return tp
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        keep = [a for a in typing.get_args(tp) if _is_plain(a)]
        if not keep:
            return Any
        return keep[0] if len(keep) == 1 else typing.Union[tuple(keep)]  # noqa: UP007
    return Any


def _is_plain(tp: Any) -> bool:
    return tp in (int, float, str, bool, type(None)) or typing.get_origin(tp) in (list, dict)


def params_model(
    name: str,
    factory: Callable[..., Any],
    *,
    defaults: dict[str, Any] | None = None,
    skip: tuple[str, ...] = (),
) -> type[BaseModel]:
    """A pydantic model of ``factory``'s keyword parameters (unknown keys forbidden)."""
    target = factory.__init__ if inspect.isclass(factory) else factory
    sig = inspect.signature(target)
    try:
        hints = typing.get_type_hints(target)
    except Exception:  # unresolvable annotations: accept any value
        hints = {}
    fields: dict[str, Any] = {}
    for p in sig.parameters.values():
        if p.name in ("self", *skip) or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        default = (defaults or {}).get(p.name, p.default)
        tp = _yaml_type(hints.get(p.name, Any))
        fields[p.name] = (tp, ... if default is inspect.Parameter.empty else default)
    config = ConfigDict(extra="forbid", allow_inf_nan=False)
    model: type[BaseModel] = create_model(f"{name}_params", __config__=config, **fields)
    return model


class Registry:
    """Names → :class:`Component` for one kind (``"negative distribution"``, ``"objective"``, …)."""

    def __init__(self, kind: str, key: str) -> None:
        self.kind = kind
        self.key = key  # the config key that names a component of this kind, for messages
        self._items: dict[str, Component] = {}

    def register(
        self,
        name: str,
        factory: Callable[..., Any],
        *,
        description: str = "",
        defaults: dict[str, Any] | None = None,
        skip: tuple[str, ...] = (),
        tags: tuple[str, ...] = (),
    ) -> None:
        """Add (or replace) ``name``; its parameters are ``factory``'s keyword parameters minus ``skip``."""
        if not isinstance(name, str) or not name.isidentifier():
            raise ValueError(f"name must be an identifier-like string, got {name!r}")
        model = params_model(name, factory, defaults=defaults, skip=skip)
        self._items[name] = Component(name, factory, model, description, frozenset(tags))

    def unregister(self, name: str) -> None:
        """Remove ``name`` (tests and plugins clean up after themselves)."""
        self._items.pop(name, None)

    def names(self) -> tuple[str, ...]:
        return tuple(sorted(self._items))

    def get(self, name: str) -> Component:
        """The component ``name``; raises ``ValueError`` naming the registered names (a list, a mapping
        or a number is not a name)."""
        if not isinstance(name, str) or name not in self._items:
            close = difflib.get_close_matches(name, self.names(), n=1) if isinstance(name, str) else []
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ValueError(f"{self.key}.name must be one of {list(self.names())}, got {shown(name)}{hint}")
        return self._items[name]

    def params(self, name: str) -> dict[str, Any]:
        """The default parameters of ``name`` (required ones absent)."""
        fields = self.get(name).params.model_fields
        return {k: f.default for k, f in fields.items() if not f.is_required()}

    def validate(self, name: str, params: dict[str, Any]) -> dict[str, Any]:
        """``params`` checked against ``name``'s model, with defaults filled in (raises ValidationError)."""
        model = self.get(name).params.model_validate(params)
        return model.model_dump()

    def build(self, name: str, params: dict[str, Any], **extra: Any) -> Any:
        """The component ``name`` built from validated ``params`` (plus code-only ``extra``)."""
        return self.get(name).factory(**self.validate(name, params), **extra)


NEGATIVES = Registry("negative distribution", "loss.negatives")
OBJECTIVES = Registry("objective", "loss.objective")


def register_negatives(name: str, factory: Callable[..., Any], **kwargs: Any) -> None:
    """Register a negative distribution for configs (``loss.negatives.name``)."""
    NEGATIVES.register(name, factory, **kwargs)


def register_objective(name: str, factory: Callable[..., Any], **kwargs: Any) -> None:
    """Register an objective for configs (``loss.objective.name``)."""
    OBJECTIVES.register(name, factory, **kwargs)


def _register_builtins() -> None:
    from hardneg import negatives as n
    from hardneg import objectives as o

    NEGATIVES.register(
        "uniform", n.Uniform, description="uniform negatives (SimCLR; debiased with objective debiased)"
    )
    NEGATIVES.register(
        "hard",
        n.Hard,
        description="hard negatives q_beta of Robinson et al. (ICLR 2021)",
        tags=("annealable",),
    )
    NEGATIVES.register(
        "ot",
        n.OptimalTransport,
        defaults={"epsilon": 0.5},
        description="entropic optimal-transport negatives (Jiang et al.)",
    )
    OBJECTIVES.register("infonce", o.InfoNCE, description="InfoNCE / NT-Xent with weighted negatives")
    OBJECTIVES.register("debiased", o.Debiased, description="debiased objective with class prior tau_plus")
    OBJECTIVES.register(
        "decoupled", o.Decoupled, description="decoupled contrastive loss, DCL / DCLW with sigma (Yeh et al.)"
    )
    OBJECTIVES.register("logistic", o.Logistic, description="Arora et al.'s k-way logistic loss")
    OBJECTIVES.register(
        "logistic_mpair", o.LogisticMPair, description="m-pair logistic loss (Jiang et al. eq. (1))"
    )
    OBJECTIVES.register("hinge", o.Hinge, description="Arora et al.'s k-way hinge loss")
    OBJECTIVES.register("triplet", o.Triplet, description="triplet loss with margin")
    OBJECTIVES.register(
        "bcl", o.BasicContrastive, description="basic contrastive loss (Jiang et al. eq. (9))"
    )
    OBJECTIVES.register("jsd", o.JensenShannon, description="InfoGraph's Jensen-Shannon objective")


_register_builtins()
