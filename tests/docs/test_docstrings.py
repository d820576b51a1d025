"""Every public loss, negative distribution and objective documents itself like the field's best.

Walks the ``__all__`` of the modules in ``MODULES`` (the negatives, objectives, supervised and
graph losses, and the loss core: :mod:`hardneg.loss`, its engines, the queue, the tiled engine,
the scores, the reduction and :mod:`hardneg.functional`) and fails, naming each one, for every
public class or function whose docstring lacks a Google-style section (a header line such as
``Args:`` followed by an indented body):

- ``Args:`` naming every parameter of the signature (a class: its constructor's), when it has any;
- ``Shapes:`` (the tensors taken and returned), unless waived below with a reason;
- ``References:`` with a year or an arXiv number (authors, year, venue, equation);
- ``Example:`` (or ``Examples:``) with a doctest (``>>>``).

The doctests themselves run with every test session: ``pyproject.toml`` passes
``--doctest-modules`` and lists ``src/hardneg`` in ``testpaths`` (checked here too).
"""

from __future__ import annotations

import importlib
import inspect
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MODULES = (
    "hardneg.negatives",
    "hardneg.objectives",
    "hardneg.supervised",
    "hardneg.infograph",
    "hardneg.loss",
    "hardneg.engines.dispatch",
    "hardneg.queue",
    "hardneg.engines.tiled",
    "hardneg.scores",
    "hardneg.reduction",
    "hardneg.functional",
)
SECTIONS = ("Args", "Shapes", "References", "Example")

# Public names whose Shapes section is waived, each with its reason (no tensor goes in or out).
SHAPES_WAIVED = {
    "hardneg.negatives.TileWeights": "settings of a tiled computation (floats); no tensor in or out",
    "hardneg.negatives.SinkhornTiles": "settings of a streamed Sinkhorn solve (floats); no tensor in or out",
    "hardneg.engines.tiled.check_tileable":
        "a distribution and an objective in, their TileWeights out; no tensor",
    "hardneg.scores.compute_dtype": "a torch.dtype in, a torch.dtype out; no tensor in or out",
    "hardneg.reduction.check_reduction": "a reduction name (str) in and out; no tensor in or out",
    "hardneg.functional.default_objective": "a float tau_plus in, an Objective out; no tensor in or out",
    "hardneg.functional.resolve_objective": "a float and an optional Objective in, an Objective out",
}

_HEADER = re.compile(r"^([A-Z][A-Za-z ]*):\s*$")
_ENTRY = re.compile(r"^\s+\**(\w+)(?:\s*\([^)]*\))?:")
_YEAR = re.compile(r"\b(?:19|20)\d\d\b|arXiv")
_OUTSIDE = re.compile(r"(?:^|[\s(`'\"])(?:/work/|/tmp/|/home/|~/|[A-Z]:\\)")


def public_objects() -> dict[str, object]:
    """``{"module.name": object}`` of every class and function the ``__all__`` lists of ``MODULES`` export."""
    found: dict[str, object] = {}
    for module_name in MODULES:
        module = importlib.import_module(module_name)
        for name in module.__all__:
            obj = getattr(module, name)  # hardneg.infograph imports its names on first use
            if inspect.isclass(obj) or inspect.isfunction(obj):
                found[f"{module_name}.{name}"] = obj
    return found


def sections(doc: str) -> dict[str, str]:
    """``{header: body}`` of the top-level sections of a cleaned docstring (``inspect.getdoc``)."""
    out: dict[str, str] = {}
    current: str | None = None
    for line in doc.splitlines():
        header = _HEADER.match(line)
        if header:
            current = header.group(1)
            out[current] = ""
        elif current is not None and line.strip() and not line.startswith((" ", "\t")):
            current = None
        elif current is not None:
            out[current] += line + "\n"
    return out


def parameters(obj: object) -> list[str]:
    """The named parameters of a function, or of a class's constructor (no ``self``, ``*args``, ``**kw``)."""
    try:
        signature = inspect.signature(obj)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return []
    named = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD,
             inspect.Parameter.KEYWORD_ONLY)
    return [p.name for p in signature.parameters.values() if p.kind in named and p.name != "self"]


def problems(qualified: str, obj: object) -> list[str]:
    """What the docstring of ``obj`` lacks; empty when it has every required section."""
    doc = inspect.getdoc(obj) or ""
    found = sections(doc)
    if "Examples" in found:
        found.setdefault("Example", found["Examples"])
    out: list[str] = []
    params = parameters(obj)
    if params:
        if "Args" not in found:
            out.append("Args")
        else:
            listed = {m.group(1) for line in found["Args"].splitlines() if (m := _ENTRY.match(line))}
            missing = [p for p in params if p not in listed]
            if missing:
                out.append(f"Args entries for {missing}")
    if "Shapes" not in found and qualified not in SHAPES_WAIVED:
        out.append("Shapes")
    if "References" not in found:
        out.append("References")
    elif not _YEAR.search(found["References"]):
        out.append("References with a year or an arXiv number")
    if ">>>" not in found.get("Example", ""):
        out.append("Example with a doctest (>>>)")
    if _OUTSIDE.search(doc):
        out.append("a path outside the repository")
    return out


def test_the_walk_finds_the_public_losses_distributions_and_objectives() -> None:
    names = public_objects()
    for expected in ("hardneg.negatives.Hard", "hardneg.negatives.OptimalTransport",
                     "hardneg.objectives.Debiased", "hardneg.objectives.InfoNCE",
                     "hardneg.supervised.multi_view_loss", "hardneg.infograph.InfoGraphLoss",
                     "hardneg.loss.ContrastiveLoss", "hardneg.queue.QueueLoss",
                     "hardneg.engines.tiled.tiled_lse",
                     "hardneg.scores.pair_scores", "hardneg.functional.contrastive_loss"):
        assert expected in names, f"{expected} is no longer exported; update tests/docs/test_docstrings.py"
    assert len(names) >= 85


def test_the_checker_can_fail() -> None:
    def bare(x: int) -> int:
        """One line."""
        return x

    def documented(x: int) -> int:
        """A function.

        Args:
            x: a number.

        Shapes:
            none.

        References:
            Nobody, 2021.

        Example:
            >>> 1
            1
        """
        return x

    assert problems("bare", bare) == ["Args", "Shapes", "References", "Example with a doctest (>>>)"]
    assert problems("documented", documented) == []
    documented.__doc__ = (documented.__doc__ or "").replace("x: a number", "y: a number")
    assert problems("documented", documented) == ["Args entries for ['x']"]


def test_every_waiver_names_a_public_object_with_a_reason() -> None:
    names = public_objects()
    for name, reason in SHAPES_WAIVED.items():
        assert name in names, f"SHAPES_WAIVED names {name}, which is not exported"
        assert len(reason) > 20, f"give {name}'s waiver a reason"


def test_every_public_name_has_args_shapes_references_and_an_example() -> None:
    lacking = {name: p for name, obj in public_objects().items() if (p := problems(name, obj))}
    report = "\n".join(f"  {name}: lacks {', '.join(p)}" for name, p in sorted(lacking.items()))
    assert not lacking, f"{len(lacking)} public docstrings are incomplete:\n{report}"


def test_the_doctests_of_these_modules_run_with_the_suite() -> None:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        tomllib = pytest.importorskip("tomli")
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    options = pyproject["tool"]["pytest"]["ini_options"]
    assert "--doctest-modules" in options["addopts"].split()
    assert "src/hardneg" in options["testpaths"]
    for module_name in MODULES:  # defined under src/hardneg, so collected there
        module = importlib.import_module(module_name)
        assert Path(module.__file__ or "").resolve().is_relative_to((ROOT / "src" / "hardneg").resolve())
