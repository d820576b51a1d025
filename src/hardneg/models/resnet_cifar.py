"""CIFAR-variant ResNet-18 / ResNet-50 in plain torch (no torchvision).

He et al., *Deep Residual Learning for Image Recognition*, CVPR 2016, with the CIFAR stem used
by SimCLR on small images and by HCL (Robinson et al. (ICLR 2021), App. D.1; their ``model.py`` replaces
``conv1`` by a 3×3 stride-1 convolution and drops the max-pool): ``conv3×3(C→64, stride 1) → BN
→ ReLU``, **no max-pool**, then four stages (64, 128, 256, 512 planes; strides 1, 2, 2, 2) and
global average pooling. The fully connected classifier is omitted: the output is the
representation ``h`` (512-d for ResNet-18, 2048-d for ResNet-50).

Shapes:
    input ``(B, C, H, W)`` (32×32 CIFAR, 96×96 STL-10, 64×64 Tiny-ImageNet) →
    output ``(B, feature_dim)``.
"""

from __future__ import annotations

from collections.abc import Sequence

from torch import Tensor, nn

__all__ = ["BasicBlock", "Bottleneck", "ResNetCIFAR", "resnet18_cifar", "resnet50_cifar"]


def _shortcut(in_planes: int, out: int, stride: int) -> nn.Module:
    """Identity, or a strided 1×1 projection + BN when the shape changes (both block types)."""
    if stride == 1 and in_planes == out:
        return nn.Identity()
    return nn.Sequential(nn.Conv2d(in_planes, out, 1, stride=stride, bias=False), nn.BatchNorm2d(out))


class BasicBlock(nn.Module):
    """Two 3×3 convolutions with identity (or 1×1 projection) shortcut; expansion 1."""

    expansion = 1

    def __init__(self, in_planes: int, planes: int, stride: int = 1) -> None:
        super().__init__()
        out = planes * self.expansion
        self.conv1 = nn.Conv2d(in_planes, planes, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, out, 3, stride=1, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(out)
        self.relu = nn.ReLU(inplace=True)
        self.shortcut = _shortcut(in_planes, out, stride)

    def forward(self, x: Tensor) -> Tensor:
        y = self.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return self.relu(y + self.shortcut(x))


class Bottleneck(nn.Module):
    """1×1 → 3×3 (stride) → 1×1 convolutions with shortcut; expansion 4 (ResNet v1.5)."""

    expansion = 4

    def __init__(self, in_planes: int, planes: int, stride: int = 1) -> None:
        super().__init__()
        out = planes * self.expansion
        self.conv1 = nn.Conv2d(in_planes, planes, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, stride=stride, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.conv3 = nn.Conv2d(planes, out, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(out)
        self.relu = nn.ReLU(inplace=True)
        self.shortcut = _shortcut(in_planes, out, stride)

    def forward(self, x: Tensor) -> Tensor:
        y = self.relu(self.bn1(self.conv1(x)))
        y = self.relu(self.bn2(self.conv2(y)))
        y = self.bn3(self.conv3(y))
        return self.relu(y + self.shortcut(x))


class ResNetCIFAR(nn.Module):
    """ResNet with the CIFAR stem (3×3 stride-1 conv, no max-pool) and no classifier.

    Args:
        block: :class:`BasicBlock` or :class:`Bottleneck`.
        layers: number of blocks per stage, e.g. ``(2, 2, 2, 2)`` for ResNet-18.
        in_channels: image channels.
        zero_init_residual: zero the last BN of each block (Goyal et al., 2017).

    Example:
        >>> import torch
        >>> net = resnet18_cifar()
        >>> net(torch.rand(2, 3, 32, 32)).shape, net.feature_dim
        (torch.Size([2, 512]), 512)
    """

    def __init__(
        self,
        *,
        block: type[BasicBlock] | type[Bottleneck],
        layers: Sequence[int],
        in_channels: int = 3,
        zero_init_residual: bool = False,
    ) -> None:
        super().__init__()
        if len(layers) != 4 or any(not isinstance(n, int) or n < 1 for n in layers):
            raise ValueError(f"layers must be 4 positive ints, got {tuple(layers)!r}")
        if not isinstance(in_channels, int) or in_channels < 1:
            raise ValueError(f"in_channels must be a positive int, got {in_channels!r}")
        self.conv1 = nn.Conv2d(in_channels, 64, 3, stride=1, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU(inplace=True)
        self.in_planes = 64
        self.layer1 = self._stage(block, 64, layers[0], stride=1)
        self.layer2 = self._stage(block, 128, layers[1], stride=2)
        self.layer3 = self._stage(block, 256, layers[2], stride=2)
        self.layer4 = self._stage(block, 512, layers[3], stride=2)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.feature_dim = 512 * block.expansion
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)
        if zero_init_residual:
            for m in self.modules():
                last = getattr(m, "bn3", None) if isinstance(m, Bottleneck) else None
                if isinstance(m, BasicBlock):
                    last = m.bn2
                if last is not None:
                    nn.init.zeros_(last.weight)

    def _stage(
        self, block: type[BasicBlock] | type[Bottleneck], planes: int, blocks: int, stride: int
    ) -> nn.Sequential:
        mods: list[nn.Module] = []
        for s in [stride] + [1] * (blocks - 1):
            mods.append(block(self.in_planes, planes, s))
            self.in_planes = planes * block.expansion
        return nn.Sequential(*mods)

    def forward(self, x: Tensor) -> Tensor:
        """``(B, C, H, W) → (B, feature_dim)``."""
        x = self.relu(self.bn1(self.conv1(x)))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.pool(x).flatten(1)


def resnet18_cifar(*, in_channels: int = 3, zero_init_residual: bool = False) -> ResNetCIFAR:
    """ResNet-18 (BasicBlock, 2-2-2-2) with the CIFAR stem; representation 512-d."""
    return ResNetCIFAR(
        block=BasicBlock, layers=(2, 2, 2, 2), in_channels=in_channels, zero_init_residual=zero_init_residual
    )


def resnet50_cifar(*, in_channels: int = 3, zero_init_residual: bool = False) -> ResNetCIFAR:
    """ResNet-50 (Bottleneck, 3-4-6-3) with the CIFAR stem; representation 2048-d (HCL)."""
    return ResNetCIFAR(
        block=Bottleneck, layers=(3, 4, 6, 3), in_channels=in_channels, zero_init_residual=zero_init_residual
    )
