"""Datasets, on-disk readers and batched augmentations for contrastive training.

Readers never download anything: they read the formats users already have on disk and raise
``FileNotFoundError`` / ``ValueError`` naming the file and the expected layout.
"""

from hardneg.data.augment import SimCLRAugment, digits_augment, gaussian_blur, random_resized_crop
from hardneg.data.cifar import read_cifar10, read_cifar100
from hardneg.data.digits import DIGITS_CLASSES, load_digits_images, load_digits_split
from hardneg.data.idx import FASHION_MNIST_CLASSES, read_fashion_mnist, read_idx, read_mnist
from hardneg.data.image_folder import IMAGE_EXTENSIONS, read_image_folder, read_tiny_imagenet
from hardneg.data.images import LabeledImages, to_float_images
from hardneg.data.stl10 import STL10_CLASSES, read_stl10

__all__ = [
    "DIGITS_CLASSES",
    "FASHION_MNIST_CLASSES",
    "IMAGE_EXTENSIONS",
    "STL10_CLASSES",
    "LabeledImages",
    "SimCLRAugment",
    "digits_augment",
    "gaussian_blur",
    "load_digits_images",
    "load_digits_split",
    "random_resized_crop",
    "read_cifar10",
    "read_cifar100",
    "read_fashion_mnist",
    "read_idx",
    "read_image_folder",
    "read_mnist",
    "read_stl10",
    "read_tiny_imagenet",
    "to_float_images",
]
