"""Each encoder's ``model`` section: the keys it reads, their defaults, and its constructor's arguments.

The ``model`` section of a run depends on ``model.encoder`` the way ``data`` depends on the data set:
each encoder registers a :class:`~hardneg.config.ModelSection` subclass here
(:func:`register_encoder_section`), and the pipeline validates ``model`` with the section of the
chosen encoder (:func:`hardneg.pipeline.config.dependent_sections`), so a key the encoder does not
read (``model.layers`` for ``small_cnn``) is an error naming the keys that apply. A section maps its
keys to the encoder's constructor (:meth:`~hardneg.config.ModelSection.arguments`); a key left
``null`` takes the constructor's default, which its description states.

>>> section = encoder_section("gin")
>>> sorted(section.model_fields)
['encoder', 'layers', 'width']
>>> section(encoder="gin", layers=5).arguments()
{'hidden': 32, 'num_layers': 5}
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from hardneg.config.errors import shown
from hardneg.config.schema import ModelSection

__all__ = [
    "BagOfWordsSection",
    "GINSection",
    "GRUSection",
    "MLPSection",
    "ProjectedSection",
    "ResNetSection",
    "SmallCNNSection",
    "encoder_section",
    "encoder_section_names",
    "register_encoder_section",
]


def _set(**values: Any) -> dict[str, Any]:
    """The keyword arguments that are set (``None``: the constructor's default)."""
    return {k: v for k, v in values.items() if v is not None}


class ProjectedSection(ModelSection):
    """Keys of an encoder of :func:`~hardneg.models.build_encoder`: a backbone ``f`` and the SimCLR
    projection head ``g`` (:class:`~hardneg.models.ProjectionHead`).

    :meth:`arguments` are those of ``build_encoder(model.encoder, ...)``, besides the inputs'
    size the data gives (``in_channels`` / ``in_dim``).
    """

    projection_dim: int = Field(64, ge=1, description="output size of the projection head")
    hidden_dim: int = Field(256, ge=1, description="hidden width of the projection head")

    def arguments(self) -> dict[str, Any]:
        """``projection_dim`` and ``hidden_dim`` of the head."""
        return {"projection_dim": self.projection_dim, "hidden_dim": self.hidden_dim}


class SmallCNNSection(ProjectedSection):
    """``small_cnn`` (:class:`~hardneg.models.SmallCNN`): three convolutions and a head."""

    width: int | None = Field(None, ge=1, description="channels of the first conv (null: 32)")
    feature_dim: int | None = Field(None, ge=1, description="representation size (null: 128)")
    stem_stride: int | None = Field(None, ge=1, description="first conv's stride (null: 1; 2 for 28x28)")

    def arguments(self) -> dict[str, Any]:
        """The head's keys and ``SmallCNN(width, feature_dim, stem_stride)`` where set."""
        return {**super().arguments(),
                **_set(width=self.width, feature_dim=self.feature_dim, stem_stride=self.stem_stride)}


class MLPSection(ProjectedSection):
    """``mlp`` (:class:`~hardneg.models.MLPEncoder`): one hidden layer and a head."""

    width: int | None = Field(None, ge=1, description="width of the hidden layer (null: 256)")
    feature_dim: int | None = Field(None, ge=1, description="representation size (null: 128)")

    def arguments(self) -> dict[str, Any]:
        """The head's keys and ``MLPEncoder(hidden_dims=(width,), feature_dim)`` where set."""
        hidden = None if self.width is None else (self.width,)
        return {**super().arguments(), **_set(hidden_dims=hidden, feature_dim=self.feature_dim)}


class ResNetSection(ProjectedSection):
    """``resnet18_cifar`` / ``resnet50_cifar`` (:class:`~hardneg.models.ResNetCIFAR`): the head's keys
    only (the backbone has the paper's fixed sizes)."""


class GINSection(ModelSection):
    """``gin`` (:class:`~hardneg.models.gin.InfoGraphModel`): InfoGraph's GIN encoder and heads, which
    have no projection (Sun et al., ICLR 2020)."""

    width: int | None = Field(None, ge=1, description="hidden width of each GIN layer (null: 32)")
    layers: int | None = Field(None, ge=1, description="number of GIN layers (null: 3)")

    def arguments(self) -> dict[str, Any]:
        """``InfoGraphModel(hidden, num_layers)``."""
        return {"hidden": self.width or 32, "num_layers": self.layers or 3}


class BagOfWordsSection(ModelSection):
    """``bow`` (:class:`~hardneg.models.bow.BagOfWords`): mean word embeddings, no head (the loss sees
    ``f(x)``, Ash et al., AISTATS 2022)."""

    feature_dim: int | None = Field(None, ge=1, description="word-embedding size (null: 100)")

    def arguments(self) -> dict[str, Any]:
        """``BagOfWords(dim)``."""
        return {"dim": self.feature_dim or 100}


class GRUSection(ModelSection):
    """``gru`` (:class:`~hardneg.models.gru.GRUEncoder`): word embeddings and a GRU, no head."""

    width: int | None = Field(None, ge=1, description="word-embedding size (null: 100)")
    feature_dim: int | None = Field(None, ge=1, description="hidden state size of the GRU (null: 100)")
    bidirectional: bool = Field(False, description="both directions' final states concatenated")

    def arguments(self) -> dict[str, Any]:
        """``GRUEncoder(embedding_dim, hidden_dim, bidirectional)``."""
        return {"embedding_dim": self.width or 100, "hidden_dim": self.feature_dim or 100,
                "bidirectional": self.bidirectional}


_SECTIONS: dict[str, type[ModelSection]] = {
    "small_cnn": SmallCNNSection,
    "mlp": MLPSection,
    "resnet18_cifar": ResNetSection,
    "resnet50_cifar": ResNetSection,
    "gin": GINSection,
    "bow": BagOfWordsSection,
    "gru": GRUSection,
}


def register_encoder_section(name: str, section: type[ModelSection]) -> type[ModelSection]:
    """Make ``model.encoder: <name>`` validate its ``model`` section with ``section``.

    A user's encoder (a modality listing ``name`` in its ``encoders``) registers the keys it reads
    this way; a later registration of a name replaces the earlier one.

    Args:
        name: the ``model.encoder`` value.
        section: a subclass of :class:`~hardneg.config.ModelSection` whose fields all have defaults.

    Returns:
        ``section``.

    Raises:
        TypeError: ``section`` is not a ``ModelSection`` subclass.
        ValueError: ``name`` is empty, or a field of ``section`` has no default.
    """
    if not isinstance(name, str) or not name:
        raise ValueError(f"name must be a non-empty string, got {name!r}")
    if not (isinstance(section, type) and issubclass(section, ModelSection)):
        raise TypeError(f"section must be a subclass of hardneg.config.ModelSection, got {section!r}")
    required = [key for key, field in section.model_fields.items() if field.is_required()]
    if required:
        raise ValueError(f"section {section.__name__} must give every key a default; {required} have none")
    _SECTIONS[name] = section
    return section


def encoder_section(name: str) -> type[ModelSection]:
    """The ``model`` section of the encoder ``name``; raises ``ValueError`` naming the registered ones."""
    if not isinstance(name, str) or name not in _SECTIONS:
        raise ValueError(
            f"must be one of {encoder_section_names()} (an encoder of your own: register its keys with "
            f"hardneg.models.register_encoder_section), got {shown(name)}"
        )
    return _SECTIONS[name]


def encoder_section_names() -> list[str]:
    """The ``model.encoder`` names with a registered section, sorted."""
    return sorted(_SECTIONS)
