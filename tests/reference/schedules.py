"""β annealing of Robinson et al. (ICLR 2021), App. D.1, as the paper states the recursion."""

from __future__ import annotations


def paper_recursion(beta: float, changes: int, epochs: int) -> list[float]:
    """Switch from β_i to β_i − β/ℓ at epoch i·e/ℓ (i = 1, 2, …), starting from β_1 = β."""
    out, current = [], beta
    switch_points = [i * epochs / changes for i in range(1, changes + 1)]
    for epoch in range(epochs + 3):
        current = beta - beta / changes * sum(epoch >= s for s in switch_points)
        out.append(current)
    return out
