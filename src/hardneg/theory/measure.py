"""Measured vs bound: empirical losses of an encoder's features next to each theorem's bound.

Input: labelled features ``features`` (n, d) and ``labels`` (n,) — e.g. f(x) on simulator
samples. Pairs are drawn from the empirical class-conditional distributions (two distinct
samples of one class), negatives uniformly from all samples (the empirical marginal), so the
empirical collision rate estimates τ_K of the empirical prior ρ̂.

Losses (on v_i = f(x)ᵀ(f(x⁺) − f(x⁻_i))): hinge max(0, 1 − min v_i) or Arora's base-2 logistic
log₂(1 + Σ e^{−v_i}); ℓ(empty) = 0. Gen_M is omitted (population bounds, Gen_M = 0).

File format for ``hardneg theory report``: a ``.npz`` with arrays ``features`` (n, d) float
and ``labels`` (n,) int, or a folder containing ``features.npz`` in that format — every run
folder of ``hardneg train`` holds one (the backbone features h = f(x) of its test split).

Where the positive pairs come from: the report needs no saved pairs. (x, x⁺) is two distinct
samples of one label, i.e. a draw of the empirical class-conditional distribution. For a run on
the latent-class simulator (``data.dataset: latent``) the test samples are i.i.d. x ∼ 𝒟_c, so
these pairs follow 𝒟_sim (eq. 1), the distribution of the encoder's training pairs, on held-out
data, and the labels are the latent classes. For image datasets the labels stand in for the
latent classes and same-label pairs for the augmented views the encoder was trained on. A run's
features are the representation h (unnormalised), not the projection z its loss was computed on.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .arguments import check_int, check_loss
from .arora import (
    arora_coefficients,
    arora_lemma_4_3_bound,
    arora_proposition_6_2_bound,
    arora_theorem_4_5_bound,
)
from .ash import ash_theorem1_bound, ash_theorem3_bound
from .collisions import collision_probability, distinct_classes_probability
from .deviation import intraclass_deviation, to_numpy

__all__ = ["BoundRow", "MeasureReport", "load_features", "measure_bounds"]


@dataclass(frozen=True)
class BoundRow:
    """One theorem: the measured left-hand side next to the bound's value."""

    theorem: str
    measured_name: str
    measured: float
    bound: float
    holds: bool
    source: str


@dataclass
class MeasureReport:
    """Result of :func:`measure_bounds`: ``quantities`` (name → value) and bound ``rows``."""

    quantities: dict[str, float]
    rows: list[BoundRow]
    settings: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly dict."""
        return {
            "settings": self.settings,
            "quantities": self.quantities,
            "bounds": [asdict(r) for r in self.rows],
        }

    def to_text(self) -> str:
        """Plain-text table."""
        lines = ["quantity".ljust(34) + "value"]
        lines += [f"{k:<34}{v:.6g}" for k, v in self.quantities.items()]
        lines.append("")
        head = f"{'theorem':<30}{'measured':<26}{'value':>10}{'bound':>12}  holds  source"
        lines.append(head)
        for r in self.rows:
            lines.append(
                f"{r.theorem:<30}{r.measured_name:<26}{r.measured:>10.4g}{r.bound:>12.4g}  "
                f"{'yes' if r.holds else 'NO':<5}  {r.source}"
            )
        return "\n".join(lines)

    def to_rich_tables(self) -> list[Any]:
        """Two ``rich.table.Table`` objects (quantities, bounds)."""
        from rich.table import Table

        q = Table(title="Measured quantities")
        q.add_column("quantity")
        q.add_column("value", justify="right")
        for k, v in self.quantities.items():
            q.add_row(k, f"{v:.6g}")
        b = Table(title="Measured vs bound (Gen_M omitted)")
        for col in ("theorem", "measured", "value", "bound", "holds", "source"):
            b.add_column(col, justify="right" if col in ("value", "bound") else "left")
        for r in self.rows:
            b.add_row(r.theorem, r.measured_name, f"{r.measured:.4g}", f"{r.bound:.4g}",
                      "yes" if r.holds else "NO", r.source)
        return [q, b]


def load_features(path: str | Path) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """Read ``features`` (n, d) and ``labels`` (n,) from a ``.npz`` or a folder with ``features.npz``."""
    p = Path(path)
    if p.is_dir():
        p = p / "features.npz"
    if not p.is_file():
        raise FileNotFoundError(f"no features file at {p} (expected .npz or a folder with features.npz)")
    with np.load(p) as data:
        for key in ("features", "labels"):
            if key not in data:
                raise ValueError(f"{p} must contain an array named {key!r}, got {sorted(data.files)}")
        f = np.asarray(data["features"], dtype=np.float64)
        y = np.asarray(data["labels"]).astype(np.int64)
    if f.ndim != 2 or y.ndim != 1 or f.shape[0] != y.shape[0]:
        raise ValueError(f"features must be (n, d) and labels (n,), got {f.shape} and {y.shape}")
    return f, y


def _loss(v: NDArray[np.float64], mask: NDArray[np.bool_], loss: str) -> NDArray[np.float64]:
    """ℓ over the coordinates where ``mask`` is True (row-wise); ℓ(empty) = 0."""
    if loss == "hinge":
        vmin = np.where(mask, v, np.inf).min(axis=1)
        out = np.maximum(0.0, 1.0 - vmin)
        return np.where(mask.any(axis=1), out, 0.0)
    s = np.where(mask, np.exp(-v), 0.0).sum(axis=1)
    return np.where(mask.any(axis=1), np.log2(1.0 + s), 0.0)


def _single(v: NDArray[np.float64], loss: str) -> NDArray[np.float64]:
    return np.maximum(0.0, 1.0 - v) if loss == "hinge" else np.log2(1.0 + np.exp(-v))


def measure_bounds(
    features: Any,
    labels: Any,
    *,
    num_negatives: int = 5,
    loss: str = "hinge",
    num_tuples: int = 20_000,
    k_wise: int | None = None,
    num_tasks: int = 200,
    block_size: int | None = None,
    prior: str = "empirical",
    seed: int = 0,
) -> MeasureReport:
    """Empirical L_un, L^≠_un, collision rate, s(f), mean-classifier losses, and each bound.

    * L_un(k) (eq. 5) with k = 1 and k = K; L^≠_un (Arora App. B.1: rows with |I⁺| < K,
      colliding coordinates dropped); L^≠_NCE (Ash: colliding coordinates dropped, ℓ(∅) = 0).
    * s(f) (eq. 9, ν ∝ ρ̂² weighting).
    * L^μ_sup binary average (Def 2.2, k = 1, exact over all class pairs), the (k+1)-wise average
      (Def 2.2, ``num_tasks`` tasks of k+1 distinct classes, seeded; k = ``k_wise``, default K),
      and the N-way L^μ_sup of Ash et al. plus the mean-classifier accuracy.
    * Bounds (Gen_M = 0): Lemma 4.3, Theorem 4.5, Theorem B.1 ÷ p (Sec. 6.1 remark),
      Proposition 6.2 (if ``block_size``; it bounds L_sup ≤ L^μ_sup, so "holds" is not a test),
      Ash Theorem 1, Ash Theorem 3 (reconstructed; see docs/theory.md).

    ``prior="empirical"`` uses ρ̂ = class frequencies; ``"uniform"`` uses ρ = 1/C.
    Sources: Arora et al. (ICML 2019) and Ash et al. (AISTATS 2022, reconstructed); see each calculator.
    """
    check_loss(loss)
    k = check_int("num_negatives", num_negatives, 1)
    m = check_int("num_tuples", num_tuples, 1)
    if prior not in ("empirical", "uniform"):
        raise ValueError(f"prior must be 'empirical' or 'uniform', got {prior!r}")
    f = to_numpy(features)
    y_raw = np.asarray(to_numpy(labels)).astype(np.int64)
    if f.ndim != 2 or y_raw.shape != (f.shape[0],):
        raise ValueError(f"features must be (n, d) and labels (n,), got {f.shape} and {y_raw.shape}")
    classes, y = np.unique(y_raw, return_inverse=True)
    c_n = classes.size
    if c_n < 2:
        raise ValueError(f"labels must contain >= 2 classes, got {c_n}")
    n = f.shape[0]
    sizes = np.bincount(y, minlength=c_n)
    rho = sizes / n if prior == "empirical" else np.full(c_n, 1.0 / c_n)
    rng = np.random.default_rng(seed)
    order = np.argsort(y, kind="stable")
    start = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n) - start[y[order]]

    def draw_in_class(cls: NDArray[np.int64], avoid_rank: NDArray[np.int64] | None
                      ) -> NDArray[np.int64]:
        sz = sizes[cls]
        if avoid_rank is None:
            r = (rng.random(cls.shape) * sz).astype(np.int64)
        else:
            off = 1 + (rng.random(cls.shape) * np.maximum(sz - 1, 1)).astype(np.int64)
            r = np.where(sz > 1, (avoid_rank + off) % sz, 0)
        return np.asarray(order[start[cls] + r])

    # anchors: class from ρ, then a sample of that class; positive: another sample of the class
    ca = rng.choice(c_n, size=m, p=rho)
    ia = draw_in_class(ca, None)
    ip = draw_in_class(ca, rank[ia])
    cneg = rng.choice(c_n, size=(m, k), p=rho)
    ineg = draw_in_class(cneg, None)
    fa, fp, fn = f[ia], f[ip], f[ineg]
    v = np.einsum("md,md->m", fa, fp)[:, None] - np.einsum("md,mkd->mk", fa, fn)
    coll = cneg == ca[:, None]
    full = np.ones_like(coll)
    q: dict[str, float] = {}
    q["num_classes"] = float(c_n)
    q["tau (k=1)"] = collision_probability(None, 1, rho)
    q[f"tau_K (K={k})"] = collision_probability(None, k, rho)
    q["collision rate (empirical)"] = float(coll.any(axis=1).mean())
    l1 = _loss(v[:, :1], full[:, :1], loss)
    q["L_un (k=1)"] = float(l1.mean())
    ne1 = ~coll[:, 0]
    q["L_un^neq (k=1)"] = float(l1[ne1].mean()) if ne1.any() else math.nan
    lk = _loss(v, full, loss)
    q[f"L_un (K={k})"] = float(lk.mean())
    keep = coll.sum(axis=1) < k
    lneq = _loss(v, ~coll, loss)
    q[f"L_un^neq Arora (K={k})"] = float(lneq[keep].mean()) if keep.any() else math.nan
    q[f"L_NCE^neq Ash (K={k})"] = float(lneq.mean())
    s = intraclass_deviation(f, y, class_probs=rho)
    q["s(f)"] = s
    # mean classifier
    mu = np.stack([f[y == c].mean(axis=0) for c in range(c_n)])
    scores = f @ mu.T
    q["mean-classifier accuracy"] = float((scores.argmax(axis=1) == y).mean())
    own = scores[np.arange(n), y]
    diff = own[:, None] - scores
    mask_n = np.ones_like(diff, dtype=bool)
    mask_n[np.arange(n), y] = False
    per_sample = _loss(diff, mask_n, loss)
    per_class = np.bincount(y, weights=per_sample, minlength=c_n) / sizes
    q[f"L^mu_sup {c_n}-way (Ash)"] = float(rho @ per_class)
    pair_loss = _single(diff, loss)  # ℓ(s_y − s_c')
    mcl = np.stack([pair_loss[y == c].mean(axis=0) for c in range(c_n)])  # (C, C)
    wpair = np.outer(rho, rho)
    np.fill_diagonal(wpair, 0.0)
    sym = 0.5 * (mcl + mcl.T)
    q["L^mu_sup binary avg"] = float((wpair * sym).sum() / wpair.sum())
    kw = k if k_wise is None else check_int("k_wise", k_wise, 1)
    have_kwise = kw + 1 <= c_n
    if have_kwise:
        tot = 0.0
        for _ in range(check_int("num_tasks", num_tasks, 1)):
            while True:
                task = rng.choice(c_n, size=kw + 1, p=rho)
                if np.unique(task).size == kw + 1:
                    break
            acc = 0.0
            for c in task:
                sel = y == c
                d = own[sel][:, None] - scores[sel][:, task[task != c]]
                acc += float(_loss(d, np.ones_like(d, dtype=bool), loss).mean())
            tot += acc / (kw + 1)
        q[f"L^mu_sup {kw + 1}-wise avg"] = tot / num_tasks
    if block_size is not None:
        b = check_int("block_size", block_size, 1)
        cpl = rng.choice(c_n, size=m, p=rho)
        cmi = rng.choice(c_n, size=m, p=rho)
        xa = draw_in_class(cpl, None)
        pos = draw_in_class(np.repeat(cpl[:, None], b, 1), None)
        neg = draw_in_class(np.repeat(cmi[:, None], b, 1), None)
        vb = np.einsum("md,md->m", f[xa], f[pos].mean(axis=1) - f[neg].mean(axis=1))
        q[f"L_block (b={b})"] = float(_single(vb, loss).mean())

    rows: list[BoundRow] = []
    cp_arg: Any = rho

    def add(theorem: str, mname: str, measured: float, bound: float, source: str) -> None:
        rows.append(BoundRow(theorem, mname, measured, bound, bool(measured <= bound + 1e-12),
                             source))

    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        bin_mu = q["L^mu_sup binary avg"]
        add("Arora Lemma 4.3", "L^mu_sup binary avg", bin_mu,
            arora_lemma_4_3_bound(q["L_un (k=1)"], class_probs=cp_arg), "Arora et al. (ICML 2019)")
        if not math.isnan(q["L_un^neq (k=1)"]):
            add("Arora Theorem 4.5", "L^mu_sup binary avg", bin_mu,
                arora_theorem_4_5_bound(q["L_un^neq (k=1)"], s, class_probs=cp_arg, loss=loss),
                "Arora et al. (ICML 2019), c' (reconstructed; see docs/theory.md)")
        lneq_k = q[f"L_un^neq Arora (K={k})"]
        if have_kwise and not math.isnan(lneq_k):
            co = arora_coefficients(k, class_probs=cp_arg, loss=loss)
            p = distinct_classes_probability(None, k + 1, rho)
            add(f"Arora Thm B.1 / p (k={k})", f"L^mu_sup {kw + 1}-wise avg",
                q[f"L^mu_sup {kw + 1}-wise avg"], (co.alpha * lneq_k + co.beta * s) / p,
                "Arora et al. (ICML 2019) + Sec 6.1 remark" + ("" if kw == k else " (k_wise != K)"))
        if block_size is not None:
            add(f"Arora Prop 6.2 (b={block_size})", "L^mu_sup binary avg (>= L_sup)", bin_mu,
                arora_proposition_6_2_bound(q[f"L_block (b={block_size})"], class_probs=cp_arg),
                "Arora et al. (ICML 2019); bounds L_sup")
        base = 2.0 if loss == "logistic" else math.e
        nway = q[f"L^mu_sup {c_n}-way (Ash)"]
        ash_probs = None if prior == "uniform" else rho
        add(f"Ash Theorem 1 (K={k})", f"L^mu_sup {c_n}-way", nway,
            ash_theorem1_bound(q[f"L_un (K={k})"], c_n if ash_probs is None else None, k,
                               loss=loss, class_probs=ash_probs, log_base=base),
            "Ash et al. (AISTATS 2022) (reconstructed, and as Bao, Nagano & Nozawa (ICML 2022) evaluate it)")
        t3 = ash_theorem3_bound(q[f"L_NCE^neq Ash (K={k})"],
                                intraclass_deviation(f, y, class_probs=rho, weighting="ash"),
                                c_n, k)
        add(f"Ash Theorem 3, reconstructed (K={k})", f"L^mu_sup {c_n}-way", nway, t3.value,
            "Ash et al. (AISTATS 2022) (reconstructed; see docs/theory.md), uniform rho, kappa tau-refined")
    settings = {"num_negatives": k, "loss": loss, "num_tuples": m, "k_wise": kw,
                "num_tasks": num_tasks, "block_size": block_size, "prior": prior, "seed": seed,
                "num_samples": n, "dim": int(f.shape[1])}
    return MeasureReport(q, rows, settings)
