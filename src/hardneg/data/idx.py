"""Reader for the IDX format of MNIST, Fashion-MNIST, KMNIST and EMNIST (gzipped or not).

The IDX format (LeCun, Cortes & Burges, the MNIST database; Xiao, Rasul & Vollgraf, 2017, for
Fashion-MNIST) is a big-endian header followed by the raw array::

    bytes 0–1   0x00 0x00
    byte  2     element type: 0x08 uint8, 0x09 int8, 0x0B int16, 0x0C int32, 0x0D float32, 0x0E float64
    byte  3     number of dimensions D
    4·D bytes   the sizes, big-endian uint32
    then        prod(sizes) elements, big-endian, row-major

Images are ``idx3`` (N, 28, 28) uint8 (16-byte header), labels ``idx1`` (N,) uint8 (8-byte
header). A dataset folder holds ``{train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz]``, the names
the datasets are distributed under (Debian's ``dataset-fashion-mnist`` installs them in
``/usr/share/datasets/fashion-mnist``). EMNIST's files carry a prefix
(``emnist-balanced-train-images-idx3-ubyte``) and store each image transposed.

Shapes:
    images ``(N, 1, 28, 28)`` uint8; labels ``(N,)`` int64.
"""

from __future__ import annotations

import gzip
import math
import os
from pathlib import Path
from typing import Literal

import numpy as np
import torch

from hardneg.data.images import LabeledImages

__all__ = [
    "FASHION_MNIST_CLASSES",
    "FASHION_MNIST_DEBIAN_DIR",
    "KMNIST_CLASSES",
    "MNIST_CLASSES",
    "read_fashion_mnist",
    "read_idx",
    "read_idx_dataset",
    "read_mnist",
    "write_idx",
]

FASHION_MNIST_CLASSES: tuple[str, ...] = (
    "T-shirt/top",
    "Trouser",
    "Pullover",
    "Dress",
    "Coat",
    "Sandal",
    "Shirt",
    "Sneaker",
    "Bag",
    "Ankle boot",
)
MNIST_CLASSES: tuple[str, ...] = tuple(str(i) for i in range(10))
KMNIST_CLASSES: tuple[str, ...] = ("o", "ki", "su", "tsu", "na", "ha", "ma", "ya", "re", "wo")
FASHION_MNIST_DEBIAN_DIR = Path("/usr/share/datasets/fashion-mnist")

_TYPES: dict[int, np.dtype] = {
    0x08: np.dtype(np.uint8),
    0x09: np.dtype(np.int8),
    0x0B: np.dtype(">i2"),
    0x0C: np.dtype(">i4"),
    0x0D: np.dtype(">f4"),
    0x0E: np.dtype(">f8"),
}
_CODES = {dtype.newbyteorder(">") if dtype.itemsize > 1 else dtype: code for code, dtype in _TYPES.items()}
_LAYOUT = "<root>/{train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz] (the IDX files of MNIST / Fashion-MNIST)"


def _read_bytes(path: Path) -> bytes:
    if not path.is_file():
        raise FileNotFoundError(f"missing file {path}. Expected layout: {_LAYOUT}. Nothing is downloaded.")
    with path.open("rb") as handle:
        head = handle.read(2)
        handle.seek(0)
        if head == b"\x1f\x8b":  # gzip, whatever the file is called
            try:
                with gzip.GzipFile(fileobj=handle) as unzipped:
                    return unzipped.read()
            except (OSError, EOFError) as err:
                raise ValueError(f"corrupt IDX file {path}: the gzip stream is damaged ({err})") from None
        return handle.read()


def read_idx(path: str | os.PathLike[str]) -> np.ndarray:
    """The array stored in an IDX file (``.gz`` detected from the content), native byte order.

    Raises ``ValueError`` naming the file for a wrong magic number, an unknown element type, or
    a data size that does not match the header (truncated or padded files).
    """
    file = Path(path)
    raw = _read_bytes(file)
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0 or raw[2] not in _TYPES or raw[3] == 0:
        magic = raw[:4].hex() if raw else "empty file"
        raise ValueError(
            f"not an IDX file: {file} (wrong magic number {magic}; expected 0000 then a type byte in "
            f"{[hex(c) for c in _TYPES]} and a dimension count ≥ 1)"
        )
    dtype, ndim = _TYPES[raw[2]], raw[3]
    header = 4 + 4 * ndim
    if len(raw) < header:
        raise ValueError(f"corrupt IDX file {file}: {len(raw)} bytes, shorter than its {header}-byte header")
    shape = tuple(int(x) for x in np.frombuffer(raw, dtype=">u4", count=ndim, offset=4))
    expected = math.prod(shape) * dtype.itemsize  # exact: Python ints never overflow (2**31 · 2**31 · 4)
    if len(raw) - header != expected:
        raise ValueError(
            f"corrupt IDX file {file}: header says shape {shape} ({expected} bytes of data), "
            f"the file holds {len(raw) - header} bytes after the header"
        )
    return np.frombuffer(raw, dtype=dtype, offset=header).reshape(shape).astype(dtype.newbyteorder("="))


def write_idx(path: str | os.PathLike[str], array: np.ndarray) -> None:
    """Write ``array`` as an IDX file (gzipped when the name ends in ``.gz``), atomically."""
    from hardneg._io import atomic_open

    arr = np.asarray(array)
    big = arr.dtype.newbyteorder(">") if arr.dtype.itemsize > 1 else arr.dtype
    if big not in _CODES:
        raise ValueError(
            f"array dtype must be one of uint8, int8, int16, int32, float32, float64, got {arr.dtype}"
        )
    header = bytes([0, 0, _CODES[big], arr.ndim]) + np.asarray(arr.shape, dtype=">u4").tobytes()
    payload = header + arr.astype(big).tobytes()
    target = Path(path)
    with atomic_open(target) as handle:
        handle.write(gzip.compress(payload, mtime=0) if target.name.endswith(".gz") else payload)


def _find(root: Path, stem: str) -> Path:
    for name in (stem, stem + ".gz"):
        if (root / name).is_file():
            return root / name
    raise FileNotFoundError(
        f"missing file {root / stem} (or {stem}.gz). Expected layout: {_LAYOUT}. Nothing is downloaded."
    )


def read_idx_dataset(
    root: str | os.PathLike[str],
    *,
    split: Literal["train", "test"],
    classes: tuple[str, ...],
    prefix: str = "",
    transpose: bool = False,
) -> LabeledImages:
    """Images and labels of one split of an IDX dataset folder.

    Args:
        root: the folder with ``{prefix}{train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz]``.
        split: ``"train"`` or ``"test"`` (files ``t10k-*``).
        classes: the class names; labels must lie in ``0..len(classes)-1``.
        prefix: file-name prefix, e.g. ``"emnist-balanced-"``.
        transpose: store-transposed images (EMNIST) are turned upright.

    Raises ``ValueError`` naming the files when images and labels disagree in number, the
    images are not 3-d or hold no image (``N``, ``H`` or ``W`` of 0), or a label is out of range.
    """
    if split not in ("train", "test"):
        raise ValueError(f"split must be 'train' or 'test', got {split!r}")
    folder = Path(root).expanduser()
    if not folder.is_dir():
        raise FileNotFoundError(f"dataset folder not found: {folder}. Expected layout: {_LAYOUT}.")
    part = "train" if split == "train" else "t10k"
    images_path = _find(folder, f"{prefix}{part}-images-idx3-ubyte")
    labels_path = _find(folder, f"{prefix}{part}-labels-idx1-ubyte")
    images, labels = read_idx(images_path), read_idx(labels_path)
    if images.ndim != 3 or images.dtype != np.uint8:
        raise ValueError(
            f"corrupt IDX images {images_path}: expected (N, H, W) uint8, got {images.shape} {images.dtype}"
        )
    if 0 in images.shape:
        n, h, w = images.shape
        what = f"{n} images" if n == 0 else f"images of {h}×{w} pixels"
        raise ValueError(f"{images_path}: holds {what}; a data set needs at least 1 image of at least 1×1")
    if labels.ndim != 1:
        raise ValueError(f"corrupt IDX labels {labels_path}: expected (N,), got shape {labels.shape}")
    if labels.shape[0] != images.shape[0]:
        raise ValueError(
            f"IDX size mismatch: {images_path} holds {images.shape[0]} images, "
            f"{labels_path} holds {labels.shape[0]} labels"
        )
    if labels.size and (int(labels.min()) < 0 or int(labels.max()) >= len(classes)):
        raise ValueError(
            f"corrupt IDX labels {labels_path}: labels must be in 0..{len(classes) - 1}, "
            f"got range [{int(labels.min())}, {int(labels.max())}]"
        )
    if transpose:
        images = images.transpose(0, 2, 1)
    tensor = torch.from_numpy(np.ascontiguousarray(images)).unsqueeze(1)
    return LabeledImages(tensor, torch.from_numpy(labels.astype(np.int64)), classes)


def read_fashion_mnist(
    root: str | os.PathLike[str] | None = None, *, split: Literal["train", "test"] = "train"
) -> LabeledImages:
    """Fashion-MNIST (Xiao, Rasul & Vollgraf, 2017): 60 000 train / 10 000 test 28×28 grey images,
    10 classes. ``root=None`` reads the Debian package's folder (``apt-get install
    dataset-fashion-mnist``)."""
    return read_idx_dataset(
        FASHION_MNIST_DEBIAN_DIR if root is None else root, split=split, classes=FASHION_MNIST_CLASSES
    )


def read_mnist(root: str | os.PathLike[str], *, split: Literal["train", "test"] = "train") -> LabeledImages:
    """MNIST (LeCun et al.) from its IDX files: 60 000 train / 10 000 test 28×28 digits."""
    return read_idx_dataset(root, split=split, classes=MNIST_CLASSES)
