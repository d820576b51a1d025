"""``Encoder(backbone, head)`` returning ``(h, z)`` and the ``build_encoder`` registry.

``h = f(x)`` is the representation (used by linear readout / kNN / mean classifier), ``z = g(h)``
the projection the contrastive loss sees (SimCLR; Robinson et al. (ICLR 2021) App. D.1). Neither is normalised
here: the loss decides (hardneg's losses normalise or clip as configured).

Shapes:
    input ``(B, ...)`` → ``h: (B, backbone.feature_dim)``, ``z: (B, head.out_dim)``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from torch import Tensor, nn

from hardneg.models.heads import ProjectionHead
from hardneg.models.mlp import MLPEncoder
from hardneg.models.resnet_cifar import resnet18_cifar, resnet50_cifar
from hardneg.models.small_cnn import SmallCNN

__all__ = ["ENCODER_NAMES", "Encoder", "build_backbone", "build_encoder"]


class Encoder(nn.Module):
    """Backbone ``f`` plus projection head ``g``: ``forward(x) = (f(x), g(f(x)))``.

    Args:
        backbone: module mapping inputs to ``(B, d)`` representations; must expose
            ``feature_dim``.
        head: projection head (``nn.Identity()`` for none).

    Example:
        >>> import torch
        >>> enc = build_encoder("small_cnn", projection_dim=16)
        >>> h, z = enc(torch.rand(2, 1, 8, 8))
        >>> tuple(h.shape), tuple(z.shape)
        ((2, 128), (2, 16))
    """

    def __init__(self, *, backbone: nn.Module, head: nn.Module) -> None:
        super().__init__()
        self.backbone = backbone
        self.head = head
        self.feature_dim = int(getattr(backbone, "feature_dim", 0)) or None
        self.projection_dim = int(getattr(head, "out_dim", 0)) or self.feature_dim

    def representation(self, x: Tensor) -> Tensor:
        """``h = f(x)``, shape ``(B, feature_dim)``."""
        return self.backbone(x)

    def forward(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """Return ``(h, z)``."""
        h = self.backbone(x)
        return h, self.head(h)


_BACKBONES: dict[str, Callable[..., nn.Module]] = {
    "small_cnn": SmallCNN,
    "resnet18_cifar": resnet18_cifar,
    "resnet50_cifar": resnet50_cifar,
    "mlp": MLPEncoder,
}
ENCODER_NAMES: tuple[str, ...] = tuple(sorted(_BACKBONES))


def build_backbone(name: str, **kwargs: Any) -> nn.Module:
    """Backbone by registry name (keyword arguments go to its constructor)."""
    if name not in _BACKBONES:
        raise ValueError(f"name must be one of {list(ENCODER_NAMES)}, got {name!r}")
    return _BACKBONES[name](**kwargs)


def build_encoder(
    name: str,
    *,
    projection_dim: int | None = 128,
    hidden_dim: int = 512,
    **kwargs: Any,
) -> Encoder:
    """Build ``Encoder(backbone=<name>, head=ProjectionHead(...))``.

    Args:
        name: one of :data:`ENCODER_NAMES` (``"mlp"``, ``"resnet18_cifar"``,
            ``"resnet50_cifar"``, ``"small_cnn"``).
        projection_dim: output size of the projection head; ``None`` for no head (``z = h``).
        hidden_dim: hidden width of the projection head.
        **kwargs: backbone constructor arguments (e.g. ``in_channels=1``, ``feature_dim=64``,
            ``in_dim=20`` for ``"mlp"``).
    """
    backbone = build_backbone(name, **kwargs)
    feature_dim = int(backbone.feature_dim)  # type: ignore[arg-type]
    head: nn.Module = nn.Identity()
    if projection_dim is not None:
        head = ProjectionHead(in_dim=feature_dim, hidden_dim=hidden_dim, out_dim=projection_dim)
    return Encoder(backbone=backbone, head=head)
