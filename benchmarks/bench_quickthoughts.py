"""Speed and memory of quick-thoughts training (``data.dataset: sentences``).

The setting of Logeswaran & Lee (ICLR 2018) as HCL runs it (Robinson et al., ICLR 2021, §5.3): a
window of B contiguous sentences, two encoders f and g, scores ``f(s_i)·g(s_j)`` unnormalised at
temperature 1, the neighbour on each side a positive, the rest of the window the negatives. The
pieces are the pipeline's own: :class:`~hardneg.text.quickthoughts.QuickThoughts` over
:class:`~hardneg.models.bow.BagOfWords` or :class:`~hardneg.models.gru.GRUEncoder` (d = 100 each),
the loss ``build_loss`` builds from the packaged ``sentences`` config with each case's overrides,
the step ``Sentences.step`` of ``hardneg.modalities.sentences``, gradient-norm clipping at 5 and Adam.

Prints ratios measured in this one run (absolute times drift on shared machines; nothing is
asserted):

1. one training step (f and g forward, loss, backward, clipping, Adam step) at B ∈ {128, 400}
   (400 is QT's batch) for the BoW and the GRU encoder, with QT's own negatives and with hard
   negatives (β = 1, the clipping trick), cases interleaved repeat by repeat: sentences/s and the
   share of the step taken by the loss forward + backward, timed alone on the same window (on
   detached f, g outputs); medians over the repeats after one warm-up step.
2. peak extra resident memory of one forward + backward step against the window size B, for both
   encoders, each in a fresh process (the peak reset with ``/proc/self/clear_refs`` once the model
   exists and a warm-up step on a small window has run), in MiB and as a ratio to the smallest B,
   beside the size of one B × B float32 score matrix.

Data: a synthetic corpus (no files needed): 20 000 sentences of 5–30 ids from a vocabulary of
20 000, in documents of 50 contiguous sentences.

Usage: ``.venv/bin/python benchmarks/bench_quickthoughts.py [--repeats 5] [--threads 2] [--quick]``
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

import torch
from torch import Tensor, nn

HERE = Path(__file__).resolve().parent
STRATEGIES = {"qt": [], "hard": ["loss.negatives={name: hard, beta: 1.0, rescale: true}"]}


@dataclass(frozen=True)
class Sizes:
    sentences: int
    length: int
    vocab: int
    document: int
    batches: tuple[int, ...]
    mem_batches: tuple[int, ...]


FULL = Sizes(
    sentences=20_000,
    length=30,
    vocab=20_000,
    document=50,
    batches=(128, 400),
    mem_batches=(128, 400, 1024, 2048, 4096),
)
QUICK = Sizes(sentences=2_000, length=30, vocab=1_000, document=50, batches=(32, 64), mem_batches=(32, 128))


def corpus(sizes: Sizes, seed: int = 0) -> tuple[Tensor, Tensor]:
    """``(tokens (N, L) int64 padded with 0, documents (N,) int64)`` in corpus order."""
    g = torch.Generator().manual_seed(seed)
    n, length = sizes.sentences, sizes.length
    ids = torch.randint(1, sizes.vocab, (n, length), generator=g)
    lengths = torch.randint(5, length + 1, (n, 1), generator=g)
    return ids.masked_fill(torch.arange(length)[None, :] >= lengths, 0), torch.arange(n) // sizes.document


def make_model(encoder: str, vocab: int, seed: int = 0) -> nn.Module:
    from hardneg.models.bow import BagOfWords
    from hardneg.models.gru import GRUEncoder
    from hardneg.text.quickthoughts import QuickThoughts

    torch.manual_seed(seed)

    def one() -> nn.Module:
        if encoder == "gru":
            return GRUEncoder(vocab_size=vocab, embedding_dim=100, hidden_dim=100)
        return BagOfWords(vocab_size=vocab, dim=100)

    return QuickThoughts(f=one(), g=one())


def make_loss(strategy: str):  # type: ignore[no-untyped-def]
    from hardneg.pipeline.build import build_loss
    from hardneg.pipeline.config import load_config

    return build_loss(load_config("sentences", STRATEGIES[strategy]))


def window(tokens: Tensor, documents: Tensor, b: int, step: int) -> dict[str, Tensor]:
    start = (step * b) % (tokens.shape[0] - b + 1)
    return {"tokens": tokens[start : start + b], "documents": documents[start : start + b]}


def train_step(model: nn.Module, loss, opt: torch.optim.Optimizer, x: dict[str, Tensor], step: int) -> float:  # type: ignore[no-untyped-def]
    from hardneg.modalities.sentences import Sentences

    _step = Sentences().step

    t0 = time.perf_counter()
    out = _step(model, loss, x, labels=None, generator=torch.Generator().manual_seed(step))
    opt.zero_grad(set_to_none=True)
    out.loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
    opt.step()
    return time.perf_counter() - t0


def loss_alone(model: nn.Module, loss, x: dict[str, Tensor], step: int) -> float:  # type: ignore[no-untyped-def]
    from hardneg.text.quickthoughts import quick_thoughts_loss

    with torch.no_grad():
        zf, zg = model.f(x["tokens"]), model.g(x["tokens"])  # type: ignore[operator]
    zf, zg = zf.requires_grad_(), zg.requires_grad_()
    t0 = time.perf_counter()
    quick_thoughts_loss(
        loss, zf, zg, x["documents"], generator=torch.Generator().manual_seed(step)
    ).loss.backward()
    return time.perf_counter() - t0


# -- 1. speed --------------------------------------------------------------------------------------
def speed(sizes: Sizes, repeats: int) -> list[str]:
    tokens, documents = corpus(sizes)
    lines = [
        f"1. one training step (f, g with d=100 each, Adam, clip 5) on windows of contiguous synthetic "
        f"sentences (<= {sizes.length} ids, vocabulary {sizes.vocab}); median of {repeats} after 1 "
        f"warm-up, {torch.get_num_threads()} threads:"
    ]
    for b in sizes.batches:
        cases = {}
        for enc in ("bow", "gru"):
            for strategy in STRATEGIES:
                model = make_model(enc, sizes.vocab)
                cases[(enc, strategy)] = (
                    model,
                    make_loss(strategy),
                    torch.optim.Adam(model.parameters(), lr=5e-3),
                )
        times: dict[tuple[str, str], dict[str, list[float]]] = {k: {"step": [], "loss": []} for k in cases}
        for step in range(repeats + 1):
            x = window(tokens, documents, b, step)
            for key, (model, loss, opt) in cases.items():  # interleaved: drift affects all cases alike
                t_step = train_step(model, loss, opt, x, step)
                t_loss = loss_alone(model, loss, x, step)
                if step > 0:
                    times[key]["step"].append(t_step)
                    times[key]["loss"].append(t_loss)
        med = {k: {m: statistics.median(v) for m, v in d.items()} for k, d in times.items()}
        for (enc, strategy), t in med.items():
            lines.append(
                f"   B={b:4d} {enc:3s} {strategy:4s}: {b / t['step']:8.0f} sentences/s, step "
                f"{1e3 * t['step']:7.1f} ms, loss fwd+bwd {1e3 * t['loss']:6.2f} ms = "
                f"{100 * t['loss'] / t['step']:4.1f}% of the step"
            )
        for enc in ("bow", "gru"):
            r = med[(enc, "hard")]["step"] / med[(enc, "qt")]["step"]
            lines.append(f"   B={b:4d} {enc:3s} hard / qt step time: {r:.2f}x")
    return lines


# -- 2. peak memory vs B ---------------------------------------------------------------------------
def _peak_child(spec_path: str, threads: int) -> None:
    """In a fresh process: peak extra resident memory of one ``_step`` forward + backward; prints JSON."""
    from bench_text import _rss_kib
    from hardneg.modalities.sentences import Sentences

    _step = Sentences().step

    torch.set_num_threads(threads)
    spec = torch.load(spec_path, weights_only=False)
    model = make_model(spec["encoder"], spec["vocab"])
    loss = spec["loss"]
    _step(model, loss, spec["warm"], labels=None, generator=torch.Generator().manual_seed(0)).loss.backward()
    model.zero_grad(set_to_none=True)
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    base = _rss_kib("VmRSS")
    t0 = time.perf_counter()
    _step(model, loss, spec["x"], labels=None, generator=torch.Generator().manual_seed(1)).loss.backward()
    seconds = time.perf_counter() - t0
    print(json.dumps({"seconds": seconds, "extra_mib": (_rss_kib("VmHWM") - base) / 1024}))


def _peak(sizes: Sizes, encoder: str, b: int, threads: int) -> dict[str, float]:
    tokens, documents = corpus(sizes)
    with tempfile.TemporaryDirectory() as tmp:
        spec = Path(tmp) / "spec.pt"
        torch.save(
            {
                "encoder": encoder,
                "vocab": sizes.vocab,
                "loss": make_loss("qt"),
                "warm": window(tokens, documents, 8, 1),
                "x": window(tokens, documents, b, 0),
            },
            spec,
        )
        code = (
            f"import sys; sys.path.insert(0, {str(HERE)!r}); import bench_quickthoughts as m; "
            f"m._peak_child({str(spec)!r}, {threads})"
        )
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"memory measurement ({encoder}, B={b}) failed:\n{out.stderr}")
    result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def memory(sizes: Sizes, threads: int) -> list[str]:
    mib = 2.0**20
    lines = [
        "2. peak extra resident memory of one fwd+bwd step vs the window B (QT negatives; fresh process "
        "each):"
    ]
    for enc in ("bow", "gru"):
        rows = [(b, _peak(sizes, enc, b, threads)) for b in sizes.mem_batches]
        ref = max(rows[0][1]["extra_mib"], 1e-9)
        for b, r in rows:
            lines.append(
                f"   {enc:3s} B={b:5d}: {r['extra_mib']:8.1f} MiB, ratio to B={rows[0][0]} "
                f"{r['extra_mib'] / ref:6.2f} (B/B0 = {b / rows[0][0]:5.1f}; one B x B float32 = "
                f"{4 * b * b / mib:6.1f} MiB), time {1e3 * r['seconds']:7.1f} ms"
            )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--repeats", type=int, default=None, help="timed steps per case (default 5; --quick 2)"
    )
    parser.add_argument("--threads", type=int, default=2, help="torch intra-op threads (default 2)")
    parser.add_argument("--quick", action="store_true", help="tiny sizes and 2 repeats: a smoke test")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    sizes = QUICK if args.quick else FULL
    repeats = args.repeats if args.repeats is not None else (2 if args.quick else 5)
    print(
        f"torch {torch.__version__}, {args.threads} threads, load average {os.getloadavg()[0]:.1f} on "
        f"{os.cpu_count()} cores",
        flush=True,
    )
    for line in speed(sizes, repeats):
        print(line, flush=True)
    for line in memory(sizes, args.threads):
        print(line, flush=True)


if __name__ == "__main__":
    main()
