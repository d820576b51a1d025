"""Figures of the theory calculators (through the one writer, :mod:`hardneg.figures._figure`).

* :func:`ash_coefficient_figure` — Ash et al. Theorem 1 coefficient vs K for several N
  (Ash et al. (AISTATS 2022) Fig. 1 analogue; formula (reconstructed, and as Bao, Nagano & Nozawa (ICML
  2022) evaluate it)).
* :func:`ash_example_figure` — L_NCE(f₁) and L_NCE(f₂) vs K with the crossing points
  (Ash et al. (AISTATS 2022) §3 / Fig. 2 analogue; f₂ (reconstructed; see docs/theory.md)).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from hardneg.figures._figure import new_figure, save_figure
from hardneg.theory.arguments import check_int
from hardneg.theory.ash import ash_coefficient, optimal_num_negatives
from hardneg.theory.examples import ash_example_crossings, ash_f1_nce, ash_f2_nce

__all__ = ["ash_coefficient_figure", "ash_example_figure", "write_all_figures"]


def ash_coefficient_figure(
    path: str | Path, classes: Sequence[int] = (10, 100, 1000), max_factor: float = 4.0
) -> Path:
    """Ash Theorem 1 coefficient 2·max(1, 2(N−1)H_{N−1}/K)/(1−τ_K) vs K (log-log), one curve per
    N, K = 1..max_factor·N, with the integer minimisers (N−1, N) marked."""
    fig, ax = new_figure(figsize=(6, 4))
    for n in classes:
        n = check_int("classes", n, 2)
        ks = sorted({max(1, round(x)) for x in _geom(1, max_factor * n, 300)})
        ax.plot(ks, [ash_coefficient(n, k) for k in ks], label=f"N = {n}")
        best = optimal_num_negatives(n)
        ax.scatter(best, [ash_coefficient(n, k) for k in best], marker="o", zorder=3)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("number of negatives K")
    ax.set_ylabel("Theorem 1 coefficient")
    ax.set_title("Ash et al. Thm 1 coefficient (reconstructed); dots: optimal K ∈ {N−1, N}")
    ax.legend()
    return save_figure(fig, path, bbox_inches="tight")


def _geom(lo: float, hi: float, num: int) -> list[float]:
    import numpy as np

    return [float(x) for x in np.geomspace(lo, hi, num)]


def ash_example_figure(
    path: str | Path, num_classes: int = 100, rs: Sequence[float] = (0.1, 0.2, 0.3),
    max_factor: float = 3.0,
) -> Path:
    """L_NCE(f₁) = 1 − (1−2/N)^K and L_NCE(f₂) (closed form, r < 0.366) vs K; crossings marked."""
    n = check_int("num_classes", num_classes, 2)
    ks = list(range(1, int(max_factor * n) + 1))
    fig, ax = new_figure(figsize=(6, 4))
    ax.plot(ks, [ash_f1_nce(n, k) for k in ks], color="k", label="f₁ (L^μ_sup = 1)")
    for r in rs:
        line = ax.plot(ks, [ash_f2_nce(n, k, r) for k in ks], label=f"f₂, r = {r} (L^μ_sup = {r / 2:g})")
        for x in ash_example_crossings(r, n):
            ax.axvline(x, color=line[0].get_color(), ls=":", lw=0.8)
    ax.set_xlabel("number of negatives K")
    ax.set_ylabel("hinge L_NCE")
    ax.set_title(f"Ash et al. §3 example (reconstructed), N = {n}: f₂ preferred between crossings")
    ax.legend(fontsize=8)
    return save_figure(fig, path, bbox_inches="tight")


def write_all_figures(outdir: str | Path) -> list[Path]:
    """Write ``ash_coefficient.png`` and ``ash_f1_f2.png`` into ``outdir``; return the paths."""
    out = Path(outdir)
    return [
        ash_coefficient_figure(out / "ash_coefficient.png"),
        ash_example_figure(out / "ash_f1_f2.png"),
    ]
