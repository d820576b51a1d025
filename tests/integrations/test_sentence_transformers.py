"""The sentence-transformers adapter: equal to MultipleNegativesRankingLoss at β = 0, τ⁺ = 0, the
cached variant's gradients equal the uncached ones, and a tiny local model trains with the trainer."""

from __future__ import annotations

import numpy as np
import pytest
import torch

st = pytest.importorskip("sentence_transformers")
from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss  # noqa: E402
from sentence_transformers.sentence_transformer.modules import Dense, Dropout, Pooling, WordEmbeddings  # noqa: E402
from sentence_transformers.sentence_transformer.modules.tokenizer import WhitespaceTokenizer  # noqa: E402

from hardneg import ContrastiveLoss, negatives  # noqa: E402
from hardneg.integrations.sentence_transformers import (  # noqa: E402
    CachedHardNegativesRankingLoss,
    HardNegativesRankingLoss,
)

VOCAB = ["red", "blue", "green", "cat", "dog", "car", "bus", "runs", "sits", "big", "small", "fast"]


def _model(dropout: float = 0.0, seed: int = 0) -> st.SentenceTransformer:
    torch.manual_seed(seed)
    weights = np.random.default_rng(seed).normal(size=(len(VOCAB) + 1, 8)).astype(np.float32)
    words = WordEmbeddings(tokenizer=WhitespaceTokenizer(VOCAB, stop_words=[]), embedding_weights=weights,
                           update_embeddings=True)
    modules = [words, Pooling(8, pooling_mode="mean"), Dense(8, 8)]
    if dropout:
        modules.append(Dropout(dropout))
    return st.SentenceTransformer(modules=modules, device="cpu")


def _sentences(n: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(VOCAB, size=3)) for _ in range(n)]


def _columns(model: st.SentenceTransformer, k: int = 0, n: int = 12) -> list[dict[str, torch.Tensor]]:
    return [model.preprocess(_sentences(n, seed)) for seed in range(2 + k)]


@pytest.mark.parametrize("mined", [0, 2])
def test_equals_multiple_negatives_ranking_loss(mined: int) -> None:
    model = _model()
    cols = _columns(model, k=mined)
    ours = HardNegativesRankingLoss(model)(cols, None)
    theirs = MultipleNegativesRankingLoss(model)(cols, None)
    torch.testing.assert_close(ours, theirs, rtol=1e-6, atol=1e-6)
    scaled = HardNegativesRankingLoss(model, loss=ContrastiveLoss(temperature=0.2))(cols, None)
    torch.testing.assert_close(scaled, MultipleNegativesRankingLoss(model, scale=5.0)(cols, None),
                               rtol=1e-6, atol=1e-6)


def _grads(model: torch.nn.Module) -> list[torch.Tensor]:
    return [p.grad.clone() for p in model.parameters() if p.grad is not None]


@pytest.mark.parametrize("dropout", [0.0, 0.3])
def test_cached_gradients_equal_the_uncached_ones(dropout: float) -> None:
    hard = ContrastiveLoss(temperature=0.1, negatives=negatives.Hard(beta=1.0))
    grads = {}
    for name, cls, kwargs in (("plain", HardNegativesRankingLoss, {}),
                              ("cached", CachedHardNegativesRankingLoss, {"mini_batch_size": 16})):
        model = _model(dropout)
        model.train()
        cols = _columns(model, k=1, n=16)
        torch.manual_seed(5)  # the same dropout masks: one mini-batch draws like the full batch
        cls(model, loss=hard, **kwargs)(cols, None).backward()
        grads[name] = _grads(model)
    for a, b in zip(grads["plain"], grads["cached"], strict=True):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
    if dropout == 0.0:  # several mini-batches: exact without randomness
        model = _model()
        cols = _columns(model, k=1, n=16)
        CachedHardNegativesRankingLoss(model, loss=hard, mini_batch_size=5)(cols, None).backward()
        for a, b in zip(grads["plain"], _grads(model), strict=True):
            torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)


def test_a_tiny_model_trains_with_the_sentence_transformers_trainer(tmp_path) -> None:  # type: ignore[no-untyped-def]
    datasets = pytest.importorskip("datasets")
    from sentence_transformers import SentenceTransformerTrainer, SentenceTransformerTrainingArguments

    model = _model()
    data = datasets.Dataset.from_dict({"anchor": _sentences(32, 0), "positive": _sentences(32, 1),
                                       "negative": _sentences(32, 2)})
    before = [p.detach().clone() for p in model.parameters()]
    for loss in (HardNegativesRankingLoss(model, loss=ContrastiveLoss(temperature=0.05,
                                                                       negatives=negatives.Hard(beta=1.0))),
                 CachedHardNegativesRankingLoss(model, loss=ContrastiveLoss(temperature=0.05, tau_plus=0.1),
                                                mini_batch_size=4)):
        args = SentenceTransformerTrainingArguments(
            output_dir=str(tmp_path), max_steps=3, per_device_train_batch_size=8, report_to="none",
            save_strategy="no", logging_steps=1, use_cpu=True, seed=0)
        trainer = SentenceTransformerTrainer(model=model, args=args, train_dataset=data, loss=loss)
        result = trainer.train()
        assert np.isfinite(result.training_loss)
    assert any(not torch.equal(a, b.detach()) for a, b in zip(before, model.parameters()))


def test_bad_arguments_are_named() -> None:
    model = _model()
    with pytest.raises(TypeError, match=r"loss must be a hardneg\.ContrastiveLoss"):
        HardNegativesRankingLoss(model, loss=torch.nn.MSELoss())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="mini_batch_size must be an int >= 1, got 0"):
        CachedHardNegativesRankingLoss(model, mini_batch_size=0)
    with pytest.raises(ValueError, match="at least two columns"):
        HardNegativesRankingLoss(model)(_columns(model)[:1], None)
