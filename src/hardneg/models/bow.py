"""The bag-of-words sentence encoder of Ash et al. (AISTATS 2022, §4).

``f(x) = Σ_w (count_w(x) / len(x)) · E_w``: the mean of the word embeddings of the sentence's
tokens (padding excluded), an ``nn.EmbeddingBag`` in ``mean`` mode with random ``N(0, 1)``
initialisation. The contrastive loss sees ``f(x)`` itself (no projection head), as in their NCE.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

__all__ = ["BagOfWords", "bag_of_words_encoder"]


class BagOfWords(nn.Module):
    """``(B, L)`` int64 token ids (0 = padding) → ``(B, dim)`` mean word embeddings.

    >>> enc = BagOfWords(vocab_size=10, dim=4)
    >>> x = torch.tensor([[2, 3, 0], [5, 0, 0]])
    >>> bool(torch.allclose(enc(x)[1], enc.embedding.weight[5]))
    True
    """

    def __init__(self, *, vocab_size: int, dim: int = 100) -> None:
        super().__init__()
        for name, value in (("vocab_size", vocab_size), ("dim", dim)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 2 - (name == "dim"):
                raise ValueError(f"{name} must be an int >= {2 - (name == 'dim')}, got {value!r}")
        self.embedding = nn.EmbeddingBag(vocab_size, dim, mode="mean", padding_idx=0)
        self.feature_dim = dim

    def forward(self, tokens: Tensor) -> Tensor:
        if tokens.dim() != 2 or tokens.dtype != torch.long:
            got = f"{tokens.dtype} of shape {tuple(tokens.shape)}"
            raise ValueError(f"tokens must be a (B, L) int64 tensor, got {got}")
        return self.embedding(tokens)


def bag_of_words_encoder(*, vocab_size: int, dim: int = 100) -> nn.Module:
    """:class:`~hardneg.models.Encoder` with a :class:`BagOfWords` backbone and no head (``z = h``)."""
    from hardneg.models import Encoder

    return Encoder(backbone=BagOfWords(vocab_size=vocab_size, dim=dim), head=nn.Identity())
