"""Readers for image folders: generic ``root/<class>/*.png|jpg`` and Tiny-ImageNet.

Generic layout (torchvision's ``ImageFolder`` convention)::

    <root>/<class_name>/<any>.png|.jpg|.jpeg|.bmp|.gif|.webp   (classes sorted by name)

Tiny-ImageNet-200 layout (the extracted ``tiny-imagenet-200.zip``; Robinson et al. (ICLR 2021) Table 1)::

    <root>/tiny-imagenet-200/wnids.txt                      200 class ids (wnids), one per line
                            /words.txt                      optional "wnid<TAB>names"
                            /train/<wnid>/images/*.JPEG     500 images per class
                            /val/images/*.JPEG
                            /val/val_annotations.txt        "file<TAB>wnid<TAB>x0<TAB>y0<TAB>x1<TAB>y1"

Images are decoded with Pillow, converted to RGB (or ``L`` with ``grayscale=True``) and, when
``image_size`` is given, resized to ``image_size × image_size`` (bilinear). Without
``image_size`` all images must share one size (Tiny-ImageNet is 64×64).

Shapes:
    images ``(N, C, H, W)`` uint8 (``C`` = 3, or 1 with ``grayscale=True``); labels ``(N,)`` int64.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import numpy as np
import torch

from hardneg._packages import extra_error
from hardneg.data._files import find_dataset_dir, require_file
from hardneg.data.images import LabeledImages

__all__ = ["IMAGE_EXTENSIONS", "read_image_folder", "read_tiny_imagenet"]

IMAGE_EXTENSIONS: tuple[str, ...] = (".png", ".jpg", ".jpeg", ".bmp", ".gif", ".webp")
_GENERIC_LAYOUT = "<root>/<class_name>/*.png|*.jpg (one sub-folder per class)"
_TINY_LAYOUT = (
    "<root>/tiny-imagenet-200/{wnids.txt, train/<wnid>/images/*.JPEG, val/images/*.JPEG, "
    "val/val_annotations.txt}"
)


def _decode(path: Path, *, image_size: int | None, grayscale: bool) -> np.ndarray:
    try:
        from PIL import Image
    except ModuleNotFoundError as err:  # pragma: no cover - Pillow comes with the "cli" extra
        raise extra_error(err, "reading image folders") from err
    try:
        with Image.open(path) as img:
            img = img.convert("L" if grayscale else "RGB")
            if image_size is not None and img.size != (image_size, image_size):
                img = img.resize((image_size, image_size), Image.Resampling.BILINEAR)
            arr = np.asarray(img, dtype=np.uint8)
    except (OSError, ValueError) as err:
        raise ValueError(f"corrupt image file {path}: {type(err).__name__}: {err}") from err
    return arr[None] if arr.ndim == 2 else arr.transpose(2, 0, 1)


def _stack(files: Sequence[Path], *, image_size: int | None, grayscale: bool, layout: str) -> torch.Tensor:
    if image_size is not None and (not isinstance(image_size, int) or image_size < 1):
        raise ValueError(f"image_size must be a positive int or None, got {image_size!r}")
    arrays: list[np.ndarray] = []
    for path in files:
        arr = _decode(path, image_size=image_size, grayscale=grayscale)
        if arrays and arr.shape != arrays[0].shape:
            raise ValueError(
                f"image {path} has shape {arr.shape} (C, H, W) but {files[0]} has "
                f"{arrays[0].shape}; pass image_size=... to resize all images. Layout: {layout}"
            )
        arrays.append(arr)
    if not arrays:
        return torch.empty(0, 1 if grayscale else 3, image_size or 0, image_size or 0, dtype=torch.uint8)
    return torch.from_numpy(np.stack(arrays))


def _image_files(folder: Path, extensions: Sequence[str]) -> list[Path]:
    exts = {e.lower() for e in extensions}
    return sorted(p for p in folder.iterdir() if p.is_file() and p.suffix.lower() in exts)


def read_image_folder(
    root: str | os.PathLike[str],
    *,
    image_size: int | None = None,
    grayscale: bool = False,
    extensions: Sequence[str] = IMAGE_EXTENSIONS,
) -> LabeledImages:
    """Images under ``root/<class_name>/``; label = index of the class in sorted order."""
    base = Path(root).expanduser()
    if not base.is_dir():
        raise FileNotFoundError(f"image folder not found: {base}. Expected layout: {_GENERIC_LAYOUT}")
    classes = tuple(sorted(p.name for p in base.iterdir() if p.is_dir()))
    if not classes:
        raise FileNotFoundError(f"no class sub-folders in {base}. Expected layout: {_GENERIC_LAYOUT}")
    files: list[Path] = []
    labels: list[int] = []
    for idx, name in enumerate(classes):
        found = _image_files(base / name, extensions)
        files += found
        labels += [idx] * len(found)
    if not files:
        raise FileNotFoundError(
            f"no images with extensions {list(extensions)} under {base}. Expected layout: {_GENERIC_LAYOUT}"
        )
    images = _stack(files, image_size=image_size, grayscale=grayscale, layout=_GENERIC_LAYOUT)
    return LabeledImages(images, torch.tensor(labels, dtype=torch.int64), classes)


def _tiny_classes(folder: Path) -> tuple[list[str], tuple[str, ...]]:
    wnids_path = require_file(folder / "wnids.txt", layout=_TINY_LAYOUT)
    wnids = [line.strip() for line in wnids_path.read_text().splitlines() if line.strip()]
    if not wnids or len(set(wnids)) != len(wnids):
        raise ValueError(
            f"corrupt file {wnids_path}: expected one distinct wnid per line, got {len(wnids)} "
            f"lines with {len(set(wnids))} distinct"
        )
    names = dict.fromkeys(wnids, "")
    words = folder / "words.txt"
    if words.is_file():
        for line in words.read_text().splitlines():
            wnid, _, text = line.partition("\t")
            if wnid in names:
                names[wnid] = text.split(",")[0].strip()
    return wnids, tuple(names[w] or w for w in wnids)


def read_tiny_imagenet(
    root: str | os.PathLike[str],
    *,
    split: Literal["train", "val"] = "train",
    image_size: int | None = None,
) -> LabeledImages:
    """Tiny-ImageNet-200 ``train`` (100 000) or ``val`` (10 000) images, labels in ``wnids.txt``
    order; ``classes`` holds the first name of each wnid from ``words.txt`` when present
    (else the wnid).

    ``root`` is the folder holding ``tiny-imagenet-200`` (or that folder itself).
    """
    if split not in ("train", "val"):
        raise ValueError(f"split must be one of ['train', 'val'], got {split!r}")
    folder = find_dataset_dir(root, "tiny-imagenet-200", layout=_TINY_LAYOUT)
    wnids, classes = _tiny_classes(folder)
    index = {w: i for i, w in enumerate(wnids)}
    files: list[Path] = []
    labels: list[int] = []
    if split == "train":
        for wnid in wnids:
            class_dir = folder / "train" / wnid / "images"
            if not class_dir.is_dir():
                raise FileNotFoundError(
                    f"missing folder {class_dir} for wnid {wnid} listed in wnids.txt. "
                    f"Expected layout: {_TINY_LAYOUT}"
                )
            found = _image_files(class_dir, IMAGE_EXTENSIONS)
            files += found
            labels += [index[wnid]] * len(found)
    else:
        ann = require_file(folder / "val" / "val_annotations.txt", layout=_TINY_LAYOUT)
        for lineno, line in enumerate(ann.read_text().splitlines(), start=1):
            if not line.strip():
                continue
            fields = line.split("\t")
            if len(fields) < 2 or fields[1] not in index:
                raise ValueError(
                    f"corrupt file {ann}, line {lineno}: expected 'file<TAB>wnid<TAB>…' with a "
                    f"wnid from wnids.txt, got {line!r}"
                )
            path = folder / "val" / "images" / fields[0]
            require_file(path, layout=_TINY_LAYOUT)
            files.append(path)
            labels.append(index[fields[1]])
    if not files:
        raise FileNotFoundError(f"no {split} images found under {folder}. Expected layout: {_TINY_LAYOUT}")
    images = _stack(files, image_size=image_size, grayscale=False, layout=_TINY_LAYOUT)
    return LabeledImages(images, torch.tensor(labels, dtype=torch.int64), classes)
