"""The ``model`` section of a run to an encoder of :func:`~hardneg.models.build_encoder`, sized for the data.

The section of ``model.encoder`` (:mod:`hardneg.models.sections`) maps its keys to the constructor's
arguments (``small_cnn``: channels, representation size, stride of the first convolution; ``mlp``:
hidden width, representation size; both: the projection head's sizes); the data gives the inputs'
size. Which keys apply to which encoder is the section's schema, checked when the config is loaded.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hardneg.config.errors import ConfigError

if TYPE_CHECKING:
    from torch import nn

    from hardneg.config.schema import ModelSection

__all__ = ["configured_encoder", "encoder_config"]


def encoder_config(m: ModelSection) -> ModelSection:
    """``m`` as the section of its encoder: a section validated by the pipeline is returned as is, a
    bare :class:`~hardneg.config.ModelSection` (the section's default) is validated with the
    section registered for ``m.encoder`` (raises :class:`ConfigError` naming the key that does not
    apply or the registered encoders)."""
    from pydantic import ValidationError

    from hardneg.config.errors import from_validation_error
    from hardneg.models.sections import encoder_section

    try:
        schema = encoder_section(m.encoder)
    except ValueError as err:
        raise ConfigError(f"invalid value for 'model.encoder': {err}") from None
    if isinstance(m, schema):
        return m
    try:
        return schema.model_validate(m.model_dump())
    except ValidationError as err:
        raise from_validation_error(err, schema, "model") from None


def configured_encoder(m: ModelSection, **inputs: Any) -> nn.Module:
    """``build_encoder(model.encoder, **section.arguments(), **inputs)``: the encoder of the ``model``
    section ``m``, sized for the data's ``inputs`` (``in_channels`` for images, ``in_dim`` for vectors).

    Args:
        m: the run's ``model`` section (``cfg.model``).
        **inputs: the backbone's input size.

    Raises:
        ConfigError: ``model.encoder`` is not an encoder of :func:`~hardneg.models.build_encoder`
            (``gin``, ``bow`` and ``gru`` are built by their modalities from
            ``cfg.model.arguments()``).

    Example:
        >>> from hardneg.models.sections import MLPSection
        >>> enc = configured_encoder(MLPSection(encoder="mlp", width=8, feature_dim=4), in_dim=3)
        >>> enc.feature_dim, enc.projection_dim
        (4, 64)
    """
    from hardneg.models import ENCODER_NAMES, build_encoder

    section = encoder_config(m)
    if section.encoder not in ENCODER_NAMES:
        raise ConfigError(
            f"invalid value for 'model.encoder': configured_encoder builds one of {list(ENCODER_NAMES)}, "
            f"got {section.encoder!r} (its modality builds it from cfg.model.arguments())"
        )
    return build_encoder(section.encoder, **section.arguments(), **inputs)
