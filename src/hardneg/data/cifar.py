"""Readers for CIFAR-10 / CIFAR-100 "python version" pickles, as distributed by A. Krizhevsky.

On-disk layout (the extracted ``cifar-10-python.tar.gz`` / ``cifar-100-python.tar.gz``)::

    <root>/cifar-10-batches-py/data_batch_1 … data_batch_5, test_batch, batches.meta
    <root>/cifar-100-python/train, test, meta

Each batch is a pickled ``dict`` with **bytes** keys (pickled by Python 2; read with
``encoding="bytes"``): ``b"data"`` ``uint8 (N, 3072)`` — per row the 1024 red, then green, then
blue values of a 32×32 image in row-major order — and ``b"labels"`` (CIFAR-10) or
``b"fine_labels"`` / ``b"coarse_labels"`` (CIFAR-100). ``batches.meta`` has
``b"label_names"``; CIFAR-100 ``meta`` has ``b"fine_label_names"`` / ``b"coarse_label_names"``.

Shapes:
    images ``(N, 3, 32, 32)`` uint8; labels ``(N,)`` int64.
"""

from __future__ import annotations

import os
import pickle
from pathlib import Path
from typing import Any, Literal

import numpy as np
import torch

from hardneg.data._files import find_dataset_dir, require_file
from hardneg.data.images import LabeledImages

__all__ = ["read_cifar10", "read_cifar100"]

_C10_LAYOUT = (
    "<root>/cifar-10-batches-py/{data_batch_1..data_batch_5, test_batch, batches.meta} "
    "(python pickles from cifar-10-python.tar.gz)"
)
_C100_LAYOUT = "<root>/cifar-100-python/{train, test, meta} (python pickles from cifar-100-python.tar.gz)"


# The only globals a CIFAR batch needs: numpy arrays, their dtypes and scalars (numpy 1 and 2 names),
# and the bytes constructor that Python 3 writes for protocol 2.
_ALLOWED_GLOBALS = frozenset(
    (module, name)
    for module in ("numpy.core.multiarray", "numpy._core.multiarray")
    for name in ("_reconstruct", "scalar")
) | {("numpy", "ndarray"), ("numpy", "dtype"), ("_codecs", "encode")}  # bytes under protocol 2


class _ArraysOnly(pickle.Unpickler):
    """An unpickler that builds dicts, lists, strings, numbers and numpy arrays, and nothing else:
    a file whose pickle names any other global (``os.system``, ``builtins.eval``, …) is refused
    before that global is looked up, so reading a CIFAR folder never runs code."""

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in _ALLOWED_GLOBALS:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(
            f"it needs the global '{module}.{name}', and a CIFAR batch holds only numpy arrays"
        )


def _load_pickle(path: Path, *, layout: str) -> dict[Any, Any]:
    require_file(path, layout=layout)
    try:
        with path.open("rb") as handle:
            obj = _ArraysOnly(handle, encoding="bytes").load()
    except Exception as err:  # truncated / not a pickle / a global that is not an array
        raise ValueError(
            f"corrupt CIFAR file {path}: could not unpickle ({type(err).__name__}: {err}). "
            f"Expected layout: {layout}"
        ) from err
    if not isinstance(obj, dict):
        raise ValueError(f"corrupt CIFAR file {path}: expected a dict, got {type(obj).__name__}")
    return {k.decode("latin1") if isinstance(k, bytes) else k: v for k, v in obj.items()}


def _names(meta: dict[Any, Any], key: str, path: Path) -> tuple[str, ...]:
    if key not in meta:
        raise ValueError(f"corrupt CIFAR meta file {path}: missing key b{key!r}")
    return tuple(n.decode("utf-8") if isinstance(n, bytes) else str(n) for n in meta[key])


def _batch(path: Path, label_key: str, *, layout: str) -> tuple[np.ndarray, np.ndarray]:
    d = _load_pickle(path, layout=layout)
    for key in ("data", label_key):
        if key not in d:
            raise ValueError(f"corrupt CIFAR file {path}: missing key b{key!r} (keys: {sorted(d)})")
    data = np.asarray(d["data"])
    try:
        labels = np.asarray(d[label_key], dtype=np.int64)
    except (TypeError, ValueError, OverflowError) as err:
        sample = list(d[label_key][:3]) if hasattr(d[label_key], "__getitem__") else d[label_key]
        raise ValueError(
            f"corrupt CIFAR file {path}: b{label_key!r} must be integer class indices, got {sample!r}... "
            f"({type(err).__name__})"
        ) from None
    if data.dtype != np.uint8 or data.ndim != 2 or data.shape[1] != 3072:
        raise ValueError(
            f"corrupt CIFAR file {path}: b'data' must be uint8 of shape (N, 3072), "
            f"got {data.dtype} {data.shape}"
        )
    if labels.shape != (data.shape[0],):
        raise ValueError(f"corrupt CIFAR file {path}: {data.shape[0]} images but {labels.shape[0]} labels")
    return data.reshape(-1, 3, 32, 32), labels


def _check_split(split: str) -> None:
    if split not in ("train", "test"):
        raise ValueError(f"split must be one of ['test', 'train'], got {split!r}")


def _to_images(
    parts: list[tuple[np.ndarray, np.ndarray]], classes: tuple[str, ...], path: Path
) -> LabeledImages:
    images = np.concatenate([p[0] for p in parts])
    labels = np.concatenate([p[1] for p in parts])
    if labels.size and (labels.min() < 0 or labels.max() >= len(classes)):
        raise ValueError(
            f"corrupt CIFAR files under {path}: labels must be in [0, {len(classes)}), "
            f"got range [{labels.min()}, {labels.max()}]"
        )
    return LabeledImages(torch.from_numpy(np.ascontiguousarray(images)), torch.from_numpy(labels), classes)


def read_cifar10(root: str | os.PathLike[str], *, split: Literal["train", "test"] = "train") -> LabeledImages:
    """CIFAR-10 ``train`` (data_batch_1..5, 50 000 images) or ``test`` (test_batch, 10 000).

    ``root`` is the folder holding ``cifar-10-batches-py`` (or that folder itself).
    """
    _check_split(split)
    folder = find_dataset_dir(root, "cifar-10-batches-py", layout=_C10_LAYOUT)
    names = ["test_batch"] if split == "test" else [f"data_batch_{i}" for i in range(1, 6)]
    for name in [*names, "batches.meta"]:
        require_file(folder / name, layout=_C10_LAYOUT)
    classes = _names(
        _load_pickle(folder / "batches.meta", layout=_C10_LAYOUT), "label_names", folder / "batches.meta"
    )
    parts = [_batch(folder / n, "labels", layout=_C10_LAYOUT) for n in names]
    return _to_images(parts, classes, folder)


def read_cifar100(
    root: str | os.PathLike[str],
    *,
    split: Literal["train", "test"] = "train",
    label_type: Literal["fine", "coarse"] = "fine",
) -> LabeledImages:
    """CIFAR-100 ``train`` (50 000) or ``test`` (10 000) with 100 fine or 20 coarse labels.

    ``root`` is the folder holding ``cifar-100-python`` (or that folder itself).
    """
    _check_split(split)
    if label_type not in ("fine", "coarse"):
        raise ValueError(f"label_type must be one of ['coarse', 'fine'], got {label_type!r}")
    folder = find_dataset_dir(root, "cifar-100-python", layout=_C100_LAYOUT)
    require_file(folder / split, layout=_C100_LAYOUT)
    meta_path = require_file(folder / "meta", layout=_C100_LAYOUT)
    classes = _names(_load_pickle(meta_path, layout=_C100_LAYOUT), f"{label_type}_label_names", meta_path)
    parts = [_batch(folder / split, f"{label_type}_labels", layout=_C100_LAYOUT)]
    return _to_images(parts, classes, folder)
