"""Few labels per class: class-balanced label draws and the linear readout fitted on them.

The semi-supervised evaluation of contrastive representations (Chen, Kornblith, Norouzi, Hinton,
*A Simple Framework for Contrastive Learning of Visual Representations*, ICML 2020, §6 and
Table 7: 1 % and 10 % of ImageNet's labels, class-balanced): only a few labelled examples per class
fit the classifier, so a representation is judged by how well its classes separate from a handful
of labels, well below the full-label ceiling. SimCLR fine-tunes the network on the subset; here the
encoder stays frozen and a linear readout (:class:`~hardneg.evaluate.LinearReadout`) is fitted on
the subset's features, the linear-evaluation protocol of the same paper (§4) at a small label
budget. One draw of a few labels is noisy, so the accuracy is averaged over ``draws`` seeded,
independent class-balanced draws; the same ``seed`` gives the same draws to every encoder compared
(a paired design).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from hardneg.evaluate.arrays import as_features, as_labels

__all__ = ["FewLabelResult", "few_label_linear_accuracy", "few_shot_indices"]


def few_shot_indices(labels: np.ndarray, shots: int, *, seed: int, draw: int = 0) -> np.ndarray:
    """``shots`` indices per class drawn without replacement (all of a smaller class), seeded.

    Args:
        labels: ``(N,)`` class labels.
        shots: labelled examples per class (≥ 1).
        seed: seed of the draws; ``draw``: which of the independent draws of that seed (≥ 0).

    Returns:
        The sorted indices, at most ``shots`` per class.

    Example:
        >>> few_shot_indices(np.array([0, 0, 0, 1]), 2, seed=0).size
        3
        >>> bool((few_shot_indices(np.arange(40) % 2, 3, seed=0, draw=1) >= 0).all())
        True
    """
    if not (isinstance(shots, int) and shots >= 1):
        raise ValueError(f"shots must be a positive int, got {shots!r}")
    if not (isinstance(draw, int) and draw >= 0):
        raise ValueError(f"draw must be an int >= 0, got {draw!r}")
    # draw 0 keeps the 0.2 stream (Arora et al.'s mu-5 numbers are unchanged)
    rng = np.random.default_rng([seed, 0x5407, shots] + ([draw] if draw else []))
    picked = [rng.permutation(np.flatnonzero(labels == c))[:shots] for c in np.unique(labels)]
    return np.sort(np.concatenate(picked))


@dataclass(frozen=True)
class FewLabelResult:
    """Test accuracy of the linear readout fitted on ``shots`` labels per class, per draw."""

    shots: int
    accuracies: tuple[float, ...]

    @property
    def accuracy(self) -> float:
        """The mean over the draws (the reported metric)."""
        return float(np.mean(self.accuracies))

    @property
    def std(self) -> float:
        """The SD over the draws (0 for one draw): the label draws' share of the noise."""
        return float(np.std(self.accuracies, ddof=1)) if len(self.accuracies) > 1 else 0.0


def few_label_linear_accuracy(
    train_features: Any,
    train_labels: Any,
    test_features: Any,
    test_labels: Any,
    *,
    shots: int,
    draws: int = 5,
    seed: int = 0,
    C: float = 1.0,
) -> FewLabelResult:
    """Linear readout on ``shots`` labelled training points per class, averaged over ``draws`` draws.

    Args:
        train_features, train_labels: ``(N, d)`` representations of the labelled pool and their
            ``(N,)`` labels; each draw keeps ``shots`` per class (all of a smaller class).
        test_features, test_labels: ``(M, d)`` and ``(M,)``: what each fitted readout is scored on.
        shots: labels per class (≥ 1). SimCLR's 1 % / 10 % of ImageNet are about 13 / 128 per class.
        draws: independent class-balanced draws averaged (≥ 1).
        seed: seed of the draws (the same for every encoder compared).
        C: inverse L2 strength of the readout (:class:`~hardneg.evaluate.LinearReadout`).

    Shapes:
        ``train_features``: (N, d); ``test_features``: (M, d); labels (N,), (M,).

    Returns:
        :class:`FewLabelResult` with one test accuracy per draw.

    References:
        Chen, Kornblith, Norouzi, Hinton, ICML 2020 (SimCLR), §6, Table 7 (class-balanced label
        fractions) and §4 (linear evaluation of a frozen encoder).

    Example:
        >>> rng = np.random.default_rng(0)
        >>> y = np.repeat([0, 1], 50)
        >>> X = rng.normal(size=(100, 2)) + 4 * y[:, None]
        >>> res = few_label_linear_accuracy(X, y, X, y, shots=3, draws=2)
        >>> len(res.accuracies), res.accuracy > 0.9
        (2, True)
    """
    from hardneg.evaluate.linear import LinearReadout

    if not (isinstance(draws, int) and not isinstance(draws, bool) and draws >= 1):
        raise ValueError(f"draws must be an int >= 1, got {draws!r}")
    train_h = as_features(train_features)
    y_train = as_labels(train_labels, n=train_h.shape[0])
    test_h = as_features(test_features)
    y_test = as_labels(test_labels, n=test_h.shape[0])
    accuracies = []
    for draw in range(draws):
        few = few_shot_indices(y_train, shots, seed=seed, draw=draw)
        readout = LinearReadout(C=C).fit(train_h[few], y_train[few])
        accuracies.append(float(readout.score(test_h, y_test)))
    return FewLabelResult(shots=shots, accuracies=tuple(accuracies))
