"""Fault injection: SIGINT and SIGKILL at seeded moments, then ``--resume``, equal bit for bit.

For every modality (and for ``compare`` with two workers), a run is stopped by a signal at a moment
drawn from a seeded generator — at a training batch (the first epoch included) or in the middle of
a checkpoint write — and then resumed with ``--resume``; its losses, evaluation and final weights
must equal those of an uninterrupted run exactly. CI runs a few cases per modality;
``HARDNEG_FAULT_CASES=N`` runs ``N`` seeded moments per modality and signal (e.g. 20 locally).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from hardneg.pipeline.history import read_history
from tests.pipeline.helpers import cli_env, tiny

ROOT = Path(__file__).resolve().parents[2]
EXTRA_CASES = int(os.environ.get("HARDNEG_FAULT_CASES", "0"))

pytestmark = pytest.mark.slow


def _articles_tsv(path: Path) -> Path:
    topics = {"cats": "cat kitten purr whisker", "ships": "ship sail harbour mast",
              "rain": "rain cloud storm thunder", "code": "code bug python compile"}
    rng = np.random.default_rng(0)
    lines = [f"{name}\t{' '.join(rng.choice(words.split(), size=5))}."
             for name, words in topics.items() for _ in range(10)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _sentences(folder: Path) -> list[str]:
    from hardneg.data.text.documents import write_documents

    topics = ["cat kitten purr", "ship sail harbour", "rain cloud storm", "code bug python"]
    docs = [[f"The {t.split()[i % 3]} and the {t.split()[(i + 1) % 3]} met {i} times." for i in range(6)]
            for d, t in enumerate(topics * 5)]
    corpus = write_documents(docs, folder / "corpus.txt")
    mr = folder / "senteval" / "MR"
    mr.mkdir(parents=True)
    pos = [f"a great {w} film" for w in ("fun", "warm", "bright", "kind", "bold", "deep")] * 3
    neg = [f"a dull {w} mess" for w in ("slow", "cold", "grey", "mean", "flat", "thin")] * 3
    (mr / "rt-polarity.pos").write_text("\n".join(pos) + "\n", encoding="latin-1")
    (mr / "rt-polarity.neg").write_text("\n".join(neg) + "\n", encoding="latin-1")
    return [f"data.root={corpus}", f"eval.senteval={folder / 'senteval'}"]


COMMON = ["train.epochs=3", "train.threads=1", "train.progress=false", "eval.figures=false"]
MODALITIES = {
    "digits": lambda d: ["digits", *tiny("eval.knn=false", "eval.linear=false"), *COMMON],
    "latent": lambda d: ["latent_classes", "data.latent.train_size=256", "data.latent.test_size=64",
                         "train.batch_size=64", "eval.kwise=[1]", "eval.kwise_tasks=20", "eval.knn=false",
                         "eval.linear=false", "eval.every_n_epochs=0", *COMMON],
    "graphs": lambda d: ["graphs", "data.graphs.num_graphs=40", "train.batch_size=16", "eval.cv_folds=3",
                         "eval.logistic=false", *COMMON],
    "articles": lambda d: ["articles", "data.text.source=tsv", f"data.root={_articles_tsv(d / 'a.tsv')}",
                           "data.text.min_count=1", "train.batch_size=16", "eval.kwise=[1]",
                           "eval.kwise_tasks=20", "eval.knn_k=5", *COMMON],
    "sentences": lambda d: ["sentences", "data.text.source=documents", *_sentences(d), "data.text.window=16",
                            "eval.senteval_folds=2", "data.text.min_count=1", *COMMON],
}

# (modality, signal, moment kind): the cases CI runs; each draws its moment from a seeded generator
CASES = [  # every modality once; both signals and all three moment kinds
    ("digits", "KILL", "save"), ("latent", "INT", "step"), ("graphs", "INT", "first-epoch"),
    ("articles", "KILL", "step"), ("sentences", "INT", "save"), ("digits", "INT", "first-epoch"),
]
if EXTRA_CASES:
    CASES = [(m, s, k) for m in MODALITIES for s in ("INT", "KILL") for k in ("first-epoch", "step", "save")
             for _ in range(EXTRA_CASES)]


def _hardneg(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "hardneg.cli", *args], cwd=cwd, env=_env(),
                          capture_output=True, text=True, timeout=600)


def _env() -> dict[str, str]:
    env = cli_env()
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    return env


def _outputs(run: Path) -> tuple[dict, dict[str, torch.Tensor]]:
    metrics = json.loads((run / "metrics.json").read_text())
    state = torch.load(run / "checkpoints" / "last.ckpt", weights_only=False)["state_dict"]
    return {"history": read_history(run / "metrics.csv"), "eval": metrics["eval"]}, state


@pytest.fixture(scope="module")
def references(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, list[str]]]:
    """The uninterrupted run of each modality (trained on first use)."""
    return {}


def _reference(references: dict, modality: str, tmp_path_factory: pytest.TempPathFactory
               ) -> tuple[Path, list[str], dict, dict]:
    if modality not in references:
        folder = tmp_path_factory.mktemp(f"ref-{modality}")
        args = MODALITIES[modality](folder)
        done = _hardneg(["train", *args, "--out", str(folder / "run"), "-q"], folder)
        assert done.returncode == 0, done.stderr
        ckpt = torch.load(folder / "run" / "checkpoints" / "last.ckpt", weights_only=False)
        references[modality] = (folder / "run", args, ckpt["global_step"], ckpt["epoch"] + 1)
    run, args, steps, epochs = references[modality]
    return run, args, {"steps": steps, "epochs": epochs}, {}


@pytest.mark.parametrize(("modality", "sig", "kind", "index"),
                         [(*c, i) for i, c in enumerate(CASES)], ids=lambda v: str(v))
def test_a_signal_then_resume_equals_the_uninterrupted_run(
    modality: str, sig: str, kind: str, index: int, references: dict, tmp_path: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    reference, args, size, _ = _reference(references, modality, tmp_path_factory)
    rng = np.random.default_rng([index, len(CASES)])
    per_epoch = size["steps"] // size["epochs"]
    moment = {
        "first-epoch": f"step:{rng.integers(0, per_epoch)}",
        "step": f"step:{rng.integers(0, size['steps'])}",
        "save": f"save:{rng.integers(0, size['epochs'])}",
    }[kind]
    run = tmp_path / "run"
    stopped = subprocess.run(
        [sys.executable, "-m", "tests.faults.inject", sig, moment, "--",
         "train", *args, "--out", str(run), "-q"],
        cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=600,
    )
    expected = {"INT": 130, "KILL": -signal.SIGKILL}[sig]
    assert stopped.returncode == expected, f"{moment}: {stopped.stderr[-3000:]}"
    assert not (run / "metrics.json").exists()
    if sig == "INT":
        assert "--resume" in stopped.stderr and "Traceback" not in stopped.stderr, stopped.stderr
    resumed = _hardneg(["train", *args, "--out", str(run), "--resume", "-q"], tmp_path)
    assert resumed.returncode == 0, f"{moment}: {resumed.stderr[-3000:]}"
    got, weights = _outputs(run)
    want, ref_weights = _outputs(reference)
    assert got == want, moment  # every loss and accuracy, bit for bit
    assert weights.keys() == ref_weights.keys()
    for key in weights:
        assert torch.equal(weights[key], ref_weights[key]), f"{moment}: {key}"
    assert not list(run.rglob("*.tmp")), "a half-written file was left behind"


def _processes_in(folder: Path) -> list[int]:
    """PIDs of the live processes whose working directory is ``folder`` (Linux)."""
    pids = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            if Path(os.readlink(proc / "cwd")) == folder and (proc / "stat").read_text().split()[2] != "Z":
                pids.append(int(proc.name))
        except OSError:
            continue
    return pids


def _table(root: Path) -> dict:
    return json.loads((root / "results.json").read_text())["table"]


COMPARE = ["compare", "digits_compare", *tiny("eval.knn=false", "eval.linear=false"), "train.epochs=2",
           "eval.figures=false", "compare.seeds=[0,1]", "compare.workers=2",
           "compare.strategies=[{name: simclr, overrides: {}}, {name: hard, overrides: "
           "{loss.negatives: {name: hard, beta: 1.0}}}]"]


@pytest.fixture(scope="module")
def compare_reference(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("compare-ref")
    done = _hardneg([*COMPARE, "--out", str(folder / "c"), "-q"], folder)
    assert done.returncode == 0, done.stderr
    return folder / "c"


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL])
def test_compare_stopped_at_a_seeded_moment_resumes_to_the_same_table(
    sig: int, compare_reference: Path, tmp_path: Path
) -> None:
    out = tmp_path / "c"
    proc = subprocess.Popen([sys.executable, "-m", "hardneg.cli", *COMPARE, "--out", str(out), "-q"],
                            cwd=tmp_path, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    # a moment after the workers have started training: one of the runs has a checkpoint
    deadline = time.monotonic() + 300
    while not list(out.glob("*/seed*/checkpoints/last.ckpt")):
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()[1][-3000:]
        time.sleep(0.05)
    time.sleep(float(np.random.default_rng(sig).uniform(0, 1.0)))
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=120)
    if proc.returncode == 0:
        pytest.skip("the group finished before the signal arrived")
    if sig == signal.SIGINT:
        assert proc.returncode == 130, err
        assert "--resume" in err and "Traceback" not in err, err
        assert "**Partial**" in (out / "summary.md").read_text()
    else:
        assert proc.returncode == -signal.SIGKILL
    # the workers (spawned with this test's folder as their working directory) died with their parent
    for _ in range(100):
        if not _processes_in(tmp_path):
            break
        time.sleep(0.1)
    assert not _processes_in(tmp_path), "a worker outlived the interrupted compare"
    again = _hardneg([*COMPARE, "--out", str(out), "--resume", "-q"], tmp_path)
    assert again.returncode == 0, again.stderr
    assert _table(out) == _table(compare_reference)
    assert "**Partial**" not in (out / "summary.md").read_text()
