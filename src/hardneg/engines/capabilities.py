"""Which engine computes which component: the table derived from what the components declare.

The one source of truth for "which negative distributions and objectives the fast routes take".
Nothing here is written by hand per class: each verdict is the answer of the check the engines
themselves run, asked of an instance —

- a distribution's :meth:`~hardneg.negatives.NegativeDistribution.tile_weights` (a tilt or a
  streamed Sinkhorn coupling: the tiled engine, :func:`~hardneg.engines.tiled.engine.check_tileable`),
  its ``per_anchor_weights`` (the gathered engine under K-subsampling,
  :func:`~hardneg.engines.gathered.check_gatherable`), the fused kernel's
  :func:`~hardneg.engines.tiled.fused.fused_refusal` and the small-batch route
  :func:`~hardneg.engines.choice.small_route`;
- an objective's ``row_reducible`` (tiled), whether it reads only ``log Σ_j w_ij e^{s_ij}``
  (a Sinkhorn coupling and the fused kernel), its :meth:`~hardneg.objectives.Objective.row_form`
  (the small-batch routes) and ``multi_positive``.

The objectives are every :class:`~hardneg.objectives.Objective` that ``hardneg.objectives``
exports, at their defaults; the distributions every one ``hardneg.negatives`` exports except the
mask wrappers (CollisionFree, Subsample, MaskWrapper: they keep their base's answers), at their
defaults and at the settings listed in :data:`DISTRIBUTION_SETTINGS` (those that change an answer,
and the required arguments). docs/architecture.md holds :func:`capability_markdown`'s text
(tests/docs/test_capabilities.py checks that it is current; ``python -m
hardneg.engines.capabilities`` prints it).
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass

from hardneg.engines.choice import small_route
from hardneg.engines.gathered import check_gatherable
from hardneg.engines.tiled.engine import check_tileable
from hardneg.engines.tiled.fused import fused_refusal
from hardneg.negatives.base import NegativeDistribution
from hardneg.negatives.subsample import Subsample
from hardneg.negatives.uniform import Uniform
from hardneg.objectives.base import Objective
from hardneg.objectives.debiased import Debiased
from hardneg.objectives.nce import InfoNCE

__all__ = [
    "DISTRIBUTION_SETTINGS",
    "DistributionRow",
    "ObjectiveRow",
    "capability_markdown",
    "capability_table",
]

#: settings shown besides a distribution's defaults: those that change an engine's answer, and the
#: required arguments of a class without defaults (its constructor's keywords)
DISTRIBUTION_SETTINGS: dict[str, tuple[dict[str, object], ...]] = {
    "Hard": ({"rescale": True}, {"detach_weights": True}, {"target_ess": 0.5}),
    "OptimalTransport": ({"epsilon": 0.5}, {"epsilon": 0.5, "differentiable": True}),
}


@dataclass(frozen=True)
class DistributionRow:
    """One distribution's answers: ``tiled`` (``"tilt"``, ``"Sinkhorn"`` or ``""``: refused),
    ``gathered`` / ``fused`` / ``small`` (taken by that route)."""

    name: str
    tiled: str
    gathered: bool
    fused: bool
    small: bool


@dataclass(frozen=True)
class ObjectiveRow:
    """One objective's answers: ``tiled`` (row-reducible), ``sinkhorn`` (tiled with a Sinkhorn
    coupling), ``fused`` (the fused kernel), ``row_form`` (its kind, ``""`` when none),
    ``multi_positive``."""

    name: str
    tiled: bool
    sinkhorn: bool
    fused: bool
    row_form: str
    multi_positive: bool


def _accepts(check: object, *args: object) -> bool:
    try:
        check(*args)  # type: ignore[operator]
    except ValueError:
        return False
    return True


def _label(cls: type, kwargs: dict[str, object]) -> str:
    return f"{cls.__name__}({', '.join(f'{k}={v!r}' for k, v in kwargs.items())})"


def _distributions() -> list[tuple[str, NegativeDistribution]]:
    import hardneg.negatives as negatives

    out = []
    for name in negatives.__all__:
        cls = getattr(negatives, name)
        if not inspect.isclass(cls) or not issubclass(cls, NegativeDistribution):
            continue
        if cls is NegativeDistribution:
            continue
        if "base" in inspect.signature(cls).parameters:  # a mask wrapper: its base's answers
            continue
        settings: list[dict[str, object]] = []
        required = [p for p in inspect.signature(cls).parameters.values()
                    if p.default is inspect.Parameter.empty
                    and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
        if not required:
            settings.append({})
        settings += DISTRIBUTION_SETTINGS.get(name, ())
        if not settings:
            raise TypeError(f"{name} has required arguments {[p.name for p in required]}: list settings "
                            "for it in hardneg.engines.capabilities.DISTRIBUTION_SETTINGS")
        out += [(_label(cls, kw), cls(**kw)) for kw in settings]
    return out


def _objectives() -> list[tuple[str, Objective]]:
    import hardneg.objectives as objectives

    out = []
    for name in objectives.__all__:
        cls = getattr(objectives, name)
        if inspect.isclass(cls) and issubclass(cls, Objective) and cls is not Objective:
            out.append((f"{name}()", cls()))
    return out


def capability_table() -> tuple[list[DistributionRow], list[ObjectiveRow]]:
    """Every exported distribution (and the settings that matter) and objective, with the routes
    that compute it, each answer asked of the component by the engines' own checks.

    A distribution is asked with InfoNCE (the small-batch route also with Debiased); an objective
    with Uniform (and, for ``sinkhorn``, an OptimalTransport that streams).

    Returns:
        ``(distribution rows, objective rows)`` in the packages' ``__all__`` order.

    Example:
        >>> dists, objs = capability_table()
        >>> [(d.name, d.tiled, d.gathered) for d in dists][:2]
        [('Hard()', 'tilt', True), ('Hard(rescale=True)', '', True)]
        >>> next(o for o in objs if o.name == "InfoNCE()").row_form
        'nce'
    """
    from hardneg.negatives.ot import OptimalTransport

    nce = InfoNCE()
    dist_rows = []
    for label, dist in _distributions():
        weights = dist.tile_weights()
        tiled = "" if weights is None else ("Sinkhorn" if weights.sinkhorn is not None else "tilt")
        if tiled and not _accepts(check_tileable, dist, nce):
            tiled = ""
        dist_rows.append(DistributionRow(
            name=label,
            tiled=tiled,
            gathered=_accepts(check_gatherable, Subsample(num_negatives=8, base=dist)),
            fused=bool(tiled) and fused_refusal(dist, nce, "cuda") is None,
            small=small_route(dist, nce) is not None or small_route(dist, Debiased(tau_plus=0.1)) is not None,
        ))
    uniform, streamed = Uniform(), OptimalTransport(epsilon=0.5)
    obj_rows = []
    for label, obj in _objectives():
        form = obj.row_form()
        reducible = _accepts(check_tileable, uniform, obj)
        obj_rows.append(ObjectiveRow(
            name=label,
            tiled=reducible,
            sinkhorn=reducible and _accepts(check_tileable, streamed, obj),
            fused=reducible and fused_refusal(uniform, obj, "cuda") is None,
            row_form="" if form is None else form.kind,
            multi_positive=bool(obj.multi_positive),
        ))
    return dist_rows, obj_rows


def _yes(flag: bool) -> str:
    return "yes" if flag else "—"


def capability_markdown() -> str:
    """:func:`capability_table` as the two Markdown tables docs/architecture.md shows.

    Example:
        >>> capability_markdown().splitlines()[0]
        '| negative distribution | tiled | gathered (K-subsampled) | fused kernel | small-batch route |'
    """
    dists, objs = capability_table()
    lines = ["| negative distribution | tiled | gathered (K-subsampled) | fused kernel | small-batch route |",
             "|---|---|---|---|---|"]
    lines += [f"| `{d.name}` | {d.tiled or '—'} | {_yes(d.gathered)} | {_yes(d.fused)} | {_yes(d.small)} |"
              for d in dists]
    lines += ["", "| objective | tiled (row-reducible) | with a Sinkhorn coupling | fused kernel | "
              "row form (small batch) | several positives |", "|---|---|---|---|---|---|"]
    lines += [f"| `{o.name}` | {_yes(o.tiled)} | {_yes(o.sinkhorn)} | {_yes(o.fused)} | "
              f"{o.row_form or '—'} | {_yes(o.multi_positive)} |" for o in objs]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":  # pragma: no cover - prints the table docs/architecture.md holds
    print(capability_markdown(), end="")
