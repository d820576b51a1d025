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

The header is checked before the data are read: a gzip file is inflated as a stream, never beyond
the size its header declares plus one byte (a 14 MB gzip file whose header says one image is
refused after 785 bytes, not after inflating gigabytes), and a header declaring more than
:data:`MAX_IDX_BYTES` (or the machine's memory) is refused unread. Labels of a single class are
refused when the data set is read, before any training.

Shapes:
    images ``(N, 1, 28, 28)`` uint8; labels ``(N,)`` int64.
"""

from __future__ import annotations

import gzip
import math
import os
import zlib
from pathlib import Path
from typing import BinaryIO, Literal

import numpy as np
import torch

from hardneg.data.images import LabeledImages

__all__ = [
    "FASHION_MNIST_CLASSES",
    "FASHION_MNIST_DEBIAN_DIR",
    "KMNIST_CLASSES",
    "MAX_IDX_BYTES",
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


MAX_IDX_BYTES = 16 * 2**30
"""The largest data size (bytes after the header) an IDX header may declare: 16 GiB, or the machine's
memory when smaller. The largest real IDX file, EMNIST ByClass' training images, holds 0.55 GB."""

_CHUNK = 1 << 20


def _memory_bytes() -> int | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, OSError, ValueError):  # pragma: no cover - platforms without sysconf
        return None


def _data_limit() -> tuple[int, str]:
    memory = _memory_bytes()
    if memory is not None and memory < MAX_IDX_BYTES:
        return memory, f"the {memory} bytes of this machine's memory"
    return MAX_IDX_BYTES, f"hardneg.data.idx.MAX_IDX_BYTES = {MAX_IDX_BYTES}"


def _read_up_to(stream: BinaryIO, size: int) -> bytes:
    """At most ``size`` bytes of ``stream``, read in chunks (memory follows what the stream holds,
    not what was asked for)."""
    parts, left = [], size
    while left > 0:
        part = stream.read(min(left, _CHUNK))
        if not part:
            break
        parts.append(part)
        left -= len(part)
    return b"".join(parts)


def _header(stream: BinaryIO, file: Path) -> tuple[np.dtype, tuple[int, ...], int]:
    """``(dtype, shape, header bytes)`` of the IDX header at the start of ``stream``."""
    raw = _read_up_to(stream, 4)
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0 or raw[2] not in _TYPES or raw[3] == 0:
        magic = raw[:4].hex() if raw else "empty file"
        raise ValueError(
            f"not an IDX file: {file} (wrong magic number {magic}; expected 0000 then a type byte in "
            f"{[hex(c) for c in _TYPES]} and a dimension count ≥ 1)"
        )
    dtype, ndim = _TYPES[raw[2]], raw[3]
    sizes = _read_up_to(stream, 4 * ndim)
    if len(sizes) < 4 * ndim:
        found = 4 + len(sizes)
        raise ValueError(
            f"corrupt IDX file {file}: {found} bytes, shorter than its {4 + 4 * ndim}-byte header"
        )
    return dtype, tuple(int(x) for x in np.frombuffer(sizes, dtype=">u4")), 4 + 4 * ndim


def _payload(
    stream: BinaryIO, file: Path, *, size: int | None = None
) -> tuple[np.dtype, tuple[int, ...], bytes]:
    """The header, then exactly the data it declares: never more than that plus one byte is read
    (inflated, for a gzip file), and a declared size above :data:`MAX_IDX_BYTES` is refused unread.
    ``size``: the file's size when it is not compressed (then checked before reading the data)."""
    dtype, shape, header = _header(stream, file)
    expected = math.prod(shape) * dtype.itemsize  # exact: Python ints never overflow (2**31 · 2**31 · 4)
    limit, why = _data_limit()
    if expected > limit and (size is None or size - header == expected):
        raise ValueError(
            f"IDX file {file}: its header declares shape {shape} ({expected} bytes of data), more than "
            f"{why}; refused before reading (a corrupt or hostile header)"
        )
    data = b"" if size is not None and size - header != expected else _read_up_to(stream, expected + 1)
    if len(data) != expected:
        if size is not None:
            found = f"{size - header} bytes"
        elif len(data) < expected:
            found = f"{len(data)} bytes"
        else:
            found = f"more than {expected} bytes (inflating stopped there)"
        raise ValueError(
            f"corrupt IDX file {file}: header says shape {shape} ({expected} bytes of data), "
            f"the file holds {found} after the header"
        )
    return dtype, shape, data


def read_idx(path: str | os.PathLike[str]) -> np.ndarray:
    """The array stored in an IDX file (``.gz`` detected from the content), native byte order.

    The header is read first and the data streamed against it, so a gzip file whose content is
    larger than its header says is refused after inflating at most the declared size plus one byte.
    Raises ``ValueError`` naming the file for a wrong magic number, an unknown element type, a
    declared size above :data:`MAX_IDX_BYTES`, or a data size that does not match the header
    (truncated or padded files).
    """
    file = Path(path)
    if not file.is_file():
        raise FileNotFoundError(f"missing file {file}. Expected layout: {_LAYOUT}. Nothing is downloaded.")
    with file.open("rb") as handle:
        if handle.read(2) == b"\x1f\x8b":  # gzip, whatever the file is called
            handle.seek(0)
            try:
                with gzip.GzipFile(fileobj=handle) as unzipped:
                    dtype, shape, data = _payload(unzipped, file)  # type: ignore[arg-type]
            except (OSError, EOFError, zlib.error) as err:
                raise ValueError(f"corrupt IDX file {file}: the gzip stream is damaged ({err})") from None
        else:
            handle.seek(0)
            dtype, shape, data = _payload(handle, file, size=os.fstat(handle.fileno()).st_size)
    return np.frombuffer(data, dtype=dtype).reshape(shape).astype(dtype.newbyteorder("="))


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
    images are not 3-d or hold no image (``N``, ``H`` or ``W`` of 0), a label is out of range, or
    the labels hold 1 class (found at load, not after training).
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
    found = np.unique(labels)
    if found.size < 2:
        raise ValueError(
            f"{labels_path}: every image is of class {classes[int(found[0])]!r} (1 class); a labelled "
            "data set needs at least 2 classes (negatives, oracle positives and the readouts use them)"
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
