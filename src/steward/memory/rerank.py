"""Rerankers: a second look at the fused top results of a search, scoring each against the
query together (a cross-encoder) rather than apart. Optional; none configured means the fused
order stands."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol


class Reranker(Protocol):
    name: str
    """Identifies the model."""

    async def score(self, query: str, texts: Sequence[str]) -> list[float]:
        """How well each text answers ``query``, higher is better (one score per text, in
        order; only their order matters)."""
        ...
