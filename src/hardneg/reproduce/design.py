"""A budget's pre-registered design: one versioned YAML file per budget, read into claims.

``src/hardneg/reproduce/designs/<budget>.yaml`` holds everything a reviewer fixes before a run:
the experiments (packaged config, arms, data sizes, epochs, seeds), the claims (quote, source,
arms, metric, the paper's effect δ with its table, row and compared arms, the test, the question
it answers), the family (every non-theorem claim of the file), α, and the pilot (its seeds, its
data draw, and the committed file of its results, ``designs/pilots/<budget>.json``). Code holds no
claim, no δ and no seed: :func:`load_design` reads the file, checks it, and builds the
:class:`~hardneg.reproduce.claims.Experiment` and :class:`~hardneg.reproduce.claims.Claim` objects
the runner uses. The report prints the file's SHA-256 (:attr:`Design.digest`) and, per claim, a
digest of exactly what its verdict depends on (:meth:`Design.claim_digest`), so that a change
after the runs marks only the claims it touches exploratory
(:mod:`hardneg.reproduce.registration`).

Pilot SDs enter the design as an upper 80 % confidence limit of the pilot's SD (Browne 1995,
:func:`~hardneg.reproduce.statistics.design_sd`), never as if known.

Example:
    >>> d = load_design("small")
    >>> d.budget, len(d.digest), "hard-beats-simclr" in {c.id for c in d.claims}
    ('small', 64, True)
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path
from typing import Any

from hardneg.reproduce.claims import BUDGETS, Claim, Experiment, OptimumShift, Selection, Term
from hardneg.reproduce.statistics import ClaimTest, design_sd

__all__ = [
    "BUDGETS", "CLAIMS", "DESIGNS", "EXPERIMENTS", "Design", "Pilot", "claims_table", "design_path",
    "load_design", "planned_claims",
]

DESIGNS = Path(__file__).parent / "designs"
_QUESTIONS = ("effect", "size")


def design_path(budget: str) -> Path:
    """The design file of ``budget`` (``designs/<budget>.yaml``)."""
    if budget not in BUDGETS:
        raise ValueError(f"--budget must be one of {list(BUDGETS)}, got {budget!r}")
    return DESIGNS / f"{budget}.yaml"


@dataclass(frozen=True)
class Pilot:
    """A design's pilot: its seeds (disjoint from every claim's), per-experiment overrides (a
    disjoint data draw for synthetic data) and the committed file of its per-claim results."""

    seeds: tuple[int, ...]
    overrides: dict[str, dict[str, Any]]
    file: Path
    results: dict[str, dict[str, Any]] = field(default_factory=dict)  # claim id -> mean, sd, n, experiment


@dataclass(frozen=True)
class Design:
    """One budget's design, read from its file (:func:`load_design`)."""

    budget: str
    path: Path
    digest: str  # SHA-256 of the file's bytes
    alpha: float
    estimate_minutes: float | None
    experiments: dict[str, Experiment]
    claims: tuple[Claim, ...]
    raw: dict[str, Any]
    pilot: Pilot | None = None

    @property
    def family(self) -> list[Claim]:
        """The Holm family, fixed in the file: every claim but theorem checks."""
        return [c for c in self.claims if not c.theorem]

    def claim(self, claim_id: str) -> Claim:
        """The claim ``claim_id`` (``KeyError`` naming the known ids)."""
        for c in self.claims:
            if c.id == claim_id:
                return c
        known = [c.id for c in self.claims]
        raise KeyError(f"no claim {claim_id!r} in the {self.budget} design; known: {known}")

    def claim_digest(self, claim_id: str) -> str:
        """SHA-256 of what ``claim_id``'s verdict depends on: its entry, its experiment's (and its
        fallback's) entries, α, the family's ids (its size sets the Holm levels) and its pilot result."""
        raw_claim = next(c for c in self.raw["claims"] if c["id"] == claim_id)
        exps = self.raw["experiments"]
        exp = raw_claim["experiment"]
        chain = [exp] + ([exps[exp]["fallback"]] if exps.get(exp, {}).get("fallback") else [])
        payload = {
            "claim": raw_claim, "experiments": {e: exps.get(e) for e in chain}, "alpha": self.alpha,
            "family": [c.id for c in self.family],
            "pilot": self.pilot.results.get(claim_id) if self.pilot else None,
        }
        return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()

    def run_seeds(self) -> dict[str, set[int]]:
        """Experiment id -> the seeds its claims' runs use (including a selection's)."""
        out: dict[str, set[int]] = {}
        for eid, e in self.experiments.items():
            seeds = set(e.budgets[self.budget].get("compare.seeds", []))
            if e.selection is not None and self.budget in e.selection.budgets:
                seeds |= set(e.selection.budgets[self.budget].get("compare.seeds", []))
            out[eid] = seeds
        return out


def _fail(path: Path, where: str, what: str, got: Any) -> ValueError:
    return ValueError(f"{path.name}: {where} {what}, got {got!r}")


def _get(d: dict[str, Any], key: str, kind: type | tuple[type, ...], path: Path, where: str,
         default: Any = ...) -> Any:
    if key not in d:
        if default is ...:
            raise _fail(path, f"{where}.{key}", "is required", None)
        return default
    value = d[key]
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if isinstance(value, int) and float in kinds:
        value = float(value)
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
        names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise _fail(path, f"{where}.{key}", f"must be a {names}", value)
    return value


def _experiment(eid: str, e: dict[str, Any], budget: str, path: Path) -> Experiment:
    where = f"experiments.{eid}"
    if not isinstance(e, dict):
        raise _fail(path, where, "must be a mapping", e)
    sel = e.get("selection")
    selection = None
    if sel is not None:
        selection = Selection(_get(sel, "strategy", str, path, f"{where}.selection"),
                              _get(sel, "candidates", dict, path, f"{where}.selection"),
                              _get(sel, "metric", str, path, f"{where}.selection"),
                              {budget: _get(sel, "overrides", dict, path, f"{where}.selection")})
    return Experiment(
        id=eid, config=_get(e, "config", str, path, where),
        strategies=_get(e, "strategies", dict, path, where),
        budgets={budget: _get(e, "overrides", dict, path, where)},
        setting=_get(e, "setting", str, path, where),
        needs=_get(e, "needs", str, path, where, None), fallback=_get(e, "fallback", str, path, where, None),
        metrics=_get(e, "metrics", dict, path, where, {}), install=_get(e, "install", str, path, where, ""),
        selection=selection)


def _claim(c: dict[str, Any], budget: str, path: Path, experiments: dict[str, Experiment],
           pilot: Pilot | None) -> Claim:
    cid = _get(c, "id", str, path, "claims[]")
    where = f"claims.{cid}"
    exp = _get(c, "experiment", str, path, where)
    if exp not in experiments:
        raise _fail(path, f"{where}.experiment",
                    f"must name an experiment of the file {sorted(experiments)}", exp)
    test = _get(c, "test", dict, path, where)
    delta = _get(c, "delta", dict, path, where, None)
    question = _get(c, "question", str, path, where, None)
    if question is not None and question not in _QUESTIONS:
        raise _fail(path, f"{where}.question", f"must be one of {list(_QUESTIONS)}", question)
    pilot_sd = {k: float(v) for k, v in _get(c, "pilot_sd", dict, path, where, {}).items()}
    pilot_mean = None
    if pilot is not None and cid in pilot.results:
        got = pilot.results[cid]
        if got.get("n", 0) >= 2 and got.get("sd") is not None and got["sd"] > 0:
            pilot_sd[got["experiment"]] = design_sd(float(got["sd"]), int(got["n"]))
            pilot_mean = float(got["mean"])
    shift = c.get("shift")
    kind = _get(test, "kind", str, path, f"{where}.test")
    effect = float(delta["value"]) if delta is not None else None
    extra: dict[str, Any] = {}
    if "paper_difference" in test:
        extra["paper_difference"] = test["paper_difference"]
    if question == "effect" and pilot_mean is not None and _powerable(kind, pilot_mean, test.get("margin")):
        extra.update(question="effect", pilot_mean=pilot_mean)  # powered at the pilot's mean
    claim_test = ClaimTest(kind, margin=test.get("margin"), paper_effect=effect, **extra)
    return Claim(
        id=cid, text=_get(c, "text", str, path, where), quote=_get(c, "quote", str, path, where),
        source=_get(c, "source", str, path, where), experiment=exp,
        baseline=_get(c, "baseline", str, path, where), contender=_get(c, "contender", str, path, where),
        metric=_get(c, "metric", str, path, where), test=claim_test, budgets=(budget,),
        terms=tuple(Term(s, m, float(w)) for s, m, w in c.get("terms", [])),
        unit=_get(c, "unit", str, path, where, "points"), pilot_sd=pilot_sd,
        design=_get(c, "design", str, path, where, ""), theorem=bool(c.get("theorem", False)),
        shift=None if shift is None else OptimumShift(
            shift["metric"], tuple((s, int(k)) for s, k in shift["low"]),
            tuple((s, int(k)) for s, k in shift["high"])),
        delta=delta or {}, question=question, pilot_mean=pilot_mean)


def _powerable(kind: str, mean: float, margin: float | None) -> bool:
    """Whether a pilot mean is an effect the design can be powered at (ClaimTest's rule): > 0 for
    superiority, > −margin for non-inferiority, inside ±margin for equivalence. A pilot mean on
    the wrong side leaves the claim powered at the paper's δ (its ``size`` question)."""
    if kind == "superiority":
        return mean > 0
    m = float(margin or 0.0)
    return mean > -m if kind == "noninferiority" else -m < mean < m


def _pilot_file(path: Path) -> Path:
    """The one pilot file a design may name: ``pilots/<budget>.json`` beside it."""
    return path.parent / "pilots" / f"{path.stem}.json"


def _pilot(raw: dict[str, Any] | None, path: Path, pilot_bytes: bytes) -> Pilot | None:
    """The design's pilot; its results parsed from ``pilot_bytes``, the file's content (empty: not
    run yet)."""
    if raw is None:
        return None
    seeds = tuple(int(s) for s in _get(raw, "seeds", list, path, "pilot"))
    file = path.parent / _get(raw, "file", str, path, "pilot")
    if file.resolve() != _pilot_file(path).resolve():
        raise _fail(path, "pilot.file", f"must name a file in designs/pilots/, {_pilot_file(path).name} "
                    "(after the budget)", raw["file"])
    results: dict[str, dict[str, Any]] = json.loads(pilot_bytes).get("claims", {}) if pilot_bytes else {}
    return Pilot(seeds, _get(raw, "overrides", dict, path, "pilot", {}), file, results)


@cache
def _load(path: Path, data: bytes, pilot_bytes: bytes) -> Design:
    """The design in ``data``, its pilot's results in ``pilot_bytes`` (both the cache key)."""
    import yaml

    raw = yaml.safe_load(data)
    if not isinstance(raw, dict):
        raise _fail(path, "the file", "must be a mapping", type(raw).__name__)
    budget = _get(raw, "budget", str, path, "design")
    if budget != path.stem:
        raise _fail(path, "budget", f"must equal the file's name {path.stem!r}", budget)
    alpha = float(_get(raw, "alpha", float, path, "design"))
    if not 0 < alpha < 1:
        raise _fail(path, "alpha", "must be in (0, 1)", alpha)
    exps = {eid: _experiment(eid, e, budget, path) for eid, e in _get(raw, "experiments", dict, path,
                                                                          "design").items()}
    pilot = _pilot(raw.get("pilot"), path, pilot_bytes)
    claims = tuple(_claim(c, budget, path, exps, pilot) for c in _get(raw, "claims", list, path, "design"))
    ids = [c.id for c in claims]
    if len(set(ids)) != len(ids):
        raise _fail(path, "claims", "must have distinct ids", sorted({i for i in ids if ids.count(i) > 1}))
    estimate = raw.get("estimate_minutes")
    design = Design(budget, path, hashlib.sha256(data).hexdigest(), alpha,
                    None if estimate is None else float(estimate), exps, claims, raw, pilot)
    if pilot is not None:  # a pilot is never a reported run: its seeds are the design's own
        for eid, seeds in design.run_seeds().items():
            shared = sorted(seeds & set(pilot.seeds))
            if shared:
                raise _fail(path, "pilot.seeds", f"must be disjoint from experiments.{eid}'s seeds", shared)
    return design


def load_design(budget: str, path: str | Path | None = None) -> Design:
    """The design of ``budget``: ``designs/<budget>.yaml`` (or ``path``), checked and built.

    Args:
        budget: ``small``, ``medium``, ``full`` or ``paper``.
        path: another design file (tests); its ``budget`` key must equal its file name's stem.

    Raises:
        ValueError: naming the file, the key and the value received.
    """
    p = design_path(budget) if path is None else Path(path)
    pilot_file = _pilot_file(p)
    return _load(p, p.read_bytes(), pilot_file.read_bytes() if pilot_file.is_file() else b"")


def claims_table(budget: str) -> str:
    """The claims of ``budget``'s design as a Markdown table: claim, the paper's words, δ with its
    source and the arms it compares, the test and the question (``docs/claims.md`` prints the
    medium design's; a test checks the two agree).

    Example:
        >>> print(claims_table("medium").splitlines()[0])
        | claim | the paper | δ (arms) | source of δ | test | question |
    """
    d = load_design(budget)
    lines = ["| claim | the paper | δ (arms) | source of δ | test | question |", "|---|---|---|---|---|---|"]
    for c in d.family:
        t = c.test
        test = t.kind + (f", margin {100 * t.margin:.3g} points" if t.margin is not None else "")
        if c.delta:
            scale, unit = (100.0, " points") if c.unit == "points" else (1.0, f" {c.unit}")
            delta = f"{scale * float(c.delta['value']):+.3g}{unit} ({c.delta['arms']})"
            source = str(c.delta["source"])
        else:
            delta, source = f"not stated ({c.contender} − {c.baseline})", c.source
        quote = c.quote.replace("|", "\\|").replace("\n", " ")
        lines.append(f"| {c.id} | “{quote}” | {delta} | {source.replace('|', '/')} | {test} "
                     f"| {c.question or 'size'} |")
    return "\n".join(lines)


def planned_claims(budget: str) -> list[Claim]:
    """The Holm family of ``budget``, fixed in its design file: every claim of it but theorem checks."""
    return load_design(budget).family


def _union() -> tuple[dict[str, Experiment], tuple[Claim, ...]]:
    """Every budget's experiments (their budgets merged) and claims (the first budget's entry, with
    every budget that plans it), read from the design files."""
    exps: dict[str, Experiment] = {}
    claims: dict[str, Claim] = {}
    for budget in BUDGETS:
        d = load_design(budget)
        for eid, e in d.experiments.items():
            exps[eid] = e if eid not in exps else replace(
                exps[eid], budgets={**exps[eid].budgets, **e.budgets},
                selection=exps[eid].selection or e.selection)
        for c in d.claims:
            claims[c.id] = c if c.id not in claims else replace(claims[c.id],
                                                                budgets=(*claims[c.id].budgets, budget))
    return exps, tuple(claims.values())


CLAIMS: tuple[Claim, ...]  # every budget's claims, bound on first use by __getattr__ below
EXPERIMENTS: dict[str, Experiment]


def __getattr__(name: str) -> Any:
    """``CLAIMS`` and ``EXPERIMENTS``: every budget's, read from the design files when first used."""
    if name in ("CLAIMS", "EXPERIMENTS"):
        exps, claims = _union()
        globals().update(EXPERIMENTS=exps, CLAIMS=claims)
        return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
