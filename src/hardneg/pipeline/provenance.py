"""What produced a run: the hash of its resolved config, the package version and the hash of its code.

Every run folder records ``provenance.json`` beside ``config.yaml``::

    {"config_sha256": "...", "hardneg_version": "0.1.0", "source_sha256": "..."}

``source_sha256`` hashes every Python file and packaged config of :mod:`hardneg` (path and bytes),
so any change of the code — not only a new release — changes it. A group (``compare``, ``sweep``,
``reproduce``) reuses a finished run only when its config and its code match the job's exactly
(:func:`~hardneg.pipeline.run_folder.changed_keys`); the reproduction report prints the code that
produced its numbers.
"""

from __future__ import annotations

import hashlib
import json
from functools import lru_cache
from pathlib import Path
from typing import Any

__all__ = ["PROVENANCE_FILE", "provenance", "read_provenance", "source_digest", "stale_provenance"]

PROVENANCE_FILE = "provenance.json"


@lru_cache(maxsize=1)
def source_digest() -> str:
    """SHA-256 of the package's ``*.py`` and ``*.yaml`` files (relative path and bytes, sorted)."""
    root = Path(__file__).resolve().parents[1]
    h = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.suffix in (".py", ".yaml") and p.is_file()):
        h.update(path.relative_to(root).as_posix().encode())
        h.update(b"\0")
        h.update(path.read_bytes())
        h.update(b"\0")
    return h.hexdigest()


def provenance(config_text: str) -> dict[str, str]:
    """The provenance of a run whose resolved config is ``config_text`` (the YAML of ``config.yaml``)."""
    from hardneg import __version__

    return {
        "config_sha256": hashlib.sha256(config_text.encode()).hexdigest(),
        "hardneg_version": __version__,
        "source_sha256": source_digest(),
    }


def read_provenance(run_dir: str | Path) -> dict[str, Any] | None:
    """A run folder's recorded provenance (``None`` when it has none or it is unreadable)."""
    path = Path(run_dir) / PROVENANCE_FILE
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def stale_provenance(run_dir: str | Path) -> list[str]:
    """Why a run's code differs from this one's: ``[]`` when version and source hash match."""
    from hardneg import __version__

    saved = read_provenance(run_dir)
    if saved is None:
        return ["hardneg code: not recorded (a run written before provenance.json)"]
    out = []
    if saved.get("hardneg_version") != __version__:
        out.append(f"hardneg version: {saved.get('hardneg_version')!r} -> {__version__!r}")
    if saved.get("source_sha256") != source_digest():
        out.append(f"hardneg code: {str(saved.get('source_sha256'))[:12]} -> {source_digest()[:12]}")
    return out
