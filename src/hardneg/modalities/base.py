"""The modality seam: how one kind of data enters the training pipeline.

The Lightning module (:class:`~hardneg.pipeline.module.ContrastiveModule`) is built from three
parts chosen by name: a **modality** (a :class:`Modality` registered for each ``data.dataset`` it
serves), an **encoder** (``model.encoder``) and a :class:`~hardneg.ContrastiveLoss` (``loss.*``).
The engine never looks at the data: a batch is ``(x, x2, labels, indices)``; the modality's
:meth:`Modality.views` turns ``(x, x2)`` into two view batches with the step generator and the
encoder maps each view to ``(h, z)`` — or, for a modality whose training signal is not "two views
of each item", its own :meth:`Modality.step` takes the batch to a
:class:`~hardneg.reduction.LossOutput`.

A modality is a subclass of :class:`Modality` that owns

- its **data section** (``section``: a pydantic model of ``data``) and its **eval section**
  (``eval_section``: a pydantic model of ``eval``, by default the engine's readouts,
  :class:`~hardneg.modalities.readouts.ReadoutEval`): a key it does not declare is an error naming
  the keys that apply; and its config checks (:meth:`Modality.check`, run once, when the config is
  validated, before anything is written);
- its **data**: :meth:`Modality.load` → ``(train, test)`` (``labels`` per item, ``< 0`` =
  unlabelled) and :meth:`Modality.dataset`, a map-style dataset indexed by a *list* of indices;
- its **encoder** (:meth:`Modality.build_encoder`; ``encoders`` lists the names it accepts);
- optionally its **step**, its **evaluation** protocol (:meth:`Modality.evaluate`, instead of the
  engine's linear / kNN / mean-classifier readouts of ``encoder(x)[0]``) with the metrics that
  ``compare`` / ``sweep`` tables show (:meth:`Modality.table_metrics`), and what a run folder
  must keep (:meth:`Modality.save`, e.g. a vocabulary).

This module imports no modality. The built-in ones (:mod:`hardneg.modalities.images`,
``latent``, ``graphs``, ``articles``, ``sentences``) are registered by the package
:mod:`hardneg.modalities`; a user's data registers its own with :func:`register_modality`
(``imports: [my_package.my_modality]`` in a config makes the CLI import it first)::

    >>> from pydantic import Field
    >>> class Toy(Modality):
    ...     name = "toy"
    ...     datasets = ("toy",)
    ...     encoders = ("mlp",)
    ...     class section(DataSection):
    ...         size: int = Field(64, ge=2, description="items")
    >>> sorted(Toy.section.model_fields)
    ['dataset', 'size']
    >>> "knn_k" in Toy.eval_section.model_fields  # the engine's readouts evaluate it
    True
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

import torch
from torch import Tensor, nn

from hardneg.config.schema import DataSection, EvalSection
from hardneg.modalities.memory import MemoryTerm
from hardneg.modalities.readouts import ReadoutEval

if TYPE_CHECKING:
    from torch.utils.data import Dataset

    from hardneg.config.schema import RunConfig
    from hardneg.loss import ContrastiveLoss
    from hardneg.reduction import LossOutput

__all__ = [
    "DataSection",
    "EvalResult",
    "EvalSection",
    "IdentityViews",
    "ImageViews",
    "Modality",
    "ViewMaker",
    "dataset_names",
    "get_modality",
    "register_modality",
]


@dataclass
class EvalResult:
    """Metrics (name → float), the features they were computed from, and seconds taken."""

    metrics: dict[str, float]
    train_features: Tensor
    test_features: Tensor
    seconds: float


class ViewMaker(Protocol):
    """``views(x, x2, generator=g) -> (v1, v2)``: the two views of a batch (step-seeded)."""

    def __call__(self, x: Tensor, x2: Tensor, *, generator: torch.Generator) -> tuple[Tensor, Tensor]: ...


class IdentityViews:
    """The inputs are already the two views (true-positive pairs: the latent-class simulator's)."""

    def __call__(self, x: Tensor, x2: Tensor, *, generator: torch.Generator) -> tuple[Tensor, Tensor]:
        return x, x2


class ImageViews(nn.Module):
    """A batched image augmentation applied to both inputs with the step generator."""

    def __init__(self, augment: nn.Module) -> None:
        super().__init__()
        self.augment = augment

    def forward(self, x: Tensor, x2: Tensor, *, generator: torch.Generator) -> tuple[Tensor, Tensor]:
        return self.augment(x, generator=generator), self.augment(x2, generator=generator)


class Modality:
    """How one kind of data enters the pipeline (see the module docstring); subclass it.

    Class attributes: ``name`` (shown in messages and summaries), ``datasets`` (the
    ``data.dataset`` names it serves), ``encoders`` (the ``model.encoder`` names it accepts),
    ``section`` (its pydantic ``data`` section, a :class:`DataSection`) and ``eval_section`` (its
    pydantic ``eval`` section, an :class:`EvalSection`; default: the engine's readouts,
    :class:`~hardneg.modalities.readouts.ReadoutEval` — a modality with its own :meth:`evaluate`
    declares the keys of its protocol instead).
    """

    name: ClassVar[str] = ""
    datasets: ClassVar[tuple[str, ...]] = ()
    encoders: ClassVar[tuple[str, ...]] = ()
    section: ClassVar[type[DataSection]] = DataSection
    eval_section: ClassVar[type[EvalSection]] = ReadoutEval

    # -- config time -------------------------------------------------------------------------
    def check(self, cfg: RunConfig) -> None:
        """Checks of the whole config that the section's schema cannot express (raise ``ConfigError``)."""

    def describe(self, cfg: RunConfig) -> str:
        """One line naming the data of a run (summaries): the data set and its non-default keys."""
        section = cfg.data
        changed = [
            f"{key}={getattr(section, key)!r}"
            for key, field in type(section).model_fields.items()
            if key != "dataset" and getattr(section, key) != field.get_default(call_default_factory=True)
        ]
        return f"{section.dataset} ({', '.join(changed)})" if changed else section.dataset

    def batch_size(self, cfg: RunConfig) -> int:
        """Items per training step (the engine's sampler batches ``train.batch_size`` by default)."""
        return cfg.train.batch_size

    # -- data ----------------------------------------------------------------------------------
    def load(self, cfg: RunConfig) -> tuple[Any, Any]:
        """``(train, test)`` splits (anything the dataset and the evaluation understand)."""
        raise NotImplementedError(f"{type(self).__name__}.load")

    def dataset(self, train: Any, cfg: RunConfig) -> Dataset[Any]:
        """A map-style dataset: a list of indices → ``(x, x2, labels, indices)``."""
        raise NotImplementedError(f"{type(self).__name__}.dataset")

    def uses_labels(self, cfg: RunConfig) -> bool:
        """Whether the batches' labels name classes, so the loss may see them (label diagnostics,
        collision-free negatives); default: yes. Data whose labels mean nothing says no."""
        return True

    def save(self, train: Any, run_dir: Path) -> None:
        """Write what a run folder must keep to be understood later (default: nothing)."""

    def data_files(self, cfg: RunConfig) -> list[Path]:
        """The files and folders the data of ``cfg`` is read from: their digests go into the run's
        ``provenance.json`` (:mod:`hardneg.pipeline.provenance`), so a group trains a run again
        when one changed. Default: the data section's ``root`` and ``path`` keys that are set;
        embedded data (generated or bundled with a library) reads none, its settings being keys."""
        return [Path(str(value)).expanduser() for key in ("root", "path")
                if (value := getattr(cfg.data, key, None)) is not None]

    # -- model and step --------------------------------------------------------------------------
    def views(self, cfg: RunConfig, train: Any) -> ViewMaker:
        """The view maker of the engine's two-view step (default: the inputs are the views)."""
        return IdentityViews()

    def memory(self, cfg: RunConfig) -> list[MemoryTerm]:
        """Lower bounds of the memory ``cfg`` needs (parameters and their training state, one
        batch, the data the modality materialises), each naming the keys that set it; checked by
        :func:`~hardneg.pipeline.resources.check_memory` before anything is allocated (default:
        none)."""
        return []

    def build_encoder(self, cfg: RunConfig, train: Any) -> nn.Module:
        """The model: ``model.encoder`` with its projection head, sized for ``train``'s inputs."""
        raise NotImplementedError(f"{type(self).__name__}.build_encoder")

    def own_step(self, cfg: RunConfig) -> bool:
        """Whether ``cfg`` trains with the modality's own :meth:`step` instead of two views (default:
        whenever the modality defines one)."""
        return type(self).step is not Modality.step

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
        """One batch to the loss, for modalities whose signal is not two views (see :meth:`own_step`).

        ``cfg`` is the run's config: the layout of the loss (which items are positives, which form
        of a paper's loss) is the modality's, read from its section, never stored on the encoder.
        """
        raise NotImplementedError(f"{type(self).__name__}.step")

    # -- evaluation --------------------------------------------------------------------------------
    @property
    def has_evaluate(self) -> bool:
        """Whether the modality has its own evaluation protocol."""
        return type(self).evaluate is not Modality.evaluate

    def evaluate(self, encoder: nn.Module, train: Any, test: Any, cfg: RunConfig) -> EvalResult:
        """The modality's own evaluation (default: the engine's readouts; see :attr:`has_evaluate`)."""
        raise NotImplementedError(f"{type(self).__name__}.evaluate")

    def table_metrics(self, cfg: RunConfig) -> tuple[str, ...]:
        """The metrics that ``compare`` / ``sweep`` tables show for runs of ``cfg``, in column order
        (a metric no run reported is left out of the table).

        Default: those its ``eval`` section names (:meth:`EvalSection.table_metrics`; e.g.
        :meth:`ReadoutEval.table_metrics` for the engine's readouts, one per SentEval task for
        sentences).
        """
        return cfg.eval.table_metrics()

    def pictures(self, split: Any) -> Tensor | None:
        """The items of ``split`` as images ``(N, C, H, W)`` for the run's figure of hardest
        negatives; ``None`` (the default): the data has no picture, and the figure is not drawn."""
        return None


_REGISTRY: dict[str, Modality] = {}


def register_modality(modality: Modality) -> Modality:
    """Make ``data.dataset: <name>`` load through ``modality`` for each name of ``modality.datasets``.

    A later registration of a name replaces the earlier one (a user's modality may shadow a
    built-in). Returns ``modality``.
    """
    if not isinstance(modality, Modality):
        raise TypeError(f"modality must be a Modality instance, got {type(modality).__name__}")
    if not modality.datasets:
        raise ValueError(f"modality {type(modality).__name__} serves no data set (empty 'datasets')")
    if not issubclass(modality.section, DataSection):
        raise TypeError(f"{type(modality).__name__}.section must subclass DataSection")
    if not issubclass(modality.eval_section, EvalSection):
        raise TypeError(f"{type(modality).__name__}.eval_section must subclass EvalSection")
    if not modality.has_evaluate and not issubclass(modality.eval_section, ReadoutEval):
        raise TypeError(
            f"{type(modality).__name__}.eval_section must subclass ReadoutEval (the engine's readouts "
            f"evaluate a modality without its own evaluate), got {modality.eval_section.__name__}"
        )
    for name in modality.datasets:
        _REGISTRY[name] = modality
    return modality


def get_modality(name: str) -> Modality:
    """The modality of ``data.dataset``; raises ``ValueError`` naming the registered data sets."""
    if name not in _REGISTRY:
        raise ValueError(f"data.dataset must be one of {sorted(_REGISTRY)}, got {name!r}")
    return _REGISTRY[name]


def dataset_names() -> tuple[str, ...]:
    """The registered ``data.dataset`` names (the one list of data sets)."""
    return tuple(sorted(_REGISTRY))
