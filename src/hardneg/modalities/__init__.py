"""Modalities: the plug-ins through which each kind of data enters the training pipeline.

:mod:`hardneg.modalities.base` is the seam (the :class:`Modality` members every modality declares,
its two kinds :class:`TwoViewModality` and :class:`OwnStepModality`, and the registry; it imports no
plug-in); :mod:`hardneg.modalities.readouts` holds the ``eval`` sections of the engine's
readouts, which the plug-ins without their own evaluation use. Importing this package registers the
built-in plug-ins — each a module that imports the seam, the loss core, :mod:`hardneg.data` and
:mod:`hardneg.models`, never another modality or the pipeline:

================  ==========================================  ===================  ===================
module            ``data.dataset``                            kind                 paper
================  ==========================================  ===================  ===================
``images``        digits, fashion_mnist, mnist, cifar, ...    two-view             Robinson et al. §5.1
``latent``        latent                                      both, by layout      Arora et al. §2
``graphs``        motifs, tu, molecules                       own step, own eval   Robinson et al. §5.2
``articles``      articles                                    own step             Ash et al. §4
``sentences``     sentences                                   own step, own eval   Robinson et al. §5.3
================  ==========================================  ===================  ===================
"""

from hardneg.modalities.articles import Articles
from hardneg.modalities.base import (
    EvalResult,
    EvaluateOption,
    IdentityViews,
    ImageViews,
    Modality,
    OwnStepModality,
    TwoViewModality,
    ViewMaker,
    dataset_names,
    get_modality,
    register_modality,
)
from hardneg.modalities.graphs import Graphs
from hardneg.modalities.images import Images
from hardneg.modalities.latent import Latent
from hardneg.modalities.sentences import Sentences

__all__ = [
    "DEFAULT_DATASET",
    "EvalResult",
    "EvaluateOption",
    "IdentityViews",
    "ImageViews",
    "Modality",
    "OwnStepModality",
    "TwoViewModality",
    "ViewMaker",
    "dataset_names",
    "get_modality",
    "register_modality",
]

#: The ``data.dataset`` of a config that names none (the shared schema names no data set).
DEFAULT_DATASET = "digits"

for _plugin in (Images(), Latent(), Graphs(), Articles(), Sentences()):
    if not set(_plugin.datasets) & set(dataset_names()):  # a user's registration wins
        register_modality(_plugin)


def __getattr__(name: str) -> object:
    """The 0.2 import path of the config sections (``hardneg.modalities.DataSection``), with a
    warning (:data:`hardneg._deprecated.NAMES`)."""
    from hardneg._deprecated import moved_name

    return moved_name(__name__, name)
