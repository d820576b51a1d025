"""The README's findings block and ``docs/studies.md``'s ``make run`` tables, rendered from a snapshot.

A block lies between two marker lines, ``<!-- hardneg:NAME:start -->`` and
``<!-- hardneg:NAME:end -->``; :func:`update_findings` builds the snapshot of a finished report
(:mod:`hardneg.reproduce.snapshot`), writes it, and rewrites both blocks in place, each file
atomically. Everything between the markers is generated: a number edited by hand there is
overwritten, and ``tests/reproduce/test_findings_drift.py`` fails until it is.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from hardneg._io import atomic_write_text
from hardneg.reproduce.snapshot import build_snapshot, write_snapshot

__all__ = [
    "FINDINGS",
    "GROUPS",
    "block",
    "findings_markdown",
    "groups_markdown",
    "provenance_line",
    "read_block",
    "replace_block",
    "update_findings",
]

FINDINGS = "findings"  # the README's block
GROUPS = "make-run-tables"  # docs/studies.md's block
REGENERATE = "python scripts/update_findings.py"
_NO_RESULT = ("not run here", "interrupted")


def _markers(name: str) -> tuple[str, str]:
    return f"<!-- hardneg:{name}:start -->", f"<!-- hardneg:{name}:end -->"


def _scale(c: Mapping[str, Any]) -> tuple[float, str]:
    """Accuracies (unit ``points``) print ×100 in points; other units (bits) as they are."""
    unit = c.get("unit") or "points"
    return (100.0, "points") if unit == "points" else (1.0, unit)


def _num(x: float | None, k: float, signed: bool = False) -> str:
    """``k·x`` with 2 decimals in points, 3 significant digits otherwise; ``–`` when absent."""
    if x is None or not math.isfinite(x):
        return "–"
    sign = "+" if signed else ""
    return f"{k * x:{sign}.2f}" if k == 100.0 else f"{k * x:{sign}.3g}"


def _difference(c: Mapping[str, Any]) -> str:
    k, unit = _scale(c)
    suffix = "" if unit == "points" else f" {unit}"
    level, low, high = c.get("ci_level"), c.get("ci_low"), c.get("ci_high")
    if level is not None and low is not None and high is not None:  # the verdict's own level (Holm)
        return (f"{_num(c['diff_mean'], k, signed=True)} [{_num(low, k, signed=True)}, "
                f"{_num(high, k, signed=True)}]{suffix} ({100 * level:.3g} %)")
    if c.get("half_width") is None:
        return f"{_num(c['diff_mean'], k, signed=True)}{suffix} (no interval)"
    return f"{_num(c['diff_mean'], k, signed=True)} ± {_num(c['half_width'], k)}{suffix}"


def _effect(c: Mapping[str, Any]) -> str:
    k, _ = _scale(c)
    if c.get("test") == "equivalence" and c.get("margin") is not None:
        return f"parity (±{k * c['margin']:.2g})"
    if c.get("test") == "noninferiority" and c.get("margin") is not None:
        return f"not worse by {k * c['margin']:.2g}"
    return "not stated" if c.get("paper_effect") is None else _num(c["paper_effect"], k, signed=True)


def _p(x: float | None) -> str:
    return "–" if x is None or not math.isfinite(x) else f"{x:.3g}"


def provenance_line(snapshot: Mapping[str, Any]) -> str:
    """``Produced by `make run` at commit X on <data>, wall time Y s`` and where the block comes from."""
    command = snapshot["command"]
    budget = snapshot.get("budget") or "?"
    shown = (f"`{command}` (`hardneg reproduce --budget {budget}`)" if command == "make run"
             else f"`{command}`")
    digest = snapshot.get("source_sha256")
    data = ", ".join(snapshot["data"]) or "no data"
    return (f"Produced by {shown} at commit {snapshot['commit']} on {data}, "
            f"wall time {snapshot['seconds']:.0f} s (budget {budget}"
            f"{f'; hardneg source sha256 {digest[:12]}' if digest else ''}). Generated from "
            f"`docs/results/reproduce-{budget}.json` by `{REGENERATE}`; do not edit by hand.")


def findings_markdown(snapshot: Mapping[str, Any]) -> str:
    """The README's findings block: the provenance line, one table row per claim (difference ± 95 %
    half-width, the paper's effect, MDE design / observed, Holm p, verdict), the count of claims
    reproduced, and the theorem checks (outside the family).

    Args:
        snapshot: a snapshot of :func:`hardneg.reproduce.snapshot.build_snapshot`.

    Example:
        >>> snap = {"command": "make run", "budget": "small", "commit": "abc1234", "data": ["latent"],
        ...         "seconds": 12.0, "source_sha256": None, "count": None, "claims": [
        ...         {"claim": "c", "section": "claim", "data": "latent", "metric": "linear_top1",
        ...          "unit": "points", "test": "superiority", "margin": None, "paper_effect": 0.03,
        ...          "diff_mean": 0.012, "half_width": 0.004, "mde_design": 0.01, "mde_observed": 0.011,
        ...          "p_holm": 0.002, "verdict": "reproduced"}]}
        >>> print(findings_markdown(snap).splitlines()[-1])
        | c | latent | linear_top1 | +1.20 ± 0.40 | +3.00 | 1.00 / 1.10 | 0.002 | reproduced |
    """
    claims = [c for c in snapshot["claims"] if c.get("section", "claim") == "claim"]
    theorems = [c for c in snapshot["claims"] if c.get("section") == "theorem"]
    status = any(c.get("status") for c in claims)  # snapshots from before registration have none
    lines = [provenance_line(snapshot), "",
             "| claim | data | metric | difference [interval at the verdict's level] (points unless stated) "
             "| paper's effect "
             f"| MDE, 80 % power (design / observed) | p (Holm) | verdict |{' status |' if status else ''}",
             "|---|---|---|---|---|---|---|---|" + ("---|" if status else "")]
    for c in claims:
        last = f" {str(c.get('status') or '–').split(':', 1)[0]} |" if status else ""
        if c["verdict"] in _NO_RESULT:
            lines.append(f"| {c['claim']} | {c.get('data') or '–'} | {c['metric']} | – | {_effect(c)} "
                         f"| – | – | {c['verdict']} |{last}")
            continue
        k, _ = _scale(c)
        lines.append(f"| {c['claim']} | {c['data']} | {c['metric']} | {_difference(c)} | {_effect(c)} "
                     f"| {_num(c.get('mde_design'), k)} / {_num(c.get('mde_observed'), k)} "
                     f"| {_p(c.get('p_holm'))} | {c['verdict']} |{last}")
    if snapshot.get("count"):
        lines += ["", snapshot["count"]]
    if theorems:
        checks = "; ".join(f"{c['claim']}: {_difference(c)} (one-sided p = {_p(c.get('p_value'))}), "
                           f"**{c['verdict']}**" for c in theorems)
        lines += ["", f"Theorem checks, each alone, outside the family: {checks}."]
    return "\n".join(lines)


def _mean_std(values: Sequence[float]) -> tuple[float, float | None]:
    n = len(values)
    mean = math.fsum(values) / n
    if n < 2:
        return mean, None
    return mean, math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (n - 1))


def groups_markdown(snapshot: Mapping[str, Any]) -> str:
    """``docs/studies.md``'s block: the provenance line, then per experiment of the report each
    strategy's accuracy (%, mean ± sample std over its seeds) on the metrics its claims read.

    Args:
        snapshot: a snapshot of :func:`hardneg.reproduce.snapshot.build_snapshot`.
    """
    lines = [provenance_line(snapshot)]
    for name, g in snapshot["groups"].items():
        metrics = g["metrics"]
        by: dict[str, list[Mapping[str, Any]]] = {}
        for r in g["runs"]:
            by.setdefault(r["strategy"], []).append(r)
        lines += ["", f"`{name}` (data: {g['data']}); accuracy in %, mean ± std over seeds, final epoch:", "",
                  "| strategy | " + " | ".join(metrics) + " | seeds |",
                  "|---|" + "---|" * len(metrics) + "---|"]
        for strategy, runs in by.items():
            cells = []
            for m in metrics:
                mean, std = _mean_std([float(r["values"][m]) for r in runs])
                cells.append(f"{100 * mean:.2f} ± {'–' if std is None else f'{100 * std:.2f}'}")
            seeds = len({int(r["seed"]) for r in runs})
            lines.append(f"| {strategy} | " + " | ".join(cells) + f" | {seeds} |")
    return "\n".join(lines)


def block(name: str, body: str) -> str:
    """``body`` between ``name``'s marker lines (the text that :func:`replace_block` puts in place)."""
    start, end = _markers(name)
    return f"{start}\n{body}\n{end}"


def replace_block(text: str, name: str, body: str) -> str:
    """``text`` with everything between ``name``'s marker lines replaced by ``body``.

    Raises:
        ValueError: the markers are not each present exactly once, each on a line of its own, start
            before end.

    Example:
        >>> replace_block("a\\n<!-- hardneg:x:start -->\\nold\\n<!-- hardneg:x:end -->\\nb", "x", "new")
        'a\\n<!-- hardneg:x:start -->\\nnew\\n<!-- hardneg:x:end -->\\nb'
    """
    start, end = _markers(name)
    lines = text.split("\n")
    found = {m: [i for i, line in enumerate(lines) if line == m] for m in (start, end)}
    if len(found[start]) != 1 or len(found[end]) != 1 or found[start][0] > found[end][0]:
        raise ValueError(f"text must hold the lines {start!r} and {end!r} once each, in that order; found "
                         f"{len(found[start])} start and {len(found[end])} end lines")
    i, j = found[start][0], found[end][0]
    return "\n".join([*lines[:i], block(name, body), *lines[j + 1:]])


def read_block(text: str, name: str) -> str:
    """The body between ``name``'s marker lines in ``text`` (see :func:`replace_block` for errors)."""
    start, end = _markers(name)
    replace_block(text, name, "")  # validates the markers
    body = text.split(start, 1)[1].split(end, 1)[0]
    body = body[1:] if body.startswith("\n") else body
    return body[:-1] if body.endswith("\n") else body  # "" for markers on adjacent lines


def _rewrite(path: Path, name: str, body: str) -> None:
    try:
        text = replace_block(path.read_text(encoding="utf-8"), name, body)
    except ValueError as err:
        raise ValueError(f"{path}: {err}") from None
    atomic_write_text(path, text)


def blocks(budget: str) -> tuple[str, str]:
    """The README's and docs/studies.md's block names of ``budget``'s findings (``small``: the
    ``make run`` blocks; another budget: ``findings-<budget>``, ``make-run-tables-<budget>``).

    >>> blocks("small"), blocks("medium")
    (('findings', 'make-run-tables'), ('findings-medium', 'make-run-tables-medium'))
    """
    return (FINDINGS, GROUPS) if budget == "small" else (f"{FINDINGS}-{budget}", f"{GROUPS}-{budget}")


def update_findings(
    root: str | Path, *, snapshot: str | Path, readme: str | Path, studies: str | Path,
    command: str = "make run", commit: str | None = None, seconds: float | None = None,
) -> dict[str, Any]:
    """Build the snapshot of the report under ``root``, write it to ``snapshot`` and rewrite the
    findings block of ``readme`` and the ``make run`` tables of ``studies`` in place (each file
    atomically; both files are checked for their markers before anything is written).

    Args:
        root: the budget's report folder (``runs/reproduce/small``).
        snapshot: the JSON file to write (``docs/results/reproduce-small.json``).
        readme: the file with the ``findings`` markers (``findings-<budget>`` but for small:
            :func:`blocks`).
        studies: the file with the ``make-run-tables`` markers (``make-run-tables-<budget>``).
        command: the command that produced the report.
        commit, seconds: the report's commit and wall time when its ``claims.json`` does not record
            them (see :func:`hardneg.reproduce.snapshot.build_snapshot`).

    Returns:
        The snapshot written.
    """
    snap = build_snapshot(root, command=command, commit=commit, seconds=seconds)
    findings, groups = blocks(str(snap["budget"]))
    targets = ((Path(readme), findings, findings_markdown(snap)),
               (Path(studies), groups, groups_markdown(snap)))
    for path, name, _ in targets:  # fail before writing anything
        try:
            replace_block(path.read_text(encoding="utf-8"), name, "")
        except ValueError as err:
            raise ValueError(f"{path}: {err}") from None
    write_snapshot(snapshot, snap)
    for path, name, body in targets:
        _rewrite(path, name, body)
    return snap
