"""Encoders (backbones ``f``) and projection heads ``g`` for contrastive learning."""

from hardneg.models.encoder import ENCODER_NAMES, Encoder, build_backbone, build_encoder
from hardneg.models.heads import ProjectionHead
from hardneg.models.mlp import MLPEncoder
from hardneg.models.resnet_cifar import ResNetCIFAR, resnet18_cifar, resnet50_cifar
from hardneg.models.sections import encoder_section, encoder_section_names, register_encoder_section
from hardneg.models.small_cnn import SmallCNN

__all__ = [
    "ENCODER_NAMES",
    "Encoder",
    "MLPEncoder",
    "ProjectionHead",
    "ResNetCIFAR",
    "SmallCNN",
    "build_backbone",
    "build_encoder",
    "encoder_section",
    "encoder_section_names",
    "register_encoder_section",
    "resnet18_cifar",
    "resnet50_cifar",
]
