"""Config errors in one format: the dotted key, the constraint, the value received (and, for an
unknown key, the valid keys and a "did you mean")."""

from __future__ import annotations

import difflib
import re
import typing
from typing import Any

from pydantic import BaseModel, ValidationError

__all__ = ["ConfigError", "from_validation_error", "unknown_key"]


class ConfigError(ValueError):
    """An invalid configuration: unknown key, wrong type, value outside its constraint."""


def unknown_key(prefix: str, key: str, valid: list[str]) -> ConfigError:
    """``unknown config key 'a.b' (did you mean 'a.c'?); valid keys in 'a': c, d``."""
    where = f"'{prefix}'" if prefix else "the top level"
    full = f"{prefix}.{key}" if prefix else key
    close = difflib.get_close_matches(key, valid, n=1)
    hint = f" (did you mean '{prefix + '.' if prefix else ''}{close[0]}'?)" if close else ""
    return ConfigError(
        f"unknown config key '{full}'{hint}; valid keys in {where}: {', '.join(sorted(valid))}"
    )


def _loc(prefix: str, loc: tuple[Any, ...]) -> str:
    out = prefix
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out = f"{out}.{part}" if out else str(part)
    return out


def _fields_at(model: type[BaseModel], loc: tuple[Any, ...]) -> list[str]:
    """The field names of the (nested) model at ``loc`` (for the valid-keys listing)."""
    current: Any = model
    for part in loc:
        if isinstance(part, int):
            continue
        if (
            not (isinstance(current, type) and issubclass(current, BaseModel))
            or part not in current.model_fields
        ):
            return []
        current = current.model_fields[part].annotation
        for arg in (current, *typing.get_args(current)):
            if isinstance(arg, type) and issubclass(arg, BaseModel):
                current = arg
                break
    return list(current.model_fields) if isinstance(current, type) and issubclass(current, BaseModel) else []


def _constraint(kind: str, ctx: dict[str, Any], msg: str) -> str:
    bounds = {
        "greater_than": ("gt", ">"),
        "greater_than_equal": ("ge", ">="),
        "less_than": ("lt", "<"),
        "less_than_equal": ("le", "<="),
    }
    if kind in bounds:
        key, sym = bounds[kind]
        return f"must be {sym} {ctx[key]}"
    if kind in ("int_parsing", "int_type", "int_from_float"):
        return "must be an integer"
    if kind in ("float_parsing", "float_type"):
        return "must be a number"
    if kind in ("bool_parsing", "bool_type"):
        return "must be true or false"
    if kind == "literal_error":
        choices = sorted(re.findall(r"'([^']*)'", str(ctx.get("expected", ""))))
        return f"must be one of {choices}"
    if kind == "string_type":
        return "must be a string"
    if kind == "list_type":
        return "must be a list"
    if kind in ("dict_type", "model_type", "model_attributes_type"):
        return "must be a mapping"
    if kind == "finite_number":
        return "must be a finite number"
    if kind == "missing":
        return "is required"
    if kind == "too_short":
        return "must not be empty"
    return msg.removeprefix("Value error, ")


def from_validation_error(err: ValidationError, model: type[BaseModel], prefix: str = "") -> ConfigError:
    """The first error of a pydantic ``ValidationError`` as one :class:`ConfigError` line."""
    e = err.errors()[0]
    loc = tuple(e["loc"])
    if e["type"] == "extra_forbidden":
        return unknown_key(_loc(prefix, loc[:-1]), str(loc[-1]), _fields_at(model, loc[:-1]))
    what = _constraint(e["type"], e.get("ctx") or {}, e["msg"])
    if e["type"] == "missing":
        return ConfigError(f"missing config key '{_loc(prefix, loc)}': {what}")
    got = repr(e.get("input"))
    got = got if len(got) <= 60 else f"{got[:40]}... ({len(got)} characters)"
    return ConfigError(f"invalid value for '{_loc(prefix, loc)}': {what}, got {got}")
