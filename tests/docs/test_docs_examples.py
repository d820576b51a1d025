"""Every ```python block of docs/*.md runs as written (in a temporary working directory)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"
BLOCKS = [
    pytest.param(block, id=f"{path.name}:{i}")
    for path in sorted(DOCS.glob("*.md"))
    for i, block in enumerate(re.findall(r"```python\n(.*?)```", path.read_text(encoding="utf-8"), re.S))
]


def test_docs_exist_and_have_examples() -> None:
    names = {p.name for p in DOCS.glob("*.md")}
    assert {"architecture.md", "theory.md", "references.md"} <= names
    assert len(BLOCKS) >= 3


@pytest.mark.parametrize("block", BLOCKS)
def test_docs_python_block_runs(block: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    exec(compile(block, "docs", "exec"), {"__name__": "__docs__"})


def test_docs_cite_nothing_outside_the_repository() -> None:
    for path in DOCS.glob("*.md"):
        text = path.read_text(encoding="utf-8")
        banned = "|".join(
            ["seed" + r" 0+\d", r"\[R[],]", r"\[X-", "DESIGN" + r"\.md", "THEORY" + r"\.md", "shared/"]
        )
        assert not re.search(banned, text), path.name


def test_source_cites_nothing_outside_the_repository() -> None:
    patterns = ["seed" + r" 0+\d", r"\[R[],]", r"\[X-", "DESIGN" + r"\.md", "THEORY" + r"\.md"]
    banned = re.compile("|".join([*patterns, r"\.\./shared", "shared/seeds"]))
    root = DOCS.parent
    for path in [*root.glob("src/**/*.py"), *root.glob("benchmarks/*.py"), root / "README.md"]:
        match = banned.search(path.read_text(encoding="utf-8"))
        assert match is None, f"{path.relative_to(root)} cites {match.group(0)!r}"


def test_architecture_lists_every_package_and_module() -> None:
    """docs/architecture.md's tree names every package and top-level module of src/hardneg."""
    src = DOCS.parent / "src" / "hardneg"
    text = (DOCS / "architecture.md").read_text(encoding="utf-8")
    tree = re.search(r"```\nsrc/hardneg/\n(.*?)```", text, re.S)
    assert tree is not None
    names = [p.name + "/" for p in src.iterdir() if p.is_dir() and (p / "__init__.py").exists()]
    names += [p.name for p in src.glob("*.py") if p.name != "__init__.py"]
    missing = [n for n in names if n not in tree.group(1)]
    assert not missing, f"docs/architecture.md does not list {missing}"
