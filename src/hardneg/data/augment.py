"""Batched SimCLR augmentations as an ``nn.Module`` on ``(B, C, H, W)`` float tensors.

Applied in the training step to a whole batch (CPU or GPU), one random draw per sample:

1. random resized crop + horizontal flip, both folded into **one** per-sample affine map and a
   single ``torch.nn.functional.grid_sample`` call (bilinear, ``align_corners=False``). The crop
   covers a fraction ``s ~ U(crop_scale)`` of the image area with aspect ratio
   ``r``, ``log r ~ U(log crop_ratio)`` restricted to the feasible range so the crop always fits
   (no rejection loop), and a uniform position; output size ``image_size``;
2. colour jitter with probability ``jitter_p`` (brightness, contrast, saturation, hue, in that
   fixed order; factors ``U[1 − a, 1 + a]`` and hue shift ``U[−h, h]``), only when ``C == 3``;
3. grayscale with probability ``grayscale_p`` (luma replicated to 3 channels), only when ``C == 3``;
4. gaussian blur with probability ``blur_p``, ``σ ~ U(blur_sigma)``, kernel ≈ 10 % of the size.

Settings follow SimCLR (Chen et al., 2020) as used by HCL (Robinson et al. (ICLR 2021), §5.1 and App. D.1;
their
code: ``RandomResizedCrop(32)``, flip 0.5, ``ColorJitter(0.4, 0.4, 0.4, 0.1)`` w.p. 0.8,
grayscale w.p. 0.2; no blur at 32×32). :func:`digits_augment` is the cheap preset for 8×8 digits
(mild crops ≈ small shifts/zooms, no flip since flipping changes digits, no colour).

Why plain torch and not kornia: every random draw here comes from one seeded
``torch.Generator`` (on CPU, parameters then moved to the batch's device), so the same seed gives
the same views on CPU and GPU; kornia's random augmentations draw from the global RNG, and
kornia is not a declared dependency. The ops are ~150 lines and tested against identities.

Shapes:
    input: ``(B, C, H, W)`` float in ``[0, 1]``; output: ``(B, C, S, S)`` with
    ``S = image_size`` (or ``(H, W)`` when ``image_size`` is ``None``), float in ``[0, 1]``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from hardneg.data.color import (
    adjust_brightness,
    adjust_contrast,
    adjust_hue,
    adjust_saturation,
    rgb_to_grayscale,
)

__all__ = ["SimCLRAugment", "digits_augment", "gaussian_blur", "random_resized_crop"]


def _uniform(n: int, low: float, high: float, generator: torch.Generator | None) -> Tensor:
    return torch.rand(n, generator=generator, dtype=torch.float64) * (high - low) + low


def _bernoulli(n: int, p: float, generator: torch.Generator | None) -> Tensor:
    return torch.rand(n, generator=generator, dtype=torch.float64) < p


def _check_pair(name: str, value: Sequence[float], low: float, high: float) -> tuple[float, float]:
    pair = tuple(float(v) for v in value)
    if len(pair) != 2 or not (low <= pair[0] <= pair[1] <= high):
        raise ValueError(f"{name} must be a pair (a, b) with {low} <= a <= b <= {high}, got {value!r}")
    return pair[0], pair[1]


def _check_prob(name: str, value: float) -> float:
    if not 0.0 <= float(value) <= 1.0:
        raise ValueError(f"{name} must be a probability in [0, 1], got {value!r}")
    return float(value)


def random_resized_crop(
    images: Tensor,
    *,
    size: tuple[int, int],
    scale: tuple[float, float],
    ratio: tuple[float, float],
    flip_p: float,
    generator: torch.Generator | None = None,
) -> Tensor:
    """Per-sample random resized crop and horizontal flip in one ``grid_sample`` call.

    In normalised coordinates (image = ``[−1, 1]²``) the crop has half-widths ``(w, h)`` with
    ``w h = s`` and ``w / h = r H / W``; ``log r`` is drawn in the intersection of
    ``log ratio`` and the feasible interval ``[log(s W/H), log(W/(s H))]`` (where
    ``w, h ≤ 1``), so ``scale = (1, 1)`` gives exactly the whole image. A flip negates ``w``.

    Shapes:
        images: ``(B, C, H, W)`` float. Output: ``(B, C, *size)``.
    """
    b, c, height, width = images.shape
    s = _uniform(b, scale[0], scale[1], generator)
    aspect = height / width  # normalised ratio = pixel ratio * H / W
    log_lo = torch.clamp(torch.full_like(s, math.log(ratio[0] * aspect)), min=torch.log(s))
    log_hi = torch.clamp(torch.full_like(s, math.log(ratio[1] * aspect)), max=-torch.log(s))
    log_hi = torch.maximum(log_hi, log_lo)  # ratio range outside feasibility: take its edge
    log_r = log_lo + (log_hi - log_lo) * torch.rand(b, generator=generator, dtype=torch.float64)
    r = torch.exp(log_r)
    w = torch.sqrt(s * r).clamp(max=1.0)
    h = torch.sqrt(s / r).clamp(max=1.0)
    cx = (2.0 * torch.rand(b, generator=generator, dtype=torch.float64) - 1.0) * (1.0 - w)
    cy = (2.0 * torch.rand(b, generator=generator, dtype=torch.float64) - 1.0) * (1.0 - h)
    flip = _bernoulli(b, flip_p, generator)
    sign = torch.where(flip, -1.0, 1.0).to(torch.float64)
    theta = torch.zeros(b, 2, 3, dtype=torch.float64)
    theta[:, 0, 0] = w * sign
    theta[:, 0, 2] = cx
    theta[:, 1, 1] = h
    theta[:, 1, 2] = cy
    theta = theta.to(device=images.device, dtype=images.dtype)
    grid = F.affine_grid(theta, [b, c, size[0], size[1]], align_corners=False)
    return F.grid_sample(images, grid, mode="bilinear", padding_mode="border", align_corners=False)


def gaussian_blur(images: Tensor, sigma: Tensor, *, kernel_size: int) -> Tensor:
    """Separable gaussian blur with one ``σ`` per sample (reflect padding).

    Shapes:
        images: ``(B, C, H, W)``; sigma: ``(B,)``; output: ``(B, C, H, W)``.
    """
    if kernel_size < 1 or kernel_size % 2 == 0:
        raise ValueError(f"kernel_size must be a positive odd integer, got {kernel_size!r}")
    b, c, height, width = images.shape
    half = kernel_size // 2
    pos = torch.arange(-half, half + 1, device=images.device, dtype=images.dtype)
    sig = sigma.to(device=images.device, dtype=images.dtype).view(b, 1)
    kernel = torch.exp(-0.5 * (pos.view(1, -1) / sig) ** 2)
    kernel = kernel / kernel.sum(dim=1, keepdim=True)  # (B, K)
    kernel = kernel.repeat_interleave(c, dim=0)  # (B*C, K)
    x = images.reshape(1, b * c, height, width)
    pad_mode = "reflect" if half < min(height, width) else "replicate"
    x = F.pad(x, (half, half, 0, 0), mode=pad_mode)
    x = F.conv2d(x, kernel.view(b * c, 1, 1, kernel_size), groups=b * c)
    x = F.pad(x, (0, 0, half, half), mode=pad_mode)
    x = F.conv2d(x, kernel.view(b * c, 1, kernel_size, 1), groups=b * c)
    return x.view(b, c, height, width)


class SimCLRAugment(nn.Module):
    """SimCLR augmentation of a whole batch; see the module docstring for the pipeline.

    Args:
        image_size: output side ``S`` (square), or ``None`` to keep ``(H, W)``.
        crop_scale: range of the crop's area fraction; ``(0.08, 1.0)`` is SimCLR's ImageNet
            setting, ``(0.2, 1.0)`` the common CIFAR one. ``(1, 1)`` disables cropping.
        crop_ratio: range of the crop's aspect ratio (width / height, pixels).
        flip_p: probability of a horizontal flip.
        jitter: ``(brightness, contrast, saturation, hue)`` strengths; hue in ``[0, 0.5]``.
        jitter_p: probability of colour jitter (RGB only).
        grayscale_p: probability of converting to grayscale (RGB only).
        blur_p: probability of gaussian blur.
        blur_sigma: range of the blur's ``σ`` in pixels.
        generator: seeded ``torch.Generator`` (CPU) for reproducible views; ``None`` uses the
            global RNG. ``forward(x, generator=g)`` overrides it per call.

    Shapes:
        input ``(B, C, H, W)`` float in ``[0, 1]`` → output ``(B, C, S, S)`` in ``[0, 1]``.

    Example:
        >>> g = torch.Generator().manual_seed(0)
        >>> aug = SimCLRAugment(image_size=32, generator=g)
        >>> aug(torch.rand(4, 3, 32, 32)).shape
        torch.Size([4, 3, 32, 32])
    """

    def __init__(
        self,
        *,
        image_size: int | None,
        crop_scale: Sequence[float] = (0.2, 1.0),
        crop_ratio: Sequence[float] = (3.0 / 4.0, 4.0 / 3.0),
        flip_p: float = 0.5,
        jitter: Sequence[float] = (0.4, 0.4, 0.4, 0.1),
        jitter_p: float = 0.8,
        grayscale_p: float = 0.2,
        blur_p: float = 0.0,
        blur_sigma: Sequence[float] = (0.1, 2.0),
        generator: torch.Generator | None = None,
    ) -> None:
        super().__init__()
        if image_size is not None and (not isinstance(image_size, int) or image_size < 1):
            raise ValueError(f"image_size must be a positive int or None, got {image_size!r}")
        self.image_size = image_size
        self.crop_scale = _check_pair("crop_scale", crop_scale, 1e-6, 1.0)
        self.crop_ratio = _check_pair("crop_ratio", crop_ratio, 1e-6, math.inf)
        self.flip_p = _check_prob("flip_p", flip_p)
        jit = tuple(float(v) for v in jitter)
        if len(jit) != 4 or min(jit) < 0 or jit[3] > 0.5 or max(jit[:3]) > 1.0:
            raise ValueError(
                "jitter must be (brightness, contrast, saturation, hue) with the first three "
                f"in [0, 1] and hue in [0, 0.5], got {jitter!r}"
            )
        self.jitter = jit
        self.jitter_p = _check_prob("jitter_p", jitter_p)
        self.grayscale_p = _check_prob("grayscale_p", grayscale_p)
        self.blur_p = _check_prob("blur_p", blur_p)
        self.blur_sigma = _check_pair("blur_sigma", blur_sigma, 1e-6, math.inf)
        self.generator = generator

    def extra_repr(self) -> str:
        return (
            f"image_size={self.image_size}, crop_scale={self.crop_scale}, flip_p={self.flip_p}, "
            f"jitter={self.jitter}, jitter_p={self.jitter_p}, grayscale_p={self.grayscale_p}, "
            f"blur_p={self.blur_p}"
        )

    def _jitter(self, x: Tensor, generator: torch.Generator | None) -> Tensor:
        b = x.shape[0]
        apply = _bernoulli(b, self.jitter_p, generator).to(x.device)
        bri, con, sat, hue = self.jitter
        factors = [_uniform(b, max(0.0, 1.0 - a), 1.0 + a, generator) for a in (bri, con, sat)]
        shift = _uniform(b, -hue, hue, generator)
        if not bool(apply.any()):
            return x
        y = x
        if bri > 0:
            y = adjust_brightness(y, factors[0])
        if con > 0:
            y = adjust_contrast(y, factors[1])
        if sat > 0:
            y = adjust_saturation(y, factors[2])
        if hue > 0:
            y = adjust_hue(y, shift)
        return torch.where(apply.view(-1, 1, 1, 1), y, x)

    def forward(self, images: Tensor, *, generator: torch.Generator | None = None) -> Tensor:
        """Augment a batch; see the class docstring for shapes."""
        if images.ndim != 4 or not images.is_floating_point():
            raise ValueError(
                "images must be a float tensor of shape (B, C, H, W), got "
                f"dtype {images.dtype} and shape {tuple(images.shape)}"
            )
        gen = generator if generator is not None else self.generator
        b, c, height, width = images.shape
        size = (height, width) if self.image_size is None else (self.image_size,) * 2
        x = images
        if self.crop_scale != (1.0, 1.0) or self.flip_p > 0 or size != (height, width):
            x = random_resized_crop(
                x,
                size=size,
                scale=self.crop_scale,
                ratio=self.crop_ratio,
                flip_p=self.flip_p,
                generator=gen,
            )
        if c == 3:
            if self.jitter_p > 0:
                x = self._jitter(x, gen)
            if self.grayscale_p > 0:
                gray = _bernoulli(b, self.grayscale_p, gen).to(x.device).view(-1, 1, 1, 1)
                x = torch.where(gray, rgb_to_grayscale(x).expand_as(x), x)
        if self.blur_p > 0:
            apply = _bernoulli(b, self.blur_p, gen).to(x.device).view(-1, 1, 1, 1)
            sigma = _uniform(b, self.blur_sigma[0], self.blur_sigma[1], gen)
            kernel = max(3, round(0.1 * size[0]) // 2 * 2 + 1)
            x = torch.where(apply, gaussian_blur(x, sigma, kernel_size=kernel), x)
        return x.clamp(0.0, 1.0)


def digits_augment(*, generator: torch.Generator | None = None) -> SimCLRAugment:
    """Cheap preset for 8×8 one-channel digits: mild crops (shift/zoom), no flip, no colour.

    Crop area ``U(0.6, 1.0)`` with aspect ratio ``U(0.8, 1.25)`` resized back to 8×8 (shifts of
    up to ~1.5 pixels and zooms up to ~1.3×); flipping is off because a mirrored digit is
    another symbol.

    Example:
        >>> digits_augment(generator=torch.Generator().manual_seed(0))(torch.rand(2, 1, 8, 8)).shape
        torch.Size([2, 1, 8, 8])
    """
    return SimCLRAugment(
        image_size=8,
        crop_scale=(0.6, 1.0),
        crop_ratio=(0.8, 1.25),
        flip_p=0.0,
        jitter_p=0.0,
        grayscale_p=0.0,
        blur_p=0.0,
        generator=generator,
    )
