"""The 0.3 surface (issue 46, item 4): ``dir(hardneg)`` shows the public names only, version 0.3.0,
``register_modality`` exported from one module (its 0.2 path ``hardneg.pipeline`` warns)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import hardneg

ROOT = Path(__file__).resolve().parents[1]


def test_dir_of_hardneg_is_its_public_names_and_dunders() -> None:
    dunder = re.compile(r"^__\w+__$")
    leaked = [n for n in dir(hardneg) if n not in hardneg.__all__ and not dunder.match(n)]
    assert leaked == []
    assert set(hardneg.__all__) <= set(dir(hardneg))


def test_the_version_is_0_3_0_everywhere() -> None:
    assert hardneg.__version__ == "0.3.0"
    assert re.search(r'^version = "0\.3\.0"$', (ROOT / "pyproject.toml").read_text(), re.M)
    assert re.search(r"^version: 0\.3\.0$", (ROOT / "CITATION.cff").read_text(), re.M)
    assert "## 0.3.0 — unreleased" in (ROOT / "CHANGELOG.md").read_text()


def _exported(path: Path) -> set[str]:
    """The names of a module's ``__all__`` list, read from its source."""
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "__all__" for t in node.targets):
            return {e.value for e in getattr(node.value, "elts", []) if isinstance(e, ast.Constant)}
    return set()


def test_register_modality_is_exported_by_one_module() -> None:
    src = ROOT / "src" / "hardneg"
    exporters = sorted(str(p.relative_to(src)) for p in src.rglob("*.py")
                       if "register_modality" in _exported(p))
    assert exporters == ["modalities/__init__.py"]
    import hardneg.pipeline

    with pytest.warns(DeprecationWarning, match=r"hardneg\.pipeline\.register_modality is now "
                                                r"hardneg\.modalities\.register_modality"):
        old = hardneg.pipeline.register_modality
    from hardneg.modalities import register_modality

    assert old is register_modality
