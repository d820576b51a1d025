"""Metrics a claim reads from a finished run's files rather than from its ``metrics.json``.

Arora et al.'s Lemma 4.3 (Arora, Khandeparkar, Khodak, Plevrakis, Saunshi, ICML 2019, §4): for
every representation f,

    L^μ_sup(f) ≤ (L_un(f) − τ) / (1 − τ),

with L^μ_sup the mean classifier's average binary supervised loss (Def. 2.2), L_un the
unsupervised loss with one negative (eq. 5), τ the probability that the negative shares the
anchor's class, and ℓ the logistic loss in base 2 (ℓ(v) = log₂(1 + e^{−v}), ℓ(0) = 1, as the lemma
assumes). Both sides are measured on the run's test features (``features.npz``: the encoder's
representation of held-out latent-class samples, whose same-class pairs follow the training
distribution of positive pairs) by :func:`hardneg.theory.measure.measure_bounds`, with the
empirical class prior and Gen_M omitted (population quantities of the empirical distribution).

Arora et al.'s Proposition 6.2 (same paper, §6.3, eq. 12), on the same features and draws: with
blocks of b = 4 positives and b negatives,

    L^μ_sup(f) ≤ (L^block_un(f) − τ) / (1 − τ) ≤ (L_un(f) − τ) / (1 − τ),

both steps by Jensen's inequality (ℓ is convex): the block's averages are closer to the class
means than single points are, so the block loss is the tighter surrogate. ``prop_6_2_bound`` is
the middle term; the check on the left compares it with ``lemma_4_3_measured``, the one on the
right with ``lemma_4_3_bound``.

Jiang, Ishwar, Aeron (arXiv:2111.03169), §VI-A, property 1: "the hardness of negative samples
decreases as ε increases". Measured on a run's test features (the first 512, L2-normalised, each
against the others as candidates): the mean cosine of an anchor's negatives weighted by the entropic
OT coupling (:class:`~hardneg.negatives.OptimalTransport`, temperature 0.5, the library's cost
``‖â − ĉ‖²``) at a small and a large ε, ``ot_hardness_eps{ε}``.

Each run's derived metrics are kept in its ``derived.json`` with the SHA-256 of the features they
were measured on and the digest of every :mod:`hardneg` module loaded when they were computed: a
second report reads them back (a reused reproduction measures nothing again), and new features or
any change of that code measures them again.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path

__all__ = ["CACHE", "DERIVED", "derived_metric"]

LEMMA_4_3_MEASURED = "lemma_4_3_measured"
LEMMA_4_3_BOUND = "lemma_4_3_bound"
PROP_6_2_BOUND = "prop_6_2_bound"
PROP_6_2_BLOCK = 4  # b: positives and negatives per block


def _lemma_4_3(run_dir: Path) -> dict[str, float]:
    from hardneg.theory.measure import load_features, measure_bounds

    features, labels = load_features(run_dir)
    report = measure_bounds(features, labels, num_negatives=1, loss="logistic", seed=0,
                            block_size=PROP_6_2_BLOCK)
    row = next(r for r in report.rows if r.theorem == "Arora Lemma 4.3")
    block = next(r for r in report.rows if r.theorem.startswith("Arora Prop 6.2"))
    return {LEMMA_4_3_MEASURED: row.measured, LEMMA_4_3_BOUND: row.bound, PROP_6_2_BOUND: block.bound}


OT_EPSILONS = (0.5, 2.0)  # the library's scale: the paper's ε = 0.25 and 1 (its cost is half)
_OT_ANCHORS = 512


def _ot_hardness(run_dir: Path) -> dict[str, float]:
    import torch

    from hardneg.negatives import OptimalTransport
    from hardneg.scores import pair_scores
    from hardneg.theory.measure import load_features

    features, _ = load_features(run_dir)
    h = torch.nn.functional.normalize(torch.as_tensor(features[:_OT_ANCHORS], dtype=torch.float64), dim=1)
    mask = ~torch.eye(h.shape[0], dtype=torch.bool)
    scores = pair_scores(h, h, h, temperature=0.5, mask=mask)
    cosine = h @ h.T
    out = {}
    for eps in OT_EPSILONS:
        log_w = OptimalTransport(epsilon=eps).log_weights(scores)
        assert log_w is not None
        q = torch.softmax(log_w, dim=1)  # the coupling's conditional law of the negatives (0 off the mask)
        out[f"ot_hardness_eps{eps:g}"] = float((q * cosine.masked_fill(~mask, 0.0)).sum(dim=1).mean())
    return out


CACHE = "derived.json"
"""The run folder's file keeping its derived metrics, keyed by what they were computed from."""


@lru_cache(maxsize=256)
def _cached(family: str, run_dir: Path, size: int, mtime_ns: int) -> dict[str, float]:
    """``family``'s metrics of ``run_dir``: from its :data:`CACHE` when that was computed from the
    same ``features.npz`` (SHA-256) by the same code (the digest of every :mod:`hardneg` module
    loaded when it was computed), else computed and written there (atomically)."""
    from hardneg._io import atomic_write_text
    from hardneg.pipeline.provenance import file_digest, loaded_modules, module_digest

    del size, mtime_ns  # the in-process key only: a rewritten features file is looked at again
    features = file_digest(run_dir / "features.npz")
    path = run_dir / CACHE
    try:
        stored = json.loads(path.read_text(encoding="utf-8"))
        entry = stored[family]
        if entry["features_sha256"] == features and all(
            module_digest(name) == digest for name, digest in entry["modules"].items()
        ):
            return {k: float(v) for k, v in entry["values"].items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        stored = {}
    values = _FAMILIES[family](run_dir)
    modules = {name: module_digest(name) for name in loaded_modules()}
    stored = stored if isinstance(stored, dict) else {}
    stored[family] = {"features_sha256": features, "modules": modules, "values": values}
    atomic_write_text(path, json.dumps(stored, indent=1, sort_keys=True) + "\n")
    return values


def _family(family: str) -> Callable[[Path], dict[str, float]]:
    def compute(run_dir: Path) -> dict[str, float]:
        path = run_dir / "features.npz"
        if not path.is_file():
            raise FileNotFoundError(f"no features file at {path}: the run did not save its test features")
        st = path.stat()
        return _cached(family, run_dir.resolve(), st.st_size, st.st_mtime_ns)
    return compute


_FAMILIES: dict[str, Callable[[Path], dict[str, float]]] = {"arora": _lemma_4_3, "ot_hardness": _ot_hardness}
DERIVED: dict[str, Callable[[Path], dict[str, float]]] = {
    LEMMA_4_3_MEASURED: _family("arora"),
    LEMMA_4_3_BOUND: _family("arora"),
    PROP_6_2_BOUND: _family("arora"),
    **{f"ot_hardness_eps{eps:g}": _family("ot_hardness") for eps in OT_EPSILONS},
}
"""Metric name → the function computing it (with its siblings) from a run folder."""


def derived_metric(run_dir: str | Path, metric: str) -> float:
    """The value of derived ``metric`` for the run in ``run_dir`` (see :data:`DERIVED`).

    Raises ``KeyError`` naming the known metrics for an unknown one, ``FileNotFoundError`` when
    the run folder lacks the file the metric is measured on.
    """
    if metric not in DERIVED:
        raise KeyError(f"unknown derived metric {metric!r}; known: {sorted(DERIVED)}")
    return DERIVED[metric](Path(run_dir))[metric]
