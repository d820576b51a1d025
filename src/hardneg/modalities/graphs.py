"""Graphs in the training pipeline: the modality behind ``hardneg train graphs`` and ``hardneg compare``.

``data.dataset`` selects the graphs: ``graphs`` (the embedded synthetic motif family,
:func:`~hardneg.data.graphs.synthetic.synthetic_motifs`), ``tu`` (a TU data set unpacked as
``data.root/data.name/data.name_A.txt``, …; :func:`~hardneg.data.graphs.tu.read_tu`) or ``molecules``
(MoleculeACE's ChEMBL sets; :func:`~hardneg.data.graphs.molecules.read_moleculeace`). The modality
plugs three hooks into the engine (see :mod:`hardneg.modalities.base`):

- the **encoder** is InfoGraph's GIN + discriminator heads (``model.encoder: gin``,
  ``model.width`` = hidden width, ``model.layers`` = GIN layers), initialised from the run's seed
  exactly as :func:`~hardneg.graphs.train_infograph` does;
- the **step** scores every node against every graph of the batch with the configured
  :class:`~hardneg.ContrastiveLoss` (:func:`~hardneg.graphs.objective.local_global_detailed`):
  Jensen–Shannon / InfoNCE / any registered objective, uniform / hard / OT / K-subsampled
  negatives (Robinson et al., ICLR 2021, §5.2, App. B);
- the **evaluation** embeds every graph with the final encoder and reports the SVM and
  logistic-regression accuracies of a stratified ``eval.cv_folds``-fold cross-validation with C
  chosen by inner CV on the training folds (:func:`~hardneg.evaluate.cross_validated_accuracy`):
  the protocol of InfoGraph (Sun et al., ICLR 2020) and HCL, at the final epoch (no epoch is
  picked on test folds).

For the same seed, the pipeline's run equals :func:`~hardneg.graphs.train_infograph` bit for bit
on CPU (same initial weights, batch order and step generators).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import torch
from torch import Tensor, nn

from hardneg.modalities.base import IdentityViews, Modality

if TYPE_CHECKING:
    from torch.utils.data import Dataset

    from hardneg.data.graphs.dataset import GraphDataset
    from hardneg.loss import ContrastiveLoss
    from hardneg.reduction import LossOutput
    from hardneg.pipeline.config import RunConfig
    from hardneg.pipeline.evaluation import EvalResult

__all__ = ["GRAPHS", "GRAPH_DATASETS", "GraphBatches", "load_graph_dataset"]

GRAPH_DATASETS = ("graphs", "tu", "molecules")


def load_graph_dataset(cfg: RunConfig) -> GraphDataset:
    """The graphs of ``data.dataset`` (``graphs``, ``tu`` or ``molecules``; see the module docstring)."""
    from hardneg.pipeline.config import ConfigError

    d = cfg.data
    g = d.graphs
    if d.dataset == "graphs":
        from hardneg.data.graphs.synthetic import synthetic_motifs

        return synthetic_motifs(num_graphs=g.num_graphs, seed=g.seed)
    if d.dataset == "tu":
        if d.root is None or d.name is None:
            raise ConfigError(
                "invalid value for 'data.root'/'data.name': data.dataset=tu needs both (files "
                f"DIR/NAME/NAME_A.txt, ...), got data.root={d.root!r}, data.name={d.name!r}"
            )
        from hardneg.data.graphs.tu import read_tu

        return read_tu(d.root, d.name, node_attributes=g.node_attributes)
    if d.dataset == "molecules":
        from hardneg.data.graphs.molecules import find_moleculeace, read_moleculeace

        where = d.root if d.root is not None else find_moleculeace()
        if where is None:
            raise ConfigError(
                "invalid value for 'data.root': data.dataset=molecules needs a folder of MoleculeACE "
                "CSVs or the MoleculeACE package installed (pip install --no-deps MoleculeACE==3.0.0), "
                "got data.root=None"
            )
        return read_moleculeace(where, task=g.task, max_per_target=g.max_per_target)
    raise ConfigError(f"invalid value for 'data.dataset': one of {list(GRAPH_DATASETS)}, got {d.dataset!r}")


def _load(cfg: RunConfig) -> tuple[Any, Any]:
    data = load_graph_dataset(cfg)
    if len(data) < 2:
        raise ValueError(
            f"data.dataset={cfg.data.dataset!r} holds {len(data)} graph(s); at least 2 are needed"
        )
    # Cross-validation is the evaluation: every graph is in both "splits" (the encoder never sees labels).
    return data, data


class GraphBatches:
    """Index with a list of indices → ``(PyG Batch, empty, labels (B,), indices (B,))``.

    The batch layout of the engine (:mod:`hardneg.modalities.base`): the second input is unused
    (a graph's positives are its own nodes, not a second view).
    """

    def __init__(self, data: GraphDataset) -> None:
        self.graphs = data.graphs
        self.labels = torch.as_tensor(data.labels, dtype=torch.long)

    def __len__(self) -> int:
        return len(self.graphs)

    def __getitem__(self, indices: list[int]) -> tuple[Any, Tensor, Tensor, Tensor]:
        from torch_geometric.data import Batch

        idx = torch.as_tensor(indices, dtype=torch.long).reshape(-1)
        batch = Batch.from_data_list([self.graphs[i] for i in idx.tolist()])
        return batch, torch.empty(0), self.labels[idx], idx


def _dataset(train: Any, cfg: RunConfig) -> Dataset[tuple[Tensor, Tensor, Tensor, Tensor]]:
    return GraphBatches(train)  # type: ignore[return-value]


def _encoder(cfg: RunConfig, train: Any) -> nn.Module:
    from hardneg.models.gin import seeded_infograph_model

    m = cfg.model
    return seeded_infograph_model(
        in_dim=int(train.num_features), hidden=m.width or 32, num_layers=m.layers or 3, seed=cfg.seed
    )


def _step(
    encoder: nn.Module,
    loss: ContrastiveLoss,
    x: Any,
    *,
    labels: Tensor | None,
    generator: torch.Generator,
) -> LossOutput:
    from hardneg.graphs.objective import local_global_detailed

    local, global_, batch = encoder(x)
    return local_global_detailed(loss, local, global_, batch, labels=labels, generator=generator)


def _evaluate(encoder: nn.Module, train: Any, test: Any, cfg: RunConfig) -> EvalResult:
    from hardneg.evaluate.svm_cv import cross_validated_readouts
    from hardneg.graphs.train import embed_graphs
    from hardneg.pipeline.evaluation import EvalResult

    start = time.perf_counter()
    emb = embed_graphs(encoder, test.graphs, batch_size=cfg.eval.batch_size)  # type: ignore[arg-type]
    if not torch.isfinite(torch.from_numpy(emb)).all():
        raise FloatingPointError("NaN/Inf graph embeddings after training")
    metrics: dict[str, float] = {}
    readouts = [name for name, on in (("svm", cfg.eval.svm), ("logistic", cfg.eval.logistic)) if on]
    scores = cross_validated_readouts(
        emb, test.labels, readouts=readouts, folds=cfg.eval.cv_folds, seed=cfg.seed
    )
    for readout, cv in scores.items():
        metrics[f"{readout}_cv"] = cv.mean
        metrics[f"{readout}_cv_fold_std"] = cv.std
    features = torch.from_numpy(emb).float()
    return EvalResult(metrics=metrics, train_features=features, test_features=features,
                      seconds=time.perf_counter() - start)


GRAPHS = Modality(
    name="graphs",
    load=_load,
    dataset=_dataset,
    views=lambda cfg, train: IdentityViews(),
    encoder_kwargs=lambda cfg, train: {"in_dim": int(train.num_features)},
    encoders=("gin",),
    build_encoder=_encoder,
    step=_step,
    evaluate=_evaluate,
)
