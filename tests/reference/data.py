"""Small deterministic inputs shared by the reference tests."""

from __future__ import annotations

import torch


def views(
    b: int = 6, d: int = 5, dtype: torch.dtype = torch.float64, seed: int = 0
) -> tuple[torch.Tensor, torch.Tensor]:
    """Two correlated views ``(z1, z2)`` of shape (b, d): ``z2 = z1 + 0.5 ε``."""
    g = torch.Generator().manual_seed(seed)
    z1 = torch.randn(b, d, generator=g, dtype=dtype)
    z2 = z1 + 0.5 * torch.randn(b, d, generator=g, dtype=dtype)
    return z1, z2
