"""The IDX reader (MNIST / Fashion-MNIST / KMNIST / EMNIST files) on fixture files written here
byte by byte with ``struct``, its errors, the pipeline on an IDX folder, and the real Fashion-MNIST
of Debian's ``dataset-fashion-mnist`` when it is installed (CI installs it)."""

from __future__ import annotations

import gzip
import struct
from pathlib import Path

import numpy as np
import pytest
import torch

from hardneg.data.idx import (
    FASHION_MNIST_CLASSES,
    FASHION_MNIST_DEBIAN_DIR,
    read_fashion_mnist,
    read_idx,
    read_idx_dataset,
    read_mnist,
    write_idx,
)


def _idx_bytes(type_code: int, shape: tuple[int, ...], payload: bytes) -> bytes:
    """An IDX file as the format's description has it: 0, 0, type, ndim, big-endian sizes, data."""
    return (
        struct.pack(">BBBB", 0, 0, type_code, len(shape)) + struct.pack(f">{len(shape)}I", *shape) + payload
    )


def _write_split(
    folder: Path, part: str, images: np.ndarray, labels: np.ndarray, *, gz: bool, prefix: str = ""
) -> None:
    suffix = ".gz" if gz else ""
    img = _idx_bytes(0x08, images.shape, images.astype(np.uint8).tobytes())
    lab = _idx_bytes(0x08, labels.shape, labels.astype(np.uint8).tobytes())
    for name, data in (
        (f"{prefix}{part}-images-idx3-ubyte{suffix}", img),
        (f"{prefix}{part}-labels-idx1-ubyte{suffix}", lab),
    ):
        (folder / name).write_bytes(gzip.compress(data) if gz else data)


def _fixture(
    folder: Path, *, gz: bool, n_train: int = 30, n_test: int = 10, prefix: str = ""
) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    out = {}
    for part, n in (("train", n_train), ("t10k", n_test)):
        images = rng.integers(0, 256, size=(n, 28, 28), dtype=np.uint8)
        labels = np.arange(n) % 10
        _write_split(folder, part, images, labels, gz=gz, prefix=prefix)
        out[part] = images
        out[part + "_labels"] = labels
    return out


@pytest.mark.parametrize("gz", [False, True])
def test_reads_images_and_labels_in_the_distributed_layout(tmp_path: Path, gz: bool) -> None:
    data = _fixture(tmp_path, gz=gz)
    train = read_mnist(tmp_path, split="train")
    test = read_fashion_mnist(tmp_path, split="test")
    assert train.images.shape == (30, 1, 28, 28) and train.images.dtype == torch.uint8
    assert np.array_equal(train.images[:, 0].numpy(), data["train"])
    assert np.array_equal(train.labels.numpy(), data["train_labels"]) and train.labels.dtype == torch.int64
    assert np.array_equal(test.images[:, 0].numpy(), data["t10k"])
    assert test.classes == FASHION_MNIST_CLASSES and test.classes[9] == "Ankle boot"


def test_emnist_prefix_and_transposed_images(tmp_path: Path) -> None:
    data = _fixture(tmp_path, gz=True, prefix="emnist-balanced-")
    got = read_idx_dataset(
        tmp_path, split="train", classes=tuple("0123456789"), prefix="emnist-balanced-", transpose=True
    )
    assert np.array_equal(got.images[:, 0].numpy(), data["train"].transpose(0, 2, 1))


@pytest.mark.parametrize(
    ("dtype", "code"),
    [
        (np.uint8, 0x08),
        (np.int8, 0x09),
        (np.int16, 0x0B),
        (np.int32, 0x0C),
        (np.float32, 0x0D),
        (np.float64, 0x0E),
    ],
)
def test_every_element_type_big_endian(tmp_path: Path, dtype: type, code: int) -> None:
    values = (np.arange(24).reshape(2, 3, 4) - 5).astype(dtype)
    path = tmp_path / "x.idx"
    path.write_bytes(
        _idx_bytes(code, values.shape, values.astype(np.dtype(dtype).newbyteorder(">")).tobytes())
    )
    got = read_idx(path)
    assert got.dtype == np.dtype(dtype) and np.array_equal(got, values)
    # our writer produces exactly these bytes, gzipped or not
    write_idx(tmp_path / "y.idx", values)
    assert (tmp_path / "y.idx").read_bytes() == path.read_bytes()
    write_idx(tmp_path / "y.idx.gz", values)
    assert gzip.decompress((tmp_path / "y.idx.gz").read_bytes()) == path.read_bytes()


def test_bad_files_are_named_with_the_problem(tmp_path: Path) -> None:
    good = _idx_bytes(0x08, (2, 2, 2), bytes(8))
    cases = {
        "magic.idx": (b"\x08\x03" + good[2:], r"not an IDX file: .*magic.idx \(wrong magic number 0803"),
        "type.idx": (good[:2] + b"\x42" + good[3:], r"wrong magic number"),
        "empty.idx": (b"", r"not an IDX file: .*empty.idx \(wrong magic number empty file"),
        "short.idx": (
            good[:-3],
            r"corrupt IDX file .*short.idx: header says shape \(2, 2, 2\) \(8 bytes of data\), "
            r"the file holds 5 bytes",
        ),
        "long.idx": (good + b"\x00", r"holds 9 bytes"),
        "header.idx": (good[:6], r"shorter than its 16-byte header"),
    }
    for name, (content, message) in cases.items():
        (tmp_path / name).write_bytes(content)
        with pytest.raises(ValueError, match=message):
            read_idx(tmp_path / name)
    damaged = gzip.compress(good)[:-6]
    (tmp_path / "damaged.gz").write_bytes(damaged)
    with pytest.raises(ValueError, match=r"corrupt IDX file .*damaged.gz: the gzip stream is damaged"):
        read_idx(tmp_path / "damaged.gz")
    with pytest.raises(FileNotFoundError, match=r"missing file .*nothing.idx"):
        read_idx(tmp_path / "nothing.idx")


def test_dataset_level_errors(tmp_path: Path) -> None:
    _fixture(tmp_path, gz=False)
    # labels file of another length
    lab = _idx_bytes(0x08, (29,), bytes(29))
    (tmp_path / "train-labels-idx1-ubyte").write_bytes(lab)
    with pytest.raises(
        ValueError,
        match=r"IDX size mismatch: .*train-images-idx3-ubyte holds 30 images, "
        r".*train-labels-idx1-ubyte holds 29 labels",
    ):
        read_mnist(tmp_path, split="train")
    # a label outside the classes (mislabelled file)
    (tmp_path / "train-labels-idx1-ubyte").write_bytes(_idx_bytes(0x08, (30,), bytes([0] * 29 + [12])))
    with pytest.raises(ValueError, match=r"labels must be in 0..9, got range \[0, 12\]"):
        read_mnist(tmp_path, split="train")
    # images stored as labels (1-d)
    (tmp_path / "t10k-images-idx3-ubyte").write_bytes(_idx_bytes(0x08, (10,), bytes(10)))
    with pytest.raises(
        ValueError, match=r"corrupt IDX images .*t10k-images-idx3-ubyte: expected \(N, H, W\) uint8"
    ):
        read_mnist(tmp_path, split="test")
    with pytest.raises(
        FileNotFoundError, match=r"missing file .*t10k-images-idx3-ubyte \(or t10k-images-idx3-ubyte.gz\)"
    ):
        read_mnist(tmp_path / "..", split="test")
    with pytest.raises(FileNotFoundError, match=r"dataset folder not found"):
        read_mnist(tmp_path / "absent", split="train")
    with pytest.raises(ValueError, match=r"split must be 'train' or 'test', got 'val'"):
        read_mnist(tmp_path, split="val")  # type: ignore[arg-type]


def test_training_on_an_idx_folder(tmp_path: Path) -> None:
    """The pipeline reads ``data.dataset=mnist`` from a folder of IDX files written here."""
    from tests.pipeline.helpers import tiny
    from typer.testing import CliRunner

    from hardneg.cli import app

    data_dir = tmp_path / "mnist"
    data_dir.mkdir()
    _fixture(data_dir, gz=True, n_train=64, n_test=20)
    result = CliRunner().invoke(
        app,
        [
            "train",
            "digits",
            *tiny("data.dataset=mnist", f"data.root={data_dir}", "eval.figures=false", "eval.linear=false"),
            "--out",
            str(tmp_path / "run"),
            "-q",
        ],
    )
    assert result.exit_code == 0, result.output
    assert (tmp_path / "run" / "metrics.json").is_file()


@pytest.mark.skipif(
    not FASHION_MNIST_DEBIAN_DIR.is_dir(),
    reason="Debian package dataset-fashion-mnist not installed (CI installs it)",
)
def test_the_real_fashion_mnist() -> None:
    train, test = read_fashion_mnist(split="train"), read_fashion_mnist(split="test")
    assert train.images.shape == (60_000, 1, 28, 28) and test.images.shape == (10_000, 1, 28, 28)
    assert torch.bincount(train.labels).tolist() == [6000] * 10
    assert torch.bincount(test.labels).tolist() == [1000] * 10
    assert int(train.images.max()) == 255 and int(train.images.min()) == 0
    # classes differ visibly: trousers are narrower than pullovers (mean ink over the image)
    ink = train.images.float().mean(dim=(1, 2, 3))
    assert float(ink[train.labels == 1].mean()) < float(ink[train.labels == 2].mean())


# -- compressed files are checked against their header before inflating (issue 33, item 8) -----------


def test_a_gzip_file_longer_than_its_header_is_refused_without_inflating_it(tmp_path: Path) -> None:
    """The header says 1 image of 28×28 (784 bytes); the stream inflates to 64 MiB. The reader stops
    after 784 + 1 bytes: the allocation peak stays far below the inflated size."""
    import tracemalloc

    big = 64 * 2**20
    path = tmp_path / "train-images-idx3-ubyte.gz"
    with gzip.open(path, "wb", compresslevel=1) as out:
        out.write(struct.pack(">BBBBIII", 0, 0, 0x08, 3, 1, 28, 28))
        for _ in range(big // 2**20):
            out.write(bytes(2**20))
    tracemalloc.start()
    try:
        with pytest.raises(ValueError) as err:
            read_idx(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert str(err.value) == (
        f"corrupt IDX file {path}: header says shape (1, 28, 28) (784 bytes of data), the file holds more "
        "than 784 bytes (inflating stopped there) after the header"
    )
    assert peak < 8 * 2**20, f"{peak} bytes allocated to refuse a {big}-byte stream"


def test_a_gzip_file_shorter_than_its_header_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "short.gz"
    path.write_bytes(gzip.compress(_idx_bytes(0x08, (3, 28, 28), bytes(784))))
    with pytest.raises(ValueError, match=r"short.gz: header says shape \(3, 28, 28\) \(2352 bytes of data\), "
                                         r"the file holds 784 bytes after the header"):
        read_idx(path)


def test_a_gzip_header_declaring_a_huge_size_is_refused_before_inflating(tmp_path: Path) -> None:
    """(A plain file's size is known: it is compared with the header, see test_early_checks.)"""
    from hardneg.data.idx import MAX_IDX_BYTES

    path = tmp_path / "huge.idx.gz"
    path.write_bytes(gzip.compress(_idx_bytes(0x08, (2**31, 28, 28), bytes(784))))
    with pytest.raises(ValueError) as err:
        read_idx(path)
    message = str(err.value)
    assert message.startswith(f"IDX file {path}: its header declares shape (2147483648, 28, 28) "
                              f"({2**31 * 784} bytes of data), more than ")
    assert "refused before reading" in message
    assert str(MAX_IDX_BYTES) in message or "memory" in message


def test_labels_of_one_class_are_refused_at_load(tmp_path: Path) -> None:
    _fixture(tmp_path, gz=True)
    labels = tmp_path / "train-labels-idx1-ubyte.gz"
    labels.write_bytes(gzip.compress(_idx_bytes(0x08, (30,), bytes([7] * 30))))
    with pytest.raises(ValueError) as err:
        read_fashion_mnist(tmp_path, split="train")
    assert str(err.value).startswith(f"{labels}: every image is of class 'Sneaker' (1 class); ")
    assert read_fashion_mnist(tmp_path, split="test").labels.unique().numel() == 10
