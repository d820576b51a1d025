"""Named graph methods of a comparison: ``infograph``, ``hard:β``, ``debiased:τ⁺``, ``ot:ε``, ``released:β``.

Each name builds the loss of one arm of Robinson et al.'s graph study (ICLR 2021, §5.2, Fig. 3):
InfoGraph (Sun et al., ICLR 2020) is β = 0 with uniform negatives; ``hard:β`` tilts the negative
graphs with the clipping trick (their Fig. 14); ``debiased:τ⁺`` is the debiased Jensen–Shannon
objective; ``hard-debiased:β:τ⁺`` both; ``ot:ε`` the entropic OT coupling of Jiang, Ishwar and
Aeron (arXiv:2111.03169); ``released:β`` the authors' released loss with all its deviations
(:func:`hardneg.graphs.released_local_global_loss`), to reproduce their numbers.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from torch import Tensor, nn

from hardneg.graphs.objective import InfoGraphLoss

__all__ = ["GraphMethod", "parse_method"]


@dataclass(frozen=True)
class GraphMethod:
    """One arm: its name, the β it sits at in an accuracy-vs-β figure (None: not a tilt), a loss."""

    name: str
    beta: float | None
    build: Callable[[], nn.Module]


class _Released(nn.Module):
    """The released loss behind :class:`InfoGraphLoss`'s ``detailed`` interface."""

    def __init__(self, beta: float) -> None:
        super().__init__()
        self.beta = beta

    def detailed(self, local: Tensor, global_: Tensor, batch: Tensor, **_: object) -> object:
        from hardneg.graphs.released import released_local_global_loss
        from hardneg.reduction import LossOutput

        value = released_local_global_loss(local, global_, batch, beta=self.beta)
        return LossOutput(loss=value, per_anchor=value.detach().reshape(1))


def _number(text: str, what: str, spec: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise ValueError(f"method {spec!r}: {what} must be a number, got {text!r}") from None


def parse_method(spec: str) -> GraphMethod:
    """``"hard:2"`` → the hard-negative InfoGraph loss with β = 2 (see the module docstring)."""
    from hardneg.negatives import Hard, OptimalTransport

    kind, *args = spec.strip().split(":")
    n_args = {"infograph": 0, "hard": 1, "debiased": 1, "hard-debiased": 2, "ot": 1, "released": 1}
    if kind not in n_args:
        raise ValueError(f"method must be one of {sorted(n_args)} (with ':' parameters), got {spec!r}")
    if len(args) != n_args[kind]:
        raise ValueError(f"method {kind!r} takes {n_args[kind]} ':' parameter(s), got {spec!r}")
    vals = [_number(a, "its parameter", spec) for a in args]
    if kind == "infograph":
        return GraphMethod(spec, 0.0, lambda: InfoGraphLoss())
    if kind == "hard":
        Hard(beta=vals[0])  # validate now, not in a worker
        return GraphMethod(spec, vals[0], lambda: InfoGraphLoss(negatives=Hard(beta=vals[0], rescale=True)))
    if kind == "debiased":
        InfoGraphLoss(tau_plus=vals[0])
        return GraphMethod(spec, 0.0, lambda: InfoGraphLoss(tau_plus=vals[0]))
    if kind == "hard-debiased":
        InfoGraphLoss(negatives=Hard(beta=vals[0], rescale=True), tau_plus=vals[1])
        return GraphMethod(
            spec, vals[0], lambda: InfoGraphLoss(negatives=Hard(beta=vals[0], rescale=True), tau_plus=vals[1])
        )
    if kind == "ot":
        OptimalTransport(epsilon=vals[0])
        return GraphMethod(spec, None, lambda: InfoGraphLoss(negatives=OptimalTransport(epsilon=vals[0])))
    from hardneg._validation import check_beta

    check_beta(vals[0])
    return GraphMethod(spec, None, lambda: _Released(vals[0]))
