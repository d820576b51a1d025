"""K negatives per anchor as indices: one uniform draw without replacement, O(A·K) work.

Anchor ``i`` has ``M_i`` valid candidates. A draw is two steps:

1. **ranks** — K distinct integers in ``[0, M_i)``, uniformly without replacement, from
   counter-based random numbers ``u(seed, i, s)`` (:func:`~hardneg.negatives.keys.counter_bits`),
   so that a row's draw depends only on ``(seed, i, M_i, K)``, never on how the anchors are chunked
   or the matrix tiled (:func:`draw_ranks`: R. Floyd's algorithm, Bentley & Floyd, "Programming
   pearls: a sample of brilliance", CACM 30(9), 1987, vectorised over rows);
2. **indices** — rank ``r`` is the r-th valid candidate of the row in index order. Three exact
   maps, for the three ways a layout knows its valid candidates:

   - known excluded positions only (SimCLR's two views: the anchor itself and its partner; the
     pair layout: none) — closed form, no (A, N) work (:func:`excluded_index`);
   - labels (collision-free negatives) and excluded positions — one ``searchsorted`` over the
     candidates sorted by class, O(N log N + A·K log N) (:class:`LabelRanks`);
   - an explicit (A, N) mask — an int32 row cumsum and a ``searchsorted``, O(A·N) integer work
     (:func:`mask_index`).

The three maps give the same index for the same valid set, so the materialised engine (mask),
the tiled engine (rule) and the gathered one draw **the same subsets** for the same seed.
"""

from __future__ import annotations

import torch
from torch import Tensor

from hardneg.negatives.keys import MAX_CANDIDATES, RANDOM_BITS, counter_bits, counter_keys

__all__ = [
    "FLOYD_FACTOR",
    "LabelRanks",
    "check_available",
    "draw_ranks",
    "excluded_counts",
    "excluded_index",
    "index_mask",
    "mask_index",
]

# Floyd's algorithm costs O(A·K²) compares (the membership test against the ranks already chosen)
# in K vectorised steps, the K smallest of N per-rank keys O(A·N) hashes: Floyd when
# K² ≤ FLOYD_FACTOR · N (both exact and uniform; the choice depends on K and N only, never on the
# chunking). Measured on 2 CPU threads: A = 2048, N = 2046: Floyd 8 / 30 / 84 ms for K = 64 / 128
# / 256, keys 28 / 31 / 35 ms; A = 8192, N = 8190: Floyd 40 / 113 / 342 ms, keys 380 / 468 / 481.
FLOYD_FACTOR = 8

_KEY_CHUNK = 1 << 22  # entries of the per-rank key matrix made at once (32 MiB of int64)


def check_available(num_negatives: int, counts: Tensor, num_candidates: int) -> tuple[int, int]:
    """``(min_i M_i, max_i M_i)`` of the valid counts (A,), read once; ``ValueError`` when some anchor
    has fewer than K = ``num_negatives`` valid candidates."""
    if counts.numel() == 0:
        return num_negatives, num_negatives
    low, high = (int(x) for x in torch.stack([counts.min(), counts.max()]).tolist())
    if num_negatives > low:
        raise ValueError(
            "num_negatives must be <= the number of valid candidates of every anchor "
            f"(here min_i N_i = {low} of {num_candidates} candidates), got num_negatives={num_negatives}"
        )
    if high >= MAX_CANDIDATES:
        raise ValueError(
            f"K-subsampling supports fewer than {MAX_CANDIDATES} valid candidates per anchor, got {high}"
        )
    return low, high


def draw_ranks(seed: int, counts: Tensor, k: int, num_candidates: int, *, row_offset: int = 0) -> Tensor:
    """K distinct ranks per row, uniform without replacement on ``[0, M_i)``, sorted ascending.

    Row ``a`` is anchor ``i = row_offset + a`` and draws from ``u(seed, i, ·)`` only. For
    K² ≤ :data:`FLOYD_FACTOR` · N (``num_candidates``), Floyd's algorithm: for
    ``s = 0 … K−1``, ``j = M_i − K + s``, ``t = ⌊u(seed, i, s)·(j + 1) / 2^39⌋`` (uniform on
    ``[0, j]``); keep ``j`` if ``t`` was already chosen, else ``t``. Every K-subset comes out with
    probability ``1 / C(M_i, K)`` (Bentley & Floyd, CACM 1987). The steps run only for the rows
    where a ``j`` can be kept (two equal ``t``, or a ``t ≥ M_i − K``); elsewhere the ranks are the
    ``t`` themselves. Beyond, the K smallest of the per-rank keys ``key(seed, i, r)``, r < M_i
    (i.i.d. high bits, :func:`~hardneg.negatives.keys.counter_keys`). Needs ``K ≤ M_i``.

    Shapes: ``counts`` (A,) int → (A, K) int64.
    """
    counts = counts.to(torch.int64)
    a = counts.shape[0]
    rows = torch.arange(row_offset, row_offset + a, device=counts.device)
    if a == 0 or k == 0:
        return torch.empty(a, k, dtype=torch.int64, device=counts.device)
    if k * k > FLOYD_FACTOR * num_candidates:
        return _smallest_keys(seed, rows, counts, k)
    steps = torch.arange(k, device=counts.device)
    top = counts[:, None] - k + steps[None, :]  # j of step s: (A, K)
    pick = (counter_bits(seed, rows, steps) * (top + 1)) >> RANDOM_BITS  # uniform on [0, j]
    ranks = pick.sort(dim=1).values
    # a row whose picks are distinct and all below M_i − K never keeps a j: its ranks are its picks
    clash = (ranks[:, 1:] == ranks[:, :-1]).any(dim=1) | (ranks[:, -1] >= counts - k)
    rows_left = torch.nonzero(clash).flatten()
    if rows_left.numel():
        ranks[rows_left] = _floyd_steps(pick[rows_left], top[rows_left])
    return ranks


def _floyd_steps(pick: Tensor, top: Tensor) -> Tensor:
    """Floyd's steps: ``chosen_s = j_s`` if ``pick_s`` is among ``chosen_{<s}``, else ``pick_s``
    (an O(K) compare per row and step). Shapes: ``pick``, ``top`` (A, K) → sorted (A, K)."""
    chosen = torch.empty_like(pick)
    chosen[:, 0] = pick[:, 0]
    for s in range(1, pick.shape[1]):
        seen = (chosen[:, :s] == pick[:, s, None]).any(dim=1)
        chosen[:, s] = torch.where(seen, top[:, s], pick[:, s])
    return chosen.sort(dim=1).values


def _smallest_keys(seed: int, rows: Tensor, counts: Tensor, k: int) -> Tensor:
    """The K smallest of ``key(seed, i, r)`` over ``r < M_i`` per row, as sorted ranks (A, K) int64."""
    width = int(counts.max())
    ranks = torch.arange(width, device=counts.device)
    out = torch.empty(rows.shape[0], k, dtype=torch.int64, device=counts.device)
    step = max(1, _KEY_CHUNK // max(1, width))
    for r0 in range(0, rows.shape[0], step):
        r1 = min(rows.shape[0], r0 + step)
        keys = counter_keys(seed, rows[r0:r1], ranks)
        keys.masked_fill_(ranks[None, :] >= counts[r0:r1, None], torch.iinfo(torch.int64).max)
        low = keys.topk(k, dim=1, largest=False, sorted=False).values
        out[r0:r1] = (low & (MAX_CANDIDATES - 1)).sort(dim=1).values
    return out


def _sorted_exclusions(excluded: Tensor, num_candidates: int) -> Tensor:
    """Each row's distinct excluded positions in ``[0, N)``, sorted, padded with the sentinel
    ``2N + 2`` (larger than any rank): (A, E) int64."""
    sentinel = 2 * num_candidates + 2
    ex = excluded.to(torch.int64)
    ex = torch.where((ex >= 0) & (ex < num_candidates), ex, torch.full_like(ex, sentinel)).sort(dim=1).values
    if ex.shape[1] > 1:
        dup = torch.zeros_like(ex, dtype=torch.bool)
        dup[:, 1:] = ex[:, 1:] == ex[:, :-1]
        ex = ex.masked_fill(dup, sentinel).sort(dim=1).values
    return ex


def excluded_counts(excluded: Tensor, num_candidates: int) -> Tensor:
    """``M_i = N − |E_i|``, the valid counts when only the excluded positions are invalid.

    Shapes: ``excluded`` (A, E) int (−1 or out of range: none; duplicates count once) → (A,) int64.
    """
    ex = _sorted_exclusions(excluded, num_candidates)
    return num_candidates - (ex < num_candidates).sum(dim=1)


def _skip_sorted(ranks: Tensor, sorted_excluded: Tensor) -> Tensor:
    """``j = r + #{m : e_m − m ≤ r}`` for sorted distinct ``e`` (sentinel-padded): the r-th position
    not in ``e``. ``q_m = e_m − m`` is non-decreasing, and ``j − r`` counts the excluded positions
    below ``j``. Shapes: ``ranks`` (A, K), ``sorted_excluded`` (A, E) → (A, K)."""
    if sorted_excluded.shape[1] == 0:
        return ranks
    q = sorted_excluded - torch.arange(sorted_excluded.shape[1], device=ranks.device)[None, :]
    return ranks + (q[:, None, :] <= ranks[:, :, None]).sum(dim=2)


def excluded_index(ranks: Tensor, excluded: Tensor, num_candidates: int) -> Tensor:
    """Rank → candidate index when the invalid candidates of anchor i are exactly ``E_i``.

    For two sorted exclusions ``e1 < e2`` this is ``j = r + [r ≥ e1] + [r ≥ e2 − 1]``; in general
    :func:`_skip_sorted`. O(A·K·E), no (A, N) work.

    Shapes: ``ranks`` (A, K) int64 in ``[0, M_i)``, ``excluded`` (A, E) → (A, K) int64.
    """
    return _skip_sorted(ranks, _sorted_exclusions(excluded, num_candidates))


def mask_index(ranks: Tensor, mask: Tensor) -> Tensor:
    """Rank → index of the r-th True of each row of ``mask``: the first ``j`` with
    ``cumsum_j ≥ r + 1`` (an int32 row cumsum and a ``searchsorted``; O(A·N) integer work).

    Shapes: ``ranks`` (A, K) in ``[0, M_i)``, ``mask`` (A, N) bool → (A, K) int64.
    """
    cumsum = mask.cumsum(dim=1, dtype=torch.int32)
    return torch.searchsorted(cumsum, (ranks + 1).to(torch.int32))


def index_mask(index: Tensor, num_candidates: int) -> Tensor:
    """The (A, N) bool mask that is True exactly at ``index`` (A, K) (a scatter)."""
    out = torch.zeros(index.shape[0], num_candidates, dtype=torch.bool, device=index.device)
    return out.scatter_(1, index, True)


class LabelRanks:
    """Rank ↔ index over the candidates whose label differs from the anchor's, minus ``excluded``.

    Valid for anchor i: ``j ∉ C_{y_i} ∪ E_i``, with ``C_y`` the candidates of known label ``y``
    (labels ``< 0`` are unknown and never equal anything, as in
    :func:`~hardneg.scores.same_label`: an unknown-label anchor keeps every candidate but
    ``E_i``). Per class, the sorted positions ``P_c`` give ``q_m = P_c[m] − m`` (non-decreasing);
    the r-th candidate outside ``C_c`` is ``r + #{m : q_m ≤ r}``, one ``searchsorted`` over the
    concatenation ``c·(N + 1) + q`` of all classes (globally sorted). The exclusions outside the
    class (SimCLR's anchor and partner share its label, so they fall inside it unless the label
    is unknown) are skipped first, as ranks among the candidates outside the class.

    O(N log N) to build, O(A·K·(log N + E)) per draw; no (A, N) work.

    Shapes: ``anchor_labels`` (A,), ``candidate_labels`` (N,), ``excluded`` (A, E) or ``None``.
    """

    def __init__(
        self, anchor_labels: Tensor, candidate_labels: Tensor, excluded: Tensor | None, num_candidates: int
    ) -> None:
        n = num_candidates
        device = candidate_labels.device
        y = candidate_labels.to(torch.int64)
        ya = anchor_labels.to(device=device, dtype=torch.int64)
        known = y >= 0
        labels, order = torch.sort(torch.where(known, y, torch.iinfo(torch.int64).max), stable=True)
        size = int(known.sum())
        labels, order = labels[:size], order[:size]  # known candidates by (label, index)
        first = torch.ones(size, dtype=torch.bool, device=device)
        first[1:] = labels[1:] != labels[:-1]
        cls = first.cumsum(0) - 1  # class id of each sorted candidate
        start_of = torch.nonzero(first).flatten()
        local = torch.arange(size, device=device) - start_of[cls]  # m within its class
        self._n = n
        self._q = cls * (n + 1) + (order - local)  # c·(N+1) + q_m, globally sorted
        self._p = cls * (n + 1) + order  # c·(N+1) + P_c[m], globally sorted
        lo = torch.searchsorted(labels, ya, right=False)
        hi = torch.searchsorted(labels, ya, right=True)
        self._start = lo
        self._size = torch.where(ya >= 0, hi - lo, torch.zeros_like(lo))  # n_{c(i)}: 0 if unknown/absent
        self._cls = cls[lo.clamp_max(max(size - 1, 0))] if size else torch.zeros_like(lo)
        self._skip = self._outside_exclusions(excluded, y, ya)

    def _outside_exclusions(self, excluded: Tensor | None, y: Tensor, ya: Tensor) -> Tensor:
        """The exclusions outside the anchor's class, as sorted ranks among the candidates outside
        the class (sentinel-padded): (A, E) int64."""
        n = self._n
        if excluded is None:
            return torch.empty(ya.shape[0], 0, dtype=torch.int64, device=ya.device)
        ex = _sorted_exclusions(excluded.to(ya.device), n)
        present = ex < n
        label = y[ex.clamp_max(n - 1)]
        inside = present & (ya[:, None] >= 0) & (label == ya[:, None]) & (self._size[:, None] > 0)
        keep = present & ~inside
        below = (
            torch.searchsorted(self._p, self._cls[:, None] * (n + 1) + ex, right=False) - self._start[:, None]
        )
        below = torch.where(self._size[:, None] > 0, below, torch.zeros_like(below))
        rank = torch.where(keep, ex - below, torch.full_like(ex, 2 * n + 2))
        return rank.sort(dim=1).values

    def counts(self) -> Tensor:
        """``M_i = N − n_{c(i)} − |E_i \\ C_{c(i)}|`` (A,) int64."""
        return self._n - self._size - (self._skip < self._n).sum(dim=1)

    def index(self, ranks: Tensor) -> Tensor:
        """The candidate index of each rank: (A, K) int64 in ``[0, M_i)`` → (A, K) int64."""
        r = _skip_sorted(ranks, self._skip)  # rank among the candidates outside the class
        if self._q.numel() == 0:
            return r
        key = self._cls[:, None] * (self._n + 1) + r
        below = torch.searchsorted(self._q, key, right=True) - self._start[:, None]
        return r + torch.where(self._size[:, None] > 0, below, torch.zeros_like(below))
