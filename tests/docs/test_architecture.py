"""docs/architecture.md is true to the tree: every module its source tree names exists, and every
module of the loss core is named there (the application packages are named as packages)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "hardneg"
APPLICATION = {"pipeline", "cli", "data", "modalities", "reproduce", "config", "models", "evaluate",
               "figures", "theory", "senteval", "integrations", "infograph", "text", "graphs"}
#: packages whose every module is a route or a shared numeric and is named one by one
NAMED_ONE_BY_ONE = ("engines", "_numerics")


def _tree() -> str:
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    found = re.search(r"```\nsrc/hardneg/\n(.*?)```", text, re.S)
    assert found is not None, "docs/architecture.md has no src/hardneg/ tree"
    return found.group(1)


def _named() -> list[tuple[str, str]]:
    """``(token, the entry's folder)`` for every module path (``x.py``, ``x/``) the tree names."""
    out, folder = [], ""
    for line in _tree().splitlines():
        head = re.match(r"  (\S+)", line)
        if head and not line.startswith("   "):
            first = head.group(1).rstrip(",")
            folder = first.rsplit("/", 1)[0] if "/" in first.rstrip("/") else first.rstrip("/")
        for token in re.findall(r"(?<![\w./-])([\w/]+\.py|[a-z_]+(?:/[a-z_]+)*/)(?![\w])", line):
            out.append((token, folder))
    return out


def test_every_module_the_tree_names_exists() -> None:
    missing = []
    for token, folder in _named():
        candidates = [SRC / token, SRC / folder / token, ROOT / token]  # scripts/ at the root
        if not any(c.exists() for c in candidates) and not list(SRC.rglob(token.rstrip("/"))):
            missing.append(token)
    assert not missing, f"docs/architecture.md names modules that do not exist: {missing}"


def test_every_module_of_the_core_is_named() -> None:
    tree = _tree()
    core = [p for p in SRC.iterdir() if p.name not in APPLICATION and p.name != "__pycache__"]
    names = [p.name + "/" for p in core if p.is_dir() and (p / "__init__.py").exists()]
    names += [p.name for p in core if p.suffix == ".py" and p.name != "__init__.py"]
    for package in NAMED_ONE_BY_ONE:
        for module in sorted((SRC / package).iterdir()):
            if module.name in ("__init__.py", "__pycache__"):
                continue
            names.append(f"{package}/{module.name}" + ("/" if module.is_dir() else ""))
    unnamed = [n for n in names if n not in tree and n.split("/")[-1] not in tree]
    assert not unnamed, f"docs/architecture.md does not name these core modules: {unnamed}"
