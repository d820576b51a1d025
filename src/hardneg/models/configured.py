"""The ``model`` section of a run to an encoder: backbone + projection head, sized for the inputs.

The one place where ``model.width`` / ``model.feature_dim`` / ``model.stem_stride`` are mapped to
a backbone's constructor arguments (``small_cnn``: channels, representation size, stride of the
first convolution; ``mlp``: hidden width, representation size), and the one table of which
``model`` keys each encoder reads (:data:`MODEL_KEYS`): a key an encoder does not read is an
error naming it and the keys it takes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hardneg.config.errors import ConfigError

if TYPE_CHECKING:
    from torch import nn

    from hardneg.config.schema import ModelConfig

__all__ = ["MODEL_KEYS", "check_model_keys", "configured_encoder"]

# The keys of the ``model`` section (besides ``encoder``) that each encoder reads; a key set away
# from its default for an encoder that does not read it is an error, not silently ignored.
MODEL_KEYS: dict[str, frozenset[str]] = {
    "small_cnn": frozenset({"width", "feature_dim", "stem_stride", "projection_dim", "hidden_dim"}),
    "mlp": frozenset({"width", "feature_dim", "projection_dim", "hidden_dim"}),
    "resnet18_cifar": frozenset({"projection_dim", "hidden_dim"}),
    "resnet50_cifar": frozenset({"projection_dim", "hidden_dim"}),
    "gin": frozenset({"width", "layers"}),  # width = hidden size; InfoGraph's heads have no projection
    "bow": frozenset({"feature_dim"}),  # word-embedding size; the loss sees f(x) itself
    "gru": frozenset({"width", "feature_dim", "bidirectional"}),  # word embeddings, hidden state
}


def check_model_keys(m: ModelConfig) -> None:
    """Raise ``ConfigError`` for a ``model`` key set away from its default that ``model.encoder`` does
    not read (an encoder missing from :data:`MODEL_KEYS` is not checked)."""
    reads = MODEL_KEYS.get(m.encoder)
    if reads is None:
        return
    for key, field in type(m).model_fields.items():
        if key == "encoder" or key in reads:
            continue
        value = getattr(m, key)
        if value != field.default:
            takes = ", ".join(f"model.{k}" for k in sorted(reads)) or "no other model key"
            raise ConfigError(
                f"invalid value for 'model.{key}': not used by model.encoder {m.encoder!r} (it takes "
                f"{takes}); leave it at {field.default!r}, got {value!r}"
            )


def configured_encoder(m: ModelConfig, **inputs: Any) -> nn.Module:
    """``build_encoder(model.encoder, ...)`` with the section's sizes; ``inputs`` = the data's
    (``in_channels`` for images, ``in_dim`` for vectors)."""
    from hardneg.models import build_encoder

    check_model_keys(m)
    kwargs: dict[str, Any] = dict(inputs)
    if m.width is not None and m.encoder == "mlp":
        kwargs["hidden_dims"] = (m.width,)
    elif m.width is not None:
        kwargs["width"] = m.width
    if m.feature_dim is not None:
        kwargs["feature_dim"] = m.feature_dim
    if m.stem_stride is not None:
        kwargs["stem_stride"] = m.stem_stride
    return build_encoder(m.encoder, projection_dim=m.projection_dim, hidden_dim=m.hidden_dim, **kwargs)
