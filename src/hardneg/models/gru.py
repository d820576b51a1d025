"""A GRU sentence encoder (Logeswaran & Lee, ICLR 2018, §3; Arora et al., ICML 2019, App. D.2).

Word embeddings, then a (optionally bidirectional) GRU (Cho et al., EMNLP 2014) over the sentence;
the representation is the final hidden state (both directions concatenated when bidirectional),
as in quick-thoughts. Padding (id 0) is skipped with a packed sequence, so a sentence's encoding
does not depend on how much padding its batch has.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

__all__ = ["GRUEncoder"]


class GRUEncoder(nn.Module):
    """``(B, L)`` int64 token ids (0 = padding, at least one token per row) → ``(B, hidden · dirs)``.

    >>> enc = GRUEncoder(vocab_size=10, embedding_dim=4, hidden_dim=3)
    >>> x = torch.tensor([[2, 3, 0], [5, 0, 0]])
    >>> tuple(enc(x).shape), bool(torch.allclose(enc(x)[1], enc(x[1:, :1])[0]))
    ((2, 3), True)
    """

    def __init__(
        self, *, vocab_size: int, embedding_dim: int = 100, hidden_dim: int = 100, bidirectional: bool = False
    ) -> None:
        super().__init__()
        for name, value in (
            ("vocab_size", vocab_size),
            ("embedding_dim", embedding_dim),
            ("hidden_dim", hidden_dim),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be an int >= 1, got {value!r}")
        self.embedding = nn.Embedding(vocab_size, embedding_dim, padding_idx=0)
        self.gru = nn.GRU(embedding_dim, hidden_dim, batch_first=True, bidirectional=bidirectional)
        self.feature_dim = hidden_dim * (2 if bidirectional else 1)

    def forward(self, tokens: Tensor) -> Tensor:
        if tokens.dim() != 2 or tokens.dtype != torch.long:
            raise ValueError(
                f"tokens must be a (B, L) int64 tensor, got {tokens.dtype} of shape {tuple(tokens.shape)}"
            )
        lengths = (tokens != 0).sum(dim=1)
        if bool((lengths == 0).any()):
            raise ValueError(
                f"every sentence needs a token; row {int((lengths == 0).nonzero()[0])} is all padding"
            )
        packed = nn.utils.rnn.pack_padded_sequence(
            self.embedding(tokens), lengths.cpu(), batch_first=True, enforce_sorted=False
        )
        _, h = self.gru(packed)  # (dirs, B, hidden), in the batch's original order
        return h.transpose(0, 1).reshape(tokens.shape[0], -1)
