"""Locating data inside installed packages without running their code."""

from __future__ import annotations

from pathlib import Path

import pytest

from hardneg._packages import installed_package_path


def test_finds_data_without_importing_the_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pkg = tmp_path / "heavypkg_for_test"
    (pkg / "data").mkdir(parents=True)
    (pkg / "__init__.py").write_text("raise RuntimeError('importing me is not allowed')\n")
    (pkg / "data" / "x.txt").write_text("hello")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert installed_package_path("heavypkg_for_test", Path("data") / "x.txt") == pkg / "data" / "x.txt"
    assert installed_package_path("heavypkg_for_test", "data") == pkg / "data"
    assert installed_package_path("heavypkg_for_test", "missing.txt") is None
    assert installed_package_path("no_such_package_for_test", "x") is None
