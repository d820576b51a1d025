"""Whether a claim's verdict is confirmatory: the design fixed, and its pilot apart, before the runs.

A verdict is *confirmatory* when everything it depends on was fixed before its runs began: the
budget's design file and its pilot file were committed (unmodified in the checkout; an installed
package's files count as released), the pilot's seeds and data draw were disjoint from the runs'
(checked when the design is loaded), the claim had a pilot result, and the claim's digest
(:meth:`~hardneg.reproduce.design.Design.claim_digest`: its entry, its experiment, α, the family,
its pilot result) is the one recorded when the runs began. Anything else is *exploratory*, with
the reason: a design edited after the runs began changes the digest of exactly the claims it
touches. This is the pre-registration discipline of confirmatory research (Nosek, Ebersole,
DeHaven, Mellor, "The preregistration revolution", PNAS 115 (2018) 2600–2606): a design fixed in
advance, pilots separate from the reported runs, and deviations labelled.

``<out>/<budget>/registration.json`` is written once, when a budget's runs first begin; a resumed
run reads it back.

Example:
    >>> from hardneg.reproduce.design import load_design
    >>> reg = registration_of(load_design("small"))
    >>> reg["design"], len(reg["design_sha256"]), "hard-beats-simclr" in reg["claims"]
    ('small.yaml', 64, True)
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

from hardneg._io import atomic_write_text
from hardneg.reproduce.design import Design

__all__ = ["claim_status", "register", "registration_of"]

FILE = "registration.json"


def _git(cwd: Path, *args: str) -> str | None:
    try:
        out = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=20, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def _committed(files: list[Path]) -> tuple[bool, str]:
    """Whether ``files`` are committed and unmodified (``True`` outside a git checkout: an installed
    package's files are its release), with the commit or why not."""
    where = files[0].parent
    if {"site-packages", "dist-packages"} & set(where.resolve().parts):
        return True, "installed package"  # even in a venv inside a user's own git checkout
    top = _git(where, "rev-parse", "--show-toplevel")
    if top is None:
        return True, "installed package"
    names = [str(f) for f in files if f.exists()]
    for f in names:
        if _git(where, "ls-files", "--error-unmatch", f) is None:
            return False, f"{Path(f).name} is not committed"
    dirty = _git(where, "status", "--porcelain", "--", *names)
    if dirty:
        return False, f"{', '.join(line[3:].rsplit('/', 1)[-1] for line in dirty.splitlines())} modified"
    return True, _git(where, "rev-parse", "--short=12", "HEAD") or "unknown"


def registration_of(design: Design) -> dict[str, Any]:
    """What a run of ``design`` registers when it begins: the design file and its SHA-256, the pilot
    file's, whether both are committed (and at which commit), and every claim's digest."""
    files = [design.path] + ([design.pilot.file] if design.pilot is not None else [])
    committed, commit = _committed(files)
    pilot = design.pilot
    return {
        "design": design.path.name,
        "design_sha256": design.digest,
        "pilot": None if pilot is None else pilot.file.name,
        "pilot_results": sorted(pilot.results) if pilot is not None else [],
        "committed": committed,
        "commit": commit,
        "began": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "claims": {c.id: design.claim_digest(c.id) for c in design.claims},
    }


def register(design: Design, root: Path, *, fresh: bool = False) -> dict[str, Any]:
    """The registration of the runs under ``root`` (``<out>/<budget>``): read back when they began
    earlier, else (or with ``fresh``: ``--force`` starts the runs again) recorded now, atomically."""
    path = root / FILE
    if path.is_file() and not fresh:
        return dict(json.loads(path.read_text(encoding="utf-8")))
    reg = registration_of(design)
    root.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps(reg, indent=2, sort_keys=True) + "\n")
    return reg


def claim_status(design: Design, reg: dict[str, Any], claim_id: str) -> str:
    """``"confirmatory"``, or ``"exploratory: <why>"`` for ``claim_id`` under registration ``reg``.

    Example:
        >>> from hardneg.reproduce.design import load_design
        >>> d = load_design("small")
        >>> reg = {**registration_of(d), "committed": False, "commit": "small.yaml modified"}
        >>> claim_status(d, reg, "hard-beats-simclr")
        'exploratory: the design was not committed when the runs began (small.yaml modified)'
    """
    claim = design.claim(claim_id)
    if claim.theorem:
        return "theorem check"
    if not reg.get("committed"):
        return f"exploratory: the design was not committed when the runs began ({reg.get('commit')})"
    if design.pilot is None or claim_id not in reg.get("pilot_results", []):
        return "exploratory: no pilot result was committed for it before the runs"
    if reg.get("claims", {}).get(claim_id) != design.claim_digest(claim_id):
        return "exploratory: its design changed after the runs began"
    return "confirmatory"
