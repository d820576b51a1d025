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


class _DictEncoder(nn.Module):
    """A tokenizer-style input: ``{"ids": (B, 6), "mask": (B, 6), "scale": 0-dim}`` → (B, 5)."""

    def __init__(self) -> None:
        super().__init__()
        self.net = _encoder("layer").eval()

    def forward(self, batch: dict[str, object]) -> torch.Tensor:
        x = batch["ids"] * batch["mask"] * batch["scale"]  # type: ignore[operator]
        return self.net(x)


def test_dict_inputs_equal_the_unchunked_step() -> None:
    g = torch.Generator().manual_seed(4)
    views = [
        {
            "ids": torch.randn(10, 6, generator=g, dtype=torch.float64),
            "mask": (torch.rand(10, 6, generator=g) > 0.2).double(),
            "scale": torch.tensor(2.0, dtype=torch.float64),
        }
        for _ in range(2)
    ]
    loss_fn = ContrastiveLoss(temperature=0.5)
    ref = _DictEncoder()
    want = loss_fn(ref(views[0]), ref(views[1]))
    want.backward()
    enc = _DictEncoder()
    got = grad_cache_step(enc, views, lambda z: loss_fn(z[0], z[1]), chunk_size=3)
    torch.testing.assert_close(got, want.detach(), rtol=1e-12, atol=1e-12)
    for a, b in zip(_grads(enc), _grads(ref)):
        torch.testing.assert_close(a, b, rtol=1e-9, atol=1e-12)


def test_chunk_batch_keeps_the_structure() -> None:
    from collections import namedtuple

    from hardneg.gradcache import batch_size, chunk_batch

    Pair = namedtuple("Pair", ["a", "b"])
    x = {"t": (torch.arange(6), [torch.arange(12).view(6, 2)]), "p": Pair(torch.arange(6), "text"), "s": 3}
    part = chunk_batch(x, 2, 4)
    assert part["t"][0].tolist() == [2, 3] and part["t"][1][0].tolist() == [[4, 5], [6, 7]]
    assert isinstance(part["t"], tuple) and isinstance(part["p"], Pair) and part["p"].b == "text"
    assert part["s"] == 3 and batch_size(x) == 6
    with pytest.raises(ValueError, match=r"inputs\[1\] must hold tensors with one batch size.*\[3, 4\]"):
        grad_cache_step(nn.Identity(), [torch.randn(3, 2), {"a": torch.randn(3, 2), "b": torch.randn(4, 2)}],
                        lambda z: z[0].sum(), chunk_size=2)
    with pytest.raises(ValueError, match=r"no tensor with a batch dimension"):
        batch_size({"a": "text"})


@pytest.mark.parametrize(
    "device",
    ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA"))],
)
def test_recompute_replays_the_random_state_of_the_first_pass(device: str) -> None:
    """Dropout: every recomputed chunk equals the chunk the loss saw (the same mask, on the CPU or
    on a CUDA device), and the random state after the step is the one after the first pass."""
    torch.manual_seed(0)
    enc = nn.Sequential(nn.Linear(6, 16), nn.Dropout(0.5), nn.Linear(16, 5)).double().to(device)
    x = torch.randn(2, 11, 6, dtype=torch.float64, device=device)
    seen: list[torch.Tensor] = []
    recomputed: list[tuple[torch.Tensor, bool]] = []

    def loss_fn(z: list[torch.Tensor]) -> torch.Tensor:
        seen.extend(t.detach().clone() for t in z)
        return ContrastiveLoss(temperature=0.5)(z[0], z[1])

    def backward(z: torch.Tensor, grad: torch.Tensor, last: bool) -> None:
        recomputed.append((z.detach().clone(), last))
        z.backward(grad)

    grad_cache_step(enc, [x[0], x[1]], loss_fn, chunk_size=4, backward=backward)
    assert [last for _, last in recomputed] == [False] * 5 + [True]  # 3 + 3 chunks, the last synchronises
    again = torch.cat([z for z, _ in recomputed])
    torch.testing.assert_close(again, torch.cat(seen), rtol=0, atol=0)
    assert not torch.equal(seen[0][:4], enc(x[0][:4]).detach())  # dropout does draw
