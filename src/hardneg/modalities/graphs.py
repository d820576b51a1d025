"""Graphs in the training pipeline: InfoGraph with a controllable negative distribution.

``data.dataset`` selects the graphs: ``motifs`` (the embedded synthetic motif family,
:func:`~hardneg.data.graphs.synthetic.synthetic_motifs`; its 0.2 name ``graphs`` is still accepted,
with a ``DeprecationWarning``, and checked configs say ``motifs``), ``tu`` (a TU data set unpacked as
``data.root/data.name/data.name_A.txt``, …; :func:`~hardneg.data.graphs.tu.read_tu`) or ``molecules``
(MoleculeACE's ChEMBL sets; :func:`~hardneg.data.graphs.molecules.read_moleculeace`). The modality
plugs three hooks into the engine (see :mod:`hardneg.modalities.base`):

- the **encoder** is InfoGraph's GIN + discriminator heads (``model.encoder: gin``,
  ``model.width`` = hidden width, ``model.layers`` = GIN layers), initialised from the run's seed
  alone (:func:`~hardneg.models.gin.seeded_infograph_model`);
- the **step** scores every node against every graph of the batch with the configured
  :class:`~hardneg.ContrastiveLoss` (:func:`~hardneg.infograph.objective.local_global_detailed`):
  Jensen–Shannon / InfoNCE / any registered objective, uniform / hard / OT / K-subsampled
  negatives (Robinson et al., ICLR 2021, §5.2, App. B) — or, with ``data.graphs.released: true``,
  the authors' released loss with all its deviations from the paper
  (:func:`~hardneg.infograph.released.released_local_global_loss`, β = ``loss.negatives.beta`` for
  ``hard``, 0 for ``uniform``), to reproduce their numbers beside the paper's formula;
- the **evaluation** embeds every graph with the final encoder and reports the SVM and
  logistic-regression accuracies of a stratified ``eval.cv_folds``-fold cross-validation with C
  chosen by inner CV on the training folds (:func:`~hardneg.evaluate.cross_validated_accuracy`):
  the protocol of InfoGraph (Sun et al., ICLR 2020) and HCL, at the final epoch (no epoch is
  picked on test folds).

A graph's positives are its own nodes, not a second view: a batch keeps the engine's layout
``(x, x2, labels, indices)`` with ``x`` a PyG ``Batch`` and ``x2`` an empty placeholder tensor
(:class:`GraphBatches`).
"""

from __future__ import annotations

import time
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast

import torch
from pydantic import Field, PrivateAttr, field_validator, model_validator
from torch import Tensor, nn

from hardneg.config import DataSection, UserPath
from hardneg.config.errors import ConfigError
from hardneg.config.schema import EvalSection, Section
from hardneg.data.graphs.dataset import GraphDataset
from hardneg.modalities.base import EvalResult, OwnStepModality
from hardneg.modalities.memory import FLOAT, MemoryTerm, training_state

if TYPE_CHECKING:
    from torch.utils.data import Dataset

    from hardneg.config.schema import RunConfig
    from hardneg.loss import ContrastiveLoss
    from hardneg.reduction import LossOutput

__all__ = ["GraphBatches", "GraphData", "GraphDataConfig", "Graphs", "load_graph_dataset", "released_beta"]



class GraphDataConfig(Section):
    """``data.graphs`` — which graphs, and which graph loss (``data.dataset: motifs | tu | molecules``)."""

    num_graphs: int = Field(600, ge=2, description="motifs: number of synthetic graphs")
    seed: int = Field(0, ge=0, le=2**32 - 1, description="motifs: seed of the synthetic family")
    node_attributes: bool = Field(True, description="tu: use NAME_node_attributes.txt when present")
    task: Literal["targets", "activity"] = Field(
        "targets", description="molecules: which target, or active vs not"
    )
    max_per_target: int | None = Field(None, ge=1, description="molecules: keep at most this many per target")
    released: bool = Field(
        False,
        description="train with the authors' released loss (HCL's JSD_hard code) instead of loss.*; "
        "beta = loss.negatives.beta (hard) or 0 (uniform)",
    )


class GraphEval(EvalSection):
    """``eval`` of the graph data sets: InfoGraph's cross-validated readouts of the graph embeddings."""

    svm: bool = Field(True, description="SVM readout, C by inner CV")
    logistic: bool = Field(True, description="logistic-regression readout, C by inner CV")
    cv_folds: int = Field(10, ge=2, description="outer stratified cross-validation folds")

    def table_metrics(self) -> tuple[str, ...]:
        """``svm_cv`` and ``logistic_cv``: the mean accuracy over the outer folds."""
        return ("svm_cv", "logistic_cv")


def _eval(cfg: RunConfig) -> GraphEval:
    """``cfg.eval``, validated with :class:`GraphEval` for a graph data set."""
    return cast(GraphEval, cfg.eval)


_RENAMED = {"graphs": "motifs"}
"""Old ``data.dataset`` names of the graph data sets → current names (deprecated; the old ones go in 0.4)."""


class GraphData(DataSection):
    """``data`` of the graph data sets; an old data set name (:data:`_RENAMED`) becomes its current
    one, and the modality's check warns once (:meth:`Graphs.check`)."""

    root: UserPath | None = Field(
        None, description="tu: folder holding NAME/NAME_A.txt, ...; molecules: folder of MoleculeACE CSVs"
    )
    name: str | None = Field(None, description="tu: data set name (files root/NAME/NAME_A.txt, ...)")
    graphs: GraphDataConfig = Field(default_factory=GraphDataConfig)
    _renamed_from: str | None = PrivateAttr(None)

    @field_validator("dataset", mode="before")
    @classmethod
    def _current_name(cls, value: Any) -> Any:
        """``graphs`` → ``motifs``: the checked config (and the run's ``config.yaml``) says the new name."""
        return _RENAMED.get(value, value) if isinstance(value, str) else value

    @model_validator(mode="wrap")
    @classmethod
    def _remember_old_name(cls, data: Any, handler: Any) -> Any:
        """Keep the old name the section was given, for the one warning of :meth:`Graphs.check`."""
        old = data.get("dataset") if isinstance(data, dict) else None
        section = handler(data)
        if isinstance(old, str) and old in _RENAMED and isinstance(section, GraphData):
            section._renamed_from = old
        return section


def load_graph_dataset(cfg: RunConfig) -> GraphDataset:
    """The graphs of ``data.dataset`` (``motifs``, ``tu`` or ``molecules``; see the module docstring)."""
    d: Any = cfg.data
    g: GraphDataConfig = d.graphs
    if d.dataset == "motifs":
        from hardneg.data.graphs.synthetic import synthetic_motifs

        return synthetic_motifs(num_graphs=g.num_graphs, seed=g.seed)
    if d.dataset == "tu":
        _check_tu(d)
        from hardneg.data.graphs.tu import read_tu

        return read_tu(d.root, d.name, node_attributes=g.node_attributes)
    if d.dataset == "molecules":
        from hardneg.data.graphs.molecules import read_moleculeace

        return read_moleculeace(_molecule_folder(d), task=g.task, max_per_target=g.max_per_target)
    raise ConfigError(f"invalid value for 'data.dataset': one of {list(Graphs.datasets)}, got {d.dataset!r}")


def _check_tu(d: Any) -> None:
    if d.root is None or d.name is None:
        raise ConfigError(
            "invalid value for 'data.root'/'data.name': data.dataset=tu needs both (files "
            f"DIR/NAME/NAME_A.txt, ...), got data.root={d.root!r}, data.name={d.name!r}"
        )


def _molecule_folder(d: Any) -> Any:
    from hardneg.data.graphs.molecules import find_moleculeace

    where = d.root if d.root is not None else find_moleculeace()
    if where is None:
        raise ConfigError(
            "invalid value for 'data.root': data.dataset=molecules needs a folder of MoleculeACE "
            "CSVs or the MoleculeACE package installed (pip install --no-deps MoleculeACE==3.0.0), "
            "got data.root=None"
        )
    return where


def _graphs_source(cfg: RunConfig) -> str:
    """Where the graphs of ``data.dataset`` come from, for messages: the TU labels file, the
    MoleculeACE folder, or the synthetic family's keys."""
    d: Any = cfg.data
    if d.dataset == "tu":
        from hardneg.data.graphs.tu import tu_file

        return str(tu_file(d.root, d.name, "graph_labels"))
    if d.dataset == "molecules":
        return str(_molecule_folder(d))
    return f"data.dataset='motifs' (data.graphs.num_graphs={d.graphs.num_graphs})"


_INNER_FOLDS = 5  # the inner search for C (InfoGraph's protocol; checked before training)


def _check_graphs(cfg: RunConfig, data: GraphDataset) -> None:
    """Before training: two classes for the cross-validated readouts, enough examples of each for
    its folds, and one full batch.

    With ``eval.svm`` or ``eval.logistic`` the labels must hold two classes, each with examples in
    every outer fold (``eval.cv_folds``) and inner fold; with ``train.drop_last`` a batch must fit
    in the data set.
    """
    import numpy as np

    labels = np.asarray(data.labels)
    e = _eval(cfg)
    if (e.svm or e.logistic) and np.unique(labels).size < 2:
        only = data.class_names[int(labels[0])]
        raise ValueError(
            f"{_graphs_source(cfg)}: every graph is of class {only!r}; the evaluation's readouts "
            "(eval.svm / eval.logistic) need at least 2 classes, got 1 class"
        )
    if e.svm or e.logistic:
        from hardneg.data.folds import nested_cv_problem

        problem = nested_cv_problem(labels, folds=e.cv_folds, inner_folds=_INNER_FOLDS, seed=cfg.seed,
                                    class_names=list(data.class_names))
        if problem is not None:
            raise ConfigError(
                f"invalid value for 'eval.cv_folds': the cross-validated readouts need examples of every "
                f"class in every fold; in {_graphs_source(cfg)}, {problem}; got {e.cv_folds}"
            )
    b = cfg.train.batch_size
    if cfg.train.drop_last and len(data) < b:
        raise ConfigError(
            f"invalid value for 'train.batch_size': must be at most the {len(data)} graphs of "
            f"{_graphs_source(cfg)} (or set train.drop_last=false), got {b}"
        )


def released_beta(cfg: RunConfig) -> float | None:
    """β of the released loss under ``data.graphs.released`` (hard: its beta, uniform: 0), else ``None``."""
    if not cfg.data.graphs.released:  # type: ignore[attr-defined]
        return None
    neg = cfg.loss.negatives
    return float(neg.get("beta", 1.0)) if neg["name"] == "hard" else 0.0


def _check_released(cfg: RunConfig) -> None:
    """The released loss has no parameter but β: refuse every loss setting it would ignore."""
    why = "data.graphs.released=true trains with the authors' released loss, which"
    neg, obj, loss = cfg.loss.negatives, cfg.loss.objective, cfg.loss
    if neg["name"] not in ("uniform", "hard"):
        raise ConfigError(
            f"invalid value for 'loss.negatives.name': {why} takes 'uniform' (beta 0) or 'hard' "
            f"(its beta), got {neg['name']!r}"
        )
    for key, default in (("target_ess", None), ("detach_weights", False)):
        if neg.get(key, default) != default:
            raise ConfigError(
                f"invalid value for 'loss.negatives.{key}': {why} has a fixed beta and no such "
                f"option; must be {default!r}, got {neg[key]!r}"
            )
    if obj["name"] != "jsd":
        raise ConfigError(
            f"invalid value for 'loss.objective.name': {why} is InfoGraph's Jensen-Shannon form; "
            f"must be 'jsd', got {obj['name']!r}"
        )
    if obj.get("tau_plus", 0.0) != 0.0 or obj.get("subtract_log4", False):
        raise ConfigError(
            f"invalid value for 'loss.objective': {why} fixes tau_plus = 0.5 and its own constants; "
            f"must be {{name: jsd}} with tau_plus 0 and subtract_log4 false, got {obj!r}"
        )
    for key, value, wanted in (
        ("temperature", loss.temperature, 1.0),
        ("normalize", loss.normalize, False),
        ("num_negatives", loss.num_negatives, None),
        ("collision_free", loss.collision_free, False),
        ("anneal.enabled", loss.anneal.enabled, False),
    ):
        if value != wanted:
            raise ConfigError(
                f"invalid value for 'loss.{key}': {why} does not use it; must be {wanted!r}, got {value!r}"
            )


class GraphBatches:
    """Index with a list of indices → ``(PyG Batch, empty, labels (B,), indices (B,))``.

    The batch layout of the engine (:mod:`hardneg.modalities.base`); the second input is an
    empty placeholder: a graph's positives are its own nodes, not a second view, and
    :meth:`Graphs.step` reads only the first.
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


class Graphs(OwnStepModality[GraphDataset, GraphDataset]):
    """InfoGraph on graph data sets (see the module docstring): its own step, its own evaluation."""

    name = "graphs"
    datasets = ("motifs", "tu", "molecules")
    dataset_aliases = _RENAMED
    encoders = ("gin",)
    section = GraphData
    eval_section = GraphEval
    evaluates_itself = True

    # -- config time -------------------------------------------------------------------------
    def check(self, cfg: RunConfig) -> None:
        """TU needs its folder, molecules theirs; gin's unused model keys; the released loss's limits.

        (``train.mode`` and ``train.grad_cache_chunk``, which no modality with its own step can
        honour, are checked by the pipeline for all of them; ``eval`` takes the keys of
        :class:`GraphEval` only, so the online kNN's ``eval.every_n_epochs`` is an unknown key.)
        An old data set name (``data.dataset: graphs``, now ``motifs``) warns here, once.
        """
        d: Any = cfg.data
        old = getattr(d, "_renamed_from", None)
        if old is not None:
            warnings.warn(f"data.dataset: {old!r} is now {_RENAMED[old]!r} (the embedded synthetic motif "
                          f"family); the old name goes in 0.4", DeprecationWarning, stacklevel=2)
            d._renamed_from = None  # warned: equal to a section given the new name
        if d.dataset == "tu":
            _check_tu(d)
        if d.dataset == "molecules":
            _molecule_folder(d)
        if d.graphs.released:
            _check_released(cfg)

    # -- data ----------------------------------------------------------------------------------
    def load(self, cfg: RunConfig) -> tuple[GraphDataset, GraphDataset]:
        data = load_graph_dataset(cfg)
        if len(data) < 2:
            raise ValueError(
                f"{_graphs_source(cfg)}: holds {len(data)} graph(s); at least 2 are needed"
            )
        _check_graphs(cfg, data)
        # Cross-validation is the evaluation: every graph is in both "splits" (training never sees labels).
        return data, data

    def data_files(self, cfg: RunConfig) -> list[Path]:
        """``tu``: the folder ``data.root/data.name``; ``molecules``: the MoleculeACE folder;
        the synthetic family: none."""
        d: Any = cfg.data
        if d.dataset == "tu" and d.root is not None and d.name is not None:
            return [Path(d.root).expanduser() / d.name]
        if d.dataset == "molecules":
            return [Path(_molecule_folder(d))]
        return []

    def dataset(self, cfg: RunConfig, train: GraphDataset) -> Dataset[Any]:
        return GraphBatches(train)  # type: ignore[return-value]

    # -- model and step --------------------------------------------------------------------------
    def memory(self, cfg: RunConfig) -> list[MemoryTerm]:
        """InfoGraph's training state — K GIN layers (two ``w × w`` linear maps each) and two
        discriminator heads of four ``(K w) × (K w)`` maps on the concatenated layers — and one
        batch's node activations (at least one node per graph)."""
        gin = cfg.model.arguments()  # the model section of gin (hardneg.models.sections)
        width, layers = gin["hidden"], gin["num_layers"]
        params = (2 * layers - 1) * width * width + 2 * 4 * (layers * width) ** 2
        keys = ("model.layers", "model.width")
        nodes = cfg.train.batch_size * layers * width * FLOAT * 2
        return [training_state(params, cfg.train.optimizer, "the GIN encoder and InfoGraph heads", keys),
                MemoryTerm("one batch's node activations", nodes, ("train.batch_size", *keys))]

    def build_encoder(self, cfg: RunConfig, train: GraphDataset) -> nn.Module:
        from hardneg.models.gin import seeded_infograph_model

        return seeded_infograph_model(in_dim=int(train.num_features), seed=cfg.seed, **cfg.model.arguments())

    def step(
        self,
        cfg: RunConfig,
        encoder: nn.Module,
        loss: ContrastiveLoss,
        x: Any,
        *,
        labels: Tensor | None,
        generator: torch.Generator,
    ) -> LossOutput:
        """Every node of ``x`` against every graph: ``loss`` (mean over nodes), or the released loss."""
        local, global_, batch = encoder(x)
        beta = released_beta(cfg)
        if beta is not None:
            from hardneg.infograph.released import released_local_global_loss
            from hardneg.reduction import LossOutput

            value = released_local_global_loss(local, global_, batch, beta=beta)
            return LossOutput(loss=value, per_anchor=value.detach().reshape(1))
        from hardneg.infograph.objective import local_global_detailed

        return local_global_detailed(loss, local, global_, batch, labels=labels, generator=generator)

    # -- evaluation --------------------------------------------------------------------------------
    def evaluate(
        self, cfg: RunConfig, encoder: nn.Module, train: GraphDataset, test: GraphDataset
    ) -> EvalResult:
        from hardneg.evaluate.svm_cv import cross_validated_readouts

        start = time.perf_counter()
        e = _eval(cfg)
        emb = encoder.embed_graphs(test.graphs, batch_size=e.batch_size).numpy()  # type: ignore[operator]
        if not torch.isfinite(torch.from_numpy(emb)).all():
            raise FloatingPointError("NaN/Inf graph embeddings after training")
        readouts = [name for name, on in (("svm", e.svm), ("logistic", e.logistic)) if on]
        scores = cross_validated_readouts(
            emb, test.labels, readouts=readouts, folds=e.cv_folds, inner_folds=_INNER_FOLDS,
            seed=cfg.seed,
        )
        metrics: dict[str, float] = {}
        for readout, cv in scores.items():
            metrics[f"{readout}_cv"] = cv.mean
            metrics[f"{readout}_cv_fold_std"] = cv.std
        features = torch.from_numpy(emb).float()
        seconds = time.perf_counter() - start
        return EvalResult(metrics=metrics, train_features=features, test_features=features, seconds=seconds)
