"""Controlled experiments on the latent-class simulator (small in-memory loops over the library).

(a) ``ash``   — Ash et al. trade-off: downstream mean-classifier accuracy vs K for several C,
    standard vs collision-free negatives; measured best K next to ``optimal_num_negatives(C)``.
(b) ``block`` — Arora et al. block loss (eq. 12), block size b ∈ {1, 2, 5, 10}.
(c) ``hcl``   — HCL Fig. 4 (middle) analogue: true positives, accuracy vs β (repo estimator
    with τ⁺ = 1/C and the clamp N·e^{−1/T}).

Encoder: 2-layer MLP with l2-normalised output. The losses are the library's: (a) and (c) the
loss engine on each anchor's explicit negatives (:class:`hardneg.ContrastiveLoss` with a
block-diagonal mask), (b) :func:`hardneg.objectives.block_loss`; the accuracy is
:class:`hardneg.evaluate.MeanClassifier`'s.
Default budgets are tiny (seconds); ``full=True`` or the YAML configs make them bigger. Each
experiment writes ``<name>.csv`` and ``<name>.png`` into ``outdir`` and returns table lines.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from hardneg.objectives import block_loss

from .ash import optimal_num_negatives
from .simulator import LatentClassSimulator

__all__ = ["DEFAULTS", "block_experiment", "hcl_experiment", "run_experiments",
           "tradeoff_experiment"]

DEFAULTS: dict[str, dict[str, Any]] = {
    "common": {"input_dim": 32, "hidden": 32, "out_dim": 16, "noise_std": 2.0,
               "mean_scale": 1.0, "temperature": 0.5, "lr": 0.01, "batch_size": 32,
               "steps": 40, "eval_samples": 1000, "seeds": [0]},
    "ash": {"classes": [4, 16], "negatives": [1, 4, 16],
            "modes": ["standard", "collision-free"]},
    "block": {"classes": 8, "block_sizes": [1, 2, 5, 10]},
    "hcl": {"classes": 8, "negatives": 8, "betas": [0.0, 1.0, 4.0]},
}
# The full budgets embed into S² (out_dim = 3): with C ≥ 8 classes the classes cannot all be
# separated as a simplex, so the choice of negatives matters (a Tammes-type packing). With a
# roomy embedding (out_dim ≥ C) every K reaches the same Bayes-limited accuracy and the
# curves are flat.
FULL_OVERRIDES: dict[str, dict[str, Any]] = {
    "common": {"hidden": 64, "out_dim": 3, "noise_std": 1.0, "batch_size": 64, "steps": 400,
               "eval_samples": 2000, "seeds": [0, 1, 2]},
    "ash": {"classes": [8, 16, 32], "negatives": [1, 4, 16, 64, 256]},
    "block": {"classes": 16},
    "hcl": {"classes": 16, "negatives": 16, "betas": [0.0, 0.5, 1.0, 2.0, 4.0, 8.0]},
}


@contextmanager
def _seeded(seed: int) -> Iterator[None]:
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        yield


def _encoder(cfg: dict[str, Any], seed: int) -> nn.Module:
    with _seeded(seed):
        return nn.Sequential(
            nn.Linear(cfg["input_dim"], cfg["hidden"]), nn.ReLU(),
            nn.Linear(cfg["hidden"], cfg["out_dim"]),
        )


def _embed(enc: nn.Module, x: torch.Tensor) -> torch.Tensor:
    return F.normalize(enc(x), dim=-1)


def _simulator(cfg: dict[str, Any], num_classes: int, seed: int) -> LatentClassSimulator:
    return LatentClassSimulator(num_classes=num_classes, input_dim=cfg["input_dim"],
                                noise_std=cfg["noise_std"], mean_scale=cfg["mean_scale"],
                                seed=seed)


def _accuracy(enc: nn.Module, sim: LatentClassSimulator, cfg: dict[str, Any], seed: int) -> float:
    """Mean-classifier accuracy (:class:`hardneg.evaluate.MeanClassifier`): class means from one
    labelled sample, tested on another."""
    from hardneg.evaluate import MeanClassifier

    g = np.random.default_rng([seed, 99])
    with torch.no_grad():
        xtr, ytr = sim.sample_labelled(cfg["eval_samples"], g)
        xte, yte = sim.sample_labelled(cfg["eval_samples"], g)
        ftr, fte = _embed(enc, xtr).numpy(), _embed(enc, xte).numpy()
    return float(MeanClassifier().fit(ftr, ytr.numpy()).score(fte, yte.numpy()))


def _train(enc: nn.Module, cfg: dict[str, Any], loss_fn: Any) -> None:
    opt = torch.optim.Adam(enc.parameters(), lr=cfg["lr"])
    for step in range(cfg["steps"]):
        opt.zero_grad()
        loss = loss_fn(step)
        loss.backward()
        opt.step()


def tradeoff_experiment(cfg: dict[str, Any]) -> list[dict[str, Any]]:
    """(a) accuracy vs K for several C, standard vs collision-free negatives."""
    rows = []
    for c in cfg["classes"]:
        for k in cfg["negatives"]:
            for mode in cfg["modes"]:
                accs = []
                for seed in cfg["seeds"]:
                    sim = _simulator(cfg, c, seed)
                    enc = _encoder(cfg, seed)
                    g = np.random.default_rng([seed, 7, c, k])

                    def loss_fn(_: int, sim: LatentClassSimulator = sim, enc: nn.Module = enc,
                                g: np.random.Generator = g, k: int = k, mode: str = mode
                                ) -> torch.Tensor:
                        b = sim.sample_tuples(cfg["batch_size"], k,
                                              collision_free=mode == "collision-free", rng=g)
                        fa, fp = _embed(enc, b.anchor), _embed(enc, b.positive)
                        fn = _embed(enc, b.negatives)
                        return _explicit_negatives_loss(
                            fa, fp, fn, temperature=cfg["temperature"], tau_plus=0.0, beta=0.0
                        )

                    _train(enc, cfg, loss_fn)
                    accs.append(_accuracy(enc, sim, cfg, seed))
                rows.append({"classes": c, "negatives": k, "mode": mode,
                             "accuracy": float(np.mean(accs)),
                             "accuracy_std": float(np.std(accs))})
    return rows


def block_experiment(cfg: dict[str, Any]) -> list[dict[str, Any]]:
    """(b) Arora block loss ℓ(f(x)ᵀ(mean f(x⁺_i) − mean f(x⁻_i))) for each block size b."""
    rows = []
    for b in cfg["block_sizes"]:
        accs = []
        for seed in cfg["seeds"]:
            sim = _simulator(cfg, cfg["classes"], seed)
            enc = _encoder(cfg, seed)
            g = np.random.default_rng([seed, 11, b])

            def loss_fn(_: int, sim: LatentClassSimulator = sim, enc: nn.Module = enc,
                        g: np.random.Generator = g, b: int = b) -> torch.Tensor:
                blk = sim.sample_blocks(cfg["batch_size"], b, rng=g)
                fa = _embed(enc, blk.anchor) / cfg["temperature"]
                fp = _embed(enc, blk.positives)
                fn = _embed(enc, blk.negatives)[:, None]  # one negative block per anchor
                return block_loss(fa, fp, fn, loss="logistic")

            _train(enc, cfg, loss_fn)
            accs.append(_accuracy(enc, sim, cfg, seed))
        rows.append({"classes": cfg["classes"], "block_size": b, "accuracy": float(np.mean(accs)),
                     "accuracy_std": float(np.std(accs))})
    return rows


def _explicit_negatives_loss(
    fa: torch.Tensor, fp: torch.Tensor, fn: torch.Tensor, *, temperature: float, tau_plus: float, beta: float
) -> torch.Tensor:
    """HCL's objective from hardneg's loss engine on explicit per-anchor negatives.

    Each anchor's K negatives ``fn[i]`` become its only valid candidates in a pooled (B·K, d)
    candidate set (a block-diagonal mask), so no (B, K, d) logits are built by hand.
    Shapes: ``fa``, ``fp`` (B, d); ``fn`` (B, K, d) → scalar.
    """
    from hardneg import ContrastiveLoss, negatives

    b, k, d = fn.shape
    mask = torch.zeros(b, b * k, dtype=torch.bool)
    for i in range(b):
        mask[i, i * k : (i + 1) * k] = True
    loss_fn = ContrastiveLoss(
        temperature=temperature, tau_plus=tau_plus, negatives=negatives.Hard(beta=beta), normalize=False
    )
    return loss_fn.pair_forward(fa, fp, fn.reshape(b * k, d), mask=mask)


def hcl_experiment(cfg: dict[str, Any]) -> list[dict[str, Any]]:
    """(c) accuracy vs β with true positives (simulator), τ⁺ = 1/C."""
    rows = []
    c, k = cfg["classes"], cfg["negatives"]
    for beta in cfg["betas"]:
        accs = []
        for seed in cfg["seeds"]:
            sim = _simulator(cfg, c, seed)
            enc = _encoder(cfg, seed)
            g = np.random.default_rng([seed, 13])

            def loss_fn(_: int, sim: LatentClassSimulator = sim, enc: nn.Module = enc,
                        g: np.random.Generator = g, beta: float = beta) -> torch.Tensor:
                b = sim.sample_tuples(cfg["batch_size"], k, rng=g)
                fa, fp = _embed(enc, b.anchor), _embed(enc, b.positive)
                fn = _embed(enc, b.negatives)
                return _explicit_negatives_loss(
                    fa, fp, fn, temperature=cfg["temperature"], tau_plus=1.0 / c, beta=beta
                )

            _train(enc, cfg, loss_fn)
            accs.append(_accuracy(enc, sim, cfg, seed))
        rows.append({"classes": c, "negatives": k, "beta": beta, "accuracy": float(np.mean(accs)),
                     "accuracy_std": float(np.std(accs))})
    return rows


def _write_csv(rows: list[dict[str, Any]], path: Path) -> None:
    from hardneg._io import atomic_write_text

    buffer = io.StringIO()
    w = csv.DictWriter(buffer, fieldnames=list(rows[0]), lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    atomic_write_text(path, buffer.getvalue())


def _plot(rows: list[dict[str, Any]], x: str, group: list[str], path: Path, title: str,
          logx: bool = False) -> None:
    from .figures import _pyplot, save_figure_atomic

    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6, 4))
    keys = sorted({tuple(r[g] for g in group) for r in rows})
    for key in keys:
        sel = [r for r in rows if tuple(r[g] for g in group) == key]
        ax.errorbar([r[x] for r in sel], [r["accuracy"] for r in sel],
                    yerr=[r["accuracy_std"] for r in sel], marker="o", capsize=2,
                    label=", ".join(f"{g}={v}" for g, v in zip(group, key)))
    if logx:
        ax.set_xscale("log", base=2)
    ax.set_xlabel(x)
    ax.set_ylabel("mean-classifier accuracy")
    ax.set_title(title)
    ax.legend(fontsize=7)
    try:
        save_figure_atomic(fig, path)
    finally:
        plt.close(fig)


def _merge(config: dict[str, Any] | None, full: bool) -> dict[str, dict[str, Any]]:
    cfg = {k: dict(v) for k, v in DEFAULTS.items()}
    if full:
        for key, val in FULL_OVERRIDES.items():
            cfg[key].update(val)
    for key, val in (config or {}).items():
        if key not in cfg:
            raise ValueError(f"config section must be one of {sorted(cfg)}, got {key!r}")
        cfg[key].update(val or {})
    return cfg


def run_experiments(
    config: str | Path | dict[str, Any] | None = None,
    outdir: str | Path = "theory_experiments",
    full: bool = False,
    which: str = "all",
) -> list[str]:
    """Run experiments (``which`` ∈ {"ash", "block", "hcl", "all"}); write CSV + PNG into
    ``outdir``; return the printed table lines. ``config``: YAML path or dict with sections
    ``common``, ``ash``, ``block``, ``hcl`` overriding :data:`DEFAULTS`."""
    if which not in ("ash", "block", "hcl", "all"):
        raise ValueError(f"which must be 'ash', 'block', 'hcl' or 'all', got {which!r}")
    if isinstance(config, (str, Path)):
        import yaml

        loaded = yaml.safe_load(Path(config).read_text()) or {}
        if isinstance(loaded, dict) and loaded.get("full"):
            full = True
        config = {k: v for k, v in loaded.items() if k != "full"}
    cfg = _merge(config, full)
    out = Path(outdir)
    lines: list[str] = []
    common = cfg["common"]
    if which in ("ash", "all"):
        rows = tradeoff_experiment({**common, **cfg["ash"]})
        _write_csv(rows, out / "ash_tradeoff.csv")
        _plot(rows, "negatives", ["classes", "mode"], out / "ash_tradeoff.png",
              "(a) Ash trade-off: accuracy vs K", logx=True)
        lines.append(
            "(a) Ash trade-off  C  mode            best K (measured)  optimal_num_negatives(C)"
        )
        for c in cfg["ash"]["classes"]:
            for mode in cfg["ash"]["modes"]:
                sel = [r for r in rows if r["classes"] == c and r["mode"] == mode]
                best = max(sel, key=lambda r: r["accuracy"])
                lines.append(f"                   {c:<3}{mode:<16}{best['negatives']:<4}"
                             f"(acc {best['accuracy']:.3f})     {optimal_num_negatives(c)}")
        lines += _table(rows, ["classes", "mode", "negatives"])
    if which in ("block", "all"):
        rows = block_experiment({**common, **cfg["block"]})
        _write_csv(rows, out / "arora_block.csv")
        _plot(rows, "block_size", ["classes"], out / "arora_block.png", "(b) Arora block size")
        lines.append("(b) Arora block loss")
        lines += _table(rows, ["classes", "block_size"])
    if which in ("hcl", "all"):
        rows = hcl_experiment({**common, **cfg["hcl"]})
        _write_csv(rows, out / "hcl_beta.csv")
        _plot(rows, "beta", ["classes"], out / "hcl_beta.png", "(c) HCL: accuracy vs beta")
        lines.append("(c) HCL, true positives")
        lines += _table(rows, ["classes", "negatives", "beta"])
    lines.append(f"wrote CSV + PNG to {out}")
    return lines


def _table(rows: list[dict[str, Any]], keys: list[str]) -> list[str]:
    head = "  ".join(f"{k:>14}" for k in [*keys, "accuracy", "std"])
    body = ["  ".join(f"{r[k]!s:>14}" for k in keys)
            + f"  {r['accuracy']:>14.4f}  {r['accuracy_std']:>14.4f}" for r in rows]
    return [head, *body]
