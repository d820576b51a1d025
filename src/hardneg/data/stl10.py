"""Reader for the STL-10 binary files (Coates, Lee & Ng, 2011), as used by HCL (Robinson et al. (ICLR 2021)
§5.1).

On-disk layout (the extracted ``stl10_binary.tar.gz``)::

    <root>/stl10_binary/train_X.bin, train_y.bin, test_X.bin, test_y.bin, unlabeled_X.bin,
                        class_names.txt (optional)

``*_X.bin``: raw ``uint8``, 3×96×96 = 27 648 bytes per image, channel-major and **column-major
within each channel** (the files were written from MATLAB), so each image is read as
``(3, 96, 96)`` indexed ``[c, x, y]`` and transposed to ``[c, y, x]``. ``*_y.bin``: one
``uint8`` label per image in ``1..10``, mapped here to ``0..9``. ``unlabeled`` has no labels
(``-1``). Files are memory-mapped, so ``unlabeled`` (2.7 GB) is copied once, not twice.

Shapes:
    images ``(N, 3, 96, 96)`` uint8; labels ``(N,)`` int64.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

import numpy as np
import torch

from hardneg.data._files import find_dataset_dir, require_file
from hardneg.data.images import LabeledImages

__all__ = ["STL10_CLASSES", "read_stl10"]

STL10_CLASSES: tuple[str, ...] = (
    "airplane",
    "bird",
    "car",
    "cat",
    "deer",
    "dog",
    "horse",
    "monkey",
    "ship",
    "truck",
)
_LAYOUT = (
    "<root>/stl10_binary/{train_X.bin, train_y.bin, test_X.bin, test_y.bin, unlabeled_X.bin} "
    "(from stl10_binary.tar.gz)"
)
_SIDE = 96
_IMAGE_BYTES = 3 * _SIDE * _SIDE


def _read_images(path: Path) -> np.ndarray:
    require_file(path, layout=_LAYOUT)
    size = path.stat().st_size
    if size == 0 or size % _IMAGE_BYTES:
        raise ValueError(
            f"corrupt STL-10 file {path}: size {size} bytes is not a positive multiple of "
            f"{_IMAGE_BYTES} (3×96×96 uint8 per image). Expected layout: {_LAYOUT}"
        )
    raw = np.memmap(path, dtype=np.uint8, mode="r").reshape(-1, 3, _SIDE, _SIDE)
    return np.ascontiguousarray(raw.transpose(0, 1, 3, 2))  # column-major → (c, y, x)


def _read_labels(path: Path, n: int) -> np.ndarray:
    require_file(path, layout=_LAYOUT)
    labels = np.fromfile(path, dtype=np.uint8).astype(np.int64)
    if labels.shape[0] != n:
        raise ValueError(f"corrupt STL-10 file {path}: {labels.shape[0]} labels for {n} images")
    if labels.size and (labels.min() < 1 or labels.max() > 10):
        raise ValueError(
            f"corrupt STL-10 file {path}: labels must be in 1..10, got range [{labels.min()}, {labels.max()}]"
        )
    return labels - 1


def _classes(folder: Path) -> tuple[str, ...]:
    path = folder / "class_names.txt"
    if path.is_file():
        names = tuple(line.strip() for line in path.read_text().splitlines() if line.strip())
        if len(names) == 10:
            return names
    return STL10_CLASSES


def read_stl10(
    root: str | os.PathLike[str],
    *,
    split: Literal["train", "test", "unlabeled", "train+unlabeled"] = "train",
) -> LabeledImages:
    """STL-10 ``train`` (5 000), ``test`` (8 000), ``unlabeled`` (100 000, labels ``-1``) or
    ``train+unlabeled`` (the contrastive pre-training set of SimCLR / HCL).

    ``root`` is the folder holding ``stl10_binary`` (or that folder itself).
    """
    valid = ("test", "train", "train+unlabeled", "unlabeled")
    if split not in valid:
        raise ValueError(f"split must be one of {list(valid)}, got {split!r}")
    folder = find_dataset_dir(root, "stl10_binary", layout=_LAYOUT)
    parts: list[tuple[np.ndarray, np.ndarray]] = []
    for part in split.split("+"):
        if part == "unlabeled":
            images = _read_images(folder / "unlabeled_X.bin")
            labels = np.full(images.shape[0], -1, dtype=np.int64)
        else:
            images = _read_images(folder / f"{part}_X.bin")
            labels = _read_labels(folder / f"{part}_y.bin", images.shape[0])
        parts.append((images, labels))
    images = parts[0][0] if len(parts) == 1 else np.concatenate([p[0] for p in parts])
    labels = np.concatenate([p[1] for p in parts])
    return LabeledImages(torch.from_numpy(images), torch.from_numpy(labels), _classes(folder))
