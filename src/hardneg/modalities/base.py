"""The modality seam: how one kind of data enters the training pipeline.

The Lightning module (:class:`~hardneg.pipeline.module.ContrastiveModule`) is built from three
parts chosen by name: a **modality** (registered for each ``data.dataset`` it serves), an
**encoder** (``model.encoder``) and a :class:`~hardneg.ContrastiveLoss` (``loss.*``). The engine
never looks at the data: a batch is ``(x, x2, labels, indices)``, and a modality is one of two
kinds, each saying how a batch reaches the loss:

- :class:`TwoViewModality`: the engine's step — the modality's :meth:`~TwoViewModality.views`
  turns ``(x, x2)`` into two view batches with the step generator, the encoder maps each view to
  ``(h, z)`` and the loss compares them (images);
- :class:`OwnStepModality`: the modality's :meth:`~OwnStepModality.step` takes the batch to a
  :class:`~hardneg.reduction.LossOutput` (graphs: every node against every graph; sentences:
  each against its neighbours). A modality that is both kinds (the latent simulator) says per
  config which one trains (:meth:`~OwnStepModality.own_step`).

:class:`Modality` holds what both kinds share. It is generic over its splits,
``Modality[TrainT, TestT]``: :meth:`~Modality.load` returns ``(train, test)`` and every member
taking a split is typed with them. Every member takes the run's config first, then the model,
then the data, then where to write:

========================  ===============  ===================================================================
member                    kind             signature
========================  ===============  ===================================================================
``name``                  class attr.      ``str``: shown in messages and summaries
``datasets``              class attr.      ``tuple[str, ...]``: the ``data.dataset`` names it serves
``dataset_aliases``       class attr.      ``dict[str, str]``: old ``data.dataset`` names → new (deprecated)
``encoders``              class attr.      ``tuple[str, ...]``: the ``model.encoder`` names it accepts
``section``               class attr.      ``type[DataSection]``: its ``data`` section
``eval_section``          class attr.      ``type[EvalSection]``: ``eval`` section (default ``ReadoutEval``)
``evaluates_itself``      class attr.      ``bool``: :meth:`~Modality.evaluate` replaces the readouts
``check``                 config           ``check(cfg) -> None``
``describe``              config           ``describe(cfg) -> str``
``batch_size``            config           ``batch_size(cfg) -> int``
``uses_labels``           config           ``uses_labels(cfg) -> bool``
``memory``                config           ``memory(cfg) -> list[MemoryTerm]``
``data_files``            config           ``data_files(cfg) -> list[Path]``
``load``                  data (must)      ``load(cfg) -> tuple[TrainT, TestT]``
``dataset``               data (must)      ``dataset(cfg, train) -> Dataset``
``save``                  data             ``save(cfg, train, run_dir) -> None``
``build_encoder``         model (must)     ``build_encoder(cfg, train) -> nn.Module``
``views``                 two-view         ``views(cfg, train) -> ViewMaker`` (default: the identity)
``step``                  own-step (must)  ``step(cfg, encoder, loss, x, *, labels, generator) -> LossOutput``
``own_step``              own-step         ``own_step(cfg) -> bool`` (default: true)
``evaluate``              evaluation       ``evaluate(cfg, encoder, train, test) -> EvalResult``
``table_metrics``         evaluation       ``table_metrics(cfg) -> tuple[str, ...]``
``headline_metrics``      evaluation       ``headline_metrics(cfg) -> tuple[str, ...]``
``evaluate_options``      class attr.      ``tuple[EvaluateOption, ...]``: its options of ``hardneg evaluate``
``evaluate_overrides``    evaluation       ``evaluate_overrides(cfg, values) -> dict[str, Any]``
``pictures``              evaluation       ``pictures(cfg, split) -> Tensor | None``
========================  ===============  ===================================================================

("must": abstract; the others have defaults.) This module imports no modality. The built-in ones
(:mod:`hardneg.modalities.images`, ``latent``, ``graphs``, ``articles``, ``sentences``) are
registered by the package :mod:`hardneg.modalities`; a user's data registers its own with
:func:`register_modality` (``imports: [my_package.my_modality]`` in a config makes the CLI import
it first)::

    >>> from pydantic import Field
    >>> from hardneg.data.vectors import LabeledVectors
    >>> class Toy(TwoViewModality[LabeledVectors, LabeledVectors]):
    ...     name = "toy"
    ...     datasets = ("toy",)
    ...     encoders = ("mlp",)
    ...     class section(DataSection):
    ...         size: int = Field(64, ge=2, description="items")
    ...     def load(self, cfg): ...
    ...     def dataset(self, cfg, train): ...
    ...     def build_encoder(self, cfg, train): ...
    >>> sorted(Toy.section.model_fields)
    ['dataset', 'size']
    >>> "knn_k" in Toy.eval_section.model_fields  # the engine's readouts evaluate it
    True

A 0.2 plug-in — a direct subclass of :class:`Modality` with the 0.2 argument order
(``dataset(train, cfg)``, ``evaluate(encoder, train, test, cfg)``, ``save(train, run_dir)``,
``pictures(split)``) — still registers, with a ``DeprecationWarning`` naming what to change; it
is refused from 0.4.
"""

from __future__ import annotations

import inspect
import warnings
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Protocol, TypeVar

import torch
from torch import Tensor, nn

from hardneg.config.errors import shown
from hardneg.config.schema import DataSection, EvalSection
from hardneg.modalities.memory import MemoryTerm
from hardneg.modalities.readouts import ReadoutEval
from hardneg.modalities.results import EvalResult

if TYPE_CHECKING:
    from typing import TypeGuard

    from torch.utils.data import Dataset

    from hardneg.config.schema import RunConfig
    from hardneg.loss import ContrastiveLoss
    from hardneg.reduction import LossOutput

__all__ = [
    "EvalResult",
    "EvaluateOption",
    "IdentityViews",
    "ImageViews",
    "Modality",
    "OwnStepModality",
    "TwoViewModality",
    "ViewMaker",
    "dataset_names",
    "evaluate_owners",
    "get_modality",
    "trains_with_own_step",
]

TrainT = TypeVar("TrainT")
TestT = TypeVar("TestT")


@dataclass(frozen=True)
class EvaluateOption:
    """An option of ``hardneg evaluate`` that a modality declares (``Modality.evaluate_options``).

    The CLI builds ``evaluate``'s extra options from the registered modalities: ``--<name>`` with
    ``help`` and a value of ``type`` (``str``, ``int``, ``float`` or ``Path``). The values given for a
    run go to its modality's :meth:`Modality.evaluate_overrides`; an option the run's modality does
    not declare is an error naming the option and the run's data set.

    Args:
        name: the option without its dashes (``"senteval"`` for ``--senteval``).
        help: the option's help text.
        type: the type of its value.

    Example:
        >>> EvaluateOption("folds", "cross-validation folds", int).flag
        '--folds'
    """

    name: str
    help: str
    type: type = str

    def __post_init__(self) -> None:
        if not self.name.isidentifier() or self.name.startswith("_"):
            raise ValueError(f"EvaluateOption.name must be a Python identifier without a leading '_', "
                             f"got {self.name!r}")
        if self.type not in (str, int, float, Path):
            raise ValueError(f"EvaluateOption.type must be str, int, float or Path, got {self.type!r}")

    @property
    def flag(self) -> str:
        """The command-line spelling: ``--`` and the name with ``_`` as ``-``."""
        return "--" + self.name.replace("_", "-")


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


class Modality(ABC, Generic[TrainT, TestT]):
    """What every modality declares, generic over its ``(train, test)`` splits (see the module
    docstring for the members at a glance); subclass one of its two kinds,
    :class:`TwoViewModality` or :class:`OwnStepModality`.

    Class attributes: ``name`` (shown in messages and summaries), ``datasets`` (the ``data.dataset``
    names it serves), ``dataset_aliases`` (old name → current name of renamed data sets: still found
    by :func:`get_modality`, listed nowhere; the modality normalises them and warns), ``encoders``
    (the ``model.encoder`` names it accepts), ``section`` (its pydantic ``data`` section, a
    :class:`DataSection`), ``eval_section`` (its pydantic ``eval`` section, an :class:`EvalSection`;
    default: the engine's readouts, :class:`~hardneg.modalities.readouts.ReadoutEval`) and
    ``evaluates_itself`` (``True``: its :meth:`evaluate` replaces the engine's readouts, and
    ``eval_section`` declares the keys of its protocol).
    """

    name: ClassVar[str] = ""
    datasets: ClassVar[tuple[str, ...]] = ()
    dataset_aliases: ClassVar[dict[str, str]] = {}
    encoders: ClassVar[tuple[str, ...]] = ()
    section: ClassVar[type[DataSection]] = DataSection
    eval_section: ClassVar[type[EvalSection]] = ReadoutEval
    evaluates_itself: ClassVar[bool] = False
    evaluate_options: ClassVar[tuple[EvaluateOption, ...]] = ()

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

    def uses_labels(self, cfg: RunConfig) -> bool:
        """Whether the batches' labels name classes, so the loss may see them (label diagnostics,
        collision-free negatives); default: yes. Data whose labels mean nothing says no."""
        return True

    def memory(self, cfg: RunConfig) -> list[MemoryTerm]:
        """Lower bounds of the memory ``cfg`` needs (parameters and their training state, one
        batch, the data the modality materialises), each naming the keys that set it; checked by
        :func:`~hardneg.pipeline.resources.check_memory` before anything is allocated (default:
        none)."""
        return []

    def data_files(self, cfg: RunConfig) -> list[Path]:
        """The files and folders the data of ``cfg`` is read from: their digests go into the run's
        ``provenance.json`` (:mod:`hardneg.pipeline.provenance`), so a group trains a run again
        when one changed. Default: the data section's ``root`` and ``path`` keys that are set;
        embedded data (generated or bundled with a library) reads none, its settings being keys."""
        return [Path(str(value)).expanduser() for key in ("root", "path")
                if (value := getattr(cfg.data, key, None)) is not None]

    # -- data ----------------------------------------------------------------------------------
    @abstractmethod
    def load(self, cfg: RunConfig) -> tuple[TrainT, TestT]:
        """``(train, test)`` splits (``labels`` per item, ``< 0`` = unlabelled)."""

    @abstractmethod
    def dataset(self, cfg: RunConfig, train: TrainT) -> Dataset[Any]:
        """A map-style dataset: a list of indices → ``(x, x2, labels, indices)``."""

    def save(self, cfg: RunConfig, train: TrainT, run_dir: Path) -> None:
        """Write what a run folder must keep to be understood later (default: nothing)."""

    # -- model -----------------------------------------------------------------------------------
    @abstractmethod
    def build_encoder(self, cfg: RunConfig, train: TrainT) -> nn.Module:
        """The model: ``model.encoder`` with its projection head, sized for ``train``'s inputs."""

    # -- evaluation --------------------------------------------------------------------------------
    def evaluate(self, cfg: RunConfig, encoder: nn.Module, train: TrainT, test: TestT) -> EvalResult:
        """The modality's own evaluation, run when it declares ``evaluates_itself = True``
        (otherwise the engine's readouts evaluate ``encoder(x)[0]``)."""
        raise NotImplementedError(
            f"{type(self).__name__}.evaluate: a modality declaring evaluates_itself = True implements "
            "evaluate(cfg, encoder, train, test)"
        )

    def table_metrics(self, cfg: RunConfig) -> tuple[str, ...]:
        """The metrics that ``compare`` / ``sweep`` tables show for runs of ``cfg``, in column order
        (a metric no run reported is left out of the table).

        Default: those its ``eval`` section names (:meth:`EvalSection.table_metrics`; e.g.
        :meth:`ReadoutEval.table_metrics` for the engine's readouts, one per SentEval task for
        sentences).
        """
        return cfg.eval.table_metrics()

    def headline_metrics(self, cfg: RunConfig) -> tuple[str, ...]:
        """The few metrics that name a run's result at a glance: shown on the progress line of
        ``compare`` / ``sweep`` and drawn in a sweep's ``accuracy_vs_<key>.png`` (each a subset of
        :meth:`table_metrics`, in order).

        Default: those its ``eval`` section names (:meth:`EvalSection.headline_metrics`, which
        defaults to its table's columns).
        """
        return cfg.eval.headline_metrics()

    def evaluate_overrides(self, cfg: RunConfig, values: dict[str, Any]) -> dict[str, Any]:
        """The dotted ``eval.*`` overrides of ``hardneg evaluate`` for the run of ``cfg`` from the
        values of the modality's :attr:`evaluate_options` that were given (name → value, ``None``
        left out); raise ``ValueError`` naming the option for a bad value.

        Default: each option sets the ``eval`` key of its name (``--folds 5`` → ``eval.folds=5``).
        """
        return {f"eval.{name}": value for name, value in values.items()}

    def pictures(self, cfg: RunConfig, split: TestT) -> Tensor | None:
        """The items of ``split`` as images ``(N, C, H, W)`` for the run's figure of hardest
        negatives; ``None`` (the default): the data has no picture, and the figure is not drawn."""
        return None


class TwoViewModality(Modality[TrainT, TestT]):
    """A modality trained by the engine's two-view step: :meth:`views` makes two views of each
    batch, the encoder embeds both and the loss compares them (SimCLR, MoCo, GradCache)."""

    def views(self, cfg: RunConfig, train: TrainT) -> ViewMaker:
        """The view maker of the engine's two-view step (default: the inputs are the views)."""
        return IdentityViews()


class OwnStepModality(Modality[TrainT, TestT]):
    """A modality whose training signal is not "two views of each item": its :meth:`step` takes a
    batch to the loss. (MoCo and GradCache, which need two views, do not apply.)"""

    def own_step(self, cfg: RunConfig) -> bool:
        """Whether ``cfg`` trains with :meth:`step` (default: always). A modality that is also a
        :class:`TwoViewModality` returns ``False`` for the configs the engine's two-view step
        trains (the latent simulator's ``data.layout: two_views``)."""
        return True

    @abstractmethod
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
        """One batch ``x`` (the first input of ``(x, x2, labels, indices)``) to the loss.

        ``cfg`` is the run's config: the layout of the loss (which items are positives, which form
        of a paper's loss) is the modality's, read from its section, never stored on the encoder.
        """


def trains_with_own_step(
    modality: Modality[Any, Any], cfg: RunConfig
) -> TypeGuard[OwnStepModality[Any, Any]]:
    """Whether ``cfg`` trains with the modality's own step (an :class:`OwnStepModality` whose
    :meth:`~OwnStepModality.own_step` says so) rather than the engine's two-view step.

    Raises:
        TypeError: the modality is neither kind, or an :class:`OwnStepModality` declines its own
            step for ``cfg`` without being a :class:`TwoViewModality` too.
    """
    if isinstance(modality, OwnStepModality) and modality.own_step(cfg):
        return True
    if isinstance(modality, TwoViewModality):
        return False
    kind = "own_step(cfg) is false and it" if isinstance(modality, OwnStepModality) else "it"
    raise TypeError(
        f"modality {type(modality).__name__}: {kind} is not a TwoViewModality; subclass "
        "TwoViewModality (views) or OwnStepModality (step)"
    )


_REGISTRY: dict[str, Modality[Any, Any]] = {}
_ALIASES: dict[str, Modality[Any, Any]] = {}  # deprecated data.dataset names, listed nowhere


def register_modality(modality: Modality[Any, Any]) -> Modality[Any, Any]:
    """Make ``data.dataset: <name>`` load through ``modality`` for each name of ``modality.datasets``.

    A later registration of a name replaces the earlier one (a user's modality may shadow a
    built-in). Returns the modality registered: ``modality``, or for a 0.2 plug-in (a direct
    subclass of :class:`Modality`, or the 0.2 argument order) the adapter that serves it, after a
    ``DeprecationWarning`` naming what to change (refused from 0.4).

    Raises:
        TypeError: ``modality`` is not a :class:`Modality`, or a section is not a
            :class:`DataSection` / :class:`EvalSection` (a modality the readouts evaluate needs
            a :class:`~hardneg.modalities.readouts.ReadoutEval`), or it declares
            ``evaluates_itself`` without an ``evaluate``.
        ValueError: ``datasets`` is empty.
    """
    if not isinstance(modality, Modality):
        raise TypeError(f"modality must be a Modality instance, got {type(modality).__name__}")
    cls = type(modality).__name__
    if not modality.datasets:
        raise ValueError(f"modality {cls} serves no data set (empty 'datasets')")
    if not issubclass(modality.section, DataSection):
        raise TypeError(f"{cls}.section must subclass DataSection")
    if not issubclass(modality.eval_section, EvalSection):
        raise TypeError(f"{cls}.eval_section must subclass EvalSection")
    modality = _adapt_02(modality)
    if modality.evaluates_itself and _defines(modality, "evaluate") is None:
        raise TypeError(
            f"{cls} declares evaluates_itself = True but implements no evaluate(cfg, encoder, train, test)"
        )
    if not modality.evaluates_itself and not issubclass(modality.eval_section, ReadoutEval):
        raise TypeError(
            f"{cls}.eval_section must subclass ReadoutEval (the engine's readouts evaluate a modality "
            f"that does not declare evaluates_itself = True), got {modality.eval_section.__name__}"
        )
    for name in modality.datasets:
        _REGISTRY[name] = modality
    for old in modality.dataset_aliases:
        _ALIASES[old] = modality
    return modality


def get_modality(name: str) -> Modality[Any, Any]:
    """The modality of ``data.dataset`` (or of an old name in its ``dataset_aliases``); raises
    ``ValueError`` naming the registered data sets."""
    if not isinstance(name, str) or (name not in _REGISTRY and name not in _ALIASES):
        raise ValueError(f"data.dataset must be one of {sorted(_REGISTRY)}, got {shown(name)}")
    return _REGISTRY[name] if name in _REGISTRY else _ALIASES[name]


def dataset_names() -> tuple[str, ...]:
    """The registered ``data.dataset`` names (the one list of data sets)."""
    return tuple(sorted(_REGISTRY))


def evaluate_owners(key: str) -> list[Modality[Any, Any]]:
    """The registered modalities whose ``eval`` section has the key ``key`` or that declare the
    ``hardneg evaluate`` option ``key`` (:class:`EvaluateOption`), each once."""
    unique = {id(m): m for m in _REGISTRY.values()}.values()
    return [m for m in unique if key in m.eval_section.model_fields
            or any(o.name == key for o in m.evaluate_options)]


# -- 0.2 plug-ins (removed in 0.4) -------------------------------------------------------------------

# member -> (0.2 signature, 0.3 signature, how to tell the 0.2 one from its parameters)
_ORDER_02 = {
    "dataset": ("dataset(train, cfg)", "dataset(cfg, train)"),
    "evaluate": ("evaluate(encoder, train, test, cfg)", "evaluate(cfg, encoder, train, test)"),
    "save": ("save(train, run_dir)", "save(cfg, train, run_dir)"),
    "pictures": ("pictures(split)", "pictures(cfg, split)"),
}


def _defines(modality: Modality[Any, Any], member: str) -> Any:
    """The function a subclass defines for ``member`` (``None``: the base's, or abstract)."""
    found = getattr(type(modality), member, None)
    base = getattr(Modality, member, None) or getattr(OwnStepModality, member, None)
    return None if found is None or found is base or getattr(found, "__isabstractmethod__", False) else found


def _old_order(function: Any, member: str) -> bool:
    """Whether ``function`` has the 0.2 parameters of ``member`` (see :data:`_ORDER_02`)."""
    try:
        params = [p for p in inspect.signature(function).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)][1:]  # without self
    except (TypeError, ValueError):
        return False
    names = [p.name for p in params]
    if member in ("save", "pictures"):  # 0.2 had no cfg: one parameter fewer
        return len(names) == {"save": 2, "pictures": 1}[member]
    return "cfg" in names and names[0] != "cfg"


def _adapt_02(modality: Modality[Any, Any]) -> Modality[Any, Any]:
    """``modality`` itself, or for a 0.2 plug-in an adapter, after a ``DeprecationWarning``."""
    old = [m for m in _ORDER_02 if (f := _defines(modality, m)) is not None and _old_order(f, m)]
    bare = not isinstance(modality, (TwoViewModality, OwnStepModality))
    if not old and not bare:
        return modality
    cls = type(modality).__name__
    changes = [f"{_ORDER_02[m][0]} -> {_ORDER_02[m][1]}" for m in old]
    if bare:
        kind = "OwnStepModality (it defines step)" if hasattr(modality, "step") else "TwoViewModality"
        changes.insert(0, f"subclass {kind} instead of Modality")
        if _defines(modality, "evaluate") is not None:
            changes.append("declare evaluates_itself = True (it defines evaluate)")
    warnings.warn(
        f"modality {cls} is written for hardneg 0.2; it still registers, but is refused from 0.4: "
        f"{'; '.join(changes)}",
        DeprecationWarning,
        stacklevel=3,
    )
    adapter = type(cls, (_Plugin02,), {
        "name": modality.name, "datasets": modality.datasets, "encoders": modality.encoders,
        "section": modality.section, "eval_section": modality.eval_section,
        "evaluates_itself": modality.evaluates_itself or _defines(modality, "evaluate") is not None,
    })
    return adapter(modality, old)


class _Plugin02(OwnStepModality[Any, Any], TwoViewModality[Any, Any]):
    """Serves a 0.2 plug-in through the 0.3 interface: the 0.2 argument order, and its own step
    whenever it defines ``step`` (and its ``own_step`` allows), else the two-view step."""

    def __init__(self, plugin: Any, old_order: list[str]) -> None:
        self.plugin = plugin
        self.old_order = set(old_order)

    def check(self, cfg: RunConfig) -> None:
        self.plugin.check(cfg)

    def describe(self, cfg: RunConfig) -> str:
        return str(self.plugin.describe(cfg))

    def batch_size(self, cfg: RunConfig) -> int:
        return int(self.plugin.batch_size(cfg))

    def uses_labels(self, cfg: RunConfig) -> bool:
        return bool(self.plugin.uses_labels(cfg))

    def memory(self, cfg: RunConfig) -> list[MemoryTerm]:
        return list(self.plugin.memory(cfg))

    def data_files(self, cfg: RunConfig) -> list[Path]:
        return list(self.plugin.data_files(cfg))

    def load(self, cfg: RunConfig) -> tuple[Any, Any]:
        return tuple(self.plugin.load(cfg))

    def dataset(self, cfg: RunConfig, train: Any) -> Dataset[Any]:
        old = "dataset" in self.old_order
        return self.plugin.dataset(train, cfg) if old else self.plugin.dataset(cfg, train)

    def save(self, cfg: RunConfig, train: Any, run_dir: Path) -> None:
        if "save" in self.old_order:
            self.plugin.save(train, run_dir)
        else:
            self.plugin.save(cfg, train, run_dir)

    def build_encoder(self, cfg: RunConfig, train: Any) -> nn.Module:
        return self.plugin.build_encoder(cfg, train)

    def views(self, cfg: RunConfig, train: Any) -> ViewMaker:
        views = getattr(self.plugin, "views", None)
        return views(cfg, train) if views is not None else IdentityViews()

    def own_step(self, cfg: RunConfig) -> bool:
        if not hasattr(self.plugin, "step"):
            return False
        decide = getattr(self.plugin, "own_step", None)
        return True if decide is None else bool(decide(cfg))

    def step(self, cfg: RunConfig, encoder: nn.Module, loss: ContrastiveLoss, x: Any, *,
             labels: Tensor | None, generator: torch.Generator) -> LossOutput:
        return self.plugin.step(cfg, encoder, loss, x, labels=labels, generator=generator)

    def evaluate(self, cfg: RunConfig, encoder: nn.Module, train: Any, test: Any) -> EvalResult:
        if "evaluate" in self.old_order:
            return self.plugin.evaluate(encoder, train, test, cfg)
        return self.plugin.evaluate(cfg, encoder, train, test)

    def table_metrics(self, cfg: RunConfig) -> tuple[str, ...]:
        return tuple(self.plugin.table_metrics(cfg))

    def pictures(self, cfg: RunConfig, split: Any) -> Tensor | None:
        if "pictures" in self.old_order:
            return self.plugin.pictures(split)
        return self.plugin.pictures(cfg, split)
