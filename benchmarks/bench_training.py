"""Training-step cost of hardneg's pipeline against a bare PyTorch loop, and ``hardneg train``'s start-up.

**Pipeline / bare** (the default): the steady-state step of the pipeline as ``hardneg train`` runs
it (the config's :class:`~hardneg.pipeline.ContrastiveModule`, data module and callbacks under the
Trainer of :func:`hardneg.pipeline.trainer.build_trainer`) against a hand-written loop over the same
batches with the same encoder, augmentation, loss (:func:`hardneg.pipeline.build_loss` of the same
config) and optimiser (Adam, same lr / weight decay). A pipeline step is the wall time from one
``on_train_batch_start`` to the next within an epoch (batch fetch, augmentation, forward, loss,
backward, optimiser, hooks and logging); a bare step is one iteration of the loop (batch fetch
included). The two are interleaved step by step (each batch start of the ``fit`` runs one bare
step, not counted in the pipeline's time), so that the load of a shared machine hits both alike;
the first step of each is warm-up; the ratio printed is the median of the paired per-step ratios.
Two settings:

* ``digits``: the packaged ``digits`` config (8x8 one-channel digits, small CNN, batch 256,
  hard + debiased negatives);
* ``cifar-shaped``: random 32x32 RGB images, CIFAR ResNet-18, SimCLR augmentation (``--batch``;
  ResNet-18 on 2 CPU cores is slow, so few steps by default).

**Start-up** (``--startup``): seconds from launching ``hardneg train digits`` (a fresh process) to
its first training step, and the share of it spent importing; heavy optional packages loaded by
then are listed.

**Phases** (``--phases``): images/s and the fraction of a bare step spent in augmentation, encoder
forward, loss forward and backward + optimiser.

Not part of the test run::

    python benchmarks/bench_training.py [--steps 16] [--threads 2] [--startup] [--phases]
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

# ---------------------------------------------------------------------------------------------
# pipeline vs bare loop


def _config(setting: str, batch: int, steps: int, strategy: str) -> Any:
    from hardneg.pipeline.config import load_config

    over = [f"loss.negatives.name={strategy}", "train.progress=false", "eval.every_n_epochs=0"]
    if setting == "digits":
        return load_config("digits", over)
    size = batch * (steps + 2)  # one epoch holds every step, the warm-up step and a last one
    return load_config("digits", [
        *over, "data.dataset=random", f"data.random_size={size}", "data.random_shape=[3,32,32]",
        "model.encoder=resnet18_cifar", "model.projection_dim=128", "model.hidden_dim=512",
        f"train.batch_size={batch}",
    ])


class _Parts:
    """The objects ``hardneg train`` builds before ``fit`` (see ``hardneg.pipeline.experiment``)."""

    def __init__(self, cfg: Any) -> None:
        import lightning as L

        from hardneg.modalities import get_modality
        from hardneg.pipeline import build_module
        from hardneg.pipeline.data import ContrastiveDataModule

        self.cfg = cfg
        L.seed_everything(cfg.seed, workers=True, verbose=False)
        modality = get_modality(cfg.data.dataset)
        self.train, _ = modality.load(cfg)
        self.module, self.callbacks = build_module(cfg, self.train)
        self.dataset = modality.dataset(cfg, self.train)
        self.views = modality.views(cfg, self.train)
        self.datamodule = ContrastiveDataModule(dataset=self.dataset, batch_size=cfg.train.batch_size,
                                                seed=cfg.seed, drop_last=cfg.train.drop_last,
                                                num_workers=cfg.train.num_workers)
        self.batches_per_epoch = len(self.datamodule.train_dataloader())


def _step_clock(bare: BareLoop) -> Any:
    import lightning as L

    class StepClock(L.Callback):
        """Interleaves one bare step at each ``on_train_batch_start`` and times both.

        A pipeline step is the wall time from the end of the bare step run at one batch start to
        the start of the bare step run at the next batch start of the same epoch.
        """

        def __init__(self) -> None:
            self.pipeline: list[float] = []
            self.bare: list[float] = []
            self._last: float | None = None

        def on_train_epoch_start(self, trainer: Any, pl_module: Any) -> None:
            self._last = None

        def on_train_batch_start(self, trainer: Any, pl_module: Any, batch: Any, batch_idx: int) -> None:
            now = time.perf_counter()
            if self._last is not None:
                self.pipeline.append(now - self._last)
                self.bare.append(bare.step())
            self._last = time.perf_counter()

    return StepClock()


class BareLoop:
    """A hand-written SimCLR loop: same batches, augmentation, encoder copy, loss and Adam."""

    def __init__(self, parts: _Parts) -> None:
        from hardneg.data.batches import EpochBatchSampler
        from hardneg.pipeline import build_loss

        cfg = parts.cfg
        self.seed = cfg.seed
        self.encoder = copy.deepcopy(parts.module.encoder)
        self.loss_fn = build_loss(cfg)
        self.views = parts.views
        self.dataset = parts.dataset
        self.sampler = EpochBatchSampler(num_items=len(parts.dataset),  # type: ignore[arg-type]
                                         batch_size=cfg.train.batch_size,
                                         seed=cfg.seed, drop_last=cfg.train.drop_last)
        self.opt = torch.optim.Adam(self.encoder.parameters(), lr=cfg.train.lr,
                                    weight_decay=cfg.train.weight_decay)
        self.epoch, self.index = 0, 0
        self._batches: list[list[int]] = []

    def step(self) -> float:
        """One step (the next batch of the epoch order); returns its wall time in seconds."""
        from hardneg.seeding import step_generator

        if self.index >= len(self._batches):
            self.sampler.set_epoch(self.epoch)
            self._batches = list(self.sampler)
            self.epoch, self.index = self.epoch + 1, 0
        self.encoder.train()
        t0 = time.perf_counter()
        x, x2, _, _ = self.dataset[self._batches[self.index]]
        g = step_generator(self.seed, self.epoch - 1, self.index)
        v1, v2 = self.views(x, x2, generator=g)
        _, z1 = self.encoder(v1)
        _, z2 = self.encoder(v2)
        loss = self.loss_fn(z1, z2, generator=g)
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        self.opt.step()
        self.index += 1
        return time.perf_counter() - t0


def pipeline_and_bare(parts: _Parts, steps: int, run_dir: Path) -> tuple[list[float], list[float]]:
    """Per-step seconds of ``steps`` pipeline steps and ``steps`` bare steps, interleaved one by
    one (after one warm-up step of each)."""
    from hardneg.pipeline.callbacks import PhaseTimer, RunIdentity
    from hardneg.pipeline.checkpoints import config_digest
    from hardneg.pipeline.trainer import build_trainer

    cfg, t = parts.cfg, parts.cfg.train
    bare = BareLoop(parts)
    clock = _step_clock(bare)
    per_epoch = parts.batches_per_epoch - 1
    epochs = -(-(steps + 1) // per_epoch)
    trainer = build_trainer(
        run_dir=run_dir, epochs=epochs,
        callbacks=[*parts.callbacks, PhaseTimer(), RunIdentity(config_digest(cfg)), clock],
        accelerator=t.accelerator, devices=t.devices, strategy=t.strategy, precision=t.precision,
        deterministic=t.deterministic, log_every_n_steps=t.log_every_n_steps, progress=False,
        gradient_clip_norm=t.gradient_clip_norm, accumulate_grad_batches=t.accumulate_grad_batches,
        options=dict(cfg.trainer),
    )
    trainer.fit(parts.module, datamodule=parts.datamodule)
    return clock.pipeline[1:steps + 1], clock.bare[1:steps + 1]


def compare(setting: str, *, batch: int, steps: int, strategy: str) -> float:
    """Print and return the median over steps of pipeline / bare (paired step by step)."""
    parts = _Parts(_config(setting, batch, steps, strategy))
    with tempfile.TemporaryDirectory() as tmp:
        pipe, bare = pipeline_and_bare(parts, steps, Path(tmp) / "run")
    ratio = statistics.median(p / b for p, b in zip(pipe, bare))
    cfg = parts.cfg
    p_ms, b_ms = 1000 * statistics.median(pipe), 1000 * statistics.median(bare)
    print(f"{setting:<13} B={cfg.train.batch_size:<4} {cfg.model.encoder:<15} "
          f"pipeline {p_ms:8.1f} ms  bare {b_ms:8.1f} ms  pipeline/bare {ratio:5.3f} "
          f"(median of {len(pipe)} paired steps; ratio of medians {p_ms / b_ms:5.3f})")
    return ratio


# ---------------------------------------------------------------------------------------------
# start-up

HEAVY = ("torch_geometric", "sentence_transformers", "transformers", "scipy", "statsmodels",
         "matplotlib", "sklearn", "pandas", "torchvision", "tensorboard", "rich", "sympy")

_STARTUP_CHILD = r"""
import importlib.abc, importlib.util, json, os, sys, time
T0 = float(sys.argv[1])
marks = {}

class _Hook(importlib.abc.MetaPathFinder):
    # times the first imports of a few modules; patches the module's training_step to stop there
    labels = {"hardneg.cli": "hardneg.cli", "hardneg.pipeline.trainer": "Lightning (via trainer)",
              "hardneg.pipeline.experiment": "experiment"}
    watch = {*labels, "hardneg.pipeline.module"}

    def find_spec(self, name, path, target=None):
        if name not in self.watch:
            return None
        self.watch = self.watch - {name}
        spec = importlib.util.find_spec(name)
        run = spec.loader.exec_module

        def exec_module(module, _name=name):
            start = time.time()
            run(module)
            if _name == "hardneg.pipeline.module":
                def first_step(self, *args, **kwargs):
                    marks["first_step"] = time.time() - T0
                    marks["modules"] = sorted(m for m in sys.modules if "." not in m)
                    print("STARTUP " + json.dumps(marks), flush=True)
                    os._exit(0)
                module.ContrastiveModule.training_step = first_step
            else:
                marks[self.labels[_name]] = [start - T0, time.time() - T0]

        spec.loader.exec_module = exec_module
        return spec

sys.meta_path.insert(0, _Hook())
marks["interpreter"] = time.time() - T0
sys.argv = ["hardneg", "train", "digits", "train.epochs=1", "eval.linear=false", "eval.knn=false",
            "--out", sys.argv[2], "--quiet", "--force"]
from hardneg._entry import main
main()
"""


def startup(repeats: int) -> None:
    """Print the seconds from launching ``hardneg train digits`` to its first step (median)."""
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(repeats):
            t0 = time.time()
            command = [sys.executable, "-c", _STARTUP_CHILD, repr(t0), str(Path(tmp) / f"run{r}")]
            out = subprocess.run(command, capture_output=True, text=True,
                                 env={**os.environ, "PYTHONWARNINGS": "ignore"})
            line = next((x for x in out.stdout.splitlines() if x.startswith("STARTUP ")), None)
            if line is None:
                raise RuntimeError(f"the child did not reach a training step:\n{out.stderr[-3000:]}")
            results.append(json.loads(line[len("STARTUP "):]))
    firsts = [m["first_step"] for m in results]
    runs = " ".join(f"{x:.2f}" for x in firsts)
    print(f"hardneg train digits: first training step {statistics.median(firsts):.2f} s after launch "
          f"(runs: {runs})")
    m = results[0]
    for key in ("hardneg.cli", "Lightning (via engine)", "experiment"):
        if key in m:
            start, end = m[key]
            print(f"  import {key:<23} {end - start:6.2f} s  (from {start:5.2f} s to {end:5.2f} s)")
    loaded = [name for name in HEAVY if name in m["modules"]]
    print(f"  heavy optional packages loaded by the first step: {', '.join(loaded) or 'none'}")


# ---------------------------------------------------------------------------------------------
# phases of a bare step


def phases(name: str, images: torch.Tensor, encoder: torch.nn.Module, augment: torch.nn.Module, *,
           batch: int, steps: int, strategy: str, warmup: int = 1) -> dict[str, float]:
    """Images/s of a bare step and its phases' shares."""
    from hardneg.pipeline import build_loss
    from hardneg.pipeline.config import load_config
    from hardneg.seeding import step_generator

    loss_fn = build_loss(load_config(None, [f"loss.negatives.name={strategy}", "loss.objective.name=debiased",
                                            "loss.objective.tau_plus=0.1"]))
    opt = torch.optim.Adam(encoder.parameters(), lr=1e-3, weight_decay=1e-6)
    shares = {"augment": 0.0, "encoder": 0.0, "loss": 0.0, "backward+optimizer": 0.0}
    g = torch.Generator().manual_seed(0)
    for step in range(warmup + steps):
        idx = torch.randint(0, images.shape[0], (batch,), generator=g)
        x = images[idx]
        t0 = time.perf_counter()
        gen = step_generator(0, 0, step)
        v1, v2 = augment(x, generator=gen), augment(x, generator=gen)
        t1 = time.perf_counter()
        _, z1 = encoder(v1)
        _, z2 = encoder(v2)
        t2 = time.perf_counter()
        loss = loss_fn(z1, z2)
        t3 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        t4 = time.perf_counter()
        if step >= warmup:
            for key, dt in zip(shares, (t1 - t0, t2 - t1, t3 - t2, t4 - t3)):
                shares[key] += dt
    total = sum(shares.values())
    text = "  ".join(f"{k} {100 * v / total:4.1f}%" for k, v in shares.items())
    ips = batch * steps / total
    print(f"{name:<32} {ips:9.1f} images/s  ({1000 * total / steps:7.1f} ms/step)  {text}")
    return {"images_per_s": ips, **{k: v / total for k, v in shares.items()}}


def all_phases(batch: int, steps: int, strategy: str) -> None:
    from hardneg.data.augment import SimCLRAugment, digits_augment
    from hardneg.data.digits import load_digits_images
    from hardneg.models import build_encoder

    torch.manual_seed(0)
    digits = load_digits_images().images
    small = build_encoder("small_cnn", projection_dim=64, hidden_dim=256, in_channels=1)
    phases("digits / small_cnn(32, 128)", digits, small, digits_augment(), batch=batch, steps=steps * 4,
           strategy=strategy)
    cifar = torch.rand(2048, 3, 32, 32)
    resnet = build_encoder("resnet18_cifar", projection_dim=128, hidden_dim=512, in_channels=3)
    phases("cifar-shaped / resnet18_cifar", cifar, resnet, SimCLRAugment(image_size=32), batch=batch,
           steps=steps, strategy=strategy)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=16, help="timed digits steps (ResNet: a quarter)")
    parser.add_argument("--batch", type=int, default=256, help="cifar-shaped batch size")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    parser.add_argument("--strategy", default="hard", help="negative strategy name (uniform, hard, ot)")
    parser.add_argument("--only", choices=("digits", "cifar-shaped"), default=None)
    parser.add_argument("--startup", action="store_true",
                        help="also time `hardneg train digits` to its first step")
    parser.add_argument("--startup-only", action="store_true", help="only the start-up time")
    parser.add_argument("--startup-repeats", type=int, default=3)
    parser.add_argument("--phases", action="store_true", help="also the phases of a bare step")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, strategy {args.strategy!r}, "
          f"{args.steps} digits steps / {max(1, args.steps // 4)} ResNet steps, pipeline and bare "
          "interleaved")
    if args.startup or args.startup_only:
        startup(args.startup_repeats)
    if args.startup_only:
        return
    import logging

    for name in ("lightning.pytorch", "lightning.fabric", "lightning"):
        logging.getLogger(name).setLevel(logging.ERROR)
    import warnings

    warnings.filterwarnings("ignore")
    if args.only in (None, "digits"):
        compare("digits", batch=256, steps=args.steps, strategy=args.strategy)
    if args.only in (None, "cifar-shaped"):
        compare("cifar-shaped", batch=args.batch, steps=max(1, args.steps // 4), strategy=args.strategy)
    if args.phases:
        all_phases(args.batch, max(1, args.steps // 4), args.strategy)


if __name__ == "__main__":
    main()
