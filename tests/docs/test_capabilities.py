"""docs/architecture.md's capability tables are :func:`capability_markdown`'s text: which route
takes which exported component is derived from the components, never kept by hand."""

from __future__ import annotations

import re
from pathlib import Path

import hardneg.negatives
import hardneg.objectives
from hardneg.engines.capabilities import capability_markdown, capability_table

ROOT = Path(__file__).resolve().parents[2]
BLOCK = re.compile(r"<!-- capabilities: [^\n]*-->\n(.*?)<!-- /capabilities -->", re.S)


def test_the_docs_table_is_the_generated_one() -> None:
    found = BLOCK.search((ROOT / "docs" / "architecture.md").read_text(encoding="utf-8"))
    assert found is not None, "docs/architecture.md has no <!-- capabilities: ... --> block"
    assert found.group(1) == capability_markdown(), (
        "docs/architecture.md's capability tables are stale: replace them with the output of "
        "`python -m hardneg.engines.capabilities`"
    )


def test_every_exported_component_has_a_row() -> None:
    dists, objs = capability_table()
    dist_classes = {d.name.split("(")[0] for d in dists}
    obj_classes = {o.name.split("(")[0] for o in objs}
    wrappers = {"CollisionFree", "Subsample", "MaskWrapper"}
    exported = {n for n in hardneg.negatives.__all__ if isinstance(getattr(hardneg.negatives, n), type)
                and issubclass(getattr(hardneg.negatives, n), hardneg.negatives.NegativeDistribution)}
    assert dist_classes == exported - wrappers - {"NegativeDistribution"}
    objectives = {n for n in hardneg.objectives.__all__ if isinstance(getattr(hardneg.objectives, n), type)
                  and issubclass(getattr(hardneg.objectives, n), hardneg.objectives.Objective)}
    assert obj_classes == objectives - {"Objective"}


def test_the_answers_follow_the_declarations() -> None:
    """A distribution tiles iff it states ``tile_weights()``; an objective iff ``row_reducible``."""
    dists, objs = capability_table()
    rows = {d.name: d for d in dists}
    assert rows["Uniform()"].tiled == "tilt" and rows["Hard(rescale=True)"].tiled == ""
    assert rows["OptimalTransport(epsilon=0.5)"].tiled == "Sinkhorn"
    assert not rows["OptimalTransport(epsilon=0.5)"].gathered and rows["Hard(rescale=True)"].gathered
    for o in objs:
        cls = getattr(hardneg.objectives, o.name.split("(")[0])
        assert o.tiled == bool(cls().row_reducible)
        assert o.row_form == ("" if cls().row_form() is None else cls().row_form().kind)
