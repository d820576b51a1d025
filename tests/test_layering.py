"""The parts of the layering contract that import-linter's static lists cannot state.

``pyproject.toml``'s contracts name modules; these checks cover every module by rule, so a new file
is guarded the day it is added (docs/architecture.md, "Layers"):

* every module under ``hardneg.modalities`` that is not part of the seam is a plug-in, and no
  plug-in imports another, directly or through other modules of the package; the seam imports none;
* a private module (``_name``) is imported only from inside the package that holds it.
"""

from __future__ import annotations

import grimp
import pytest

SEAM = {"hardneg.modalities", "hardneg.modalities.base", "hardneg.modalities.memory",
        "hardneg.modalities.readouts", "hardneg.modalities.results"}


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    return grimp.build_graph("hardneg")


def _plugins(graph: grimp.ImportGraph) -> set[str]:
    return {m for m in graph.find_descendants("hardneg.modalities") if m not in SEAM}


def test_the_modality_plugins_are_found(graph):
    expected = {"hardneg.modalities.images", "hardneg.modalities.graphs", "hardneg.modalities.sentences"}
    assert expected <= _plugins(graph)
    assert SEAM - {"hardneg.modalities"} <= graph.find_descendants("hardneg.modalities")


def test_no_modality_plugin_imports_another(graph):
    plugins = _plugins(graph)
    found = [(a, b) for a in plugins for b in plugins
             if a != b and graph.chain_exists(importer=a, imported=b)]
    assert not found, f"a modality plug-in imports another: {found}"


def test_the_modality_seam_imports_no_plugin(graph):
    found = [(a, b) for a in SEAM - {"hardneg.modalities"} for b in _plugins(graph)
             if graph.chain_exists(importer=a, imported=b)]
    assert not found, f"the seam imports a plug-in: {found}"


def _private_imports_across_packages(graph: grimp.ImportGraph) -> list[tuple[str, str]]:
    bad = []
    for imported in sorted(graph.modules):
        name = imported.rsplit(".", 1)[-1]
        if not name.startswith("_") or name.startswith("__"):
            continue
        owner = imported.rsplit(".", 1)[0]
        for importer in graph.find_modules_that_directly_import(imported):
            if importer != owner and not importer.startswith(owner + "."):
                bad.append((importer, imported))
    return bad


def test_no_private_module_is_imported_from_another_package(graph):
    assert _private_imports_across_packages(graph) == []


def test_the_private_import_rule_can_fail():
    fake = grimp.ImportGraph()
    for module in ("hardneg", "hardneg.evaluate", "hardneg.evaluate._arrays", "hardneg.figures",
                   "hardneg.figures.hardest", "hardneg.evaluate.knn"):
        fake.add_module(module)
    fake.add_import(importer="hardneg.evaluate.knn", imported="hardneg.evaluate._arrays")
    fake.add_import(importer="hardneg.figures.hardest", imported="hardneg.evaluate._arrays")
    assert _private_imports_across_packages(fake) == [("hardneg.figures.hardest", "hardneg.evaluate._arrays")]
