"""Projection head ``g`` of SimCLR / HCL, mapping the representation ``h`` to ``z``.

As in the HCL code (Robinson et al. (ICLR 2021), App. D.1; github.com/joshr17/HCL ``model.py``):
``Linear(feat, 512, bias=False) → BatchNorm1d(512) → ReLU → Linear(512, 128, bias=True)``.
The contrastive loss is computed on ``z``; linear readout uses ``h`` (the 2048-d ResNet-50
output in HCL).

Shapes:
    input ``(B, in_dim)`` → output ``(B, out_dim)``.
"""

from __future__ import annotations

from torch import Tensor, nn

__all__ = ["ProjectionHead"]


class ProjectionHead(nn.Module):
    """Two-layer MLP projection head (SimCLR).

    Args:
        in_dim: size of the representation ``h``.
        hidden_dim: hidden width (512 in HCL).
        out_dim: size of the projection ``z`` (128 in HCL).

    Example:
        >>> import torch
        >>> ProjectionHead(in_dim=16)(torch.rand(3, 16)).shape
        torch.Size([3, 128])
    """

    def __init__(self, *, in_dim: int, hidden_dim: int = 512, out_dim: int = 128) -> None:
        super().__init__()
        for name, value in (("in_dim", in_dim), ("hidden_dim", hidden_dim), ("out_dim", out_dim)):
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        self.in_dim = in_dim
        self.out_dim = out_dim
        self.net = nn.Sequential(
            nn.Linear(in_dim, hidden_dim, bias=False),
            nn.BatchNorm1d(hidden_dim),
            nn.ReLU(inplace=True),
            nn.Linear(hidden_dim, out_dim, bias=True),
        )

    def forward(self, h: Tensor) -> Tensor:
        """``(B, in_dim) → (B, out_dim)``."""
        return self.net(h)
