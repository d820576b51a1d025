"""What ``hardneg train`` of an image run imports before its first step (issue 37: start-up time).

One fresh interpreter runs the calls ``hardneg train`` makes for an image run: the validated
config with its memory check, the modality's data, encoder, views and batch dataset (all before
Lightning is imported), then the pipeline (Lightning, the LightningModule and its callbacks).
The packages it has loaded at each point are compared with the optional packages an image run
never uses: the graph modality's (PyTorch Geometric, RDKit), the text modalities' (sentence-
transformers, NLTK, gensim), the integrations' and the statistics of ``hardneg reproduce``. An
eager import of any of them anywhere on that path (a modality plug-in, ``hardneg.models``, the
pipeline) fails the test. Before Lightning, the packages Lightning itself loads (scikit-learn,
SciPy, matplotlib, transformers through torchmetrics) must be absent too: the config and data
stage stays cheap, and an over-large config is refused in seconds.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow

# optional packages an image run never needs, Lightning included
NEVER_FOR_IMAGES = (
    "torch_geometric",
    "rdkit",
    "sentence_transformers",
    "nltk",
    "gensim",
    "pytorch_metric_learning",
    "statsmodels",
)
# further packages absent until Lightning is imported (Lightning's torchmetrics loads some of them)
NOT_BEFORE_LIGHTNING = (
    *NEVER_FOR_IMAGES,
    "lightning",
    "torchmetrics",
    "transformers",
    "sklearn",
    "scipy",
    "pandas",
    "matplotlib",
    "tensorboard",
)

_CHILD = """
import json, sys
from hardneg.modalities import get_modality
from hardneg.pipeline.config import load_config
from hardneg.pipeline.resources import check_memory

cfg = load_config("digits", [
    "data.dataset=random", "data.random_size=32", "data.random_shape=[3,32,32]",
    "model.encoder=resnet18_cifar",
    "model.hidden_dim=32", "model.projection_dim=16", "train.batch_size=8", "train.epochs=1",
])
modality = get_modality(cfg.data.dataset)
check_memory(cfg, modality)
train, _ = modality.load(cfg)
modality.build_encoder(cfg, train)
modality.views(cfg, train)
modality.dataset(cfg, train)
before = sorted({name.split(".")[0] for name in sys.modules})

import hardneg.pipeline.experiment
from hardneg.pipeline.build import build_module

module, callbacks = build_module(cfg, train)
assert module.views is not None
after = sorted({name.split(".")[0] for name in sys.modules})
print(json.dumps({"before_lightning": before, "with_lightning": after}))
"""


@pytest.fixture(scope="module")
def loaded() -> dict[str, set[str]]:
    """Top-level packages loaded by the image run's set-up: before Lightning, and with it."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONSTARTUP"}
    done = subprocess.run([sys.executable, "-c", _CHILD], capture_output=True, text=True, env=env,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    return {key: set(value) for key, value in result.items()}


def test_the_config_and_data_stage_imports_neither_lightning_nor_optional_packages(
    loaded: dict[str, set[str]],
) -> None:
    assert "torch" in loaded["before_lightning"]  # the stage really built the encoder
    found = sorted(set(NOT_BEFORE_LIGHTNING) & loaded["before_lightning"])
    assert not found, f"imported by the config and data stage of an image run: {found}"


def test_an_image_run_never_imports_the_graph_or_text_packages(loaded: dict[str, set[str]]) -> None:
    assert "lightning" in loaded["with_lightning"]  # the stage really reached the pipeline
    found = sorted(set(NEVER_FOR_IMAGES) & loaded["with_lightning"])
    assert not found, f"imported by an image run's set-up: {found}"


def test_the_watched_packages_are_installed_where_the_suite_runs() -> None:
    """The checks above guard something only where the packages exist: the toolkit installs them
    (PyTorch Geometric and statsmodels come with the ``cli`` extra)."""
    missing = [name for name in ("torch_geometric", "statsmodels") if importlib.util.find_spec(name) is None]
    if missing:
        pytest.skip(f"not installed here: {', '.join(missing)}")
    assert importlib.util.find_spec("lightning") is not None


def test_a_group_and_a_reproduction_import_lightning_only_when_a_run_trains() -> None:
    """A second ``make run`` reuses every run: deciding that (config, provenance, results) and writing
    the report must not import Lightning (about 6 s of the start-up)."""
    code = (
        "import sys, json; import hardneg.cli, hardneg.pipeline.groups, hardneg.reproduce.run, "
        "hardneg.reproduce.report, hardneg.pipeline.run_folder, hardneg.pipeline.provenance; "
        "print(json.dumps('lightning' in sys.modules))"
    )
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert json.loads(out.stdout.strip().splitlines()[-1]) is False
