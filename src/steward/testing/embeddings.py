"""A deterministic embedder for tests and benchmarks (no model, no network).

Words are lower-cased, reduced to a crude stem and, through an optional table of synonyms,
to a concept; each concept is hashed to a few dimensions. Texts sharing concepts are close;
with a synonym table ("flat" -> "apartment"), texts that share no word can be close too, which
is what a test of semantic recall needs. It is not a language model.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence

import numpy as np

from steward.memory.embedding import Vectors, unit

_WORD = re.compile(r"[a-z0-9]+")


def _stem(word: str) -> str:
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


class HashingEmbedder:
    """Bag of concepts, hashed into ``dim`` dimensions."""

    def __init__(
        self, *, dim: int = 256, synonyms: Mapping[str, str] | None = None, name: str = "hash"
    ) -> None:
        self.dim = dim
        self.name = f"{name}:{dim}"
        self._synonyms = {_stem(k): _stem(v) for k, v in (synonyms or {}).items()}

    def vector(self, text: str) -> Vectors:
        row = np.zeros(self.dim, dtype=np.float32)
        for word in _WORD.findall(text.lower()):
            concept = self._synonyms.get(_stem(word), _stem(word))
            digest = hashlib.blake2b(concept.encode(), digest_size=8).digest()
            for i in range(0, 8, 2):
                row[int.from_bytes(digest[i : i + 2], "little") % self.dim] += 1.0
        scaled: Vectors = unit(row)[0]
        return scaled

    async def embed(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self.vector(t) for t in texts])
