"""β schedules: the annealing of the concentration parameter of Robinson et al. (ICLR 2021), App. D.1.

>>> from hardneg.schedules import BetaAnnealing
>>> schedule = BetaAnnealing(beta=1.0, num_changes=4, num_epochs=100)
>>> [schedule(e) for e in (0, 24, 25, 50, 99, 100)]
[1.0, 1.0, 0.75, 0.5, 0.25, 0.0]
"""

from __future__ import annotations

import math

from hardneg._validation import check_positive

__all__ = ["LR_SCHEDULES", "BetaAnnealing", "annealed_beta", "lr_factor"]

_DIRECTIONS = ("down", "up")


def annealed_beta(
    epoch: int, *, beta: float, num_changes: int, num_epochs: int, direction: str = "down"
) -> float:
    r"""β at ``epoch`` (0-based) under HCL's step annealing.

    "down" (App. D.1): start at β₁ = β and, every e/ℓ epochs, lower it by β/ℓ, i.e. switch from
    β_i to β_{i+1} = β_i − β/ℓ at epoch i·e/ℓ:

        β(epoch) = β · (1 − min(ℓ, ⌊epoch·ℓ/e⌋) / ℓ),

    reaching 0 at epoch e. "up" is the mirror image, β · min(ℓ, ⌊epoch·ℓ/e⌋) / ℓ, from 0 to β.
    Here e = ``num_epochs`` and ℓ = ``num_changes``.
    """
    check_positive("beta", beta, strict=False)
    if isinstance(num_changes, bool) or not isinstance(num_changes, int) or num_changes < 1:
        raise ValueError(f"num_changes must be an integer >= 1, got {num_changes!r}")
    if isinstance(num_epochs, bool) or not isinstance(num_epochs, int) or num_epochs < 1:
        raise ValueError(f"num_epochs must be an integer >= 1, got {num_epochs!r}")
    if isinstance(epoch, bool) or not isinstance(epoch, int) or epoch < 0:
        raise ValueError(f"epoch must be an integer >= 0, got {epoch!r}")
    if direction not in _DIRECTIONS:
        raise ValueError(f"direction must be one of {_DIRECTIONS}, got {direction!r}")
    steps = min(num_changes, math.floor(epoch * num_changes / num_epochs))
    frac = steps / num_changes
    return float(beta * (1.0 - frac) if direction == "down" else beta * frac)


class BetaAnnealing:
    """A callable schedule ``epoch -> β`` (see :func:`annealed_beta`), usable in any loop.

    ``schedule.apply(negatives, epoch)`` sets ``negatives.beta`` (e.g. on
    ``loss_fn.negatives``) and returns the value.
    """

    def __init__(self, *, beta: float, num_changes: int, num_epochs: int, direction: str = "down"):
        annealed_beta(0, beta=beta, num_changes=num_changes, num_epochs=num_epochs, direction=direction)
        self.beta = float(beta)
        self.num_changes = num_changes
        self.num_epochs = num_epochs
        self.direction = direction

    def __call__(self, epoch: int) -> float:
        return annealed_beta(
            epoch,
            beta=self.beta,
            num_changes=self.num_changes,
            num_epochs=self.num_epochs,
            direction=self.direction,
        )

    def apply(self, negatives: object, epoch: int) -> float:
        """Set ``negatives.beta`` to the schedule's β at ``epoch`` and return that β.

        Args:
            negatives: any object with a ``beta`` attribute, e.g. ``loss_fn.negatives`` when it is
                :class:`hardneg.negatives.Hard`.
            epoch: the 0-based epoch about to start.

        Returns:
            The β now set (HCL's step annealing, Robinson et al., ICLR 2021, App. D.1).

        Raises:
            TypeError: ``negatives`` has no ``beta`` attribute.

        Example:
            >>> from hardneg import negatives
            >>> hard = negatives.Hard(beta=1.0)
            >>> BetaAnnealing(beta=1.0, num_changes=2, num_epochs=10).apply(hard, 5)
            0.5
            >>> hard.beta
            0.5
        """
        value = self(epoch)
        if not hasattr(negatives, "beta"):
            raise TypeError(
                f"negatives must have a 'beta' attribute to anneal, got {type(negatives).__name__}"
            )
        negatives.beta = value
        return value

    def __repr__(self) -> str:
        return (
            f"BetaAnnealing(beta={self.beta}, num_changes={self.num_changes}, "
            f"num_epochs={self.num_epochs}, direction={self.direction!r})"
        )


LR_SCHEDULES = ("constant", "cosine")


def lr_factor(epoch: int, *, num_epochs: int, warmup_epochs: int = 0, schedule: str = "constant") -> float:
    r"""The learning rate of ``epoch`` (0-based) as a factor of the base rate.

    A linear warm-up over the first ``w = warmup_epochs`` epochs, ``(epoch + 1) / w``, then
    ``"constant"`` (1) or ``"cosine"`` decay over the remaining ``E − w`` epochs (Loshchilov &
    Hutter, ICLR 2017, without restarts; the schedule of SimCLR, Chen et al., ICML 2020):

        factor(epoch) = ½ (1 + cos(π (epoch − w) / (E − w))),   w ≤ epoch < E.

    >>> [round(lr_factor(e, num_epochs=4, warmup_epochs=1, schedule="cosine"), 3) for e in range(4)]
    [1.0, 1.0, 0.75, 0.25]
    """
    if schedule not in LR_SCHEDULES:
        raise ValueError(f"schedule must be one of {LR_SCHEDULES}, got {schedule!r}")
    if isinstance(num_epochs, bool) or not isinstance(num_epochs, int) or num_epochs < 1:
        raise ValueError(f"num_epochs must be an int >= 1, got {num_epochs!r}")
    bad_type = isinstance(warmup_epochs, bool) or not isinstance(warmup_epochs, int)
    if bad_type or not 0 <= warmup_epochs < num_epochs:
        raise ValueError(
            f"warmup_epochs must be an int in [0, num_epochs = {num_epochs}), got {warmup_epochs!r}"
        )
    if epoch < warmup_epochs:
        return (epoch + 1) / warmup_epochs
    if schedule == "constant":
        return 1.0
    progress = min(epoch - warmup_epochs, num_epochs - warmup_epochs) / (num_epochs - warmup_epochs)
    return 0.5 * (1.0 + math.cos(math.pi * progress))
