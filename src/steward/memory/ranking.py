"""Ordering what the searches found: which lists take part (a word search whose matches are
all alike says nothing), fusing scored lists into one relevance, and the tie-breakers
(importance, recency) that may order near-equals but never a weaker match over a clearly
stronger one. Pure functions over what the searches return."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from datetime import datetime

from steward.domain.memory import Recallable

HEAD = 5
"""The best of each list that fusion keeps in front of everything else: a strong match only one
search finds (an exact name, a rare word; a paraphrase) must not sink below the many middling
results both searches share. With two lists, the top 10 holds the top 5 of each."""
TIE_MARGIN = 0.02
"""How much importance and recency together may lift a memory's relevance (2 %): only matches
within that much of each other change places because of them."""
RECENCY_HALF_LIFE_DAYS = 180.0
FLAT_DEPTH = 10
"""The match a word search's best is compared with: the last of a page of results."""
FLAT_SHARE = 0.7
"""How close to its best a word search's :data:`FLAT_DEPTH`-th match may score before the list
counts as flat (see :func:`incidental`; chosen on both evaluations, docs/benchmarks.md)."""


def incidental(found: Sequence[Recallable], *, words: int) -> bool:
    """Whether a word search for ``words`` search terms found matches (best first) that are
    all alike: its :data:`FLAT_DEPTH`-th scores at least :data:`FLAT_SHARE` of its best. Then
    the words the question shares with memory are common ones ("stay", "asked for", a city), a
    page of memories match them about equally well, and which of those come first says nothing
    about the question; in a hybrid search such a list would only push the meaning's own good
    matches out of the top. A rare word or name stands out (its matches score well above the
    rest), and fewer matches than :data:`FLAT_DEPTH` are rare words themselves: neither is
    incidental. Nor is a search for one word: its matches are alike by nature, and holding that
    word (a name, say) is what the person asked for."""
    if words < 2 or len(found) < FLAT_DEPTH:
        return False
    best = found[0].score
    return found[FLAT_DEPTH - 1].score >= FLAT_SHARE * best


def fuse(
    ranked: Mapping[str, Sequence[Recallable]],
    weights: Mapping[str, float],
    priors: Mapping[str, float],
) -> tuple[dict[str, float], dict[str, int]]:
    """The relevance of every id in ``ranked`` (lists best first, named as in ``weights``):
    the sum over the lists of its weighted score there relative to the list's best (bm25 or
    cosine similarity; a match one search finds keeps its strength); and the ids at the head
    of a full-weight list, with their best rank there once ties in it are broken by
    ``priors`` (see :func:`tie_broken`)."""
    relevance: dict[str, float] = {}
    heads: dict[str, int] = {}
    for name, found in ranked.items():
        weight = weights.get(name, 1.0)
        top = max((c.score for c in found), default=0.0)
        # a list without scores counts by rank alone
        share = {
            c.id: max(0.0, c.score) / top if top > 0 else 1.0 / rank
            for rank, c in enumerate(found, start=1)
        }
        for memory_id, value in share.items():
            relevance[memory_id] = relevance.get(memory_id, 0.0) + weight * value
        if weight >= 1.0:
            best = sorted(share, key=lambda i: -tie_broken(share[i], priors.get(i, 0.0)))
            for rank, memory_id in enumerate(best[:HEAD], start=1):
                heads[memory_id] = min(rank, heads.get(memory_id, rank))
    return relevance, heads


def prior(memory: Recallable, at: datetime) -> float:
    """What makes one of two equally relevant memories worth more, 0 to 1: its importance and
    having been seen lately, in equal parts."""
    age_days = max(0.0, (at - memory.observed_at).total_seconds() / 86400)
    recency = math.pow(0.5, age_days / RECENCY_HALF_LIFE_DAYS)
    return (min(1.0, max(0.0, memory.importance)) + recency) / 2


def tie_broken(relevance: float, prior_value: float) -> float:
    """``relevance`` lifted by at most :data:`TIE_MARGIN` of itself: a memory more than that
    much more relevant than another still ranks above it, whatever their priors."""
    return relevance * (1.0 + TIE_MARGIN * prior_value)


def ordered(scores: Mapping[str, float], heads: Mapping[str, int]) -> list[str]:
    """Ids best first: the heads of the lists, taken rank by rank (the firsts of every list,
    then the seconds, ...: the top ``n * HEAD`` holds the top ``HEAD`` of each of ``n``
    lists), then the rest; by score within (ties by id)."""
    last = HEAD + 1
    return sorted(scores, key=lambda i: (heads.get(i, last), -scores[i], i))
