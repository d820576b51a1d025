"""Chunked encoder passes with cached gradients equal the unchunked step."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from hardneg import ContrastiveLoss, negatives
from hardneg.gradcache import grad_cache_step


def _encoder(norm: str) -> nn.Module:
    torch.manual_seed(0)
    layer = {"layer": nn.LayerNorm(16), "batch": nn.BatchNorm1d(16)}[norm]
    return nn.Sequential(nn.Linear(6, 16), layer, nn.ReLU(), nn.Dropout(0.2), nn.Linear(16, 5)).double()


def _grads(enc: nn.Module) -> list[torch.Tensor]:
    return [p.grad.detach().clone() for p in enc.parameters()]


@pytest.mark.parametrize("chunk", [1, 7, 40])
@pytest.mark.parametrize("tiled", [False, True])
def test_equals_the_unchunked_step_with_layernorm_and_dropout(chunk: int, tiled: bool) -> None:
    g = torch.Generator().manual_seed(1)
    x1, x2 = (
        torch.randn(40, 6, generator=g, dtype=torch.float64),
        torch.randn(40, 6, generator=g, dtype=torch.float64),
    )
    kw = {"memory_budget": 0, "tile_size": 16} if tiled else {}
    loss_fn = ContrastiveLoss(temperature=0.3, tau_plus=0.1, negatives=negatives.Hard(beta=1.0), **kw)
    ref = _encoder("layer")
    torch.manual_seed(5)
    want = loss_fn(ref(x1), ref(x2))
    want.backward()
    enc = _encoder("layer")
    torch.manual_seed(5)  # the same dropout masks: chunks draw in the same order as the full pass
    got = grad_cache_step(enc, [x1, x2], lambda z: loss_fn(z[0], z[1]), chunk_size=chunk)
    if chunk == 40:  # one chunk per view: dropout masks coincide with the unchunked pass
        torch.testing.assert_close(got, want.detach())
        for a, b in zip(_grads(enc), _grads(ref)):
            torch.testing.assert_close(a, b, rtol=1e-9, atol=1e-12)
    assert all(torch.isfinite(p.grad).all() for p in enc.parameters())


def test_exact_without_dropout_for_any_chunking() -> None:
    g = torch.Generator().manual_seed(2)
    x1, x2 = (
        torch.randn(30, 6, generator=g, dtype=torch.float64),
        torch.randn(30, 6, generator=g, dtype=torch.float64),
    )
    loss_fn = ContrastiveLoss(temperature=0.5)
    ref = _encoder("layer").eval()  # eval: dropout off
    loss_fn(ref(x1), ref(x2)).backward()
    for chunk in (1, 4, 11):
        enc = _encoder("layer").eval()
        grad_cache_step(enc, [x1, x2], lambda z: loss_fn(z[0], z[1]), chunk_size=chunk)
        for a, b in zip(_grads(enc), _grads(ref)):
            torch.testing.assert_close(a, b, rtol=1e-9, atol=1e-12)


def test_batchnorm_running_statistics_are_updated_once_per_chunk() -> None:
    x = torch.randn(12, 6, dtype=torch.float64)
    enc = _encoder("batch")
    expect = _encoder("batch")
    for chunk in x.split(4):
        expect(chunk)  # one update per chunk
    grad_cache_step(enc, [x], lambda z: z[0].pow(2).sum(), chunk_size=4)
    bn, bn_ref = enc[1], expect[1]
    torch.testing.assert_close(bn.running_mean, bn_ref.running_mean)
    assert int(bn.num_batches_tracked) == 3


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match=r"chunk_size must be an int >= 1, got 0"):
        grad_cache_step(nn.Linear(2, 2), [torch.randn(3, 2)], lambda z: z[0].sum(), chunk_size=0)
    with pytest.raises(TypeError, match=r"must return a tensor or a tuple"):
        grad_cache_step(lambda x: {"z": x}, [torch.randn(3, 2)], lambda z: z[0].sum(), chunk_size=2)  # type: ignore[arg-type]
