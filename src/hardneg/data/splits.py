"""Image splits by data set name: the one list of image data sets and their on-disk readers.

Nothing is downloaded: ``digits`` is scikit-learn's bundled copy, ``fashion_mnist`` defaults to
the Debian package's folder, every other name reads ``root`` with the readers of
:mod:`hardneg.data` (IDX, CIFAR pickles, STL-10 binaries, image folders); ``random`` is uniform
noise with random labels (benchmarks and smoke tests).
"""

from __future__ import annotations

from pathlib import Path

import torch

from hardneg.data.images import LabeledImages
from hardneg.seeding import mix_seed

__all__ = ["IMAGE_DATASETS", "load_image_splits", "root_layout"]

IMAGE_DATASETS = (
    "digits",
    "fashion_mnist",
    "mnist",
    "cifar10",
    "cifar100",
    "stl10",
    "tiny_imagenet",
    "image_folder",
    "random",
)


def root_layout(dataset: str) -> str:
    """What the folder ``root`` must hold for ``dataset`` (the layout its reader expects), for messages."""
    from hardneg.data import cifar, idx, image_folder, stl10

    layouts = {
        "fashion_mnist": idx._LAYOUT,
        "mnist": idx._LAYOUT,
        "cifar10": cifar._C10_LAYOUT,
        "cifar100": cifar._C100_LAYOUT,
        "stl10": stl10._LAYOUT,
        "tiny_imagenet": image_folder._TINY_LAYOUT,
        "image_folder": "<root>/{train,val}/<class_name>/*.png|*.jpg (one sub-folder per class)",
    }
    return layouts.get(dataset, "the data set's files")


def _subset(data: LabeledImages, n: int | None) -> LabeledImages:
    if n is None or n >= len(data):
        return data
    return LabeledImages(data.images[:n], data.labels[:n], data.classes)


def _random_images(n: int, shape: list[int], seed: int, num_classes: int = 10) -> LabeledImages:
    g = torch.Generator().manual_seed(mix_seed(seed, 0xDA7A))
    images = torch.rand(n, *shape, generator=g)
    labels = torch.randint(0, num_classes, (n,), generator=g)
    return LabeledImages(images, labels, tuple(str(i) for i in range(num_classes)))


def load_image_splits(
    *,
    dataset: str,
    root: str | None = None,
    test_fraction: float = 0.25,
    split_seed: int = 0,
    train_subset: int | None = None,
    test_subset: int | None = None,
    random_size: int = 512,
    random_shape: list[int] | None = None,
) -> tuple[LabeledImages, LabeledImages]:
    """``(train, test)`` images of a named dataset (nothing is downloaded).

    ``digits``: scikit-learn's digits, stratified split. ``fashion_mnist`` / ``mnist``: the IDX
    files under ``root`` (Fashion-MNIST defaults to the Debian package's folder). ``cifar10`` /
    ``cifar100`` (python pickles), ``stl10`` (binaries; the contrastive training set is
    ``train+unlabeled`` as in SimCLR / HCL, unlabelled images are skipped by the evaluation),
    ``tiny_imagenet`` (``train`` / ``val``) and ``image_folder`` (``root/train/<class>/`` and
    ``root/val/<class>/``): the on-disk readers of :mod:`hardneg.data` under ``root``.
    ``random``: uniform noise images with random labels (benchmarks and smoke tests).
    """
    if dataset == "digits":
        from hardneg.data.digits import load_digits_split

        train, test = load_digits_split(test_fraction=test_fraction, seed=split_seed)
    elif dataset == "fashion_mnist" and root is None:  # the Debian package's folder
        from hardneg.data.idx import read_fashion_mnist

        train, test = read_fashion_mnist(split="train"), read_fashion_mnist(split="test")
    elif dataset == "random":
        shape = random_shape or [3, 32, 32]
        train = _random_images(random_size, shape, split_seed)
        test = _random_images(max(2, random_size // 4), shape, split_seed + 1)
    else:
        if root is None:
            raise ValueError(
                f"invalid value for 'data.root': data.dataset={dataset!r} reads {root_layout(dataset)} "
                "(nothing is downloaded), got None"
            )
        if not Path(root).expanduser().exists():
            raise FileNotFoundError(
                f"invalid value for 'data.root': data.dataset={dataset!r} reads {root_layout(dataset)} "
                f"(nothing is downloaded); no such folder: '{root}'"
            )
        from hardneg.data import cifar, idx, image_folder, stl10

        if dataset == "fashion_mnist":
            train = idx.read_fashion_mnist(root, split="train")
            test = idx.read_fashion_mnist(root, split="test")
        elif dataset == "mnist":
            train, test = idx.read_mnist(root, split="train"), idx.read_mnist(root, split="test")
        elif dataset == "cifar10":
            train, test = cifar.read_cifar10(root, split="train"), cifar.read_cifar10(root, split="test")
        elif dataset == "cifar100":
            train, test = cifar.read_cifar100(root, split="train"), cifar.read_cifar100(root, split="test")
        elif dataset == "stl10":
            train = stl10.read_stl10(root, split="train+unlabeled")
            test = stl10.read_stl10(root, split="test")
        elif dataset == "tiny_imagenet":
            train = image_folder.read_tiny_imagenet(root, split="train")
            test = image_folder.read_tiny_imagenet(root, split="val")
        elif dataset == "image_folder":
            train = image_folder.read_image_folder(Path(root) / "train")
            test = image_folder.read_image_folder(Path(root) / "val")
        else:
            raise ValueError(f"data.dataset must be one of {list(IMAGE_DATASETS)}, got {dataset!r}")
    return _subset(train, train_subset), _subset(test, test_subset)
