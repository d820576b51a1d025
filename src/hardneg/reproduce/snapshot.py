"""The findings snapshot: a finished reproduction report's numbers as one JSON document.

The README's findings block and ``docs/studies.md``'s ``make run`` tables are rendered from it
(:mod:`hardneg.reproduce.markdown`), never typed. A snapshot holds, per claim, the estimate and its
95 % interval, the paper's effect, the minimum detectable effects, the p-values and the verdict (as
the report wrote them), each experiment's per-run values (from its ``results.json``), and where the
numbers come from: the command, the commit, the source digest, the data sets, the wall time and the
budget. It is built from the report's files: ``claims.json`` when the report wrote one, else
``claims.csv`` with ``claims.md``'s header (reports written before ``claims.json`` existed).
"""

from __future__ import annotations

import csv
import json
import math
import re
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hardneg._io import atomic_write_text

__all__ = [
    "SNAPSHOT_VERSION",
    "build_snapshot",
    "load_snapshot",
    "read_report",
    "source_commit",
    "write_snapshot",
]

SNAPSHOT_VERSION = 1

# the fields of a claim row kept in the snapshot: text, integers, the rest floats (None when absent)
_TEXT = ("claim", "section", "data", "metric", "unit", "test", "outcome", "verdict", "folder", "status",
         "question")
_INT = ("wins", "seeds")
_FLOAT = ("margin", "paper_effect", "diff_mean", "diff_std", "half_width", "ci_low", "ci_high", "mde_design",
          "mde_observed", "p_value", "p_holm", "ci_level", "p_against", "p_against_holm", "p_smaller",
          "p_smaller_holm", "power_observed", "power_design", "paper_difference")
_PACKAGE_DIR = Path(__file__).resolve().parent.parent


def source_commit(path: str | Path | None = None) -> str | None:
    """The abbreviated git commit of the work tree holding ``path`` (default: this package), with
    ``+local changes`` when tracked files under ``path`` differ from it; ``None`` outside a git work
    tree or without git."""
    where = Path(path) if path is not None else _PACKAGE_DIR
    try:
        head = subprocess.run(["git", "-C", str(where), "rev-parse", "--short=7", "HEAD"],
                              capture_output=True, text=True, timeout=10, check=False)
        if head.returncode != 0 or not head.stdout.strip():
            return None
        dirty = subprocess.run(["git", "-C", str(where), "diff", "--quiet", "HEAD", "--", "."],
                               capture_output=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return head.stdout.strip() + (" + local changes" if dirty.returncode == 1 else "")


def _number(value: Any) -> float | None:
    """A CSV or JSON cell as a float; ``None`` for an empty cell, ``nan`` or ``None``."""
    if value is None or value == "":
        return None
    x = float(value)
    return None if math.isnan(x) else x


def _claim(row: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {k: (str(row.get(k) or "") or None) for k in _TEXT}
    out["unit"] = out["unit"] or "points"
    out["section"] = out["section"] or "claim"
    for k in _INT:
        x = _number(row.get(k))
        out[k] = None if x is None else int(x)
    for k in _FLOAT:
        out[k] = _number(row.get(k))
    return out


def _header(md: str) -> dict[str, Any]:
    """Budget, source digest, count line and partial / exploratory flags from ``claims.md``'s top."""
    budget = re.search(r"^# Reproduction report \(budget: ([\w-]+)\)", md, re.M)
    digest = re.search(r"source sha256 ([0-9a-f]+)", md)
    count = re.search(r"^Claims reproduced: .*$", md, re.M)
    return {"budget": budget.group(1) if budget else None,
            "source_sha256": digest.group(1) if digest else None,
            "count": count.group(0) if count else None, "partial": "**Partial report**" in md,
            "exploratory": "— exploratory" in md.split("\n", 1)[0]}


def read_report(root: str | Path, stem: str = "claims") -> dict[str, Any]:
    """The report written under ``root``: ``{"rows", "budget", "source_sha256", "count", "partial",
    "exploratory", "commit", "seconds"}`` (``commit`` and ``seconds`` are ``None`` unless
    ``<stem>.json`` recorded them).

    Raises:
        FileNotFoundError: neither ``<stem>.json`` nor ``<stem>.csv`` and ``<stem>.md`` under ``root``.
    """
    root = Path(root)
    js = root / f"{stem}.json"
    if js.is_file():
        doc = json.loads(js.read_text(encoding="utf-8"))
        return {"rows": doc["rows"], **{k: doc.get(k) for k in (
            "budget", "source_sha256", "count", "partial", "exploratory", "commit", "seconds")}}
    table, md = root / f"{stem}.csv", root / f"{stem}.md"
    if not (table.is_file() and md.is_file()):
        raise FileNotFoundError(f"root must hold a finished reproduction report ({stem}.json, or {stem}.csv "
                                f"and {stem}.md): none in {str(root)!r}")
    with table.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    return {"rows": rows, **_header(md.read_text(encoding="utf-8")), "commit": None, "seconds": None}


def _seed(run: str) -> int:
    """``"hard/seed3"`` → 3."""
    match = re.search(r"seed(\d+)$", run)
    if match is None:
        raise ValueError(f"results.json run names must end in seed<N>, got {run!r}")
    return int(match.group(1))


def _groups(root: Path, claims: list[dict[str, Any]]) -> dict[str, Any]:
    """Per experiment folder that ran: the claims' metrics it evaluated, and each run's values."""
    groups: dict[str, Any] = {}
    for c in claims:
        if not c["folder"]:
            continue
        name = Path(c["folder"]).name
        results = root / name / "results.json"
        if not results.is_file():
            raise FileNotFoundError(f"the report's experiment folder must hold results.json: none in "
                                    f"{str(results.parent)!r}")
        runs = json.loads(results.read_text(encoding="utf-8"))["runs"]
        g = groups.setdefault(name, {"data": c["data"], "metrics": [], "runs": runs})
        if c["metric"] in runs[0] and c["metric"] not in g["metrics"]:
            g["metrics"].append(c["metric"])
    out: dict[str, Any] = {}
    for name, g in groups.items():
        if not g["metrics"]:
            continue
        out[name] = {"data": g["data"], "metrics": g["metrics"], "runs": [
            {"strategy": r["strategy"], "seed": _seed(r["run"]),
             "values": {m: float(r[m]) for m in g["metrics"]}} for r in g["runs"]]}
    return out


def build_snapshot(
    root: str | Path, *, command: str, commit: str | None = None, seconds: float | None = None,
    stem: str = "claims",
) -> dict[str, Any]:
    """The snapshot of the finished, full report under ``root`` (``runs/reproduce/small``).

    Args:
        root: the budget's report folder (``claims.*`` and one folder per experiment).
        command: the command that produced the report (``make run``).
        commit: the commit the report was produced at; default: the one ``<stem>.json`` recorded.
        seconds: the reproduction's wall time; default: the one ``<stem>.json`` recorded.
        stem: the report's file stem.

    Raises:
        FileNotFoundError: ``root`` holds no report, or an experiment folder of it no ``results.json``.
        ValueError: the report is partial or exploratory (``--only``), or its commit or wall time is
            neither recorded nor given.

    Example:
        >>> import tempfile
        >>> with tempfile.TemporaryDirectory() as d:
        ...     try:
        ...         build_snapshot(d, command="make run")
        ...     except FileNotFoundError as err:
        ...         print(str(err).split(" (")[0])
        root must hold a finished reproduction report
    """
    root = Path(root)
    report = read_report(root, stem)
    if report["partial"] or report["exploratory"]:
        kind = "partial (interrupted)" if report["partial"] else "exploratory (--only)"
        raise ValueError(f"root must hold a full, finished report; the one in {str(root)!r} is {kind}")
    commit = commit if commit is not None else report["commit"]
    seconds = seconds if seconds is not None else report["seconds"]
    if commit is None or seconds is None:
        missing = " and ".join(n for n, v in (("commit", commit), ("seconds", seconds)) if v is None)
        raise ValueError(f"{missing} must be given: the report in {str(root)!r} does not record it "
                         f"(written before {stem}.json existed)")
    if not (isinstance(seconds, (int, float)) and math.isfinite(seconds) and seconds >= 0):
        raise ValueError(f"seconds must be a finite number >= 0, got {seconds!r}")
    claims = [_claim(r) for r in report["rows"]]
    data = list(dict.fromkeys(c["data"] for c in claims if c["folder"] and c["data"]))
    return {"version": SNAPSHOT_VERSION, "command": command, "budget": report["budget"], "commit": commit,
            "source_sha256": report["source_sha256"], "data": data, "seconds": round(float(seconds), 1),
            "count": report["count"], "claims": claims, "groups": _groups(root, claims)}


def write_snapshot(path: str | Path, snapshot: Mapping[str, Any]) -> Path:
    """Write ``snapshot`` as indented JSON (UTF-8, one trailing newline), atomically."""
    return atomic_write_text(path, json.dumps(snapshot, indent=1, ensure_ascii=False, allow_nan=False) + "\n")


def load_snapshot(path: str | Path) -> dict[str, Any]:
    """Read a snapshot written by :func:`write_snapshot`.

    Raises:
        ValueError: the file's ``version`` is not :data:`SNAPSHOT_VERSION`.
    """
    doc: dict[str, Any] = json.loads(Path(path).read_text(encoding="utf-8"))
    if doc.get("version") != SNAPSHOT_VERSION:
        raise ValueError(f"snapshot version must be {SNAPSHOT_VERSION}, got {doc.get('version')!r} in "
                         f"{str(path)!r}")
    return doc
