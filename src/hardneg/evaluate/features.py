"""``extract_features``: run a frozen encoder over images in batches.

The encoder is put in eval mode (BatchNorm uses running statistics, dropout off) under
``torch.inference_mode``; the train/eval mode of **every submodule** is restored afterwards, so a
caller in the middle of training (online kNN every few epochs, Robinson et al. (ICLR 2021) §5.1) is
unaffected.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

import torch
from torch import Tensor, nn

__all__ = ["extract_features"]


def extract_features(
    encoder: nn.Module,
    images: Tensor,
    *,
    batch_size: int = 512,
    device: str | torch.device | None = None,
    output: Literal["representation", "projection"] = "representation",
    transform: Callable[[Tensor], Tensor] | None = None,
) -> Tensor:
    """Features of ``images`` under ``encoder``, on CPU as float32.

    Args:
        encoder: returns either a tensor or a tuple ``(h, z)`` (like
            :class:`~hardneg.models.Encoder`).
        images: ``(N, ...)`` inputs; ``uint8`` images are converted to float in ``[0, 1]``.
        batch_size: inputs per forward pass.
        device: where to run (default: the encoder's parameter device).
        output: ``"representation"`` (``h``, first element) or ``"projection"`` (``z``, last)
            when the encoder returns a tuple.
        transform: optional batch transform applied before the encoder (e.g. normalisation).

    Shapes:
        images ``(N, ...)`` → output ``(N, d)``.

    Example:
        >>> from hardneg.models import build_encoder
        >>> enc = build_encoder("small_cnn", projection_dim=16).train()
        >>> extract_features(enc, torch.rand(5, 1, 8, 8), batch_size=2).shape, enc.training
        (torch.Size([5, 128]), True)
    """
    if not (isinstance(batch_size, int) and batch_size >= 1):
        raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
    if output not in ("representation", "projection"):
        raise ValueError(f"output must be one of ['projection', 'representation'], got {output!r}")
    if device is None:
        param = next(encoder.parameters(), None)
        device = param.device if param is not None else torch.device("cpu")
    modes = {name: m.training for name, m in encoder.named_modules()}
    chunks: list[Tensor] = []
    try:
        encoder.eval()
        with torch.inference_mode():
            for start in range(0, images.shape[0], batch_size):
                x = images[start : start + batch_size].to(device)
                if x.dtype == torch.uint8:
                    x = x.float().div_(255.0)
                if transform is not None:
                    x = transform(x)
                out = encoder(x)
                if isinstance(out, tuple | list):
                    out = out[0] if output == "representation" else out[-1]
                chunks.append(out.detach().float().flatten(1).cpu())
    finally:
        for name, m in encoder.named_modules():
            m.training = modes[name]
    if not chunks:
        return torch.empty(0, 0)
    return torch.cat(chunks)
