"""InfoGraph's local–global objective with a controllable negative distribution.

Sun et al., InfoGraph (ICLR 2020) maximise the mutual information between each node's (patch)
embedding ``h^u(G)`` and its graph's embedding ``H(G)``; Robinson et al. (ICLR 2021), App. B.2,
make the negative graphs ``G'`` hard: ``q^β_u(G') ∝ e^{β T(h^u(G), H(G'))} p(G')``. On a batch of
B graphs with A nodes in all, every node is an anchor, its own graph the positive and the other
B − 1 graphs the candidate negatives: the pair layout of the loss engine with

    s⁺_u = ⟨l_u, g_{G(u)}⟩,   s_uj = ⟨l_u, g_j⟩ (j ≠ G(u)),

``l`` and ``g`` the local and global discriminator embeddings (the discriminator ``T`` is their
inner product, as in InfoGraph's code). Any negative distribution (uniform = InfoGraph,
:class:`~hardneg.negatives.Hard`, :class:`~hardneg.negatives.OptimalTransport`, K-subsampled,
collision-free) and any objective of the library apply; the default objective is the
Jensen–Shannon form (:class:`~hardneg.objectives.JensenShannon`, debiased with ``tau_plus``).
The loss is the mean over nodes, i.e. ``E_{u∼p̂}`` of Robinson et al.'s App. B.2.
"""

from __future__ import annotations

from typing import Literal, overload

import torch
from torch import Tensor, nn

from hardneg.loss import ContrastiveLoss
from hardneg.negatives import NegativeDistribution
from hardneg.objectives import JensenShannon, Objective
from hardneg.reduction import LossOutput

__all__ = [
    "InfoGraphLoss",
    "check_local_global",
    "local_global_detailed",
    "local_global_mask",
    "local_global_pairs",
]


def check_local_global(local: Tensor, global_: Tensor, batch: Tensor) -> int:
    """Validate a local/global batch; return the number of graphs B.

    Shapes: ``local`` (A, d) node embeddings, ``global_`` (B, d) graph embeddings, ``batch`` (A,)
    integer graph index of each node in ``[0, B)`` (PyG's ``Batch.batch``).
    """
    for name, x in (("local", local), ("global_", global_)):
        if not isinstance(x, Tensor) or x.dim() != 2 or not x.dtype.is_floating_point:
            got = f"{x.dtype} of shape {tuple(x.shape)}" if isinstance(x, Tensor) else type(x).__name__
            raise ValueError(f"{name} must be a floating (n, d) tensor, got {got}")
    if local.shape[1] != global_.shape[1]:
        raise ValueError(
            f"local and global_ must have the same dimension d, got {local.shape[1]} and {global_.shape[1]}"
        )
    if not isinstance(batch, Tensor) or batch.dtype.is_floating_point or batch.dtype == torch.bool:
        raise ValueError(f"batch must be an integer tensor of graph indices, got {batch!r:.80}")
    if batch.shape != (local.shape[0],):
        raise ValueError(f"batch must have shape ({local.shape[0]},) (one graph index per node), "
                         f"got {tuple(batch.shape)}")
    b = int(global_.shape[0])
    if b < 2:
        raise ValueError(
            f"a batch needs at least 2 graphs (a node's negatives are the other graphs of the batch), got {b}"
        )
    if local.shape[0] == 0:
        raise ValueError("the batch has no nodes: every graph is empty")
    lo, hi = int(batch.min()), int(batch.max())
    if lo < 0 or hi >= b:
        raise ValueError(f"batch holds graph indices in [{lo}, {hi}], outside [0, {b}) for {b} graphs")
    return b


def local_global_mask(batch: Tensor, num_graphs: int) -> Tensor:
    """``valid[u, j] = (j ≠ G(u))``: every graph but the node's own is a negative.

    Args:
        batch: the graph index ``G(u)`` of each node, in ``[0, num_graphs)``.
        num_graphs: B, the graphs of the batch.

    Shapes:
        ``batch`` (A,) → (A, B) bool.

    References:
        Sun, Hoffmann, Verma, Tang, *InfoGraph*, ICLR 2020 (the other graphs of the batch
        as negatives); Robinson, Chuang, Sra, Jegelka, ICLR 2021, App. B.2.

    Example:
        >>> import torch
        >>> local_global_mask(torch.tensor([0, 0, 1]), 2)
        tensor([[False,  True],
                [False,  True],
                [ True, False]])
    """
    return batch[:, None] != torch.arange(num_graphs, device=batch.device)[None, :]


def local_global_pairs(
    local: Tensor, global_: Tensor, batch: Tensor, labels: Tensor | None = None
) -> tuple[Tensor, Tensor, Tensor, dict[str, Tensor | None]]:
    """The pair layout of a local–global batch for :meth:`~hardneg.ContrastiveLoss.pair`.

    Anchors are the nodes ``local`` (A, d), each node's positive its own graph ``global_[batch]``
    (A, d), the candidates every graph ``global_`` (B, d), with ``mask`` (A, B) excluding the
    node's own graph; ``labels`` (B,) graph labels become anchor and candidate labels
    (collision-free negatives, collision diagnostics). Returns
    ``(anchors, positives, candidates, keyword arguments)``.

    Args:
        local: node (patch) embeddings ``l_u``.
        global_: graph embeddings ``g_j``.
        batch: the graph index of each node (PyG's ``Batch.batch``).
        labels: optional integer graph labels.

    Shapes:
        ``local`` (A, d), ``global_`` (B, d), ``batch`` (A,), ``labels`` (B,) → anchors (A, d),
        positives (A, d), candidates (B, d), ``mask`` (A, B) bool, labels (A,) and (B,).

    References:
        Sun, Hoffmann, Verma, Tang, *InfoGraph*, ICLR 2020; Robinson, Chuang, Sra, Jegelka,
        ICLR 2021, App. B.2.

    Example:
        >>> import torch
        >>> anchors, positives, candidates, kw = local_global_pairs(
        ...     torch.randn(5, 4), torch.randn(2, 4), torch.tensor([0, 0, 1, 1, 1]))
        >>> positives.shape, candidates.shape, kw["mask"].shape
        (torch.Size([5, 4]), torch.Size([2, 4]), torch.Size([5, 2]))
    """
    b = check_local_global(local, global_, batch)
    batch = batch.to(device=local.device, dtype=torch.long)
    if labels is not None and (not isinstance(labels, Tensor) or labels.shape != (b,)):
        got = tuple(labels.shape) if isinstance(labels, Tensor) else type(labels).__name__
        raise ValueError(f"labels must be a tensor of shape ({b},) (one label per graph), got {got}")
    return local, global_[batch], global_, {
        "mask": local_global_mask(batch, b),
        "anchor_labels": None if labels is None else labels[batch],
        "candidate_labels": labels,
    }


def local_global_detailed(
    loss: ContrastiveLoss,
    local: Tensor,
    global_: Tensor,
    batch: Tensor,
    *,
    labels: Tensor | None = None,
    generator: torch.Generator | None = None,
) -> LossOutput:
    """Any :class:`~hardneg.ContrastiveLoss` on a local–global batch: loss (mean over nodes), diagnostics.

    The step of the training pipeline for graphs (``data.dataset: motifs | tu | molecules``) and
    of :class:`InfoGraphLoss`.

    Args:
        loss: the loss to apply (its negatives, objective, temperature, normalisation).
        local: node embeddings.
        global_: graph embeddings.
        batch: the graph index of each node.
        labels: optional integer graph labels (collision-free negatives, diagnostics).
        generator: randomness of K-subsampled negatives.

    Shapes:
        ``local`` (A, d), ``global_`` (B, d), ``batch`` (A,), ``labels`` (B,) →
        :class:`~hardneg.reduction.LossOutput` (scalar loss, diagnostics).

    References:
        Sun, Hoffmann, Verma, Tang, *InfoGraph*, ICLR 2020; Robinson, Chuang, Sra, Jegelka,
        ICLR 2021, §5.2 and App. B.2.

    Example:
        >>> import torch
        >>> from hardneg import ContrastiveLoss
        >>> from hardneg.negatives import Hard
        >>> loss = ContrastiveLoss(temperature=1.0, normalize=False, negatives=Hard(beta=1.0, rescale=True))
        >>> local, global_, batch = torch.randn(5, 4), torch.randn(3, 4), torch.tensor([0, 0, 1, 2, 2])
        >>> out = local_global_detailed(loss, local, global_, batch)
        >>> out.loss.shape, bool(torch.isfinite(out.loss))
        (torch.Size([]), True)
    """
    anchors, positives, candidates, kw = local_global_pairs(local, global_, batch, labels)
    return loss.pair(
        anchors,
        positives,
        candidates,
        mask=kw["mask"],
        anchor_labels=kw["anchor_labels"],
        candidate_labels=kw["candidate_labels"],
        generator=generator,
        details=True,
    )


class InfoGraphLoss(nn.Module):
    """InfoGraph's local–global loss with the negative distribution you choose.

    ``InfoGraphLoss()`` trains as InfoGraph (Sun et al., ICLR 2020): Jensen–Shannon, uniform
    negatives. Its *value* is InfoGraph's plus the constant ``2 log 2`` by default,
    ``sp(−s⁺) + E_q[sp(s)]`` (:class:`~hardneg.objectives.JensenShannon`), whereas InfoGraph's
    code subtracts ``2 log 2`` (its ``log 2 − sp(−T)`` and ``sp(T) − log 2`` expectations); the
    gradients are equal, and ``subtract_log4=True`` gives InfoGraph's value exactly.
    ``InfoGraphLoss(negatives=Hard(beta=1.0, rescale=True))`` is the hard-negative variant of
    Robinson et al. (ICLR 2021), §5.2 / App. B.2, with the clipping trick of their Fig. 14 for
    the unnormalised scores; ``tau_plus`` debiases it. ``objective=InfoNCE()`` gives the NCE form
    over graphs. The authors' released graph loss differs from the paper's formula; it is
    available, switch by switch, as :func:`hardneg.infograph.released_local_global_loss`.

    Args:
        negatives: negative distribution (default uniform).
        tau_plus: class prior τ⁺ ∈ [0, 1) of the debiased Jensen–Shannon objective (only with
            the default objective; give a debiased ``objective`` yourself otherwise).
        objective: any :class:`~hardneg.objectives.Objective` (default
            :class:`~hardneg.objectives.JensenShannon`).
        temperature: scores are ``⟨l, g⟩ / t`` (1: the discriminator's raw score, InfoGraph).
        normalize: L2-normalise ``l`` and ``g`` first (False in InfoGraph).
        num_negatives: keep K random negative graphs per node (Ash et al., AISTATS 2022).
        collision_free: drop negative graphs of the node's graph's class (needs ``labels``).
        subtract_log4: include InfoGraph's constant ``2 log 2`` so that the value equals
            InfoGraph's (default objective only; the gradient does not change).

    Shapes:
        ``local`` (A, d) node embeddings, ``global_`` (B, d) graph embeddings, ``batch`` (A,)
        graph index per node, optional ``labels`` (B,) → scalar (the mean over nodes).

    References:
        Sun, Hoffmann, Verma, Tang, *InfoGraph: Unsupervised and Semi-supervised Graph-Level
        Representation Learning via Mutual Information Maximization*, ICLR 2020; Robinson,
        Chuang, Sra, Jegelka, *Contrastive Learning with Hard Negative Samples*, ICLR 2021, §5.2,
        App. B.2 and Fig. 14; Ash et al., AISTATS 2022, §4 (``num_negatives``).

    Example:
        >>> import torch
        >>> from hardneg.negatives import Hard
        >>> g = torch.Generator().manual_seed(0)
        >>> local, global_ = torch.randn(7, 4, generator=g), torch.randn(3, 4, generator=g)
        >>> batch = torch.tensor([0, 0, 1, 1, 1, 2, 2])
        >>> loss = InfoGraphLoss(negatives=Hard(beta=1.0, rescale=True), tau_plus=0.1)
        >>> bool(torch.isfinite(loss(local, global_, batch)))
        True
    """

    def __init__(
        self,
        *,
        negatives: NegativeDistribution | None = None,
        tau_plus: float = 0.0,
        objective: Objective | None = None,
        temperature: float = 1.0,
        normalize: bool = False,
        num_negatives: int | None = None,
        collision_free: bool = False,
        subtract_log4: bool = False,
    ) -> None:
        super().__init__()
        if objective is not None and (tau_plus != 0.0 or subtract_log4):
            raise ValueError(
                "tau_plus and subtract_log4 configure the default JensenShannon objective; with "
                f"objective={type(objective).__name__} pass them to the objective "
                f"(got tau_plus={tau_plus!r}, subtract_log4={subtract_log4!r})"
            )
        if objective is None:
            objective = JensenShannon(tau_plus=tau_plus, subtract_log4=subtract_log4)
        self.loss = ContrastiveLoss(
            temperature=temperature,
            negatives=negatives,
            objective=objective,
            normalize=normalize,
            num_negatives=num_negatives,
            collision_free=collision_free,
            gather_distributed=False,
        )

    @property
    def negatives(self) -> NegativeDistribution:
        return self.loss.negatives

    @property
    def objective(self) -> Objective:
        return self.loss.objective

    @overload
    def forward(
        self,
        local: Tensor,
        global_: Tensor,
        batch: Tensor,
        *,
        labels: Tensor | None = ...,
        generator: torch.Generator | None = ...,
        details: Literal[False] = ...,
    ) -> Tensor: ...

    @overload
    def forward(
        self,
        local: Tensor,
        global_: Tensor,
        batch: Tensor,
        *,
        labels: Tensor | None = ...,
        generator: torch.Generator | None = ...,
        details: Literal[True],
    ) -> LossOutput: ...

    def forward(
        self,
        local: Tensor,
        global_: Tensor,
        batch: Tensor,
        *,
        labels: Tensor | None = None,
        generator: torch.Generator | None = None,
        details: bool = False,
    ) -> Tensor | LossOutput:
        """The loss (mean over nodes); with ``details=True`` a :class:`LossOutput` with diagnostics.

        Shapes: (A, d), (B, d), (A,) and optional (B,) graph labels (collision-free negatives,
        diagnostics) → scalar.
        """
        if details:
            return local_global_detailed(self.loss, local, global_, batch, labels=labels, generator=generator)
        anchors, positives, candidates, kw = local_global_pairs(local, global_, batch, labels)
        return self.loss.pair(
            anchors,
            positives,
            candidates,
            mask=kw["mask"],
            anchor_labels=kw["anchor_labels"],
            candidate_labels=kw["candidate_labels"],
            generator=generator,
        )
