"""The K-subsampling draw as indices (issue 25, item 2): Floyd's algorithm on counter-based random
numbers, rank → index maps for exclusions, labels and masks, and the same subsets whatever the
engine, tiling or chunking."""

from __future__ import annotations

import math

import pytest
import torch

from hardneg.engines.tiled import TileMask
from hardneg.negatives import subsample_mask
from hardneg.negatives.draw import (
    FLOYD_FACTOR,
    LabelRanks,
    draw_ranks,
    excluded_counts,
    excluded_index,
    index_mask,
    mask_index,
)
from hardneg.negatives.keys import RANDOM_BITS, counter_bits
from hardneg.scores import same_label


def _floyd_by_hand(seed: int, i: int, m: int, k: int) -> list[int]:
    """Bentley & Floyd (CACM 1987), one row, Python ints: for j = m − k … m − 1, t uniform on
    [0, j] from the counter bits u(seed, i, s); add j if t is already in S, else t."""
    u = counter_bits(seed, torch.tensor([i]), torch.arange(k))[0].tolist()
    chosen: list[int] = []
    for s, j in enumerate(range(m - k, m)):
        t = (u[s] * (j + 1)) >> RANDOM_BITS
        chosen.append(j if t in chosen else t)
    return sorted(chosen)


def _random_case(seed: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, int]:
    """(excluded (A, E), anchor labels (A,), candidate labels (N,), N), with −1 exclusions,
    duplicates and unknown labels."""
    g = torch.Generator().manual_seed(seed)
    a = int(torch.randint(1, 25, (1,), generator=g))
    n = int(torch.randint(4, 60, (1,), generator=g))
    e = int(torch.randint(0, 4, (1,), generator=g))
    excluded = torch.randint(-1, n, (a, e), generator=g)
    return excluded, torch.randint(-1, 5, (a,), generator=g), torch.randint(-1, 5, (n,), generator=g), n


def _valid(
    excluded: torch.Tensor, n: int, ya: torch.Tensor | None = None, yc: torch.Tensor | None = None
) -> torch.Tensor:
    valid = torch.ones(excluded.shape[0], n, dtype=torch.bool)
    for i, row in enumerate(excluded.tolist()):
        for e in row:
            if e >= 0:
                valid[i, e] = False
    if ya is not None and yc is not None:
        valid &= ~same_label(ya, yc)
    return valid


@pytest.mark.parametrize("seed", range(3))
def test_floyd_equals_the_sequential_algorithm(seed: int) -> None:
    """Both regimes of the vectorised draw: rows with and without clashes, every M_i."""
    counts = torch.tensor([5, 6, 9, 30, 200, 7, 5])
    for k in (1, 2, 4, 5):
        got = draw_ranks(seed, counts, k, 10_000)
        for i, m in enumerate(counts.tolist()):
            assert got[i].tolist() == _floyd_by_hand(seed, i, m, k)


def test_draw_is_k_distinct_ranks_in_range_in_both_regimes() -> None:
    counts = torch.randint(40, 90, (50,), generator=torch.Generator().manual_seed(0))
    for k in (1, 7, 40):
        for n in (90, 40 * 40 // FLOYD_FACTOR - 1):  # Floyd, then the per-rank keys (K² > 8N)
            r = draw_ranks(3, counts, k, n)
            assert r.shape == (50, k) and bool((r >= 0).all()) and bool((r < counts[:, None]).all())
            assert bool((r[:, 1:] > r[:, :-1]).all())  # sorted, hence distinct


def test_rows_draw_the_same_whatever_the_chunking() -> None:
    counts = torch.randint(20, 70, (37,), generator=torch.Generator().manual_seed(1))
    for k, n in ((6, 100), (19, 20)):  # Floyd, per-rank keys
        full = draw_ranks(11, counts, k, n)
        parts = [draw_ranks(11, counts[r0 : r0 + 5], k, n, row_offset=r0) for r0 in range(0, 37, 5)]
        assert torch.equal(torch.cat(parts), full)


@pytest.mark.parametrize("seed", range(40))
def test_the_three_maps_equal_the_r_th_valid_candidate(seed: int) -> None:
    excluded, ya, yc, n = _random_case(seed)
    only_ex = _valid(excluded, n)
    labelled = _valid(excluded, n, ya, yc)
    assert torch.equal(excluded_counts(excluded, n), only_ex.sum(1))
    by_labels = LabelRanks(ya, yc, excluded, n)
    assert torch.equal(by_labels.counts(), labelled.sum(1))
    for valid, to_index in ((only_ex, lambda r: excluded_index(r, excluded, n)), (labelled, by_labels.index)):
        for i in range(valid.shape[0]):
            m = int(valid[i].sum())
            if m == 0:
                continue
            ranks = torch.zeros(valid.shape[0], m, dtype=torch.int64)
            ranks[i] = torch.arange(m)
            want = torch.nonzero(valid[i]).flatten()  # brute force: the r-th True of the row
            assert to_index(ranks)[i].tolist() == want.tolist()
            assert mask_index(ranks, valid)[i].tolist() == want.tolist()


def test_labels_without_exclusions_and_with_no_known_label() -> None:
    yc = torch.tensor([2, 0, 2, -1, 1, 2, 0])
    ya = torch.tensor([2, -1, 7, 0])
    by_labels = LabelRanks(ya, yc, None, 7)
    valid = ~same_label(ya, yc)
    assert by_labels.counts().tolist() == valid.sum(1).tolist() == [4, 7, 7, 5]
    ranks = torch.tensor([[0, 3], [0, 6], [1, 5], [2, 4]])
    assert by_labels.index(ranks).tolist() == [[1, 6], [0, 6], [1, 5], [3, 5]]
    unknown = LabelRanks(ya, torch.full((7,), -1), None, 7)
    assert unknown.counts().tolist() == [7, 7, 7, 7]


def test_subsample_mask_keeps_k_valid_entries_and_is_reproducible() -> None:
    g = torch.Generator().manual_seed(0)
    mask = torch.rand(30, 50, generator=g) < 0.6
    mask[:, :9] = True
    for k in (1, 5, 9):
        new = subsample_mask(mask, k, generator=torch.Generator().manual_seed(4))
        assert torch.equal(new.sum(1), torch.full((30,), k)) and not bool((new & ~mask).any())
        assert torch.equal(new, subsample_mask(mask, k, generator=torch.Generator().manual_seed(4)))
        assert not torch.equal(new, subsample_mask(mask, k, generator=torch.Generator().manual_seed(5)))


def _inclusion_z(counts: torch.Tensor, reps: int, p: torch.Tensor) -> float:
    return float(((counts - reps * p) / torch.sqrt(reps * p * (1 - p))).abs().max())


@pytest.mark.parametrize("n", [1000, 3])  # num_candidates as the regime switch: Floyd; keys (K² > 8N)
def test_inclusion_and_pair_frequencies_are_uniform(n: int) -> None:
    """Each valid candidate is kept with probability K/M_i, each pair with K(K−1)/(M(M−1))
    (binomial, 5σ), over many seeds; never an invalid one."""
    reps = 4000
    mask = torch.ones(3, 14, dtype=torch.bool)
    mask[0, [2, 9]] = False  # M = 12
    mask[1, :] = True  # M = 14
    mask[2, 7:] = False  # M = 7
    kk = 5
    singles = torch.zeros(3, 14, dtype=torch.float64)
    pairs = torch.zeros(14, 14, dtype=torch.float64)
    for seed in range(reps):
        rows = draw_ranks(seed, mask.sum(1), kk, n)
        new = index_mask(mask_index(rows, mask), 14)
        singles += new
        pairs += new[1].double()[:, None] * new[1].double()[None, :]
    assert float(singles[~mask].sum()) == 0.0
    m = mask.sum(1, keepdim=True).double()
    p = (kk / m).expand(3, 14)
    assert _inclusion_z(singles[mask], reps, p[mask]) < 5.0
    off = ~torch.eye(14, dtype=torch.bool)
    p2 = torch.full((14, 14), kk * (kk - 1) / (14 * 13), dtype=torch.float64)
    assert _inclusion_z(pairs[off], reps, p2[off]) < 5.0
    # rows draw independently: anchor 0 and 1 share no draw
    assert not torch.equal(singles[0], singles[1])


@pytest.mark.parametrize("tile", [1, 3, 8, 64])
@pytest.mark.parametrize("kind", ["exclusions", "labels", "explicit"])
def test_tiled_rule_blocks_equal_subsample_mask_for_every_tile(tile: int, kind: str) -> None:
    """The rule's blocks (a scatter of the drawn indices per tile) equal the materialised draw of the
    same seed on the same valid set, whatever the tile side."""
    b, n = 9, 18
    idx = torch.arange(n)
    excluded = torch.stack([idx, (idx + b) % n], dim=1)
    labels = torch.cat([torch.arange(b) % 4] * 2)
    labels[3] = labels[3 + b] = -1  # unknown: only the exclusions
    explicit = (
        torch.rand(n, n, generator=torch.Generator().manual_seed(2)) > 0.2 if kind == "explicit" else None
    )
    rule = TileMask(
        num_anchors=n,
        num_candidates=n,
        excluded=excluded,
        explicit=explicit,
        anchor_labels=labels if kind == "labels" else None,
        candidate_labels=labels if kind == "labels" else None,
        collision_free=kind == "labels",
    )
    base = rule.base_block(0, n, 0, n)
    k = int(base.sum(1).min()) - 1
    want = subsample_mask(base, k, seed=123)
    drawn = rule.with_subsample(123, k, tile)
    got = torch.cat(
        [
            torch.cat(
                [drawn.block(r0, min(n, r0 + tile), c0, min(n, c0 + tile)) for c0 in range(0, n, tile)], 1
            )
            for r0 in range(0, n, tile)
        ]
    )
    assert torch.equal(got, want)
    counts = sum(drawn.count_valid(0, n, c0, min(n, c0 + tile)) for c0 in range(0, n, tile))
    assert torch.equal(torch.as_tensor(counts), torch.full((n,), k))


def test_k_equal_to_every_valid_count_is_the_identity() -> None:
    mask = torch.ones(6, 6, dtype=torch.bool)
    mask[torch.arange(6), torch.arange(6)] = False
    assert subsample_mask(mask, 5, seed=1) is mask
    rule = TileMask(num_anchors=6, num_candidates=6, excluded=torch.arange(6)[:, None])
    assert rule.with_subsample(1, 5) is rule
    assert torch.equal(index_mask(rule.draw(1, 5, identity=True), 6), mask)  # type: ignore[arg-type]


def test_more_negatives_than_available_names_num_negatives() -> None:
    mask = torch.ones(4, 6, dtype=torch.bool)
    mask[2, :3] = False
    with pytest.raises(
        ValueError, match=r"num_negatives must be <= .*min_i N_i = 3 of 6 candidates.*got num_negatives=4"
    ):
        subsample_mask(mask, 4, seed=0)
    rule = TileMask(num_anchors=4, num_candidates=6, excluded=torch.full((4, 1), -1), explicit=mask)
    with pytest.raises(ValueError, match=r"min_i N_i = 3 of 6 .*num_negatives=4"):
        rule.with_subsample(0, 4)


def test_joint_probability_of_a_k_subset() -> None:
    """Every K-subset of M = 6 with K = 3 comes out with probability 1/C(6, 3) = 1/20 (χ²-free:
    5σ binomial per subset over 8000 seeds)."""
    reps, m, k = 8000, 6, 3
    freq: dict[tuple[int, ...], int] = {}
    for seed in range(0, reps, 100):
        rows = draw_ranks(seed, torch.full((100,), m), k, 10_000, row_offset=seed)
        for r in rows.tolist():
            freq[tuple(r)] = freq.get(tuple(r), 0) + 1
    assert len(freq) == math.comb(m, k)
    p = 1 / math.comb(m, k)
    sd = math.sqrt(reps * p * (1 - p))
    assert max(abs(c - reps * p) / sd for c in freq.values()) < 5.0
