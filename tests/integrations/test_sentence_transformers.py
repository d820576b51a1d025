"""The sentence-transformers adapter, with MNRL's argument names: equal to MultipleNegativesRankingLoss
(value and gradients) where the settings coincide, in-batch duplicates and same-label positives masked,
the cached variant equal to the uncached one (StaticEmbedding included), a tiny local model trained
with the trainer and a model card without ``\\n`` literals or a colliding tag."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

st = pytest.importorskip("sentence_transformers")
from sentence_transformers.util import cos_sim, dot_score  # noqa: E402

try:
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss
    from sentence_transformers.sentence_transformer.modules import Dense, Dropout, Pooling, WordEmbeddings
    from sentence_transformers.sentence_transformer.modules.tokenizer import WhitespaceTokenizer
except ImportError:  # older sentence-transformers
    from sentence_transformers.losses import MultipleNegativesRankingLoss
    from sentence_transformers.models import Dense, Dropout, Pooling, WordEmbeddings
    from sentence_transformers.models.tokenizer import WhitespaceTokenizer

from hardneg import ContrastiveLoss, negatives  # noqa: E402
from hardneg.integrations.sentence_transformers import (  # noqa: E402
    CachedHardNegativesRankingLoss,
    HardNegativesRankingLoss,
)
from hardneg.objectives import Debiased  # noqa: E402

VOCAB = ["red", "blue", "green", "cat", "dog", "car", "bus", "runs", "sits", "big", "small", "fast"]


def _model(dropout: float = 0.0, seed: int = 0) -> st.SentenceTransformer:
    torch.manual_seed(seed)
    weights = np.random.default_rng(seed).normal(size=(len(VOCAB) + 1, 8)).astype(np.float32)
    words = WordEmbeddings(
        tokenizer=WhitespaceTokenizer(VOCAB, stop_words=[]), embedding_weights=weights, update_embeddings=True
    )
    modules = [words, Pooling(8, pooling_mode="mean"), Dense(8, 8)]
    if dropout:
        modules.append(Dropout(dropout))
    return st.SentenceTransformer(modules=modules, device="cpu")


def _tokenize(model: st.SentenceTransformer, texts: list[str]) -> dict[str, torch.Tensor]:
    return getattr(model, "preprocess", model.tokenize)(texts)


def _distinct_sentences(n: int, seed: int) -> list[str]:
    """``n`` sentences that are all different (across seeds too: the length encodes the seed)."""
    rng = np.random.default_rng(seed)
    out: list[str] = []
    while len(out) < n:
        s = " ".join(rng.choice(VOCAB, size=3 + seed))
        if s not in out:
            out.append(s)
    return out


def _columns(model: st.SentenceTransformer, k: int = 0, n: int = 12) -> list[dict[str, torch.Tensor]]:
    return [_tokenize(model, _distinct_sentences(n, seed)) for seed in range(2 + k)]


def _loss_and_grads(loss: torch.nn.Module, model: torch.nn.Module, cols: list, labels=None):  # type: ignore[no-untyped-def]
    model.zero_grad()
    value = loss([dict(c) for c in cols], labels)
    value.backward()
    return value.detach(), [p.grad.clone() for p in model.parameters() if p.grad is not None]


def _assert_same(a, b, rtol=1e-5, atol=1e-6) -> None:  # type: ignore[no-untyped-def]
    torch.testing.assert_close(a[0], b[0], rtol=rtol, atol=atol)
    assert len(a[1]) == len(b[1]) > 0
    for x, y in zip(a[1], b[1], strict=True):
        torch.testing.assert_close(x, y, rtol=rtol, atol=atol)


@pytest.mark.parametrize("mined", [0, 2])
@pytest.mark.parametrize(("scale", "similarity_fct"), [(20.0, cos_sim), (5.0, cos_sim), (1.0, dot_score)])
def test_equals_multiple_negatives_ranking_loss(mined: int, scale: float, similarity_fct) -> None:  # type: ignore[no-untyped-def]
    model = _model()
    cols = _columns(model, k=mined)
    ours = _loss_and_grads(
        HardNegativesRankingLoss(model, scale=scale, similarity_fct=similarity_fct), model, cols
    )
    theirs = _loss_and_grads(
        MultipleNegativesRankingLoss(model, scale=scale, similarity_fct=similarity_fct), model, cols
    )
    _assert_same(ours, theirs)


def test_per_direction_symmetric_equals_mnrl() -> None:
    model = _model()
    cols = _columns(model, k=1)
    kwargs = {"directions": ("query_to_doc", "doc_to_query"), "partition_mode": "per_direction"}
    ours = _loss_and_grads(HardNegativesRankingLoss(model, **kwargs), model, cols)
    theirs = _loss_and_grads(MultipleNegativesRankingLoss(model, **kwargs), model, cols)
    _assert_same(ours, theirs)


def test_joint_directions_count_the_positive_once() -> None:
    """GTE's four directions, one softmax: MNRL's score matrices with the positive's repeated copy
    (the diagonal of doc_to_query) removed from the denominator."""
    model = _model()
    cols = _columns(model, k=1, n=6)
    directions = ("query_to_doc", "query_to_query", "doc_to_query", "doc_to_doc")
    loss = HardNegativesRankingLoss(model, directions=directions)
    with torch.no_grad():
        ours = loss(cols, None)
        q, p, n = (model(dict(c))["sentence_embedding"] for c in cols)
        q, p, n = (torch.nn.functional.normalize(x, dim=1) for x in (q, p, n))
        b, eye = q.shape[0], torch.eye(q.shape[0], dtype=torch.bool)
        docs = torch.cat([p, n])
        pos = 20.0 * (q * p).sum(1)
        parts = [
            (20.0 * q @ docs.T).masked_fill(torch.cat([eye, torch.zeros_like(eye)], 1), -math.inf),
            (20.0 * q @ q.T).masked_fill(eye, -math.inf),
            (20.0 * p @ q.T).masked_fill(eye, -math.inf),
            (20.0 * p @ docs.T).masked_fill(torch.cat([eye, eye], 1), -math.inf),
        ]
        denominator = torch.logaddexp(pos, torch.logsumexp(torch.cat(parts, 1), dim=1))
        expected = (denominator - pos).mean()
    torch.testing.assert_close(ours, expected, rtol=1e-5, atol=1e-5)
    assert b == 6


def test_in_batch_duplicates_are_masked() -> None:
    """Row 3's positive is row 0's text: it is no negative for anchor 0 (nor row 0's for anchor 3);
    and an anchor whose text is another row's positive does not count that positive as a negative."""
    model = _model()
    anchors, positives = _distinct_sentences(6, 0), _distinct_sentences(6, 1)
    positives[3] = positives[0]
    anchors[5] = positives[2]
    cols = [_tokenize(model, anchors), _tokenize(model, positives)]
    with torch.no_grad():
        a, p = (model(dict(c))["sentence_embedding"] for c in cols)
        mask = ~torch.eye(6, dtype=torch.bool)
        mask[0, 3] = mask[3, 0] = mask[5, 2] = False
        expected = ContrastiveLoss(temperature=0.05).pair(a, p, p, mask=mask)
        masked = HardNegativesRankingLoss(model)(cols, None)
        unmasked = HardNegativesRankingLoss(model, mask_duplicates=False)(cols, None)
        mnrl = MultipleNegativesRankingLoss(model)(cols, None)
    torch.testing.assert_close(masked, expected, rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(unmasked, mnrl, rtol=1e-6, atol=1e-6)
    assert not torch.allclose(masked, mnrl)


def test_label_column_gives_collision_free_negatives() -> None:
    model = _model()
    cols = _columns(model, k=1, n=8)
    labels = torch.tensor([0, 1, 0, 2, 1, 3, 4, 5])
    loss = HardNegativesRankingLoss(model, collision_free=True, negatives=negatives.Hard(0.1))
    with torch.no_grad():
        a, p, n = (model(dict(c))["sentence_embedding"] for c in cols)
        mask = labels[:, None] != torch.cat([labels, torch.full((8,), -1)])[None, :]
        mask[:, 8:] = True  # mined negatives are never masked by label
        expected = ContrastiveLoss(temperature=0.05, negatives=negatives.Hard(0.1)).pair(
            a, p, torch.cat([p, n]), mask=mask
        )
        torch.testing.assert_close(loss(cols, labels), expected, rtol=1e-6, atol=1e-6)
    with pytest.raises(ValueError, match="collision_free=True needs labels"):
        loss(cols, None)
    with pytest.raises(
        ValueError, match=r"collision_free=True needs integer class labels .*got torch.float32"
    ):
        loss(cols, labels.float())


def test_hard_detached_is_mnrl_all_negatives_up_to_the_weights_normalisation() -> None:
    """β = α·t: Hard(β, detach_weights=True) is MNRL's hardness_mode="all_negatives" with strength α
    except that hardneg's weights have mean one per anchor: with one anchor and N negatives,
    L_hard = log(1 + c (e^{L_mnrl} − 1)), c = N / Σ_j e^{β s_j}; the gradients stay close."""
    torch.manual_seed(0)
    alpha, scale = 5.0, 20.0
    beta = alpha / scale
    one = [torch.randn(1, 8) for _ in range(6)]  # anchor, positive, 4 mined negatives
    mnrl = MultipleNegativesRankingLoss(
        None, scale=scale, hardness_mode="all_negatives", hardness_strength=alpha
    )
    hard = HardNegativesRankingLoss(None, scale=scale, negatives=negatives.Hard(beta, detach_weights=True))
    l_mnrl = mnrl.compute_loss_from_embeddings(one, None)
    s = scale * cos_sim(one[0], torch.cat(one[2:]))[0]
    c = len(s) / torch.exp(beta * s).sum()
    torch.testing.assert_close(
        hard.compute_loss_from_embeddings(one, None),
        torch.log1p(c * torch.expm1(l_mnrl)),
        rtol=1e-5,
        atol=1e-6,
    )
    batch = [torch.randn(16, 8, requires_grad=True) for _ in range(3)]
    grads = [
        torch.cat(
            [g.flatten() for g in torch.autograd.grad(f.compute_loss_from_embeddings(batch, None), batch)]
        )
        for f in (mnrl, hard)
    ]
    assert torch.nn.functional.cosine_similarity(*grads, dim=0) > 0.999


def _grads(model: torch.nn.Module) -> list[torch.Tensor]:
    return [p.grad.clone() for p in model.parameters() if p.grad is not None]


@pytest.mark.parametrize("dropout", [0.0, 0.3])
def test_cached_gradients_equal_the_uncached_ones(dropout: float) -> None:
    hard = {"scale": 10.0, "negatives": negatives.Hard(beta=1.0)}
    grads = {}
    for name, cls, kwargs in (
        ("plain", HardNegativesRankingLoss, {}),
        ("cached", CachedHardNegativesRankingLoss, {"mini_batch_size": 16}),
    ):
        model = _model(dropout)
        model.train()
        cols = _columns(model, k=1, n=16)
        torch.manual_seed(5)  # the same dropout masks: one mini-batch draws like the full batch
        with _separate_forwards():
            cls(model, **hard, **kwargs)(cols, None).backward()
        grads[name] = _grads(model)
    for a, b in zip(grads["plain"], grads["cached"], strict=True):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
    if dropout == 0.0:  # several mini-batches: exact without randomness
        model = _model()
        cols = _columns(model, k=1, n=16)
        CachedHardNegativesRankingLoss(model, **hard, mini_batch_size=5)(cols, None).backward()
        for a, b in zip(grads["plain"], _grads(model), strict=True):
            torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)


def _separate_forwards():  # type: ignore[no-untyped-def]
    """Per-column forwards (the cached variant's dropout masks are drawn per column)."""
    try:
        from sentence_transformers.base.losses.merged_forward import column_merging_disabled
    except ImportError:
        import contextlib

        return contextlib.nullcontext()
    return column_merging_disabled()


def _static_model(seed: int = 0) -> st.SentenceTransformer:
    tokenizers = pytest.importorskip("tokenizers")
    try:
        from sentence_transformers.sentence_transformer.modules import StaticEmbedding
    except ImportError:
        from sentence_transformers.models import StaticEmbedding
    vocab = {w: i for i, w in enumerate(["[UNK]", *VOCAB])}
    tokenizer = tokenizers.Tokenizer(tokenizers.models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    weights = np.random.default_rng(seed).normal(size=(len(vocab), 8)).astype(np.float32)
    return st.SentenceTransformer(
        modules=[StaticEmbedding(tokenizer, embedding_weights=weights)], device="cpu"
    )


def test_cached_variant_runs_on_static_embedding_and_equals_the_uncached_one() -> None:
    results = []
    for cls, kwargs in (
        (HardNegativesRankingLoss, {}),
        (CachedHardNegativesRankingLoss, {"mini_batch_size": 5, "show_progress_bar": True}),
    ):
        model = _static_model()
        cols = _columns(model, k=1, n=13)
        assert cols[0]["input_ids"].dim() == 1 and "offsets" in cols[0]
        results.append(
            _loss_and_grads(cls(model, negatives=negatives.Hard(0.2), tau_plus=0.05, **kwargs), model, cols)
        )
    _assert_same(results[0], results[1])


def test_a_tiny_model_trains_with_the_trainer_and_its_model_card_renders(tmp_path) -> None:  # type: ignore[no-untyped-def]
    datasets = pytest.importorskip("datasets")
    from sentence_transformers import SentenceTransformerTrainer, SentenceTransformerTrainingArguments

    model = _model()
    anchors = _distinct_sentences(32, 0)
    data = datasets.Dataset.from_dict(
        {
            "anchor": anchors,
            "positive": anchors[:4] * 8,  # duplicates in a batch
            "negative": _distinct_sentences(32, 2),
        }
    )
    before = [p.detach().clone() for p in model.parameters()]
    for loss in (
        HardNegativesRankingLoss(
            model,
            scale=20.0,
            similarity_fct=cos_sim,
            negatives=negatives.Hard(beta=0.05, detach_weights=True),
        ),
        CachedHardNegativesRankingLoss(
            model, scale=20.0, mini_batch_size=4, show_progress_bar=False, tau_plus=0.1
        ),
    ):
        args = SentenceTransformerTrainingArguments(
            output_dir=str(tmp_path / "run"),
            max_steps=3,
            per_device_train_batch_size=8,
            report_to="none",
            save_strategy="no",
            logging_steps=1,
            use_cpu=True,
            seed=0,
        )
        trainer = SentenceTransformerTrainer(model=model, args=args, train_dataset=data, loss=loss)
        result = trainer.train()
        assert np.isfinite(result.training_loss)
    assert any(not torch.equal(a, b.detach()) for a, b in zip(before, model.parameters()))
    model.save(str(tmp_path / "model"))
    card = (tmp_path / "model" / "README.md").read_text(encoding="utf-8")
    assert "loss:CachedHardNegativesRankingLoss" in card
    assert "loss:ContrastiveLoss" not in card
    assert "\\n" not in card
    assert '"name": "Debiased"' in card and "chuang2020debiased" in card


def test_config_dict_is_plain_and_citation_is_bibtex() -> None:
    loss = HardNegativesRankingLoss(
        _model(), scale=10.0, negatives=negatives.Hard(0.5, detach_weights=True), tau_plus=0.1
    )
    config = loss.get_config_dict()
    assert json.loads(json.dumps(config)) == config
    assert config["scale"] == pytest.approx(10.0) and config["similarity_fct"] == "cos_sim"
    assert config["negatives"] == {"name": "Hard", "beta": 0.5, "detach_weights": True, "rescale": False}
    assert config["objective"]["name"] == "Debiased" and config["objective"]["tau_plus"] == pytest.approx(0.1)
    assert "robinson2021contrastive" in loss.citation and "chuang2020debiased" in loss.citation
    assert "robinson2021" not in HardNegativesRankingLoss(_model()).citation
    gathering = HardNegativesRankingLoss(
        _model(), gather_across_devices=True, similarity_fct=dot_score, scale=1.0
    )
    assert gathering.contrastive_loss.gather_distributed and not gathering.contrastive_loss.normalize
    assert gathering.get_config_dict()["similarity_fct"] == "dot_score" and gathering.gather_across_devices


def test_bad_arguments_are_named() -> None:
    model = _model()
    with pytest.raises(TypeError, match=r"loss must be a hardneg\.ContrastiveLoss"):
        HardNegativesRankingLoss(model, loss=torch.nn.MSELoss())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="pass either loss= or scale, negatives, not both"):
        HardNegativesRankingLoss(model, scale=5.0, negatives=negatives.Hard(1.0), loss=ContrastiveLoss())

    def manhattan(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return -torch.cdist(a, b, p=1)

    with pytest.raises(ValueError, match=r"similarity_fct must be .*cos_sim.*got 'manhattan'"):
        HardNegativesRankingLoss(model, similarity_fct=manhattan)
    with pytest.raises(ValueError, match=r"scale must be a number in \[1e-4, 1e4\].*got 0"):
        HardNegativesRankingLoss(model, scale=0)
    with pytest.raises(ValueError, match=r"pass tau_plus to the objective.*tau_plus=0.1"):
        HardNegativesRankingLoss(model, tau_plus=0.1, objective=Debiased(tau_plus=0.1))
    with pytest.raises(ValueError, match=r"directions must be taken from .*\['query_to_nothing'\]"):
        HardNegativesRankingLoss(model, directions=("query_to_doc", "query_to_nothing"))
    with pytest.raises(ValueError, match="directions must include 'query_to_doc'"):
        HardNegativesRankingLoss(model, directions=("doc_to_query",))
    with pytest.raises(ValueError, match=r"partition_mode must be one of .*got 'softmax'"):
        HardNegativesRankingLoss(model, partition_mode="softmax")
    with pytest.raises(ValueError, match="partition_mode='per_direction' needs"):
        HardNegativesRankingLoss(
            model, directions=("query_to_doc", "doc_to_doc"), partition_mode="per_direction"
        )
    with pytest.raises(ValueError, match="gather_across_devices=True supports"):
        HardNegativesRankingLoss(
            model, gather_across_devices=True, directions=("query_to_doc", "doc_to_query")
        )
    with pytest.raises(ValueError, match="mini_batch_size must be an int >= 1, got 0"):
        CachedHardNegativesRankingLoss(model, mini_batch_size=0)
    with pytest.raises(ValueError, match="at least two columns"):
        HardNegativesRankingLoss(model)(_columns(model)[:1], None)


# -- anchors without a valid negative: MNRL's value ------------------------------------------------
def test_a_last_batch_of_one_row_trains_to_the_end_with_the_trainer(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """9 rows at batch size 8 with sentence-transformers' default dataloader_drop_last=False: the
    last batch has one row, whose anchor has no negative (MNRL: 0); both losses train through it."""
    datasets = pytest.importorskip("datasets")
    from sentence_transformers import SentenceTransformerTrainer, SentenceTransformerTrainingArguments

    data = datasets.Dataset.from_dict(
        {"anchor": _distinct_sentences(9, 0), "positive": _distinct_sentences(9, 1)}
    )
    for cls, kwargs in (
        (HardNegativesRankingLoss, {"negatives": negatives.Hard(beta=0.05, detach_weights=True)}),
        (CachedHardNegativesRankingLoss, {"mini_batch_size": 4, "tau_plus": 0.1}),
    ):
        model = _model()
        args = SentenceTransformerTrainingArguments(
            output_dir=str(tmp_path / cls.__name__), num_train_epochs=1, per_device_train_batch_size=8,
            report_to="none", save_strategy="no", use_cpu=True, seed=0,
        )
        assert args.dataloader_drop_last is False
        loss = cls(model, **kwargs)
        result = SentenceTransformerTrainer(model=model, args=args, train_dataset=data, loss=loss).train()
        assert result.global_step == 2 and np.isfinite(result.training_loss)


def _one_row_columns(model: st.SentenceTransformer, anchors: list[str], positives: list[str]) -> list:
    return [_tokenize(model, anchors), _tokenize(model, positives)]


@pytest.mark.parametrize("cls", [HardNegativesRankingLoss, CachedHardNegativesRankingLoss])
def test_one_row_and_identical_rows_give_mnrl_s_values(cls) -> None:  # type: ignore[no-untyped-def]
    """One row: MNRL's 0, with a zero gradient that backward reaches; two identical rows without
    duplicate masking: MNRL's ln 2; with masking each anchor's duplicate is not a negative, so
    its softmax holds its positive alone: 0, MNRL's value on the batch without the duplicate."""
    model = _model()
    one = _one_row_columns(model, ["red cat runs"], ["blue dog sits"])
    same = _one_row_columns(model, ["red cat runs"] * 2, ["blue dog sits"] * 2)
    mnrl = MultipleNegativesRankingLoss(model)
    for kwargs in ({}, {"negatives": negatives.Hard(beta=1.0)}, {"tau_plus": 0.1}):
        value, grads = _loss_and_grads(cls(model, **kwargs), model, one)
        torch.testing.assert_close(value, mnrl(one, None).detach(), rtol=0, atol=1e-7)
        assert value == 0.0 and grads and all(bool((g == 0).all()) for g in grads)
        unmasked = cls(model, mask_duplicates=False, **kwargs)(same, None)
        torch.testing.assert_close(unmasked, mnrl(same, None), rtol=1e-6, atol=1e-6)
        torch.testing.assert_close(unmasked.detach(), torch.tensor(math.log(2.0)), rtol=1e-6, atol=1e-6)
        assert float(cls(model, **kwargs)(same, None).detach()) == 0.0


def test_a_batch_with_some_anchors_without_negatives_is_the_mean_over_all_anchors() -> None:
    """Anchor 0 (its positive is row 1's, its text is row 2's positive) has no valid negative and
    counts 0; the others their InfoNCE loss; the mean is over the 3 anchors (float64 re-derivation
    from the embeddings; scale 2, so that every candidate weighs). The same in per_direction
    directions and with collision-free labels; in joint directions a 1-row batch gives 0."""
    model, scale = _model(), 2.0
    anchors, positives = ["red cat", "blue dog", "green car"], ["small bus", "small bus", "red cat"]
    cols = _one_row_columns(model, anchors, positives)
    with torch.no_grad():
        a, p = (model(dict(c))["sentence_embedding"].double() for c in cols)
    a, p = torch.nn.functional.normalize(a, dim=1), torch.nn.functional.normalize(p, dim=1)
    s = scale * a @ p.T

    def mean_infonce(logits: torch.Tensor, valid: list[list[bool]]) -> torch.Tensor:
        out = []
        for i in range(3):
            negs = [float(logits[i, j]) for j in range(3) if valid[i][j]]
            pos = float(logits[i, i])
            out.append(math.log(sum(math.exp(x) for x in [pos, *negs])) - pos if negs else 0.0)
        return torch.tensor(sum(out) / 3, dtype=torch.float64)

    def check(loss: torch.nn.Module, expected: torch.Tensor, labels: torch.Tensor | None = None) -> None:
        torch.testing.assert_close(loss(cols, labels).detach().double(), expected, rtol=1e-5, atol=1e-6)

    q2d = [[False, False, False], [False, False, True], [True, True, False]]
    check(HardNegativesRankingLoss(model, scale=scale), mean_infonce(s, q2d))
    # doc_to_query: positive i against the anchors, anchor j masked where its text is row i's
    # anchor or positive (row 2's positive is row 0's anchor)
    d2q = [[False, True, True], [True, False, True], [False, True, False]]
    per_direction = HardNegativesRankingLoss(
        model, scale=scale, directions=("query_to_doc", "doc_to_query"), partition_mode="per_direction"
    )
    check(per_direction, (mean_infonce(s, q2d) + mean_infonce(s.T, d2q)) / 2)
    labelled = HardNegativesRankingLoss(model, scale=scale, collision_free=True, mask_duplicates=False)
    by_label = [[False, True, False], [True, False, True], [False, True, False]]  # labels 0, 1, 0
    check(labelled, mean_infonce(s, by_label), torch.tensor([0, 1, 0]))
    joint = HardNegativesRankingLoss(model, directions=("query_to_doc", "query_to_query", "doc_to_query"))
    assert float(joint(_one_row_columns(model, anchors[:1], positives[:1]), None).detach()) == 0.0


@pytest.mark.parametrize("directions", [("query_to_doc",), ("query_to_doc", "query_to_query")])
def test_without_gathering_under_ddp_it_warns_naming_gather_across_devices(monkeypatch, directions) -> None:  # type: ignore[no-untyped-def]
    """The core's once-per-process warning (a process group of 2 simulated), in sentence-transformers'
    terms, at the user's line; the joint directions (which score without the core's layouts) too."""
    from hardneg import distributed

    monkeypatch.setattr(distributed, "is_distributed", lambda group=None: True)
    monkeypatch.setattr(distributed, "world_size", lambda group=None: 2)
    monkeypatch.setattr(distributed, "_warned_local", False)
    loss = HardNegativesRankingLoss(None, directions=directions)
    columns = [torch.randn(4, 8), torch.randn(4, 8)]
    expected = r"process group of 2 processes .*gather_across_devices=True"
    with pytest.warns(UserWarning, match=expected) as caught:
        loss.compute_loss_from_embeddings(columns)
        loss.compute_loss_from_embeddings(columns)
    assert [w.filename for w in caught if "without gathering" in str(w.message)] == [__file__]
