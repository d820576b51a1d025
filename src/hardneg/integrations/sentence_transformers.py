"""hardneg's negative distributions as sentence-transformers losses, with MNRL's arguments.

:class:`HardNegativesRankingLoss` is used like sentence-transformers' ``MultipleNegativesRankingLoss``
(MNRL; Henderson et al., 2017; van den Oord et al., 2018) and takes its arguments under its names
and defaults: ``scale=20.0``, ``similarity_fct=cos_sim`` (or ``dot_score``),
``gather_across_devices=False``, ``directions=("query_to_doc",)``, ``partition_mode="joint"``;
the cached variant also ``mini_batch_size=32`` and ``show_progress_bar=False``. The input columns
are (anchor, positive, optional mined negative 1, …, negative k); every anchor a_i is scored against
the candidate pool of all positives and all mined negatives of the batch; its own positive p_i is
the positive, every other candidate a negative. hardneg's arguments choose the negative term:
``negatives=`` — hard (``Hard(β)``, Robinson et al., ICLR 2021), entropic OT (Jiang, Ishwar,
Aeron), K-subsampled (Ash et al., AISTATS 2022) —, ``tau_plus=`` — the debiased loss of Chuang et
al. (NeurIPS 2020), i.e. the "debiased MNRL" proposed to sentence-transformers (its pull request
3148) —, ``objective=`` and ``collision_free=``; or a whole :class:`~hardneg.ContrastiveLoss` as
``loss=`` (then none of the others). With the defaults (uniform negatives, InfoNCE) and a batch
without duplicates it equals MNRL: cosine × ``scale`` is ``⟨a/‖a‖, c/‖c‖⟩ / t`` with ``t = 1 / scale``.

What MNRL cannot do: **in-batch duplicates are masked** (``mask_duplicates=True``): a candidate
whose tokenised text is that of the anchor or of the anchor's positive is not a negative for that
anchor (what sentence-transformers' ``NO_DUPLICATES`` batch sampler works around). With
``collision_free=True``, the dataset's ``label`` column (which the trainer passes as ``labels``)
gives oracle negatives: a positive of another row with the anchor's label is not a negative
(the mined negative columns are never masked by label).

**An anchor without a valid negative** (a batch of one row, as the trainer's last batch with
``dataloader_drop_last=False``; a batch of duplicates; all other rows of its label) contributes
MNRL's value for a softmax that holds its positive alone, ``−log(e^{s⁺} / e^{s⁺}) = 0``, with a
zero gradient, and the mean is over all anchors, as MNRL's. (MNRL has no duplicate masking: on
a batch of two identical rows it gives ``ln 2``, as this loss does with ``mask_duplicates=False``;
with the default masking each anchor's duplicate is not a negative, so the value is 0, MNRL's on
the batch without the duplicate.) :class:`~hardneg.ContrastiveLoss` itself refuses such an anchor
(docs/loss_api.md, "Validation").

MNRL's ``hardness_mode="all_negatives"`` with ``hardness_strength=α`` adds ``α·sg(cos)`` to every
negative logit ``scale·cos``: a negative's softmax weight becomes ``e^{α cos} e^{scale·cos}``.
``negatives=Hard(β, detach_weights=True)`` weighs it by ``e^{β s}`` on the temperature-scaled
``s = scale·cos``, normalised to mean one over the anchor's N negatives (Robinson et al.'s
importance weights): with ``β = α·t = α / scale`` the weights are the same up to that per-anchor
constant ``c = N / Σ_j e^{β s_j}``, i.e. per anchor ``L_hard = log(1 + c (e^{L_MNRL} − 1))``, and the
gradients are nearly parallel (equal where ``c = 1``).
For text, the default ``Hard`` (weights not detached, as in the authors' code) trained worse than
MNRL in a practitioner's comparison and below the detached weights in ours
(``benchmarks/st_detach_weights.py``, docs/api/integrations.md): use ``Hard(β, detach_weights=True)``
for sentence embeddings.

The wrapped loss is the attribute ``contrastive_loss`` (a ``loss`` attribute would make
sentence-transformers' model card list it as a second loss, tagged ``loss:ContrastiveLoss``).

:class:`CachedHardNegativesRankingLoss` is the same loss with gradient caching (GradCache; Gao,
Zhang, Han, Callan, RepL4NLP 2021): embeddings are computed in mini-batches without activations,
the loss and its gradient with respect to the embeddings on the whole batch, and the mini-batches
are re-run with gradients when the trainer calls ``backward`` (so gradient scaling and
accumulation apply as for any loss), replaying each mini-batch's random state (dropout). Its
gradients equal the uncached loss's. It runs on any module, ``StaticEmbedding`` included (whose
flat token stream is split per row by its ``offsets``).

>>> import numpy as np
>>> from sentence_transformers import SentenceTransformer
>>> try:
...     from sentence_transformers.sentence_transformer.modules import Pooling, WordEmbeddings
...     from sentence_transformers.sentence_transformer.modules.tokenizer import WhitespaceTokenizer
... except ImportError:  # sentence-transformers before the modules moved
...     from sentence_transformers.models import Pooling, WordEmbeddings
...     from sentence_transformers.models.tokenizer import WhitespaceTokenizer
>>> from hardneg import negatives
>>> from hardneg.integrations.sentence_transformers import HardNegativesRankingLoss
>>> vocab = ["red", "blue", "cat", "dog", "runs", "sits"]
>>> words = WordEmbeddings(tokenizer=WhitespaceTokenizer(vocab, stop_words=[]),
...                        embedding_weights=np.random.default_rng(0).normal(size=(7, 8)).astype("float32"))
>>> model = SentenceTransformer(modules=[words, Pooling(8, pooling_mode="mean")], device="cpu")
>>> hard = negatives.Hard(beta=0.05, detach_weights=True)
>>> loss = HardNegativesRankingLoss(model, scale=20.0, negatives=hard)
>>> tokenize = getattr(model, "preprocess", model.tokenize)  # preprocess: newer sentence-transformers
>>> columns = [tokenize(["red cat", "blue dog"]), tokenize(["red cat runs", "blue dog sits"])]
>>> loss(columns, None).shape
torch.Size([])
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from functools import partial
from itertools import pairwise
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

try:
    from sentence_transformers import util as _st_util
except ImportError as err:  # pragma: no cover - depends on the installation
    raise ImportError(
        "hardneg.integrations.sentence_transformers needs sentence-transformers: "
        'pip install "hardneg[sentence-transformers]"'
    ) from err

try:  # one merged forward for the candidate columns (sentence-transformers >= 6)
    from sentence_transformers.base.losses.merged_forward import embed_columns as _st_embed_columns
except ImportError:  # pragma: no cover - older versions embed each column separately
    _st_embed_columns = None  # type: ignore[assignment]
try:  # sentence-transformers' own mini-batch slicing (padded, flattened and VLM batches)
    from sentence_transformers.base.losses.gradcache import _create_minibatch as _st_create_minibatch
except ImportError:  # pragma: no cover - older versions: rows of every tensor
    _st_create_minibatch = None  # type: ignore[assignment]

from hardneg import _warnings, distributed
from hardneg.gradcache import CachedPass, chunk_batch, embed_without_graph
from hardneg.loss import ContrastiveLoss
from hardneg.negatives import NegativeDistribution
from hardneg.objectives import Objective
from hardneg.reduction import reduce
from hardneg.scores import Scores, same_label

# the trainers that call these losses (sentence-transformers' extends transformers'): warnings
# point at the user's line
_warnings.skip_package("sentence_transformers")
_warnings.skip_package("transformers")

__all__ = ["CachedHardNegativesRankingLoss", "HardNegativesRankingLoss"]

SIMILARITIES = {"cos_sim": True, "dot_score": False}
"""The accepted ``similarity_fct`` names (sentence_transformers.util) → whether embeddings are normalised."""
DIRECTIONS = ("query_to_doc", "query_to_query", "doc_to_query", "doc_to_doc")
PARTITION_MODES = ("joint", "per_direction")
_MNRL_DEFAULTS: dict[str, object] = {
    "scale": 20.0,
    "similarity_fct": "cos_sim",
    "gather_across_devices": False,
}
_HARDNEG_DEFAULTS: dict[str, object] = {
    "negatives": None,
    "tau_plus": 0.0,
    "objective": None,
    "collision_free": False,
}


def similarity_name(similarity_fct: Callable[[Tensor, Tensor], Tensor]) -> str:
    """``"cos_sim"`` or ``"dot_score"`` for sentence-transformers' functions; ``ValueError`` otherwise."""
    for name in SIMILARITIES:
        if similarity_fct is getattr(_st_util, name, None):
            return name
    got = getattr(similarity_fct, "__name__", type(similarity_fct).__name__)
    raise ValueError(
        "similarity_fct must be sentence_transformers.util.cos_sim or sentence_transformers.util.dot_score, "
        f"got {got!r}"
    )


def _check_loss(loss: object) -> ContrastiveLoss:
    if not isinstance(loss, ContrastiveLoss):
        raise TypeError(f"loss must be a hardneg.ContrastiveLoss, got {type(loss).__name__}")
    return loss


def build_loss(
    loss: ContrastiveLoss | None,
    *,
    scale: float,
    similarity: str,
    gather_across_devices: bool,
    negatives: NegativeDistribution | None,
    tau_plus: float,
    objective: Objective | None,
    collision_free: bool,
) -> ContrastiveLoss:
    """The wrapped :class:`~hardneg.ContrastiveLoss`: ``loss`` as given (no other setting may then
    differ from its default), or one built from MNRL's and hardneg's arguments."""
    given = {
        "scale": scale,
        "similarity_fct": similarity,
        "gather_across_devices": gather_across_devices,
        "negatives": negatives,
        "tau_plus": tau_plus,
        "objective": objective,
        "collision_free": collision_free,
    }
    if loss is not None:
        defaults = {**_MNRL_DEFAULTS, **_HARDNEG_DEFAULTS}
        conflicts = [k for k, v in given.items() if v is not defaults[k] and v != defaults[k]]
        if conflicts:
            raise ValueError(
                f"pass either loss= or {', '.join(conflicts)}, not both: loss= already sets the temperature "
                "(1 / scale), the similarity (normalize), gathering, the negatives and the objective"
            )
        return _check_loss(loss)
    if isinstance(scale, bool) or not isinstance(scale, (int, float)) or not 1e-4 <= scale <= 1e4:
        raise ValueError(f"scale must be a number in [1e-4, 1e4] (1 / temperature), got {scale!r}")
    if objective is not None and tau_plus != 0.0:
        raise ValueError(
            f"pass tau_plus to the objective, not next to it: got objective={type(objective).__name__} "
            f"and tau_plus={tau_plus!r}"
        )
    return ContrastiveLoss(
        temperature=1.0 / scale,
        normalize=SIMILARITIES[similarity],
        negatives=negatives,
        tau_plus=tau_plus,
        objective=objective,
        collision_free=collision_free,
        gather_distributed=bool(gather_across_devices),
    )


def check_directions(directions: object, partition_mode: object) -> tuple[str, ...]:
    """MNRL's ``directions`` and ``partition_mode``, checked (``ValueError`` naming the argument)."""
    if isinstance(directions, str) or not isinstance(directions, Sequence) or not directions:
        raise ValueError(f"directions must be a non-empty tuple of {DIRECTIONS}, got {directions!r}")
    unknown = [d for d in directions if d not in DIRECTIONS]
    if unknown:
        raise ValueError(f"directions must be taken from {DIRECTIONS}, got {unknown!r}")
    if "query_to_doc" not in directions:
        raise ValueError(
            f"directions must include 'query_to_doc' (it holds the positive pair), got {directions!r}"
        )
    if partition_mode not in PARTITION_MODES:
        raise ValueError(f"partition_mode must be one of {PARTITION_MODES}, got {partition_mode!r}")
    if partition_mode == "per_direction" and set(directions) & {"query_to_query", "doc_to_doc"}:
        raise ValueError(
            "partition_mode='per_direction' needs every direction to hold the positive pair: use it only "
            "with "
            f"'query_to_doc' and 'doc_to_query', got directions={tuple(directions)!r}"
        )
    return tuple(dict.fromkeys(directions))


# -- text identity of the rows --------------------------------------------------------------------
def _row_keys(features: Mapping[str, Any]) -> list[bytes] | None:
    """One key per row of a tokenised column: its token ids (padding dropped; StaticEmbedding's flat
    stream split by ``offsets``), or the bytes of all its per-row tensors; ``None``: no tensors."""
    ids = features.get("input_ids")
    if isinstance(ids, Tensor) and ids.dim() == 1 and isinstance(features.get("offsets"), Tensor):
        bounds = [*features["offsets"].tolist(), ids.shape[0]]
        flat = ids.cpu()
        return [flat[a:b].numpy().tobytes() for a, b in pairwise(bounds)]
    if isinstance(ids, Tensor) and ids.dim() == 2:
        mask = features.get("attention_mask")
        rows = ids.cpu()
        if isinstance(mask, Tensor) and mask.shape == ids.shape:
            keep = mask.cpu().bool()
            return [row[m].numpy().tobytes() for row, m in zip(rows, keep)]
        return [row.numpy().tobytes() for row in rows]
    tensors = [v.cpu() for v in features.values() if isinstance(v, Tensor) and v.dim() >= 1]
    if not tensors or len({t.shape[0] for t in tensors}) != 1:
        return None
    return [b"".join(t[i].numpy().tobytes() for t in tensors) for i in range(tensors[0].shape[0])]


def text_ids(features_list: Sequence[Mapping[str, Any]], device: torch.device) -> list[Tensor] | None:
    """Per column, an int64 (B,) tensor: equal ids ⇔ equal tokenised text, across all columns."""
    ids: dict[bytes, int] = {}
    out = []
    for features in features_list:
        keys = _row_keys(features)
        if keys is None:
            return None
        out.append(
            torch.tensor([ids.setdefault(k, len(ids)) for k in keys], dtype=torch.int64, device=device)
        )
    return out


def _not_same_text(row_ids: Sequence[Tensor], col_ids: Tensor) -> Tensor:
    """(R, C) bool: True where column ``j``'s text differs from every one of row ``i``'s texts."""
    valid = torch.ones(row_ids[0].shape[0], col_ids.shape[0], dtype=torch.bool, device=col_ids.device)
    for ids in row_ids:
        valid &= ids[:, None] != col_ids[None, :]
    return valid


def _not_own(b: int, n: int, device: torch.device) -> Tensor:
    """(B, n·B) bool: False at each row's own columns (column ``j`` with ``j mod B == i``)."""
    own = torch.eye(b, dtype=torch.bool, device=device).repeat(1, n)
    return ~own


def _embed_columns(model: nn.Module, features_list: list[dict[str, Any]]) -> list[Tensor]:
    """The columns' ``sentence_embedding``: the candidate columns in one merged forward where the
    installed sentence-transformers can (its ``embed_columns``), else one forward per column."""
    if _st_embed_columns is not None:
        return list(_st_embed_columns(model, features_list))
    return [model(f)["sentence_embedding"] for f in features_list]


class HardNegativesRankingLoss(nn.Module):
    """MNRL's layout and arguments with hardneg's negative distributions; see the module.

    Args:
        model: the ``SentenceTransformer`` being trained.
        scale: MNRL's ``scale`` = 1 / temperature (default 20.0).
        similarity_fct: ``sentence_transformers.util.cos_sim`` (default) or ``dot_score``.
        gather_across_devices: use the candidates of all processes (the loss's ``gather_distributed``).
        directions: MNRL's interaction terms, a tuple of ``"query_to_doc"`` (required),
            ``"query_to_query"``, ``"doc_to_query"``, ``"doc_to_doc"``.
        partition_mode: ``"joint"`` (one normalisation over all directions' negatives; the
            positive pair is counted once, where MNRL counts it once per direction that holds it)
            or ``"per_direction"`` (the mean of the directions' losses; equals MNRL's).
        negatives: a :class:`~hardneg.negatives.NegativeDistribution` (default uniform); for text
            ``Hard(β, detach_weights=True)`` (see the module).
        tau_plus: class prior τ⁺ of the debiased loss (Chuang et al., NeurIPS 2020; "debiased MNRL").
        objective: an :class:`~hardneg.objectives.Objective` (default InfoNCE, or Debiased with τ⁺).
        collision_free: mask the positives of other rows sharing the anchor's label (needs the
            dataset's ``label`` column, passed by the trainer as ``labels``).
        mask_duplicates: mask candidates with the anchor's or its positive's tokenised text.
        loss: a whole :class:`~hardneg.ContrastiveLoss` instead of ``scale``, ``similarity_fct``,
            ``gather_across_devices``, ``negatives``, ``tau_plus``, ``objective``, ``collision_free``.
    """

    def __init__(
        self,
        model: nn.Module,
        scale: float = 20.0,
        similarity_fct: Callable[[Tensor, Tensor], Tensor] = _st_util.cos_sim,
        gather_across_devices: bool = False,
        directions: tuple[str, ...] = ("query_to_doc",),
        partition_mode: str = "joint",
        *,
        negatives: NegativeDistribution | None = None,
        tau_plus: float = 0.0,
        objective: Objective | None = None,
        collision_free: bool = False,
        mask_duplicates: bool = True,
        loss: ContrastiveLoss | None = None,
    ) -> None:
        super().__init__()
        self.model = model
        self.contrastive_loss = build_loss(
            loss,
            scale=scale,
            similarity=similarity_name(similarity_fct),
            gather_across_devices=gather_across_devices,
            negatives=negatives,
            tau_plus=tau_plus,
            objective=objective,
            collision_free=collision_free,
        )
        self.directions = check_directions(directions, partition_mode)
        self.partition_mode = str(partition_mode)
        if (
            self.contrastive_loss.gather_distributed
            and self.partition_mode == "joint"
            and len(self.directions) > 1
        ):
            raise ValueError(
                "gather_across_devices=True supports directions=('query_to_doc',) "
                "or partition_mode='per_direction', "
                f"got directions={self.directions!r} with partition_mode='joint'"
            )
        self.mask_duplicates = bool(mask_duplicates)

    @property
    def scale(self) -> float:
        return 1.0 / self.contrastive_loss.temperature

    @property
    def temperature(self) -> float:
        return self.contrastive_loss.temperature

    @property
    def similarity_fct(self) -> Callable[[Tensor, Tensor], Tensor]:
        fct: Callable[[Tensor, Tensor], Tensor] = (
            _st_util.cos_sim if self.contrastive_loss.normalize else _st_util.dot_score
        )
        return fct

    @property
    def gather_across_devices(self) -> bool:
        return self.contrastive_loss.gather_distributed

    def forward(
        self, sentence_features: Iterable[Mapping[str, Tensor]], labels: Tensor | None = None
    ) -> Tensor:
        """``sentence_features``: the tokenised columns (anchor, positive, negatives…) → scalar."""
        features = [dict(f) for f in sentence_features]
        ids = self._text_ids(features)
        return self.compute_loss_from_embeddings(_embed_columns(self.model, features), labels, text_ids=ids)

    def _text_ids(self, features: list[dict[str, Any]]) -> list[Tensor] | None:
        if not self.mask_duplicates or not features:
            return None
        device = next((v.device for v in features[0].values() if isinstance(v, Tensor)), torch.device("cpu"))
        return text_ids(features, device)

    def compute_loss_from_embeddings(
        self, embeddings: list[Tensor], labels: Tensor | None = None, *, text_ids: list[Tensor] | None = None
    ) -> Tensor:
        """The loss from the columns' embeddings: anchors (B, d), positives (B, d), negatives (B, d)…;
        ``text_ids``: per column (B,) ids of the rows' texts (equal ids are duplicates)."""
        if len(embeddings) < 2:
            raise ValueError(
                f"the inputs must have at least two columns (anchor, positive), got {len(embeddings)}"
            )
        if self.contrastive_loss.collision_free:
            labels = _integer_labels(labels, int(embeddings[0].shape[0]))
        if not self.contrastive_loss.gather_distributed:
            distributed.warn_local_negatives(self.contrastive_loss.process_group, remedy=_GATHER_REMEDY)
        if len(self.directions) == 1:
            return self._query_to_doc(embeddings, labels, text_ids)
        if self.partition_mode == "per_direction":
            return 0.5 * (
                self._query_to_doc(embeddings, labels, text_ids)
                + self._doc_to_query(embeddings, labels, text_ids)
            )
        scores = self._joint_scores(embeddings, labels, text_ids)
        valid = _valid(scores.mask, scores.anchor_labels, scores.candidate_labels)
        if self._every_anchor_has_a_negative(valid):
            return self.contrastive_loss.compute(scores).loss
        return self._with_lone_anchors(valid, embeddings, lambda rows: self.contrastive_loss.compute(
            _anchor_rows(scores, rows)).per_anchor)

    def _every_anchor_has_a_negative(self, valid: Tensor) -> bool:
        """Whether every row of ``valid`` (the anchors' valid negatives among this process's
        candidates) holds one; always when gathering across processes (the other ranks'
        candidates are negatives too)."""
        loss = self.contrastive_loss
        if loss.gather_distributed and distributed.is_distributed(loss.process_group):
            return True
        return bool(valid.any(dim=1).all())

    def _with_lone_anchors(
        self, valid: Tensor, embeddings: list[Tensor], per_anchor: Callable[[Tensor], Tensor]
    ) -> Tensor:
        """The loss of a batch in which some anchors have no valid negative (a batch of one row, a
        batch of duplicates): MNRL's value for them, ``−log(e^{s⁺} / e^{s⁺}) = 0`` with a zero
        gradient, and ``per_anchor(rows)`` (their per-anchor losses) for the anchors ``rows`` that
        have one; reduced over all anchors, as MNRL takes the mean over the batch."""
        rows = valid.any(dim=1)
        losses = _zeros_on_graph(embeddings, int(rows.shape[0]))
        if bool(rows.any()):
            losses = losses.index_put((rows.nonzero()[:, 0],), per_anchor(rows).to(losses.dtype))
        return reduce(losses, self.contrastive_loss.reduction)

    def _pair(
        self,
        embeddings: list[Tensor],
        anchors: Tensor,
        positives: Tensor,
        candidates: Tensor,
        mask: Tensor,
        anchor_labels: Tensor | None,
        candidate_labels: Tensor | None,
    ) -> Tensor:
        """``contrastive_loss.pair`` with MNRL's value for the anchors without a valid negative."""
        loss = self.contrastive_loss
        valid = _valid(mask, anchor_labels, candidate_labels)
        if self._every_anchor_has_a_negative(valid):
            return loss.pair(anchors, positives, candidates, mask=mask, anchor_labels=anchor_labels,
                             candidate_labels=candidate_labels)

        def per_anchor(rows: Tensor) -> Tensor:
            return loss.pair(
                anchors[rows], positives[rows], candidates, mask=mask[rows],
                anchor_labels=None if anchor_labels is None else anchor_labels[rows],
                candidate_labels=candidate_labels, details=True,
            ).per_anchor

        return self._with_lone_anchors(valid, embeddings, per_anchor)

    def _candidate_labels(self, labels: Tensor | None, columns: int) -> Tensor | None:
        """The candidates' labels: each positive its row's; mined negatives -1 (unknown: never equal)."""
        if labels is None or not self.contrastive_loss.collision_free:
            return None
        fillers = torch.full((labels.shape[0] * (columns - 2),), -1, dtype=labels.dtype, device=labels.device)
        return torch.cat([labels, fillers])

    def _query_to_doc(
        self, embeddings: list[Tensor], labels: Tensor | None, ids: list[Tensor] | None
    ) -> Tensor:
        anchors, positives = embeddings[0], embeddings[1]
        candidates = torch.cat(embeddings[1:], dim=0)
        b = anchors.shape[0]
        mask = torch.ones(b, candidates.shape[0], dtype=torch.bool, device=anchors.device)
        mask[torch.arange(b), torch.arange(b)] = False  # an anchor's own positive is not a negative
        if ids is not None:
            mask &= _not_same_text(ids[:2], torch.cat(ids[1:]))
        return self._pair(
            embeddings,
            anchors,
            positives,
            candidates,
            mask,
            None if labels is None or not self.contrastive_loss.collision_free else labels,
            self._candidate_labels(labels, len(embeddings)),
        )

    def _doc_to_query(
        self, embeddings: list[Tensor], labels: Tensor | None, ids: list[Tensor] | None
    ) -> Tensor:
        """MNRL's ``doc_to_query``: each positive against all anchors, its own anchor the positive."""
        anchors, positives = embeddings[0], embeddings[1]
        b = anchors.shape[0]
        mask = ~torch.eye(b, dtype=torch.bool, device=anchors.device)
        if ids is not None:
            mask &= _not_same_text(ids[:2], ids[0])
        own = labels if labels is not None and self.contrastive_loss.collision_free else None
        return self._pair(embeddings, positives, anchors, anchors, mask, own, own)

    def _joint_scores(
        self, embeddings: list[Tensor], labels: Tensor | None, ids: list[Tensor] | None
    ) -> Scores:
        """One candidate row per anchor over all of ``directions`` (MNRL's ``partition_mode="joint"``)."""
        t, n_docs = self.contrastive_loss.temperature, len(embeddings) - 1
        z = [F.normalize(e, dim=-1) if self.contrastive_loss.normalize else e for e in embeddings]
        q, p, docs = z[0], z[1], torch.cat(z[1:])
        b, device = q.shape[0], q.device
        ids = ids if ids is not None else [torch.arange(b, device=device) + i * b for i in range(len(z))]
        doc_ids = torch.cat(ids[1:])
        not_same = partial(_not_same_text, ids[:2])
        parts: dict[str, tuple[Tensor, Tensor, Tensor]] = {}  # direction → logits, mask, candidates
        q2d_mask = torch.ones(b, b * n_docs, dtype=torch.bool, device=device)
        q2d_mask[torch.arange(b), torch.arange(b)] = False
        parts["query_to_doc"] = (q @ docs.T / t, q2d_mask & not_same(doc_ids), docs)
        if "query_to_query" in self.directions:
            parts["query_to_query"] = (q @ q.T / t, _not_own(b, 1, device) & not_same(ids[0]), q)
        if "doc_to_query" in self.directions:
            parts["doc_to_query"] = (p @ q.T / t, _not_own(b, 1, device) & not_same(ids[0]), q)
        if "doc_to_doc" in self.directions:
            parts["doc_to_doc"] = (p @ docs.T / t, _not_own(b, n_docs, device) & not_same(doc_ids), docs)
        terms = [parts[d] for d in DIRECTIONS if d in parts]
        labelled = labels is not None and self.contrastive_loss.collision_free
        cand_labels = None
        if labelled:
            assert labels is not None
            per = {
                "query_to_doc": self._candidate_labels(labels, len(z)),
                "query_to_query": labels,
                "doc_to_query": labels,
                "doc_to_doc": self._candidate_labels(labels, len(z)),
            }
            cand_labels = torch.cat([per[d] for d in DIRECTIONS if d in parts])  # type: ignore[misc]
        return Scores(
            positive=(q * p).sum(dim=1) / t,
            logits=torch.cat([logits for logits, _, _ in terms], dim=1),
            mask=torch.cat([mask for _, mask, _ in terms], dim=1),
            temperature=t,
            anchor_norms=embeddings[0].detach().norm(dim=1),
            positive_norms=embeddings[1].detach().norm(dim=1),
            candidate_norms=torch.cat([c.detach().norm(dim=1) for _, _, c in terms]),
            anchor_labels=labels if labelled else None,
            candidate_labels=cand_labels,
        )

    def get_config_dict(self) -> dict[str, Any]:
        """For the model card: plain values (MNRL's names, then hardneg's negatives and objective)."""
        return {
            "scale": self.scale,
            "similarity_fct": "cos_sim" if self.contrastive_loss.normalize else "dot_score",
            "gather_across_devices": self.gather_across_devices,
            "directions": list(self.directions),
            "partition_mode": self.partition_mode,
            "mask_duplicates": self.mask_duplicates,
            "negatives": describe(self.contrastive_loss.negatives),
            "objective": describe(self.contrastive_loss.objective),
        }

    @property
    def citation(self) -> str:
        """The BibTeX sentence-transformers writes into the model card: van den Oord, Li, Vinyals
        (InfoNCE, 2018); with hard negatives Robinson, Chuang, Sra, Jegelka (ICLR 2021); with a
        debiased objective Chuang, Robinson, Lin, Torralba, Jegelka (NeurIPS 2020)."""
        entries = [_OORD]
        config = self.get_config_dict()
        if "Hard" in repr(config["negatives"]):
            entries.append(_ROBINSON)
        if config["objective"].get("name") == "Debiased":
            entries.append(_CHUANG)
        return "\n".join(entries)


_GATHER_REMEDY = "pass gather_across_devices=True to the loss to score every rank's candidates"


def _valid(mask: Tensor, anchor_labels: Tensor | None, candidate_labels: Tensor | None) -> Tensor:
    """The valid negatives: ``mask``, less the candidates sharing the anchor's label when labels are
    given (:func:`~hardneg.scores.same_label`, as :class:`~hardneg.negatives.CollisionFree` removes)."""
    if anchor_labels is None or candidate_labels is None:
        return mask
    return mask & ~same_label(anchor_labels, candidate_labels)


def _zeros_on_graph(embeddings: Sequence[Tensor], rows: int) -> Tensor:
    """(rows,) zeros in the loss's dtype that depend on every column's embeddings with a zero
    gradient, so that ``backward`` (and the cached loss's ``autograd.grad``) runs on a batch
    whose anchors all lack a negative, as it does on MNRL's 0."""
    dtype = torch.promote_types(embeddings[0].dtype, torch.float32)
    tie = torch.stack([e.sum().to(dtype) for e in embeddings]).sum() * 0.0
    return torch.zeros(rows, dtype=dtype, device=embeddings[0].device) + tie


def _anchor_rows(scores: Scores, rows: Tensor) -> Scores:
    """The scores of the anchors ``rows`` (a (A,) bool mask), the candidates unchanged."""
    return replace(
        scores,
        positive=scores.positive[rows],
        logits=scores.logits[rows],
        mask=scores.mask[rows],
        anchor_norms=scores.anchor_norms[rows],
        positive_norms=scores.positive_norms[rows],
        anchor_labels=None if scores.anchor_labels is None else scores.anchor_labels[rows],
        valid_counts=None,
    )


def _integer_labels(labels: Tensor | None, rows: int) -> Tensor:
    """The ``label`` column for ``collision_free``: integers, one per row (``ValueError`` otherwise)."""
    if labels is None:
        raise ValueError(
            "collision_free=True needs labels: give the dataset a 'label' column, got labels=None"
        )
    if (
        not isinstance(labels, Tensor)
        or labels.is_floating_point()
        or labels.is_complex()
        or labels.dtype == torch.bool
    ):
        got = labels.dtype if isinstance(labels, Tensor) else type(labels).__name__
        raise ValueError(f"collision_free=True needs integer class labels in the 'label' column, got {got}")
    if labels.shape != (rows,):
        raise ValueError(f"labels must have shape ({rows},), one per row, got {tuple(labels.shape)}")
    return labels.to(torch.int64)


def _plain(value: object) -> object:
    """A JSON-friendly value: numbers, strings, booleans, None, lists; modules described; else repr."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, nn.Module):
        return describe(value)
    return repr(value)


def describe(module: nn.Module) -> dict[str, Any]:
    """``{"name": class name, **its parameters}`` of a negative distribution or objective (wrapped
    distributions under ``"base"``), as plain values."""
    config_of = getattr(module, "_config", None)
    config = config_of() if callable(config_of) else {}
    out: dict[str, Any] = {"name": type(module).__name__}
    out.update({k: _plain(v) for k, v in config.items()})
    for name, child in module.named_children():
        out.setdefault(name, describe(child))
    return out


_OORD = """@misc{oord2018representation,
    title={Representation Learning with Contrastive Predictive Coding},
    author={Aaron van den Oord and Yazhe Li and Oriol Vinyals},
    year={2018},
    eprint={1807.03748},
    archivePrefix={arXiv},
}"""
_ROBINSON = """@inproceedings{robinson2021contrastive,
    title={Contrastive Learning with Hard Negative Samples},
    author={Robinson, Joshua and Chuang, Ching-Yao and Sra, Suvrit and Jegelka, Stefanie},
    booktitle={International Conference on Learning Representations},
    year={2021},
}"""
_CHUANG = """@inproceedings{chuang2020debiased,
    title={Debiased Contrastive Learning},
    author={Chuang, Ching-Yao and Robinson, Joshua and Lin, Yen-Chen and Torralba, Antonio
        and Jegelka, Stefanie},
    booktitle={Advances in Neural Information Processing Systems},
    year={2020},
}"""


class CachedHardNegativesRankingLoss(HardNegativesRankingLoss):
    """:class:`HardNegativesRankingLoss` with gradient caching over ``mini_batch_size`` rows.

    Memory: the activations of one mini-batch at a time, plus the (B, d) embeddings of each column.
    Arguments: those of :class:`HardNegativesRankingLoss` (MNRL's names), with
    ``mini_batch_size`` (default 32) and ``show_progress_bar`` (default False) as in
    sentence-transformers' ``CachedMultipleNegativesRankingLoss``.
    """

    def __init__(
        self,
        model: nn.Module,
        scale: float = 20.0,
        similarity_fct: Callable[[Tensor, Tensor], Tensor] = _st_util.cos_sim,
        mini_batch_size: int = 32,
        gather_across_devices: bool = False,
        directions: tuple[str, ...] = ("query_to_doc",),
        partition_mode: str = "joint",
        show_progress_bar: bool = False,
        **hardneg: Any,
    ) -> None:
        super().__init__(
            model, scale, similarity_fct, gather_across_devices, directions, partition_mode, **hardneg
        )
        if isinstance(mini_batch_size, bool) or not isinstance(mini_batch_size, int) or mini_batch_size < 1:
            raise ValueError(f"mini_batch_size must be an int >= 1, got {mini_batch_size!r}")
        self.mini_batch_size = mini_batch_size
        self.show_progress_bar = bool(show_progress_bar)

    def forward(
        self, sentence_features: Iterable[Mapping[str, Tensor]], labels: Tensor | None = None
    ) -> Tensor:
        features = [dict(f) for f in sentence_features]
        ids = self._text_ids(features)
        rows = [torch.arange(_rows(f)) + i * _BIG for i, f in enumerate(features)]
        bar = None
        if self.show_progress_bar:
            import tqdm

            bar = tqdm.tqdm(
                total=2 * sum(-(-len(r) // self.mini_batch_size) for r in rows), desc="Mini-batches"
            )
        encoder = _RowEncoder(self.model, features, bar)
        cached = embed_without_graph(
            encoder, rows, chunk_size=self.mini_batch_size, embedding=_sentence_embedding
        )
        value = self.compute_loss_from_embeddings(cached.embeddings, labels, text_ids=ids)
        if not torch.is_grad_enabled():
            if bar is not None:
                bar.close()
            return value
        grads = torch.autograd.grad(value, cached.embeddings)
        out = value.detach().requires_grad_()
        out.register_hook(partial(_recompute, cached, grads, bar))
        return out

    def get_config_dict(self) -> dict[str, Any]:
        return {**super().get_config_dict(), "mini_batch_size": self.mini_batch_size}


def _rows(features: Mapping[str, Any]) -> int:
    """The number of rows of a tokenised column (StaticEmbedding's: its ``offsets``)."""
    if (
        isinstance(features.get("offsets"), Tensor)
        and isinstance(features.get("input_ids"), Tensor)
        and features["input_ids"].dim() == 1
    ):
        return int(features["offsets"].shape[0])
    for key in ("input_ids", "attention_mask"):
        if isinstance(features.get(key), Tensor) and features[key].dim() >= 1:
            return int(features[key].shape[0])
    return next(int(v.shape[0]) for v in features.values() if isinstance(v, Tensor) and v.dim() >= 1)


def minibatch(features: Mapping[str, Any], start: int, stop: int) -> dict[str, Any]:
    """Rows ``start:stop`` of a tokenised column: StaticEmbedding's flat ``input_ids`` cut at its
    ``offsets``; otherwise sentence-transformers' own slicing where installed, else rows of every tensor."""
    ids, offsets = features.get("input_ids"), features.get("offsets")
    if isinstance(ids, Tensor) and ids.dim() == 1 and isinstance(offsets, Tensor):
        begin = int(offsets[start])
        end = int(offsets[stop]) if stop < offsets.shape[0] else int(ids.shape[0])
        out = dict(features)
        out["input_ids"], out["offsets"] = ids[begin:end], offsets[start:stop] - begin
        return out
    if _st_create_minibatch is not None:
        return dict(_st_create_minibatch(dict(features), start, stop))
    return dict(chunk_batch(dict(features), start, stop))


class _RowEncoder(nn.Module):
    """Embeds a chunk of row indices of one column (GradCache's chunks are index ranges, so that any
    tokenised layout is split by :func:`minibatch`)."""

    def __init__(self, model: nn.Module, features: list[dict[str, Any]], bar: Any) -> None:
        super().__init__()
        self.model = model
        self.features = features
        self.bar = bar

    def forward(self, rows: Tensor) -> object:
        column, start, stop = int(rows[0] // _BIG), int(rows[0] % _BIG), int(rows[-1] % _BIG) + 1
        if self.bar is not None:
            self.bar.update(1)
        return self.model(minibatch(self.features[column], start, stop))


_BIG = 1 << 40  # row indices carry their column: column · _BIG + row


def _sentence_embedding(out: object) -> Tensor:
    """The ``sentence_embedding`` of a SentenceTransformer's output dict."""
    assert isinstance(out, Mapping)
    z: Tensor = out["sentence_embedding"]
    return z


def _recompute(cached: CachedPass, grads: tuple[Tensor, ...], bar: Any, grad_output: Tensor) -> None:
    """At ``loss.backward()``: re-run every mini-batch with gradients and back-propagate
    ``grad_output × ∂L/∂z`` (GradCache's step 3, :meth:`hardneg.gradcache.CachedPass.backward`)."""
    with torch.enable_grad():  # hooks run with gradients off
        cached.backward([g * grad_output for g in grads])
    if bar is not None:
        bar.close()
