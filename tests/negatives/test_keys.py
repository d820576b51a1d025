"""Counter-based keys: a block of the key matrix does not depend on the tiling."""

from __future__ import annotations

import pytest
import torch

from hardneg.negatives import subsample_mask
from hardneg.negatives.keys import MAX_CANDIDATES, counter_keys


def test_blocks_equal_the_full_matrix_and_keys_are_unique_per_row() -> None:
    full = counter_keys(11, torch.arange(64), torch.arange(96))
    assert bool((full >= 0).all())
    for r0, r1, c0, c1 in ((0, 7, 0, 96), (13, 40, 17, 63), (63, 64, 95, 96)):
        block = counter_keys(11, torch.arange(r0, r1), torch.arange(c0, c1))
        assert torch.equal(block, full[r0:r1, c0:c1])
    assert all(len(set(row.tolist())) == 96 for row in full)
    assert not torch.equal(full, counter_keys(12, torch.arange(64), torch.arange(96)))


def test_high_bits_are_uniform() -> None:
    u = (counter_keys(3, torch.arange(400), torch.arange(500)) >> 24).double() / 2**39
    assert abs(float(u.mean()) - 0.5) < 0.005 and abs(float(u.std()) - (1 / 12) ** 0.5) < 0.005
    # rank of a fixed column within its row is uniform: each column is the row max ~1/500 of the time
    top = counter_keys(3, torch.arange(20000), torch.arange(4)).argmax(dim=1)
    freq = torch.bincount(top, minlength=4).double() / 20000
    assert bool(((freq - 0.25).abs() < 0.015).all())


def test_subsample_with_a_seed_is_a_function_of_the_seed() -> None:
    mask = torch.rand(10, 30, generator=torch.Generator().manual_seed(0)) > 0.2
    a = subsample_mask(mask, 5, seed=42)
    assert torch.equal(a, subsample_mask(mask, 5, seed=42))
    assert bool((a.sum(1) == 5).all()) and not bool((a & ~mask).any())


def test_too_many_candidates_is_refused() -> None:
    with pytest.raises(ValueError, match=r"candidate indices < 16777216"):
        counter_keys(0, torch.arange(2), torch.tensor([MAX_CANDIDATES]))


_MASK = (1 << 64) - 1


def _splitmix_key(seed: int, i: int, j: int) -> int:
    """splitmix64 (Steele, Lea, Flood, OOPSLA 2014) on Python ints, unsigned 64-bit arithmetic."""

    def mix(z: int) -> int:
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
        return z ^ (z >> 31)

    golden = 0x9E3779B97F4A7C15
    base = mix((seed * golden + 1) & _MASK)
    row = mix((i * 0x632BE59BD9B4E019 + base) & _MASK)
    z = mix(row ^ ((j * golden) & _MASK))
    return ((z >> 25) << 24) | j


@pytest.mark.parametrize(("rows", "cols"), [(41, 5000), (2, 140_000), (300, 1)])
def test_keys_equal_unsigned_splitmix64_across_chunk_boundaries(rows: int, cols: int) -> None:
    """Entries on both sides of every internal chunk boundary equal the plain-integer formula."""
    seed = (1 << 62) - 7
    keys = counter_keys(seed, torch.arange(rows), torch.arange(cols))
    g = torch.Generator().manual_seed(0)
    ii = torch.randint(rows, (200,), generator=g).tolist()
    jj = torch.randint(cols, (200,), generator=g).tolist()
    picks = [(0, 0), (rows - 1, cols - 1), *zip(ii, jj)]
    for i, j in picks:
        assert int(keys[i, j]) == _splitmix_key(seed, i, j), (i, j)
