"""Provenance covers what a run read (hardneg.pipeline.provenance, run_folder.changed_keys): a
finished run is reused only when its config, the hardneg modules it ran, its ``imports:`` modules,
its data files and the library versions are today's; each other case names its reason."""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from hardneg.config import RunConfig
from hardneg.pipeline import provenance as prov
from hardneg.pipeline.config import dump_yaml, load_config
from hardneg.pipeline.experiment import train_run
from hardneg.pipeline.provenance import PROVENANCE_FILE
from hardneg.pipeline.run_folder import changed_keys

from .helpers import tiny

UNRELATED = "hardneg.theory.tammes"  # a module an image run never imports


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, RunConfig]:
    """A finished tiny digits run, trained in a process that had not imported :data:`UNRELATED`."""
    cfg = load_config(None, tiny("eval.figures=false"))
    run = tmp_path_factory.mktemp("prov") / "run"
    with pytest.MonkeyPatch.context() as mp:
        mp.delitem(sys.modules, UNRELATED, raising=False)
        train_run(cfg, run, quiet=True)
    return run, cfg


@pytest.fixture
def run(trained: tuple[Path, RunConfig], tmp_path: Path) -> Iterator[tuple[Path, RunConfig]]:
    """A copy of the finished run that a test may damage."""
    folder, cfg = trained
    copy = tmp_path / "run"
    shutil.copytree(folder, copy)
    yield copy, cfg


def _record(run: Path, cfg: RunConfig) -> None:
    """What ``train_run`` writes first: the config and its provenance (no training needed)."""
    run.mkdir(parents=True, exist_ok=True)
    text = dump_yaml(cfg)
    (run / "config.yaml").write_text(text)
    (run / PROVENANCE_FILE).write_text(json.dumps(prov.provenance(text, cfg)))


def test_an_unchanged_run_is_reused_and_records_code_data_and_libraries(run: tuple[Path, RunConfig]) -> None:
    folder, cfg = run
    assert changed_keys(folder, cfg) == []
    saved = json.loads((folder / PROVENANCE_FILE).read_text())
    assert "hardneg.loss" in saved["modules"] and UNRELATED not in saved["modules"]
    assert saved["data"] == {} and saved["imports"] == {}  # digits are embedded: the config holds them
    assert set(saved["libraries"]) == {"python", "torch", "numpy", "scikit-learn", "lightning"}


def test_a_run_whose_config_yaml_was_deleted_is_not_reused(run: tuple[Path, RunConfig]) -> None:
    folder, cfg = run
    (folder / "config.yaml").unlink()
    assert any(r.startswith("config.yaml: missing") for r in changed_keys(folder, cfg))


def test_a_run_whose_provenance_was_forged_or_deleted_is_not_reused(run: tuple[Path, RunConfig]) -> None:
    folder, cfg = run
    saved = json.loads((folder / PROVENANCE_FILE).read_text())
    (folder / PROVENANCE_FILE).write_text(json.dumps({**saved, "config_sha256": "0" * 64}))
    assert changed_keys(folder, cfg) == [
        "config.yaml: its text does not match the config_sha256 recorded in provenance.json"
    ]
    (folder / PROVENANCE_FILE).write_text(json.dumps({**saved, "modules": {"hardneg.loss": "0" * 64}}))
    assert changed_keys(folder, cfg) == ["hardneg code changed: hardneg.loss"]
    (folder / PROVENANCE_FILE).unlink()
    assert any(r.startswith("provenance.json: missing") for r in changed_keys(folder, cfg))


def test_only_a_module_the_run_imported_invalidates_it(
    run: tuple[Path, RunConfig], monkeypatch: pytest.MonkeyPatch
) -> None:
    folder, cfg = run
    real = prov.module_digest
    edited = {UNRELATED}
    monkeypatch.setattr(prov, "module_digest", lambda name: "edited" if name in edited else real(name))
    assert changed_keys(folder, cfg) == []  # tammes.py edited: an image run did not run it
    edited.add("hardneg.loss")
    assert changed_keys(folder, cfg) == ["hardneg code changed: hardneg.loss"]


def test_another_library_version_is_named(
    run: tuple[Path, RunConfig], monkeypatch: pytest.MonkeyPatch
) -> None:
    folder, cfg = run
    versions = {**prov.library_versions(), "torch": "0.0.1"}
    monkeypatch.setattr(prov, "library_versions", lambda: versions)
    [reason] = changed_keys(folder, cfg)
    assert reason.startswith("library version changed: torch ") and reason.endswith("-> 0.0.1")


def test_a_folder_without_a_run_has_nothing_stale(tmp_path: Path) -> None:
    assert changed_keys(tmp_path / "new", load_config(None)) == []


def test_a_changed_data_file_is_named(tmp_path: Path) -> None:
    """Shuffled article labels: the same sentences under other articles must retrain."""
    corpus = tmp_path / "articles.tsv"
    lines = [f"{a}\tsentence {i} of article {a} with words" for a in "abc" for i in range(4)]
    corpus.write_text("\n".join(lines) + "\n")
    cfg = load_config("articles", ["data.text.source=tsv", f"data.root={corpus}"])
    _record(tmp_path / "run", cfg)
    assert changed_keys(tmp_path / "run", cfg) == []
    shuffled = [f"{'cab'[i % 3]}\t{line.split(chr(9))[1]}" for i, line in enumerate(lines)]
    corpus.write_text("\n".join(shuffled) + "\n")
    assert changed_keys(tmp_path / "run", cfg) == [f"data file changed: {corpus.resolve()}"]


def test_a_changed_data_folder_is_named(tmp_path: Path) -> None:
    """A folder is hashed file by file: an added file changes it."""
    folder = tmp_path / "corpus"
    folder.mkdir()
    for a in "ab":
        (folder / f"{a}.txt").write_text("".join(f"sentence {i} of {a}\n" for i in range(4)))
    cfg = load_config("articles", ["data.text.source=folder", f"data.root={folder}"])
    _record(tmp_path / "run", cfg)
    assert changed_keys(tmp_path / "run", cfg) == []
    (folder / "c.txt").write_text("one more article\nwith two sentences\n")
    assert changed_keys(tmp_path / "run", cfg) == [f"data file changed: {folder.resolve()}"]


def test_a_changed_imported_module_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    module = tmp_path / "hardneg_prov_plugin.py"
    module.write_text("SCALE = 1.0\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "hardneg_prov_plugin", raising=False)
    cfg = load_config(None, ["imports=[hardneg_prov_plugin]"])
    _record(tmp_path / "run", cfg)
    assert changed_keys(tmp_path / "run", cfg) == []
    module.write_text("SCALE = 2.0\n")
    assert changed_keys(tmp_path / "run", cfg) == [f"imported module changed: hardneg_prov_plugin ({module})"]


def _plugin(tmp_path: Path, layout: str) -> tuple[str, Path]:
    """A plug-in (a module, or a module of a package) that imports a helper of its own, which imports
    another inside a function; returns the name for ``imports:`` and the inner helper's file."""
    if layout == "module":
        (tmp_path / "hardneg_prov_plug.py").write_text("import numpy\nimport hardneg_prov_utils\nSCALE = 1\n")
        (tmp_path / "hardneg_prov_utils.py").write_text("def scale():\n    import hardneg_prov_deep\n")
        name = "hardneg_prov_plug"
    else:
        package = tmp_path / "hardneg_prov_pkg"
        package.mkdir()
        (package / "__init__.py").write_text("")
        (package / "modality.py").write_text("from . import utils\nimport hardneg.loss\n")
        (package / "utils.py").write_text("def scale():\n    import hardneg_prov_deep\n")
        name = "hardneg_prov_pkg.modality"
    deep = tmp_path / "hardneg_prov_deep.py"  # a sibling of the plug-in, outside its package
    deep.write_text("FACTOR = 1.0\n")
    return name, deep


@pytest.mark.parametrize("layout", ["module", "package"])
def test_a_changed_helper_of_an_imported_module_is_named_with_its_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, layout: str
) -> None:
    """Issue 44: provenance hashed only the module named in ``imports:``, so an edit of the plug-in's
    own helper reused the stale runs."""
    name, deep = _plugin(tmp_path, layout)
    monkeypatch.syspath_prepend(str(tmp_path))
    for loaded in [m for m in sys.modules if m.startswith("hardneg_prov_")]:
        monkeypatch.delitem(sys.modules, loaded)
    cfg = load_config(None, [f"imports=[{name}]"])
    _record(tmp_path / "run", cfg)
    recorded = json.loads((tmp_path / "run" / PROVENANCE_FILE).read_text())["imports"]
    assert name in recorded and "hardneg_prov_deep" in recorded and "numpy" not in recorded
    assert not any(m.startswith("hardneg.") for m in recorded)  # hardneg's own code is in "modules"
    assert changed_keys(tmp_path / "run", cfg) == []
    deep.write_text("FACTOR = 2.0\n")
    assert changed_keys(tmp_path / "run", cfg) == [f"imported module changed: hardneg_prov_deep ({deep})"]


def test_file_digests_stream_and_follow_the_bytes(tmp_path: Path) -> None:
    """A file larger than one chunk is hashed whole: a change of its last byte changes the digest."""
    import hashlib

    data = bytearray(b"x" * (3 << 20) + b"1")
    path = tmp_path / "big.bin"
    path.write_bytes(bytes(data))
    assert prov.file_digest(path) == hashlib.sha256(data).hexdigest()
    data[-1:] = b"2"
    path.write_bytes(bytes(data))
    assert prov.file_digest(path) == hashlib.sha256(data).hexdigest()


def test_a_group_retrains_a_run_whose_imported_module_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``sweep --resume`` reuses an unchanged run, and trains it again naming the changed module: a
    helper the ``imports:`` module imports, and its file."""
    from typer.testing import CliRunner

    from hardneg.cli import app

    (tmp_path / "hardneg_prov_group_plugin.py").write_text("from hardneg_prov_group_utils import SCALE\n")
    helper = tmp_path / "hardneg_prov_group_utils.py"  # the plug-in's own helper
    helper.write_text("SCALE = 1.0\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "hardneg_prov_group_plugin", raising=False)
    monkeypatch.delitem(sys.modules, "hardneg_prov_group_utils", raising=False)
    args = ["sweep", "digits", *tiny("eval.figures=false"), "imports=[hardneg_prov_group_plugin]",
            "sweep.grid={loss.temperature: [0.5]}", "sweep.seeds=[0]", "--out", str(tmp_path / "g")]
    assert CliRunner().invoke(app, args).exit_code == 0
    again = CliRunner().invoke(app, [*args, "--resume"])
    assert again.exit_code == 0 and "reused" in again.output, again.output
    helper.write_text("SCALE = 2.0\n")
    changed = CliRunner().invoke(app, [*args, "--resume"])
    assert changed.exit_code == 0, changed.output
    assert "retrained" in changed.output
    assert f"imported module changed: hardneg_prov_group_utils ({helper})" in changed.output
