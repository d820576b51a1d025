"""The documentation site: ``mkdocs build --strict`` passes, every ``::: name`` directive of the API
pages names an importable module or object, and every public module of the loss layer, the
integrations and supervised contrastive learning has a page."""

from __future__ import annotations

import importlib
import importlib.util
import os
import pkgutil
import re
import subprocess
import sys
from pathlib import Path

import pytest

import hardneg
from hardneg import _deprecated

ROOT = Path(__file__).resolve().parents[2]
API = ROOT / "docs" / "api"
DIRECTIVE = re.compile(r"^:::\s+([\w.]+)\s*$", re.M)


def _directives() -> dict[str, str]:
    """``{name: page}`` of every ``::: name`` directive of docs/api/*.md."""
    return {name: page.name for page in sorted(API.glob("*.md"))
            for name in DIRECTIVE.findall(page.read_text(encoding="utf-8"))}


def _resolve(name: str) -> object:
    """The module ``name``, or the attribute ``name`` of its parent module; ImportError if neither."""
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as err:
        parent, _, attr = name.rpartition(".")
        if not parent or err.name != name:
            raise
        module = importlib.import_module(parent)
        if not hasattr(module, attr):
            raise ImportError(f"{parent} has no attribute {attr!r}") from err
        return getattr(module, attr)


def _public_modules() -> set[str]:
    """The loss layer (every module ``import hardneg`` exposes), supervised, and the integrations."""
    required = {f"hardneg.{name}" for name in hardneg._SUBMODULES} | set(hardneg._WHERE.values())
    required.add("hardneg.supervised")
    required -= set(_deprecated.MODULES)  # old paths: documented on their new module's page
    integrations = importlib.import_module("hardneg.integrations")
    required |= {f"hardneg.integrations.{m.name}" for m in pkgutil.iter_modules(integrations.__path__)
                 if not m.name.startswith("_")}
    return required


def test_every_directive_names_something_importable() -> None:
    directives = _directives()
    assert len(directives) >= 15
    for name, page in directives.items():
        try:
            _resolve(name)
        except ImportError as err:
            pytest.fail(f"docs/api/{page}: '::: {name}' does not import: {err}")


def test_every_public_module_has_an_api_page() -> None:
    documented = set(_directives())
    missing = sorted(_public_modules() - documented)
    assert not missing, f"public modules without a '::: module' directive in docs/api/: {missing}"


def test_every_api_page_is_in_the_nav() -> None:
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    for page in API.glob("*.md"):
        assert f"api/{page.name}" in nav, f"docs/api/{page.name} is not in mkdocs.yml's nav"


def _griffe_extension():  # type: ignore[no-untyped-def]
    pytest.importorskip("griffe")
    spec = importlib.util.spec_from_file_location("_griffe_rst", API / "_griffe_rst.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_sphinx_roles_become_inline_code_and_doctests_are_fenced() -> None:
    ext = _griffe_extension()
    text = ("See :class:`~hardneg.scores.Scores` and :func:`hardneg.engines.tiled.tiled_loss`.\n\n"
            "    >>> [1.0, 0.5]\n    [1.0, 0.5]\n\nAfter.\n\nExample:\n    >>> 2 + 2\n    4\n\n"
            "Examples:\n    >>> 1 + 1\n    2\n")
    out = ext.markdown_docstring(text)
    assert out.startswith("See `Scores` and `hardneg.engines.tiled.tiled_loss`.")
    assert "    ```pycon\n    >>> [1.0, 0.5]\n    [1.0, 0.5]\n    ```\n\nAfter." in out
    assert "Example:\n    ```pycon\n    >>> 2 + 2\n    4\n    ```\n" in out  # an admonition to griffe
    assert out.endswith("Examples:\n    >>> 1 + 1\n    2\n")  # griffe renders Examples sections itself


@pytest.mark.slow
def test_the_site_builds_strictly(tmp_path: Path) -> None:
    if importlib.util.find_spec("mkdocs") is None or importlib.util.find_spec("mkdocstrings") is None:
        pytest.skip('mkdocs is not installed (pip install "hardneg[docs]")')
    site = tmp_path / "site"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, log[-4000:]
    assert "WARNING" not in log, log[-4000:]
    negatives = (site / "api" / "negatives" / "index.html").read_text(encoding="utf-8")
    assert 'id="hardneg.negatives.Hard"' in negatives  # the re-exported classes are rendered
    loss = (site / "api" / "loss" / "index.html").read_text(encoding="utf-8")
    assert 'id="hardneg.loss.ContrastiveLoss"' in loss
    assert "&gt;&gt;&gt;" in loss and "<blockquote>" not in loss  # doctests as code, not quotes
    assert (site / "examples" / "index.html").exists()
