"""Finding near repeats in bulk (:class:`steward.memory.bulk.RepeatIndex`): prefix and
positional filtering must find exactly what comparing every pair finds."""

from __future__ import annotations

import random
from collections import Counter

from steward.domain.audience import PRIVATE, PUBLIC
from steward.memory.book import NEAR_DUPLICATE
from steward.memory.bulk import RepeatIndex, terms_of
from steward.memory.retrieval import terms_overlap

WORDS = [f"w{n}" for n in range(60)]


def statements(rng: random.Random, count: int) -> list[str]:
    """Sentences of 1 to 25 words from a small vocabulary (so that many share words), a third
    of them an earlier one with a word added, dropped or swapped."""
    out: list[str] = []
    for _ in range(count):
        if out and rng.random() < 0.35:
            words = rng.choice(out).split()
            change = rng.choice(["add", "drop", "swap"])
            if change == "add" or len(words) < 2:
                words.append(rng.choice(WORDS))
            elif change == "drop":
                words.pop(rng.randrange(len(words)))
            else:
                words[rng.randrange(len(words))] = rng.choice(WORDS)
            rng.shuffle(words)
        else:
            words = rng.sample(WORDS, rng.randint(1, 25))
        out.append(" ".join(words))
    return out


def test_near_repeats_found_are_exactly_those_every_pair_compared_finds() -> None:
    rng = random.Random(5)
    texts = statements(rng, 700)
    audiences = [PRIVATE if rng.random() < 0.8 else PUBLIC for _ in texts]
    terms = [terms_of(t) for t in texts]
    index = RepeatIndex(
        near_duplicate=NEAR_DUPLICATE, rarity=Counter(t for ts in terms for t in ts)
    )
    found_some = 0
    for n, (text, audience, mine) in enumerate(zip(texts, audiences, terms, strict=True)):
        ordered = index.order(mine)
        key = index.same(text, audience, ordered)
        overlaps = [terms_overlap(mine, terms[k]) for k in range(n) if audiences[k] == audience]
        best = max((o for o in overlaps if o >= NEAR_DUPLICATE), default=None)
        if best is None:
            assert key is None
        else:
            assert key is not None
            assert terms_overlap(mine, terms[key[1]]) == best
            found_some += 1
        index.add(("new", n), text, audience, ordered, near=True)
    assert found_some > 100
