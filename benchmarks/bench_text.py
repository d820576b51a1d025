"""Speed and memory of the text modality: sentences grouped by article, K negatives from the corpus.

The setting of Ash et al. (AISTATS 2022, §4): an anchor sentence, a positive sentence of the same
article, and K negatives per anchor drawn from a pool of M sentences of the whole corpus, so that K
does not depend on the batch size B. The model is the pipeline's own (``data.dataset: articles``):
the bag-of-words encoder (``bag_of_words_encoder``, d = 100), the loss ``build_loss`` builds from
the packaged ``articles`` config with the overrides of each case (NCE, t = 0.5, K-subsampling
through ``loss.num_negatives``), batches from ``ArticleBatches`` and the step ``Articles.step`` of
``hardneg.modalities.articles``, Adam with the config's learning rate.

Prints ratios measured in this one run (absolute times drift on shared machines; nothing is
asserted):

1. one training step (encoder forward, loss, backward, Adam step; the batch is fetched outside the
   timer) at B ∈ {64, 256}, (a) in-batch negatives (SimCLR layout, 2B − 2 candidates) and (b) a
   corpus pool of M = 512 sentences with K = 64 negatives per anchor
   (``data.text.corpus_negatives=512 loss.num_negatives=64``), the two layouts interleaved repeat by
   repeat: sentences/s (sentences encoded per step: anchors + positives + pool), anchors/s, and the
   shares of the step taken by the encoder forward and by the loss forward + backward, each timed
   alone on the same batch (the loss on detached embeddings); medians over the repeats after one
   warm-up step.
2. peak extra resident memory of one forward + backward step at B = 256 with a pool of M = 4096
   sentences and K ∈ {1, 16, 256, 1024, 4096} negatives per anchor (and K = 1024 with
   ``loss.collision_free=true``), each in a fresh process, the peak reset with
   ``/proc/self/clear_refs`` after the inputs, the model and a warm-up step exist; printed in MiB
   and as a ratio to K = 1. The K-subsampling only masks the (A, M) score matrix, so the goal is a
   memory flat in K, dominated by the pool's encoding and the (A, M) matrices. The parent builds
   the batch and the loss and saves them for the child, which imports no Lightning; the measured
   step includes allocating the embedding table's (dense) gradient, the same for every K.

Data: by default a synthetic token corpus (no files needed): N = 20 000 sentences of 5–20 ids from
a vocabulary of 5 000, in 200 articles. ``--wiki`` uses the training split of the real data of the
``articles`` config instead (gensim's Wikipedia sample, ids padded to 64; parsing takes ~12 s).

Usage: ``.venv/bin/python benchmarks/bench_text.py [--repeats 5] [--threads 2] [--wiki] [--quick]``
(``--quick``: tiny sizes and 2 repeats, a smoke test of well under a minute).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import torch
from torch import Tensor, nn

if TYPE_CHECKING:
    from hardneg.config import RunConfig
    from hardneg.data.text.splits import TokenSplit
    from hardneg.loss import ContrastiveLoss
    from hardneg.modalities.articles import ArticleBatches

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Sizes:
    """The sizes of one run: synthetic corpus, part 1 (speed) and part 2 (memory)."""

    sentences: int
    length: int
    vocab: int
    articles: int
    batches: tuple[int, ...]
    pool: int
    k: int
    mem_batch: int
    mem_pool: int
    mem_ks: tuple[int, ...]
    mem_collision_free_k: int


FULL = Sizes(sentences=20_000, length=20, vocab=5_000, articles=200, batches=(64, 256), pool=512, k=64,
             mem_batch=256, mem_pool=4096, mem_ks=(1, 16, 256, 1024, 4096), mem_collision_free_k=1024)
QUICK = Sizes(sentences=2_000, length=20, vocab=500, articles=20, batches=(16, 64), pool=128, k=16,
              mem_batch=32, mem_pool=256, mem_ks=(1, 16, 256), mem_collision_free_k=64)


# -- data ------------------------------------------------------------------------------------------
def synthetic_split(sizes: Sizes, seed: int = 0) -> TokenSplit:
    """Random sentences of 5..length ids in [1, vocab) padded with 0, articles of equal size."""
    from hardneg.data.text.splits import TokenSplit

    g = torch.Generator().manual_seed(seed)
    n, length = sizes.sentences, sizes.length
    ids = torch.randint(1, sizes.vocab, (n, length), generator=g)
    lengths = torch.randint(min(5, length), length + 1, (n, 1), generator=g)
    ids = ids.masked_fill(torch.arange(length)[None, :] >= lengths, 0)
    labels = torch.randperm(n, generator=g) % sizes.articles
    classes = tuple(f"article {i}" for i in range(sizes.articles))
    return TokenSplit(ids, labels, classes, None, None)


def wiki_split() -> TokenSplit:
    """The training split of the packaged ``articles`` config (gensim's Wikipedia sample)."""
    from hardneg.pipeline.config import load_config
    from hardneg.pipeline.experiment import load_data

    train, _ = load_data(load_config("articles", []))
    return train  # type: ignore[return-value]


def vocab_size_of(split: TokenSplit) -> int:
    return len(split.vocab) if split.vocab is not None else int(split.inputs.max()) + 1


# -- one case: config, loss, encoder, optimiser, batches -------------------------------------------
@dataclass
class Case:
    cfg: RunConfig
    loss: ContrastiveLoss
    encoder: nn.Module
    optimizer: torch.optim.Optimizer
    batches: ArticleBatches


def make_case(split: TokenSplit, vocab_size: int, *, pool: int | None, k: int | None,
              collision_free: bool = False) -> Case:
    """The pipeline's pieces for ``hardneg train articles`` with these overrides."""
    from hardneg.modalities.articles import ArticleBatches
    from hardneg.models.bow import bag_of_words_encoder
    from hardneg.pipeline.build import build_loss
    from hardneg.pipeline.config import load_config

    overrides = [f"data.text.corpus_negatives={'null' if pool is None else pool}",
                 f"loss.num_negatives={'null' if k is None else k}",
                 f"loss.collision_free={str(collision_free).lower()}"]
    cfg = load_config("articles", overrides)
    torch.manual_seed(cfg.seed)
    encoder = bag_of_words_encoder(vocab_size=vocab_size, dim=cfg.model.feature_dim or 100)
    optimizer = torch.optim.Adam(encoder.parameters(), lr=cfg.train.lr, weight_decay=cfg.train.weight_decay)
    batches = ArticleBatches(split, seed=cfg.seed, corpus_negatives=cfg.data.text.corpus_negatives)
    return Case(cfg, build_loss(cfg), encoder, optimizer, batches)


def batch_indices(n: int, batch: int, step: int) -> list[int]:
    """The ``step``-th batch of a fixed permutation of the corpus (no repeats within a batch)."""
    perm = torch.randperm(n, generator=torch.Generator().manual_seed(0))
    start = (step * batch) % max(n - batch + 1, 1)
    return perm[start : start + batch].tolist()


def train_step(case: Case, x: dict[str, Tensor], labels: Tensor, step: int) -> float:
    """One training step as the module runs it (``_step``, backward, Adam); seconds."""
    from hardneg.modalities.articles import Articles

    _step = Articles().step
    from hardneg.seeding import step_generator

    t0 = time.perf_counter()
    out = _step(case.encoder, case.loss, x, labels=labels, generator=step_generator(case.cfg.seed, 0, step))
    case.optimizer.zero_grad(set_to_none=True)
    out.loss.backward()
    case.optimizer.step()
    return time.perf_counter() - t0


def encode(case: Case, x: dict[str, Tensor]) -> tuple[float, list[Tensor]]:
    """Seconds of the encoder forward alone (with autograd, as in the step) and the embeddings."""
    t0 = time.perf_counter()
    zs = [case.encoder(x[key])[1] for key in ("anchor", "positive", "pool") if key in x]
    return time.perf_counter() - t0, zs


def loss_fwd_bwd(case: Case, zs: list[Tensor], x: dict[str, Tensor], labels: Tensor, step: int) -> float:
    """Seconds of the loss forward + backward alone on detached embeddings (``_step``'s loss call)."""
    from hardneg.seeding import step_generator

    za, zp, *zn = (z.detach().requires_grad_() for z in zs)
    g = step_generator(case.cfg.seed, 0, step)
    t0 = time.perf_counter()
    if zn:
        out = case.loss.pair(za, zp, zn[0], anchor_labels=labels, candidate_labels=x["pool_labels"],
                             generator=g, details=True)
    else:
        out = case.loss(za, zp, labels=labels, generator=g, details=True)
    out.loss.backward()
    return time.perf_counter() - t0


# -- 1. speed of a training step -------------------------------------------------------------------
def training_steps(split: TokenSplit, sizes: Sizes, repeats: int) -> list[str]:
    vocab_size = vocab_size_of(split)
    n, length = len(split), int(split.inputs.shape[1])
    lines = [f"1. one training step (BoW d=100, NCE, Adam) on {n} sentences x {length} ids, vocabulary "
             f"{vocab_size}; median of {repeats} after 1 warm-up, {torch.get_num_threads()} threads:"]
    m, k = sizes.pool, sizes.k
    for b in sizes.batches:
        cases = {"in-batch": make_case(split, vocab_size, pool=None, k=None),
                 "pool": make_case(split, vocab_size, pool=m, k=k)}
        times: dict[str, dict[str, list[float]]] = {
            name: {"step": [], "encoder": [], "loss": []} for name in cases}
        for step in range(repeats + 1):
            for name, case in cases.items():  # interleaved: drift affects both layouts alike
                x, _, labels, _ = case.batches[batch_indices(n, b, step)]
                t_step = train_step(case, x, labels, step)
                t_enc, zs = encode(case, x)
                t_loss = loss_fwd_bwd(case, zs, x, labels, step)
                if step > 0:
                    for key, dt in (("step", t_step), ("encoder", t_enc), ("loss", t_loss)):
                        times[name][key].append(dt)
        med = {name: {key: statistics.median(ts) for key, ts in d.items()} for name, d in times.items()}
        for name, label, sentences in (("in-batch", f"in-batch ({2 * b - 2} candidates)", 2 * b),
                                       ("pool", f"pool M={m}, K={k}", 2 * b + m)):
            t = med[name]
            lines.append(
                f"   B={b:4d} {label:24s}: {sentences / t['step']:8.0f} sentences/s ({sentences}/step), "
                f"{b / t['step']:7.0f} anchors/s, step {1e3 * t['step']:6.1f} ms; encoder fwd "
                f"{1e3 * t['encoder']:5.1f} ms = {100 * t['encoder'] / t['step']:4.1f}%, loss fwd+bwd "
                f"{1e3 * t['loss']:5.1f} ms = {100 * t['loss'] / t['step']:4.1f}% of the step"
            )
        ratio = med["pool"]["step"] / med["in-batch"]["step"]
        lines.append(f"   B={b:4d} pool / in-batch: step time {ratio:.2f}x, anchors/s {1 / ratio:.2f}x")
    return lines


# -- 2. peak memory vs K ---------------------------------------------------------------------------
def _rss_kib(key: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"{key} not found in /proc/self/status")


def _write_spec(path: Path, split: TokenSplit, batch: int, pool: int, k: int, collision_free: bool) -> None:
    """Save what the fresh process needs: the batch (from ``ArticleBatches``), the losses ``build_loss``
    builds, the seeds; the child then only imports torch and ``hardneg.text`` (not Lightning)."""
    from hardneg.seeding import mix_seed

    vocab_size = vocab_size_of(split)
    case = make_case(split, vocab_size, pool=pool, k=k, collision_free=collision_free)
    warm = make_case(split, vocab_size, pool=8, k=1, collision_free=collision_free)  # tiny pool, K = 1
    x, _, labels, _ = case.batches[batch_indices(len(split), batch, 0)]
    warm_x, _, warm_labels, _ = warm.batches[batch_indices(len(split), 8, 1)]
    torch.save({"x": x, "labels": labels, "loss": case.loss, "warm_x": warm_x, "warm_labels": warm_labels,
                "warm_loss": warm.loss, "vocab_size": vocab_size, "dim": case.cfg.model.feature_dim or 100,
                "seed": case.cfg.seed, "step_seed": mix_seed(case.cfg.seed, 0, 0, 0)}, path)


def _peak_child(spec_path: str, threads: int) -> None:
    """In a fresh process: peak extra resident memory of one ``_step`` forward + backward; prints JSON."""
    from hardneg.modalities.articles import Articles

    _step = Articles().step
    from hardneg.models.bow import bag_of_words_encoder

    torch.set_num_threads(threads)
    spec = torch.load(spec_path, weights_only=False)
    torch.manual_seed(spec["seed"])
    encoder = bag_of_words_encoder(vocab_size=spec["vocab_size"], dim=spec["dim"])
    # warm up the code paths on a tiny batch and pool, so that the measured peak is the step's own
    _step(encoder, spec["warm_loss"], spec["warm_x"], labels=spec["warm_labels"],
          generator=torch.Generator().manual_seed(1)).loss.backward()
    encoder.zero_grad(set_to_none=True)
    g = torch.Generator().manual_seed(spec["step_seed"])  # = step_generator(seed, 0, 0)
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    base = _rss_kib("VmRSS")
    t0 = time.perf_counter()
    _step(encoder, spec["loss"], spec["x"], labels=spec["labels"], generator=g).loss.backward()
    seconds = time.perf_counter() - t0
    print(json.dumps({"seconds": seconds, "extra_mib": (_rss_kib("VmHWM") - base) / 1024}))


def _peak(
    split: TokenSplit, batch: int, pool: int, k: int, collision_free: bool, threads: int
) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        spec = Path(tmp) / "spec.pt"
        _write_spec(spec, split, batch, pool, k, collision_free)
        code = (f"import sys; sys.path.insert(0, {str(HERE)!r}); import bench_text; "
                f"bench_text._peak_child({str(spec)!r}, {threads})")
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"memory measurement (K={k}, collision_free={collision_free}) failed:\n"
                           f"{out.stderr}")
    result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def memory_vs_k(split: TokenSplit, sizes: Sizes, threads: int) -> list[str]:
    b, m, d = sizes.mem_batch, sizes.mem_pool, 100
    ks = [k for k in sizes.mem_ks if k <= m]
    mib = 2.0**20
    lines = [f"2. peak extra resident memory of one fwd+bwd step, B={b}, pool M={m} (fresh process each; "
             f"one (A, M) float32 matrix = {4 * b * m / mib:.2f} MiB, pool encoding M x d = "
             f"{4 * m * d / mib:.2f} MiB, pool ids {8 * m * split.inputs.shape[1] / mib:.2f} MiB):"]
    rows = [(k, False, _peak(split, b, m, k, False, threads)) for k in ks]
    kc = sizes.mem_collision_free_k
    rows.append((kc, True, _peak(split, b, m, kc, True, threads)))
    ref = max(rows[0][2]["extra_mib"], 1e-9)
    for k, cf, r in rows:
        label = f"K={k}" + (", collision_free" if cf else "")
        lines.append(f"   {label:26s}: {r['extra_mib']:7.1f} MiB, ratio to K={ks[0]} "
                     f"{r['extra_mib'] / ref:5.2f}, time {1e3 * r['seconds']:6.1f} ms")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=None,
                        help="timed steps per case (default 5; --quick 2)")
    parser.add_argument("--threads", type=int, default=2, help="torch intra-op threads (default 2)")
    parser.add_argument("--wiki", action="store_true",
                        help="the gensim Wikipedia sample of the articles config instead of synthetic ids")
    parser.add_argument("--quick", action="store_true", help="tiny sizes and 2 repeats: a smoke test")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    sizes = QUICK if args.quick else FULL
    repeats = args.repeats if args.repeats is not None else (2 if args.quick else 5)
    t0 = time.perf_counter()
    split = wiki_split() if args.wiki else synthetic_split(sizes)
    source = "gensim Wikipedia sample (train split)" if args.wiki else "synthetic ids"
    articles = len(torch.unique(split.labels))
    print(f"torch {torch.__version__}, {args.threads} threads, load average {os.getloadavg()[0]:.1f} on "
          f"{os.cpu_count()} cores; data: {source}, {len(split)} sentences in {articles} articles (loaded in "
          f"{time.perf_counter() - t0:.1f} s)", flush=True)
    for line in training_steps(split, sizes, repeats):
        print(line, flush=True)
    for line in memory_vs_k(split, sizes, args.threads):
        print(line, flush=True)


if __name__ == "__main__":
    main()
