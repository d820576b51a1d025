"""Images in the training pipeline: SimCLR's two augmented views of each image.

``data.dataset`` names one of :data:`~hardneg.data.splits.IMAGE_DATASETS` (scikit-learn's digits,
Fashion-MNIST / MNIST IDX files, CIFAR pickles, STL-10 binaries, image folders, random noise);
the views are the batched augmentations of :mod:`hardneg.data.augment` drawn with the step
generator (Chen et al., ICML 2020; Robinson et al., ICLR 2021, §5.1), or with
``data.oracle_positive`` the second view comes from another image of the same class. The encoder
is a backbone of :mod:`hardneg.models` with a projection head; the evaluation is the engine's
linear / kNN / mean-classifier readouts.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from hardneg.config import DataSection, UserPath
from hardneg.config.errors import ConfigError
from hardneg.data.images import LabeledImages
from hardneg.data.splits import IMAGE_DATASETS
from hardneg.modalities.base import IdentityViews, ImageViews, TwoViewModality, ViewMaker
from hardneg.modalities.memory import FLOAT, MemoryTerm, training_state
from hardneg.models.configured import configured_encoder

if TYPE_CHECKING:
    from torch import Tensor, nn
    from torch.utils.data import Dataset

    from hardneg.config.schema import RunConfig

__all__ = ["ImageData", "Images"]

class ImageData(DataSection):
    """``data`` of the image data sets."""

    root: UserPath | None = Field(None, description="folder holding an on-disk dataset")
    test_fraction: float = Field(0.25, gt=0.0, lt=1.0, description="digits: held-out fraction")
    split_seed: int = Field(0, ge=0, le=2**32 - 1, description="digits: seed of the stratified split")
    train_subset: int | None = Field(None, ge=2, description="use only the first N training items")
    test_subset: int | None = Field(None, ge=2, description="use only the first N test items")
    oracle_positive: bool = Field(False, description="second view = another item of the same class")
    augment: Literal["auto", "digits", "simclr", "none"] = Field("auto", description="view augmentation")
    image_size: int | None = Field(None, ge=1, description="output side of the augmentation")
    random_size: int = Field(512, ge=2, description="dataset=random: number of images")
    random_shape: list[int] = Field(
        default_factory=lambda: [3, 32, 32],
        min_length=3,
        max_length=3,
        description="dataset=random: (C, H, W)",
    )


def _check_root(d: Any) -> None:
    """``data.root`` names an existing folder for the data sets read from disk (nothing is downloaded)."""
    from pathlib import Path

    from hardneg.data.splits import root_layout

    if d.dataset in ("digits", "random") or (d.root is None and d.dataset == "fashion_mnist"):
        return
    if d.root is None or not os.path.exists(Path(d.root).expanduser()):  # False for a name too long, too
        got = "None" if d.root is None else f"'{d.root}', which does not exist"
        raise ConfigError(
            f"invalid value for 'data.root': data.dataset={d.dataset!r} reads {root_layout(d.dataset)} "
            f"from a folder (nothing is downloaded), got {got}"
        )


def _check_batch(cfg: RunConfig, train: LabeledImages) -> None:
    """With ``train.drop_last`` one full batch must fit in the training images, checked before training."""
    d: Any = cfg.data
    b, n = cfg.train.batch_size, len(train)
    if cfg.train.drop_last and n < b:
        where = f"data.root={d.root!r}" if d.root is not None else f"data.dataset={d.dataset!r}"
        subset = f", data.train_subset={d.train_subset}" if d.train_subset is not None else ""
        raise ConfigError(
            f"invalid value for 'train.batch_size': must be at most the {n} training images of {where}"
            f"{subset} (or set train.drop_last=false), got {b}"
        )


# (channels, side) of the built-in image sets, for the memory bound before loading
_IMAGE_SIZES = {"digits": (1, 8), "mnist": (1, 28), "fashion_mnist": (1, 28), "cifar10": (3, 32),
                "cifar100": (3, 32), "stl10": (3, 96), "tiny_imagenet": (3, 64)}


class Images(TwoViewModality[LabeledImages, LabeledImages]):
    """SimCLR / MoCo on images (see the module docstring)."""

    name = "images"
    datasets = IMAGE_DATASETS
    encoders = ("small_cnn", "resnet18_cifar", "resnet50_cifar")
    section = ImageData

    def check(self, cfg: RunConfig) -> None:
        d: Any = cfg.data
        if any(v < 1 for v in d.random_shape):
            raise ConfigError(
                f"invalid value for 'data.random_shape': three sizes >= 1 (C, H, W), got {d.random_shape!r}"
            )
        if cfg.loss.collision_free and d.dataset == "random":
            raise ConfigError(
                "invalid value for 'loss.collision_free': needs labelled data, got dataset 'random'"
            )

    def uses_labels(self, cfg: RunConfig) -> bool:
        """``random`` noise images carry meaningless labels: the loss does not see them."""
        return cfg.data.dataset != "random"

    def pictures(self, cfg: RunConfig, split: LabeledImages) -> Tensor | None:
        """The images of the split (every image data set's)."""
        return split.images

    def load(self, cfg: RunConfig) -> tuple[LabeledImages, LabeledImages]:
        from hardneg.data.splits import load_image_splits

        d: Any = cfg.data
        _check_root(d)
        train, test = load_image_splits(
            dataset=d.dataset,
            root=d.root,
            test_fraction=d.test_fraction,
            split_seed=d.split_seed,
            train_subset=d.train_subset,
            test_subset=d.test_subset,
            random_size=d.random_size,
            random_shape=d.random_shape,
        )
        _check_batch(cfg, train)
        return train, test

    def data_files(self, cfg: RunConfig) -> list[Path]:
        """``data.root``, or the system's Fashion-MNIST folder; none for ``digits`` and ``random``."""
        d: Any = cfg.data
        if d.dataset in ("digits", "random"):
            return []
        if d.root is None and d.dataset == "fashion_mnist":
            from hardneg.data.idx import FASHION_MNIST_DEBIAN_DIR

            return [FASHION_MNIST_DEBIAN_DIR]
        return super().data_files(cfg)

    def dataset(self, cfg: RunConfig, train: LabeledImages) -> Dataset[Any]:
        from hardneg.data.batches import BatchedImages

        return BatchedImages(train, oracle_positive=cfg.data.oracle_positive, seed=cfg.seed)  # type: ignore[attr-defined]

    def views(self, cfg: RunConfig, train: LabeledImages) -> ViewMaker:
        from hardneg.data.augment import SimCLRAugment, digits_augment

        d: Any = cfg.data
        _, c, h, w = train.images.shape
        kind = d.augment
        if kind == "auto":
            kind = "digits" if (c, h, w) == (1, 8, 8) else "simclr"
        if kind == "none":
            return IdentityViews()
        if kind == "digits":
            return ImageViews(digits_augment())
        return ImageViews(SimCLRAugment(image_size=d.image_size or h))

    def memory(self, cfg: RunConfig) -> list[MemoryTerm]:
        """The encoder's training state (counted on the ``meta`` device: no memory) and one batch
        of two views."""
        import torch

        d: Any = cfg.data
        channels, side = _IMAGE_SIZES.get(d.dataset, (3, d.image_size or 32))
        pixels = channels * side * side
        terms = []
        if d.dataset == "random":  # generated in memory: random_size images of random_shape
            channels, pixels = d.random_shape[0], math.prod(d.random_shape)
            terms.append(MemoryTerm(f"the {d.random_size} random images of shape {d.random_shape}",
                                    d.random_size * pixels * FLOAT,
                                    ("data.random_size", "data.random_shape")))
        with torch.device("meta"):
            encoder = configured_encoder(cfg.model, in_channels=channels)
        params = sum(p.numel() for p in encoder.parameters())
        keys = ["model.encoder", *(f"model.{k}" for k in ("width", "feature_dim", "hidden_dim")
                                   if getattr(cfg.model, k, None) is not None)]
        views = 2 * cfg.train.batch_size * pixels * FLOAT
        view_keys = ("train.batch_size", *(("data.random_shape",) if d.dataset == "random" else ()))
        return [*terms,
                training_state(params, cfg.train.optimizer, f"the {cfg.model.encoder} encoder", keys),
                MemoryTerm("one batch of two image views", views, view_keys)]

    def build_encoder(self, cfg: RunConfig, train: LabeledImages) -> nn.Module:
        return configured_encoder(cfg.model, in_channels=int(train.images.shape[1]))
