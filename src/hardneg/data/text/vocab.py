"""A word vocabulary with a minimum count and an UNK token, deterministic and saved as JSON.

Ash et al. (AISTATS 2022, §4) map tokens seen fewer than 50 times in the training sentences to
UNK; ``min_count`` is that threshold. Index 0 is padding (``<pad>``), 1 is ``<unk>``; the other
tokens follow by decreasing count, ties broken alphabetically, so the same sentences always give
the same ids.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path

from hardneg._io import atomic_write_text

__all__ = ["PAD", "UNK", "Vocabulary"]

PAD, UNK = "<pad>", "<unk>"
_FORMAT = "hardneg-vocabulary-1"


class Vocabulary:
    """Token ↔ id. Build with :meth:`build`; ``encode`` maps unknown tokens to ``unk_id``.

    >>> v = Vocabulary.build([["a", "b", "a"], ["c", "a", "b"]], min_count=2)
    >>> v.tokens, v.encode(["a", "c", "b"])
    (['<pad>', '<unk>', 'a', 'b'], [2, 1, 3])
    """

    pad_id = 0
    unk_id = 1

    def __init__(self, tokens: Sequence[str], *, min_count: int = 1) -> None:
        tokens = list(tokens)
        if tokens[:2] != [PAD, UNK]:
            raise ValueError(f"tokens must start with {[PAD, UNK]}, got {tokens[:2]}")
        if len(set(tokens)) != len(tokens):
            raise ValueError("tokens must not repeat")
        self.tokens = tokens
        self.min_count = int(min_count)
        self._index = {t: i for i, t in enumerate(tokens)}

    @classmethod
    def build(
        cls, sentences: Iterable[Sequence[str]], *, min_count: int = 1, max_size: int | None = None
    ) -> Vocabulary:
        """The tokens of ``sentences`` seen at least ``min_count`` times (at most ``max_size`` of them)."""
        if isinstance(min_count, bool) or not isinstance(min_count, int) or min_count < 1:
            raise ValueError(f"min_count must be an int >= 1, got {min_count!r}")
        bad_size = isinstance(max_size, bool) or not isinstance(max_size, int) or max_size < 1
        if max_size is not None and bad_size:
            raise ValueError(f"max_size must be an int >= 1 or None, got {max_size!r}")
        counts: Counter[str] = Counter()
        for tokens in sentences:
            counts.update(tokens)
        for special in (PAD, UNK):
            counts.pop(special, None)
        kept = sorted((t for t, c in counts.items() if c >= min_count), key=lambda t: (-counts[t], t))
        if max_size is not None:
            kept = kept[:max_size]
        return cls([PAD, UNK, *kept], min_count=min_count)

    def __len__(self) -> int:
        return len(self.tokens)

    def __contains__(self, token: object) -> bool:
        return token in self._index

    def encode(self, tokens: Sequence[str]) -> list[int]:
        """Ids of ``tokens`` (``unk_id`` for tokens not in the vocabulary)."""
        get = self._index.get
        return [get(t, self.unk_id) for t in tokens]

    def decode(self, ids: Sequence[int]) -> list[str]:
        """Tokens of ``ids``; raises ``ValueError`` for an id outside ``[0, len(self))``."""
        out = []
        for i in ids:
            if not 0 <= int(i) < len(self.tokens):
                raise ValueError(f"id must be in [0, {len(self.tokens)}), got {i}")
            out.append(self.tokens[int(i)])
        return out

    def save(self, path: str | Path) -> Path:
        """Write the vocabulary as JSON, atomically (a reader never sees half a file)."""
        payload = {"format": _FORMAT, "min_count": self.min_count, "tokens": self.tokens}
        return atomic_write_text(Path(path), json.dumps(payload, ensure_ascii=False) + "\n")

    @classmethod
    def load(cls, path: str | Path) -> Vocabulary:
        """Read a vocabulary written by :meth:`save`; a damaged or foreign file is a ``ValueError``
        naming it."""
        path = Path(path)
        try:
            payload = json.loads(path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as err:
            raise ValueError(f"{path} is not a hardneg vocabulary (unreadable JSON: {err})") from None
        if not isinstance(payload, dict) or payload.get("format") != _FORMAT or not isinstance(
            payload.get("tokens"), list
        ):
            raise ValueError(f"{path} is not a hardneg vocabulary (expected format {_FORMAT!r})")
        return cls([str(t) for t in payload["tokens"]], min_count=int(payload.get("min_count", 1)))
