"""The experiment schema: pydantic models, one per config section.

Every model forbids unknown keys and rejects NaN/Inf; numeric constraints, choices and types are
declared on the fields and checked by pydantic. Some sections' keys depend on a name chosen
elsewhere in the config; each such section is one base model here and one subclass per name,
validated with the subclass of the chosen name (:func:`hardneg.pipeline.config.validate`):

- ``data`` and ``eval`` (:class:`DataSection`, :class:`EvalSection`): the subclasses the modality of
  ``data.dataset`` declares (:class:`hardneg.modalities.Modality`);
- ``moco`` (:class:`MocoSection`): :func:`moco_section` of ``train.mode``;
- ``model`` (:class:`ModelSection`): the subclass registered for ``model.encoder``
  (:mod:`hardneg.models.sections`).

``loss.negatives`` and ``loss.objective`` are *component sections* (``{name: hard, beta: 1.0}``)
whose keys depend on the chosen ``name``: they are checked against the registries of
:mod:`hardneg.pipeline.registry`.
"""

from __future__ import annotations

import os
from typing import Annotated, Any, Literal, get_args

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    SerializeAsAny,
    ValidationInfo,
    field_validator,
)

from hardneg.config.errors import INT64, int_range

PositiveInt = Annotated[int, Field(ge=1)]
Seed = Annotated[int, Field(ge=0, le=2**32 - 1)]
UserPath = Annotated[str, AfterValidator(os.path.expanduser)]
"""A path key (``out_dir``, ``data.root``, a modality's folders): ``~`` and ``~user`` are expanded once,
when the config is validated, so every writer and reader (Lightning's included) gets the same folder."""

__all__ = [
    "CompareConfig",
    "DataSection",
    "EvalSection",
    "LossConfig",
    "MocoConfig",
    "MocoSection",
    "ModelSection",
    "RunConfig",
    "Section",
    "SweepConfig",
    "TrainConfig",
    "UserPath",
    "moco_section",
]


def _members(annotation: Any) -> set[Any]:
    """The types of an annotation: ``int | None`` → ``{int, NoneType}``."""
    args = get_args(annotation)
    return {a for arg in args for a in _members(arg)} if args else {annotation}


def _extreme_int(value: Any, lo: int, hi: int) -> int:
    """An integer of ``value`` (or of the lists and mappings it holds) outside ``[lo, hi]``, else ``lo``."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, int) and not isinstance(item, bool) and not lo <= item <= hi:
            return item
        if isinstance(item, list | tuple | set | frozenset):
            stack.extend(item)
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
    return lo


class Section(BaseModel):
    """Base of every section: unknown keys are errors, NaN/Inf are rejected, assignment validated."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, validate_assignment=True)

    @field_validator("*", mode="before")
    @classmethod
    def _no_bool_for_numbers(cls, value: Any, info: ValidationInfo) -> Any:
        """``true`` is not a number: pydantic's lax mode would read ``train.epochs=true`` as 1."""
        if isinstance(value, bool) and info.field_name is not None:
            annotation = cls.model_fields[info.field_name].annotation
            if bool not in _members(annotation) and _members(annotation) & {int, float}:
                raise ValueError("must be a number, not a boolean")
        return value

    @field_validator("*", mode="after")
    @classmethod
    def _integers_fit_64_bits(cls, value: Any, info: ValidationInfo) -> Any:
        """Every integer fits in 64 bits (:data:`~hardneg.config.errors.INT64`), the integers torch and
        numpy take: ``model.width=10**30`` is refused here, not by a traceback of torch."""
        lo, hi = INT64
        if info.field_name is not None and not lo <= _extreme_int(value, lo, hi) <= hi:
            if isinstance(value, int):
                lo, hi = int_range(cls.model_fields[info.field_name])
                raise ValueError(f"must be an integer from {lo} to {hi}")
            raise ValueError(f"its integers must be from {lo} to {hi} (64 bits)")
        return value


class DataSection(Section):
    """Base of every modality's ``data`` section (:mod:`hardneg.modalities`): the data set's name.

    Each modality declares its own subclass with the keys that apply to it; the pipeline validates
    ``data`` with the section of the modality registered for ``data.dataset``. The name has no
    default here: a config that names none gets the modalities' default
    (:data:`hardneg.modalities.DEFAULT_DATASET`) when it is loaded.
    """

    dataset: str = Field(description="data set name (see `hardneg configs` and hardneg.modalities)")


class ModelSection(Section):
    """Base of every encoder's ``model`` section: the encoder's name.

    Each encoder declares its own subclass with the keys it reads (registered with it in
    :mod:`hardneg.models.sections`); the pipeline validates ``model`` with the section of
    ``model.encoder``, so a key another encoder reads is an error naming the keys that apply.
    """

    encoder: str = Field("small_cnn", description="encoder name (see hardneg.models.encoder_section_names)")

    def arguments(self) -> dict[str, Any]:
        """The keyword arguments of the encoder's constructor that this section sets (a subclass maps
        its keys; the base sets none)."""
        return {}


class AnnealConfig(Section):
    """β annealing of Robinson et al. (ICLR 2021), App. D.1 (needs a distribution with ``beta``)."""

    enabled: bool = Field(False, description="anneal beta over training")
    changes: int = Field(4, ge=1, description="number of beta changes")
    direction: Literal["down", "up"] = Field("down", description="annealing direction")


class LossConfig(Section):
    """The loss: component sections for the negative distribution and the objective, shared keys."""

    negatives: dict[str, Any] = Field(
        default_factory=lambda: {"name": "uniform"}, description="{name: <distribution>, <its parameters>}"
    )
    objective: dict[str, Any] = Field(
        default_factory=lambda: {"name": "infonce"}, description="{name: <objective>, <its parameters>}"
    )
    temperature: float = Field(0.5, ge=1e-4, le=1e4, description="temperature t")
    num_negatives: int | None = Field(None, ge=1, description="K sampled negatives per anchor (None = all)")
    collision_free: bool = Field(False, description="drop same-label negatives (oracle; needs labels)")
    normalize: bool = Field(True, description="L2-normalise embeddings before the scores")
    gather_distributed: bool = Field(
        True,
        description=(
            "gather negatives across processes under DDP (the loss of the global batch); on by "
            "default in the pipeline, whose encoder outputs are per rank, although "
            "ContrastiveLoss(gather_distributed=...) defaults to False"
        ),
    )
    memory_budget: int = Field(4 << 30, ge=0, description="bytes of (A, N) matrices before the tiled engine")
    anneal: AnnealConfig = Field(default_factory=AnnealConfig)
    _built: dict[str, Any] = PrivateAttr(default_factory=dict)

    def __eq__(self, other: object) -> bool:
        """Equal sections hold equal values (the components kept from validation do not count)."""
        if not isinstance(other, LossConfig):
            return NotImplemented
        return self.model_dump() == other.model_dump()

    __hash__ = None  # type: ignore[assignment]  # mutable, like every pydantic model

    def keep_built(self, part: str, component: Any) -> None:
        """Keep the component ``part`` (``negatives`` / ``objective``) built when the config was validated."""
        self._built[part] = component

    def take_built(self, part: str) -> Any | None:
        """The component built at validation, handed out once (then ``None``: build a fresh one)."""
        return self._built.pop(part, None)


class TrainConfig(Section):
    """Optimisation and the Lightning Trainer."""

    mode: Literal["simclr", "moco"] = Field(
        "simclr", description="two views (simclr) or momentum encoder + queue"
    )
    epochs: int = Field(30, ge=1, le=10**7, description="training epochs")
    batch_size: int = Field(256, ge=2, description="items per batch (per process)")
    optimizer: Literal["adam", "sgd"] = Field("adam", description="optimizer")
    lr: float = Field(1e-3, gt=0.0, description="learning rate")
    weight_decay: float = Field(1e-6, ge=0.0, description="weight decay")
    sgd_momentum: float = Field(0.9, ge=0.0, lt=1.0, description="momentum of SGD")
    accelerator: Literal["cpu", "gpu", "auto"] = Field("cpu", description="Lightning accelerator")
    devices: int = Field(1, ge=1, description="processes / GPUs")
    strategy: Literal["auto", "ddp", "ddp_spawn"] = Field("auto", description="Lightning strategy")
    precision: Literal["32-true", "16-mixed", "bf16-mixed"] = Field(
        "32-true", description="Lightning precision"
    )
    deterministic: bool = Field(True, description="deterministic algorithms")
    drop_last: bool = Field(True, description="drop the last incomplete batch")
    log_every_n_steps: int = Field(5, ge=1, description="logging interval in steps")
    threads: int | None = Field(None, ge=1, description="torch intra-op threads (None = torch default)")
    grad_cache_chunk: int | None = Field(None, ge=1, description="embed in chunks of this size (GradCache)")
    gradient_clip_norm: float | None = Field(None, gt=0.0, description="clip the gradient's L2 norm (QT: 5)")
    progress: bool = Field(True, description="show a progress bar")
    lr_schedule: Literal["constant", "cosine"] = Field(
        "constant", description="per-epoch learning rate: constant, or cosine decay to 0 (SimCLR)"
    )
    warmup_epochs: int = Field(0, ge=0, description="linear warm-up epochs before the schedule")
    accumulate_grad_batches: int = Field(1, ge=1, description="optimiser step every k batches")
    num_workers: int = Field(0, ge=0, description="DataLoader worker processes (0: the main process)")


class MocoSection(Section):
    """Base of the ``moco`` section: no keys (``train.mode: simclr`` has no momentum encoder or queue).

    The section's keys depend on ``train.mode`` (:func:`moco_section`), the way ``data`` and
    ``eval`` depend on the modality: a ``moco.*`` key set in SimCLR mode is an error naming the mode.
    """


class MocoConfig(MocoSection):
    """MoCo-v2 (Robinson et al., ICLR 2021, App. C.1): momentum encoder and a queue of negatives."""

    queue_size: int = Field(4096, ge=1, description="negatives kept in the queue")
    momentum: float = Field(0.99, ge=0.0, lt=1.0, description="momentum m of the key encoder")


def moco_section(mode: str) -> type[MocoSection]:
    """The schema of ``moco`` for ``train.mode`` ``mode``: :class:`MocoConfig` for ``moco``, else no keys.

    >>> sorted(moco_section("moco").model_fields), sorted(moco_section("simclr").model_fields)
    (['momentum', 'queue_size'], [])
    """
    return MocoConfig if mode == "moco" else MocoSection


class EvalSection(Section):
    """Base of every modality's ``eval`` section: the keys the pipeline reads for every modality.

    Each modality declares its own subclass (``Modality.eval_section``) with the keys of its
    evaluation protocol; the pipeline validates ``eval`` with the section of the modality registered
    for ``data.dataset``, so a key of another modality's protocol is an error naming the keys that
    apply (see :mod:`hardneg.modalities.readouts` for the engine's readouts).
    """

    figures: bool = Field(True, description="write figures")
    batch_size: int = Field(512, ge=1, description="feature-extraction batch size")

    def table_metrics(self) -> tuple[str, ...]:
        """The metrics that ``compare`` / ``sweep`` tables show for this evaluation, in column order
        (a subclass names those of its protocol; the base names none)."""
        return ()

    def headline_metrics(self) -> tuple[str, ...]:
        """The few metrics of :meth:`table_metrics` that name a result at a glance (the progress line
        of a group, a sweep's series figures); default: every column of the table."""
        return self.table_metrics()


class Strategy(Section):
    """One entry of ``compare.strategies``."""

    name: str
    overrides: dict[str, Any] = Field(default_factory=dict)


class CompareConfig(Section):
    """``hardneg compare``: several strategies on the same data, seeds and budget."""

    strategies: list[Strategy] = Field(
        default_factory=lambda: [
            Strategy(name="simclr", overrides={}),
            Strategy(name="debiased", overrides={"loss.objective": {"name": "debiased", "tau_plus": 0.1}}),
            Strategy(
                name="hard",
                overrides={
                    "loss.negatives": {"name": "hard", "beta": 1.0},
                    "loss.objective": {"name": "debiased", "tau_plus": 0.1},
                },
            ),
        ]
    )
    seeds: list[Seed] = Field(
        default_factory=lambda: [0, 1, 2], min_length=1, description="seeds of every strategy"
    )
    workers: int = Field(1, ge=1, description="runs trained in parallel processes")


class SweepConfig(Section):
    """``hardneg sweep``: a grid over dotted keys."""

    grid: dict[str, list[Any]] = Field(default_factory=lambda: {"loss.temperature": [0.2, 0.5]})
    seeds: list[Seed] = Field(
        default_factory=lambda: [0], min_length=1, description="seeds of every grid point"
    )
    workers: int = Field(1, ge=1, description="runs trained in parallel processes")


class RunConfig(Section):
    """A whole experiment."""

    name: str = Field("run", description="run name (folder under out_dir)")
    seed: int = Field(
        0, ge=0, le=2**32 - 1, description="seed of initialisation, data order and augmentations"
    )
    out_dir: UserPath = Field("runs", description="parent folder of run folders")
    imports: list[str] = Field(
        default_factory=list, description="modules imported first (user registrations)"
    )
    data: SerializeAsAny[DataSection] = Field(
        description="the modality's data section (see hardneg.modalities); no default: it names the data set"
    )
    model: SerializeAsAny[ModelSection] = Field(
        default_factory=ModelSection, description="the encoder's model section (see hardneg.models.sections)"
    )
    loss: LossConfig = Field(default_factory=LossConfig)
    train: TrainConfig = Field(default_factory=TrainConfig)
    moco: SerializeAsAny[MocoSection] = Field(
        default_factory=MocoSection, description="MoCo's keys (train.mode: moco only; see moco_section)"
    )
    eval: SerializeAsAny[EvalSection] = Field(
        default_factory=EvalSection, description="the modality's eval section (see hardneg.modalities)"
    )
    compare: CompareConfig = Field(default_factory=CompareConfig)
    sweep: SweepConfig = Field(default_factory=SweepConfig)
    trainer: dict[str, Any] = Field(
        default_factory=dict,
        description="further lightning.Trainer arguments (e.g. num_nodes, max_time, limit_train_batches); "
        "arguments the pipeline sets from its own keys are refused naming that key",
    )
