"""Evaluation of frozen representations (scikit-learn estimator API; numpy or torch in).

Needs scikit-learn and SciPy (``pip install "hardneg[cli]"``); without them the ImportError names the extra.
"""

from hardneg._packages import extra_error

try:
    from hardneg.evaluate.features import extract_features
    from hardneg.evaluate.knn import WeightedKNN
    from hardneg.evaluate.kwise import (
        KWiseResult,
        average_kwise_accuracy,
        kwise_from_scores,
        task_loss_and_accuracy,
    )
    from hardneg.evaluate.linear import LinearReadout
    from hardneg.evaluate.mean_classifier import MeanClassifier
    from hardneg.evaluate.svm_cv import (
        CVResult,
        SVMReadout,
        cross_validated_accuracy,
        cross_validated_readouts,
        repeated_cv,
    )
except ModuleNotFoundError as _err:  # scikit-learn / SciPy missing: name the extra
    raise extra_error(_err, "hardneg.evaluate") from _err

__all__ = [
    "CVResult",
    "KWiseResult",
    "LinearReadout",
    "MeanClassifier",
    "SVMReadout",
    "WeightedKNN",
    "average_kwise_accuracy",
    "cross_validated_accuracy",
    "cross_validated_readouts",
    "extract_features",
    "kwise_from_scores",
    "repeated_cv",
    "task_loss_and_accuracy",
]
