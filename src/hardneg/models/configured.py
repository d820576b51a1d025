"""The ``model`` section of a run to an encoder: backbone + projection head, sized for the inputs.

The one place where ``model.width`` / ``model.feature_dim`` / ``model.stem_stride`` are mapped to
a backbone's constructor arguments (``small_cnn``: channels, representation size, stride of the
first convolution; ``mlp``: hidden width, representation size); a key a backbone does not take is
an error naming it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hardneg.config.errors import ConfigError

if TYPE_CHECKING:
    from torch import nn

    from hardneg.config.schema import ModelConfig

__all__ = ["configured_encoder"]


def configured_encoder(m: ModelConfig, **inputs: Any) -> nn.Module:
    """``build_encoder(model.encoder, ...)`` with the section's sizes; ``inputs`` = the data's
    (``in_channels`` for images, ``in_dim`` for vectors)."""
    from hardneg.models import build_encoder

    kwargs: dict[str, Any] = dict(inputs)
    if m.stem_stride is not None and m.encoder != "small_cnn":
        raise ConfigError(
            f"invalid value for 'model.stem_stride': only used by small_cnn, got encoder {m.encoder!r}"
        )
    if m.encoder == "mlp":
        if m.width is not None:
            kwargs["hidden_dims"] = (m.width,)
        if m.feature_dim is not None:
            kwargs["feature_dim"] = m.feature_dim
    elif m.encoder == "small_cnn":
        if m.width is not None:
            kwargs["width"] = m.width
        if m.feature_dim is not None:
            kwargs["feature_dim"] = m.feature_dim
        if m.stem_stride is not None:
            kwargs["stem_stride"] = m.stem_stride
    elif m.width is not None or m.feature_dim is not None:
        raise ConfigError(
            "invalid value for 'model.width'/'model.feature_dim': only used by small_cnn and mlp, "
            f"got encoder {m.encoder!r}"
        )
    return build_encoder(m.encoder, projection_dim=m.projection_dim, hidden_dim=m.hidden_dim, **kwargs)
