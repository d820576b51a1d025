"""On-disk readers on tiny fixture files written in the exact real formats."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from hardneg.data import (
    read_cifar10,
    read_cifar100,
    read_image_folder,
    read_stl10,
    read_tiny_imagenet,
)


def _cifar_rows(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, size=(n, 3072), dtype=np.uint8)


def _dump(path: Path, obj: dict) -> None:
    # Python-2 style: bytes keys; protocol 2 like the original files
    path.write_bytes(pickle.dumps(obj, protocol=2))


@pytest.fixture
def cifar10_root(tmp_path: Path) -> Path:
    folder = tmp_path / "cifar-10-batches-py"
    folder.mkdir()
    for i in range(1, 6):
        _dump(
            folder / f"data_batch_{i}",
            {
                b"batch_label": b"training batch",
                b"data": _cifar_rows(2, i),
                b"labels": [i % 10, (i + 3) % 10],
                b"filenames": [b"a.png", b"b.png"],
            },
        )
    _dump(folder / "test_batch", {b"data": _cifar_rows(3, 9), b"labels": [9, 0, 4]})
    _dump(
        folder / "batches.meta",
        {
            b"label_names": [
                n.encode() for n in "airplane automobile bird cat deer dog frog horse ship truck".split()
            ],
            b"num_vis": 3072,
        },
    )
    return tmp_path


def test_cifar10_pixel_layout_and_labels(cifar10_root: Path) -> None:
    train = read_cifar10(cifar10_root, split="train")
    assert train.images.shape == (10, 3, 32, 32) and train.images.dtype == torch.uint8
    assert train.labels.tolist() == [1, 4, 2, 5, 3, 6, 4, 7, 5, 8]
    assert train.classes[1] == "automobile"
    row = _cifar_rows(2, 3)[1]  # data_batch_3, second image → overall index 5
    for c, y, x in [(0, 0, 0), (1, 5, 17), (2, 31, 30)]:
        assert int(train.images[5, c, y, x]) == int(row[c * 1024 + y * 32 + x])
    test = read_cifar10(cifar10_root / "cifar-10-batches-py", split="test")
    assert test.labels.tolist() == [9, 0, 4]
    assert torch.equal(test.images.reshape(3, -1), torch.from_numpy(_cifar_rows(3, 9)))


def test_cifar10_missing_and_corrupt(cifar10_root: Path, tmp_path: Path) -> None:
    (cifar10_root / "cifar-10-batches-py" / "data_batch_4").unlink()
    with pytest.raises(FileNotFoundError, match=r"data_batch_4.*cifar-10-batches-py"):
        read_cifar10(cifar10_root)
    (cifar10_root / "cifar-10-batches-py" / "test_batch").write_bytes(b"\x80\x02garbage")
    with pytest.raises(ValueError, match=r"corrupt CIFAR file .*test_batch"):
        read_cifar10(cifar10_root, split="test")
    with pytest.raises(FileNotFoundError, match="cifar-10-batches-py"):
        read_cifar10(tmp_path / "nowhere")
    with pytest.raises(ValueError, match="split must be one of"):
        read_cifar10(cifar10_root, split="val")  # type: ignore[arg-type]


def test_cifar10_wrong_shape_is_reported(tmp_path: Path) -> None:
    folder = tmp_path / "cifar-10-batches-py"
    folder.mkdir()
    _dump(folder / "test_batch", {b"data": np.zeros((2, 100), np.uint8), b"labels": [0, 1]})
    _dump(folder / "batches.meta", {b"label_names": [b"a", b"b"]})
    with pytest.raises(ValueError, match=r"test_batch: b'data' must be uint8 of shape"):
        read_cifar10(tmp_path, split="test")


def test_cifar100_fine_and_coarse(tmp_path: Path) -> None:
    folder = tmp_path / "cifar-100-python"
    folder.mkdir()
    rows = _cifar_rows(4, 5)
    _dump(folder / "train", {b"data": rows, b"fine_labels": [99, 0, 42, 7], b"coarse_labels": [19, 0, 5, 3]})
    _dump(
        folder / "meta",
        {
            b"fine_label_names": [f"f{i}".encode() for i in range(100)],
            b"coarse_label_names": [f"c{i}".encode() for i in range(20)],
        },
    )
    fine = read_cifar100(tmp_path, split="train")
    coarse = read_cifar100(tmp_path, split="train", label_type="coarse")
    assert fine.labels.tolist() == [99, 0, 42, 7] and len(fine.classes) == 100
    assert coarse.labels.tolist() == [19, 0, 5, 3] and coarse.classes[5] == "c5"
    assert int(fine.images[2, 1, 3, 4]) == int(rows[2, 1024 + 3 * 32 + 4])
    with pytest.raises(FileNotFoundError, match=r"cifar-100-python.*test"):
        read_cifar100(tmp_path, split="test")


def _stl_images(n: int, seed: int) -> np.ndarray:
    """(n, 3, 96, 96) images in (c, y, x) order."""
    return np.random.default_rng(seed).integers(0, 256, size=(n, 3, 96, 96), dtype=np.uint8)


def _write_stl(path: Path, images: np.ndarray) -> None:
    # the files store each channel column-major: write as (n, c, x, y) in C order
    np.ascontiguousarray(images.transpose(0, 1, 3, 2)).tofile(path)


@pytest.fixture
def stl_root(tmp_path: Path) -> Path:
    folder = tmp_path / "stl10_binary"
    folder.mkdir()
    _write_stl(folder / "train_X.bin", _stl_images(3, 0))
    np.array([1, 10, 4], np.uint8).tofile(folder / "train_y.bin")
    _write_stl(folder / "test_X.bin", _stl_images(2, 1))
    np.array([2, 3], np.uint8).tofile(folder / "test_y.bin")
    _write_stl(folder / "unlabeled_X.bin", _stl_images(2, 2))
    return tmp_path


def test_stl10_transpose_and_labels(stl_root: Path) -> None:
    train = read_stl10(stl_root, split="train")
    expected = _stl_images(3, 0)
    assert train.images.shape == (3, 3, 96, 96)
    # a known pixel at (c, y, x) with y != x lands where expected (catches a missing transpose)
    assert int(train.images[1, 2, 5, 70]) == int(expected[1, 2, 5, 70])
    assert torch.equal(train.images, torch.from_numpy(expected))
    assert train.labels.tolist() == [0, 9, 3] and train.classes[0] == "airplane"
    raw = np.fromfile(stl_root / "stl10_binary" / "train_X.bin", np.uint8)
    # column-major: byte offset of (img 0, c 0, y 1, x 0) is x*96 + y = 1
    assert int(train.images[0, 0, 1, 0]) == int(raw[1])
    both = read_stl10(stl_root, split="train+unlabeled")
    assert both.labels.tolist() == [0, 9, 3, -1, -1] and len(both) == 5
    assert read_stl10(stl_root / "stl10_binary", split="test").labels.tolist() == [1, 2]


def test_stl10_errors(stl_root: Path) -> None:
    folder = stl_root / "stl10_binary"
    (folder / "test_y.bin").unlink()
    with pytest.raises(FileNotFoundError, match=r"test_y\.bin"):
        read_stl10(stl_root, split="test")
    (folder / "train_X.bin").write_bytes(b"\x00" * 1000)
    with pytest.raises(ValueError, match=r"corrupt STL-10 file .*train_X\.bin.*27648"):
        read_stl10(stl_root, split="train")
    np.array([0, 11], np.uint8).tofile(folder / "test_y.bin")
    with pytest.raises(ValueError, match=r"test_y\.bin: labels must be in 1\.\.10"):
        read_stl10(stl_root, split="test")


def _save(path: Path, arr: np.ndarray) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(arr).save(path)


def test_image_folder_generic_png_roundtrip(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    a = rng.integers(0, 256, size=(6, 5, 3), dtype=np.uint8)  # (H, W, C)
    b = rng.integers(0, 256, size=(6, 5, 3), dtype=np.uint8)
    _save(tmp_path / "zebra" / "1.png", a)
    _save(tmp_path / "ant" / "x.png", b)
    (tmp_path / "ant" / "notes.txt").write_text("ignored")
    data = read_image_folder(tmp_path)
    assert data.classes == ("ant", "zebra") and data.labels.tolist() == [0, 1]
    assert data.images.shape == (2, 3, 6, 5)
    assert int(data.images[1, 2, 4, 1]) == int(a[4, 1, 2])  # (c, y, x) ← (y, x, c)
    assert torch.equal(data.images[0], torch.from_numpy(b).permute(2, 0, 1))
    small = read_image_folder(tmp_path, image_size=3, grayscale=True)
    assert small.images.shape == (2, 1, 3, 3)


def test_image_folder_errors(tmp_path: Path) -> None:
    _save(tmp_path / "a" / "1.png", np.zeros((4, 4, 3), np.uint8))
    _save(tmp_path / "b" / "2.png", np.zeros((5, 4, 3), np.uint8))
    with pytest.raises(ValueError, match=r"2\.png has shape .*image_size"):
        read_image_folder(tmp_path)
    (tmp_path / "b" / "2.png").write_bytes(b"not a png")
    with pytest.raises(ValueError, match=r"corrupt image file .*2\.png"):
        read_image_folder(tmp_path)
    with pytest.raises(FileNotFoundError, match="image folder not found"):
        read_image_folder(tmp_path / "missing")


@pytest.fixture
def tiny_root(tmp_path: Path) -> Path:
    rng = np.random.default_rng(1)
    root = tmp_path / "tiny-imagenet-200"
    wnids = ["n02", "n01"]
    (root).mkdir()
    (root / "wnids.txt").write_text("\n".join(wnids) + "\n")
    (root / "words.txt").write_text("n01\tgoldfish, Carassius auratus\nn02\tcat\nn99\tx\n")
    for w in wnids:
        for i in range(2):
            _save(
                root / "train" / w / "images" / f"{w}_{i}.JPEG",
                rng.integers(0, 256, size=(8, 8, 3), dtype=np.uint8),
            )
    _save(root / "val" / "images" / "val_0.JPEG", np.full((8, 8, 3), 200, np.uint8))
    _save(root / "val" / "images" / "val_1.JPEG", np.full((8, 8, 3), 10, np.uint8))
    (root / "val" / "val_annotations.txt").write_text(
        "val_0.JPEG\tn01\t0\t0\t7\t7\nval_1.JPEG\tn02\t1\t1\t6\t6\n"
    )
    return tmp_path


def test_tiny_imagenet_train_and_val(tiny_root: Path) -> None:
    train = read_tiny_imagenet(tiny_root, split="train")
    assert train.images.shape == (4, 3, 8, 8)
    assert train.labels.tolist() == [0, 0, 1, 1]  # wnids.txt order: n02 first
    assert train.classes == ("cat", "goldfish")
    val = read_tiny_imagenet(tiny_root, split="val")
    assert val.labels.tolist() == [1, 0]
    # JPEG is lossy, but a flat image stays within a few levels
    assert abs(int(val.images[0, 0, 3, 3]) - 200) <= 3
    assert abs(int(val.images[1, 1, 0, 7]) - 10) <= 3


def test_tiny_imagenet_errors(tiny_root: Path) -> None:
    root = tiny_root / "tiny-imagenet-200"
    (root / "val" / "val_annotations.txt").write_text("val_0.JPEG\tn77\t0\t0\t1\t1\n")
    with pytest.raises(ValueError, match=r"val_annotations\.txt, line 1"):
        read_tiny_imagenet(tiny_root, split="val")
    (root / "val" / "val_annotations.txt").write_text("gone.JPEG\tn01\t0\t0\t1\t1\n")
    with pytest.raises(FileNotFoundError, match=r"gone\.JPEG"):
        read_tiny_imagenet(tiny_root, split="val")
    (root / "wnids.txt").unlink()
    with pytest.raises(FileNotFoundError, match=r"wnids\.txt"):
        read_tiny_imagenet(tiny_root)


def test_cifar10_string_labels_name_the_file(tmp_path: Path) -> None:
    folder = tmp_path / "cifar-10-batches-py"
    folder.mkdir()
    _dump(folder / "test_batch", {b"data": np.zeros((2, 3072), np.uint8), b"labels": [b"cat", b"dog"]})
    _dump(folder / "batches.meta", {b"label_names": [b"cat", b"dog"]})
    expected = r"corrupt CIFAR file .*test_batch: b'labels' must be integer class indices"
    with pytest.raises(ValueError, match=expected):
        read_cifar10(tmp_path, split="test")


class _RunsCode:
    """A pickle payload that would run a shell command when loaded."""

    def __init__(self, sentinel: Path) -> None:
        self.sentinel = sentinel

    def __reduce__(self):  # type: ignore[no-untyped-def]
        import os

        return (os.system, (f"touch {self.sentinel}",))


def test_a_cifar_pickle_that_would_run_code_is_refused_unrun(cifar10_root: Path, tmp_path: Path) -> None:
    sentinel = tmp_path / "SENTINEL"
    _dump(cifar10_root / "cifar-10-batches-py" / "test_batch",
          {b"data": _RunsCode(sentinel), b"labels": [0]})  # type: ignore[dict-item]
    with pytest.raises(ValueError, match=r"corrupt CIFAR file .*test_batch.*global '(posix|os)\.system'"):
        read_cifar10(cifar10_root, split="test")
    assert not sentinel.exists()
    assert read_cifar10(cifar10_root, split="train").images.shape == (10, 3, 32, 32)  # arrays still load
