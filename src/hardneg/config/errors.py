"""Config errors in one format: the dotted key, the constraint, the value received (and, for an
unknown key, the valid keys and a "did you mean")."""

from __future__ import annotations

import difflib
import math
import re
import types
import typing
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo

__all__ = [
    "INT64", "INT_TEXT_DIGITS", "ConfigError", "from_validation_error", "int_range", "shown", "unknown_key",
]

#: The integers a config holds: those of a 64-bit signed integer, as torch and numpy index.
INT64 = (-(2**63), 2**63 - 1)
_DIGITS = re.compile(r"^[-+]?\d[\d_]*$")
#: Digits of the longest integer Python converts to and from text (its default sys.get_int_max_str_digits()).
INT_TEXT_DIGITS = 4300


class ConfigError(ValueError):
    """An invalid configuration: unknown key, wrong type, value outside its constraint."""


def shown(value: Any, limit: int = 60) -> str:
    """``repr(value)`` for a message, cut to about ``limit`` characters; an integer longer than Python
    writes out (4 300 decimal places), or the text of one, is described by its length.

    >>> shown(10**5000), shown("1" * 5000)
    ('a 5001-digit integer', 'a 5000-digit integer')
    >>> shown("x" * 100)
    "'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx... (102 characters)"
    """
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**INT_TEXT_DIGITS:
        return f"a {_digit_count(value)}-digit integer"  # repr(value) would raise ValueError
    if isinstance(value, str) and len(value) > INT_TEXT_DIGITS and _DIGITS.match(value):
        return f"a {sum(c.isdigit() for c in value)}-digit integer"
    text = repr(value)
    return text if len(text) <= limit else f"{text[:40]}... ({len(text)} characters)"


def _digit_count(n: int) -> int:
    """The length of ``n`` in decimal (without writing it out)."""
    n = abs(n)
    d = int(n.bit_length() * math.log10(2)) + 1  # exact, or one too many
    return d if n >= 10 ** (d - 1) else d - 1


def int_range(field: FieldInfo | None) -> tuple[int, int]:
    """The integers ``field`` accepts: its bounds (``ge``, ``gt``, ``le``, ``lt``) within :data:`INT64`."""
    lo, hi = INT64
    for bound in field.metadata if field is not None else ():  # pydantic's Ge(ge=1), Le(le=10), ...
        if getattr(bound, "ge", None) is not None:
            lo = max(lo, math.ceil(bound.ge))
        if getattr(bound, "gt", None) is not None:
            lo = max(lo, math.floor(bound.gt) + 1)
        if getattr(bound, "le", None) is not None:
            hi = min(hi, math.floor(bound.le))
        if getattr(bound, "lt", None) is not None:
            hi = min(hi, math.ceil(bound.lt) - 1)
    return lo, hi


def unknown_key(prefix: str, key: str, valid: list[str]) -> ConfigError:
    """``unknown config key 'a.b' (did you mean 'a.c'?); valid keys in 'a': c, d``."""
    where = f"'{prefix}'" if prefix else "the top level"
    full = f"{prefix}.{key}" if prefix else key
    if not valid:
        return ConfigError(f"unknown config key '{full}': {where} takes no keys here")
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


def _field_at(model: type[BaseModel], loc: tuple[Any, ...]) -> FieldInfo | None:
    """The field of the (nested) model at ``loc`` (``None`` when ``loc`` is not a model's field)."""
    names = [part for part in loc if not isinstance(part, int)]
    if not names or names[-1] not in _fields_at(model, tuple(names[:-1])):
        return None
    parent: Any = model
    for part in names[:-1]:
        parent = parent.model_fields[part].annotation
        parent = next(a for a in (parent, *typing.get_args(parent))
                      if isinstance(a, type) and issubclass(a, BaseModel))
    field: FieldInfo = parent.model_fields[names[-1]]
    return field


def _is_union_member(model: type[BaseModel], loc: tuple[Any, ...]) -> bool:
    """Whether ``loc`` ends with the tag of a member of a union field (``('tau_plus', 'float')``)."""
    if len(loc) < 2 or not isinstance(loc[-1], str) or _field_at(model, loc) is not None:
        return False
    field = _field_at(model, loc[:-1])
    if field is None or typing.get_origin(field.annotation) not in (typing.Union, types.UnionType):
        return False
    return len([a for a in typing.get_args(field.annotation) if a is not type(None)]) > 1


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
    """The first error of a pydantic ``ValidationError`` as one :class:`ConfigError` line (for a field
    of several types, the error of each type: ``must be a number or a string``)."""
    errors = err.errors()
    e = errors[0]
    loc = tuple(e["loc"])
    if e["type"] == "extra_forbidden":
        return unknown_key(_loc(prefix, loc[:-1]), str(loc[-1]), _fields_at(model, loc[:-1]))
    what = _constraint(e["type"], e.get("ctx") or {}, e["msg"])
    if _is_union_member(model, loc):  # pydantic's loc ends with the member's type: ('tau_plus', 'float')
        loc = loc[:-1]
        each = [_constraint(x["type"], x.get("ctx") or {}, x["msg"])
                for x in errors if tuple(x["loc"][:-1]) == loc]
        what = "must be " + " or ".join(sorted({w.removeprefix("must be ") for w in each}))  # any union order
    if e["type"] == "missing":
        return ConfigError(f"missing config key '{_loc(prefix, loc)}': {what}")
    if e["type"] == "int_parsing_size":  # the text of an integer longer than Python converts
        lo, hi = int_range(_field_at(model, loc))
        what = f"must be an integer from {lo} to {hi}"
    return ConfigError(f"invalid value for '{_loc(prefix, loc)}': {what}, got {shown(e.get('input'))}")
