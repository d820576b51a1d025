"""Training-step throughput of hardneg's engine: images/s and where a step's time goes.

Two settings, each a few SimCLR steps (two augmented views, encoder, loss, backward, Adam) timed
phase by phase with ``time.perf_counter``:

* ``digits``: 8x8 one-channel digits, small CNN (the embedded default), batch 256;
* ``cifar-shaped``: random 32x32 RGB tensors, CIFAR ResNet-18, SimCLR augmentation, batch 256
  (pass ``--batch`` to change; ResNet-18 on 2 CPU cores is slow, so few steps by default).

Prints images/s (one image = two views) and the fraction of the step spent in augmentation,
encoder forward, loss forward and backward + optimiser. Not part of the test run::

    python benchmarks/bench_training.py [--steps 5] [--threads 1] [--strategy hard]
"""

from __future__ import annotations

import argparse
import time

import torch

from hardneg.data.augment import SimCLRAugment, digits_augment
from hardneg.data.digits import load_digits_images
from hardneg.models import build_encoder
from hardneg.pipeline.build import build_loss
from hardneg.pipeline.config import load_config
from hardneg.seeding import step_generator


def bench(name: str, images: torch.Tensor, encoder: torch.nn.Module, augment: torch.nn.Module, *,
          batch: int, steps: int, strategy: str, warmup: int = 1) -> dict[str, float]:
    loss_fn = build_loss(load_config(None, [f"loss.negatives.name={strategy}", "loss.objective.name=debiased",
                                            "loss.objective.tau_plus=0.1"]))
    opt = torch.optim.Adam(encoder.parameters(), lr=1e-3, weight_decay=1e-6)
    phases = {"augment": 0.0, "encoder": 0.0, "loss": 0.0, "backward+optimizer": 0.0}
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
            for key, dt in zip(phases, (t1 - t0, t2 - t1, t3 - t2, t4 - t3)):
                phases[key] += dt
    total = sum(phases.values())
    shares = "  ".join(f"{k} {100 * v / total:4.1f}%" for k, v in phases.items())
    ips = batch * steps / total
    print(f"{name:<32} {ips:9.1f} images/s  ({1000 * total / steps:7.1f} ms/step)  {shares}")
    return {"images_per_s": ips, **{k: v / total for k, v in phases.items()}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=3, help="timed ResNet steps (digits: 4x)")
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    parser.add_argument("--strategy", default="hard", help="negative strategy name (uniform, hard, ot)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, strategy {args.strategy!r}, "
          f"batch {args.batch}, {args.steps} timed steps")
    torch.manual_seed(0)
    digits = load_digits_images().images
    small = build_encoder("small_cnn", projection_dim=64, hidden_dim=256, in_channels=1)
    bench("digits / small_cnn(32, 128)", digits, small, digits_augment(), batch=args.batch,
          steps=args.steps * 4, strategy=args.strategy)
    small16 = build_encoder("small_cnn", projection_dim=64, hidden_dim=128, in_channels=1, width=16,
                            feature_dim=64)
    bench("digits / small_cnn(16, 64)", digits, small16, digits_augment(), batch=args.batch,
          steps=args.steps * 4, strategy=args.strategy)
    cifar = torch.rand(2048, 3, 32, 32)
    resnet = build_encoder("resnet18_cifar", projection_dim=128, hidden_dim=512, in_channels=3)
    bench("cifar-shaped / resnet18_cifar", cifar, resnet, SimCLRAugment(image_size=32), batch=args.batch,
          steps=args.steps, strategy=args.strategy)


if __name__ == "__main__":
    main()
