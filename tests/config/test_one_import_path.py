"""One import path per public name: the config vocabulary is imported from ``hardneg.config`` only."""

from __future__ import annotations

import ast
from pathlib import Path

import hardneg.config
import hardneg.modalities
import hardneg.pipeline.config

ROOT = Path(__file__).resolve().parents[2]
VOCABULARY = {"CompareConfig", "ConfigError", "DataSection", "EvalSection", "LossConfig", "MocoConfig",
              "MocoSection", "ModelSection", "RunConfig", "SweepConfig", "TrainConfig"}
OTHERS = ("hardneg.pipeline.config", "hardneg.modalities", "hardneg.modalities.base")


def test_the_vocabulary_is_public_in_hardneg_config_only() -> None:
    assert VOCABULARY <= set(hardneg.config.__all__)
    assert not VOCABULARY & set(hardneg.pipeline.config.__all__)
    assert not VOCABULARY & set(hardneg.modalities.__all__)


def test_no_file_imports_the_vocabulary_from_another_module() -> None:
    found = []
    for folder in ("src", "tests", "benchmarks", "examples", "scripts"):
        for path in (ROOT / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
                if isinstance(node, ast.ImportFrom) and node.module in OTHERS:
                    names = {a.name for a in node.names} & VOCABULARY
                    if names:
                        found.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.module} {sorted(names)}")
    assert not found, "import these from hardneg.config:\n" + "\n".join(found)
