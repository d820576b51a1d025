"""A small CNN for 8×8 one-channel digits (the embedded default image encoder).

Architecture: ``conv3×3(C→w) → BN → ReLU → conv3×3(w→2w) → BN → ReLU → maxpool 2 →
conv3×3(2w→feature_dim) → BN → ReLU → global average pool``. With ``width=32`` and
``feature_dim=128`` it has ~100k parameters and runs a digits epoch in well under a second.

Shapes:
    input: ``(B, C, H, W)`` (``H, W ≥ 2``; designed for ``8×8``); output: ``(B, feature_dim)``.
"""

from __future__ import annotations

from torch import Tensor, nn

__all__ = ["SmallCNN"]


class SmallCNN(nn.Module):
    """Small convolutional backbone; ``feature_dim`` is the representation size.

    Args:
        in_channels: image channels (1 for digits).
        width: channels of the first conv layer.
        feature_dim: size of the output representation ``h``.
        stem_stride: stride of the first conv; 2 halves the resolution the two wide convs run at
            (28×28 Fashion-MNIST: about 4× fewer FLOPs, see ``benchmarks/bench_training.py``).

    Example:
        >>> import torch
        >>> SmallCNN(feature_dim=64)(torch.rand(2, 1, 8, 8)).shape
        torch.Size([2, 64])
    """

    def __init__(
        self, *, in_channels: int = 1, width: int = 32, feature_dim: int = 128, stem_stride: int = 1
    ) -> None:
        super().__init__()
        checks = (("in_channels", in_channels), ("width", width), ("feature_dim", feature_dim),
                  ("stem_stride", stem_stride))
        for name, value in checks:
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        self.feature_dim = feature_dim
        self.features = nn.Sequential(
            nn.Conv2d(in_channels, width, 3, stride=stem_stride, padding=1, bias=False),
            nn.BatchNorm2d(width),
            nn.ReLU(inplace=True),
            nn.Conv2d(width, 2 * width, 3, padding=1, bias=False),
            nn.BatchNorm2d(2 * width),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(2),
            nn.Conv2d(2 * width, feature_dim, 3, padding=1, bias=False),
            nn.BatchNorm2d(feature_dim),
            nn.ReLU(inplace=True),
            nn.AdaptiveAvgPool2d(1),
            nn.Flatten(),
        )

    def forward(self, x: Tensor) -> Tensor:
        """``(B, C, H, W) → (B, feature_dim)``."""
        return self.features(x)
