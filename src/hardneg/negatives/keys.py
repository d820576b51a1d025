"""Counter-based random bits: ``hash(seed, i, j)`` computed from the indices alone.

K-subsampling (:mod:`hardneg.negatives.draw`) draws each anchor's K negatives from random numbers
that are a pure function of ``(seed, anchor index, counter)`` — a splitmix64 hash (Steele, Lea,
Flood, OOPSLA 2014) of the three — so any row (or block) can be drawn on its own: the choice of
negatives does not depend on how the anchors are chunked or the matrix tiled, and every engine
draws exactly the same negatives.
"""

from __future__ import annotations

import torch
from torch import Tensor

__all__ = ["MAX_CANDIDATES", "RANDOM_BITS", "counter_bits", "counter_keys", "draw_seed"]

_INDEX_BITS = 24
MAX_CANDIDATES = 1 << _INDEX_BITS  # the low bits of a key hold the candidate index (unique keys)
RANDOM_BITS = 39  # random bits of counter_bits: RANDOM_BITS + _INDEX_BITS = 63 (int64 products)


def _signed(x: int) -> int:
    """A 64-bit constant as the int64 with the same bits (int64 multiplication wraps)."""
    return x - (1 << 64) if x >= 1 << 63 else x


_M1 = _signed(0xBF58476D1CE4E5B9)  # splitmix64's multipliers
_M2 = _signed(0x94D049BB133111EB)
_GOLDEN = _signed(0x9E3779B97F4A7C15)
_ROW = _signed(0x632BE59BD9B4E019)


def _shr(x: Tensor, k: int) -> Tensor:
    """Logical right shift of int64 (torch's ``>>`` is arithmetic)."""
    return (x >> k) & ((1 << (64 - k)) - 1)


def _mix(z: Tensor) -> Tensor:
    z = (z ^ _shr(z, 30)) * _M1
    z = (z ^ _shr(z, 27)) * _M2
    return z ^ _shr(z, 31)


def _mix_(z: Tensor, tmp: Tensor) -> Tensor:
    """:func:`_mix` in place, with ``tmp`` (same shape) as scratch: no allocation."""
    for shift, mult in ((30, _M1), (27, _M2), (31, None)):
        torch.bitwise_right_shift(z, shift, out=tmp)
        tmp.bitwise_and_((1 << (64 - shift)) - 1)
        z.bitwise_xor_(tmp)
        if mult is not None:
            z.mul_(mult)
    return z


_CHUNK = 1 << 17  # elements per cache-sized piece of the key matrix (two 1 MiB buffers)


def _hashed(seed: int, rows: Tensor, cols: Tensor, *, with_index: bool) -> Tensor:
    """``hash(seed, i, j) >> 25`` (39 bits) for rows × cols, with ``j`` in the low 24 bits when
    ``with_index``; cache-sized row blocks, in-place integer operations."""
    base = _mix(torch.tensor(seed, dtype=torch.int64, device=rows.device) * _GOLDEN + 1)
    r = _mix(rows.to(torch.int64) * _ROW + base)
    c64 = cols.to(torch.int64)
    col_term = c64 * _GOLDEN
    out = torch.empty(r.shape[0], c64.shape[0], dtype=torch.int64, device=rows.device)
    if out.numel() == 0:
        return out
    step = max(1, _CHUNK // max(1, c64.shape[0]))
    tmp = torch.empty(min(step, r.shape[0]), c64.shape[0], dtype=torch.int64, device=rows.device)
    for r0 in range(0, r.shape[0], step):
        r1 = min(r.shape[0], r0 + step)
        z = out[r0:r1]
        torch.bitwise_xor(r[r0:r1, None], col_term[None, :], out=z)
        t = tmp[: r1 - r0]
        _mix_(z, t)
        if with_index:
            torch.bitwise_right_shift(z, 64 - RANDOM_BITS, out=t)
            t.bitwise_and_((1 << RANDOM_BITS) - 1)
            torch.bitwise_left_shift(t, _INDEX_BITS, out=z)
            z.bitwise_or_(c64[None, :])
        else:
            z.bitwise_right_shift_(64 - RANDOM_BITS).bitwise_and_((1 << RANDOM_BITS) - 1)
    return out


def counter_bits(seed: int, rows: Tensor, cols: Tensor) -> Tensor:
    """``u_ij = hash(seed, i, j) >> 25``: (len(rows), len(cols)) int64, i.i.d.-uniform on [0, 2^39).

    The high 39 bits of splitmix64 (Steele, Lea, Flood, OOPSLA 2014) of ``(seed, i, j)``, the
    same bits :func:`counter_keys` puts above the candidate index. ``(u · m) >> 39`` is then a
    uniform integer in ``[0, m)`` up to a relative bias below ``m / 2^39`` (no modulo bias to speak
    of for ``m ≤ 2^24``), and the product stays below 2^63.

    Shapes: ``rows`` (r,) and ``cols`` (c,) int64 global indices → (r, c) int64.
    """
    return _hashed(seed, rows, cols, with_index=False)


def counter_keys(seed: int, rows: Tensor, cols: Tensor) -> Tensor:
    """Keys (len(rows), len(cols)) int64 ≥ 0, unique within a row, i.i.d.-uniform in their high bits.

    ``key_ij = (hash(seed, i, j) >> 25) << 24 | j``: 39 random bits above the candidate index,
    so no two candidates of a row tie (needs ``j < 2^24``).

    Computed in cache-sized row blocks with in-place integer operations (the same bits as the
    elementwise formula, about 15× faster than whole-matrix temporaries on a 2-core CPU).

    Shapes: ``rows`` (r,) and ``cols`` (c,) int64 global indices → (r, c) int64.
    """
    if cols.numel() and int(cols.max()) >= MAX_CANDIDATES:
        raise ValueError(f"counter_keys supports candidate indices < {MAX_CANDIDATES}, got {int(cols.max())}")
    return _hashed(seed, rows, cols, with_index=True)


def draw_seed(generator: torch.Generator | None = None, device: torch.device | str = "cpu") -> int:
    """One 62-bit seed from ``generator`` (torch's global generator when None)."""
    return int(torch.randint(0, 1 << 62, (), generator=generator, dtype=torch.int64, device=device))
