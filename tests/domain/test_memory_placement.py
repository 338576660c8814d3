"""Placing values in a slot's history: whatever order the values of a slot arrive in, they end
up as one chain, each ended where the next begins, and only the latest one current."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from steward.domain.memory import (
    Memory,
    MemoryKind,
    Source,
    SourceKind,
    closed_by,
    place_in_slot,
)

T0 = datetime(2024, 1, 1, tzinfo=UTC)


def value(i: int, start_day: int, *, kind: MemoryKind = MemoryKind.FACT) -> Memory:
    start = T0 + timedelta(days=start_day)
    return Memory(
        id=f"mem_{i}",
        person_id="per_a",
        kind=kind,
        content=f"value {i}",
        sources=(Source(kind=SourceKind.PERSON, ref="me", trusted=True),),
        slot="home_city",
        observed_at=start,
        valid_from=start,
        created_at=start,
        updated_at=start,
    )


def write_all(values: list[Memory]) -> dict[str, Memory]:
    """What the store does for each write, one after the other."""
    stored: dict[str, Memory] = {}
    for memory in values:
        placement = place_in_slot(memory, list(stored.values()))
        placed = placement.memory
        stored[placed.id] = placed
        for old_id in placement.supersedes:
            stored[old_id] = closed_by(stored[old_id], placed, at=placed.updated_at)
        if placed.superseded_by is not None:
            stored[placed.superseded_by] = replace(
                stored[placed.superseded_by], supersedes=placed.id
            )
    return stored


@given(st.lists(st.integers(0, 2000), min_size=1, max_size=8, unique=True), st.randoms())
def test_any_arrival_order_gives_one_chain(days: list[int], rng: object) -> None:
    values = [value(i, day) for i, day in enumerate(days)]
    arrival = list(values)
    rng.shuffle(arrival)  # type: ignore[attr-defined]

    stored = write_all(arrival)

    chain = sorted(stored.values(), key=lambda m: m.start)
    assert [m.superseded_by for m in chain] == [m.id for m in chain[1:]] + [None]
    assert [m.valid_to for m in chain] == [m.start for m in chain[1:]] + [None]
    assert [m.supersedes for m in chain] == [None] + [m.id for m in chain[:-1]]


def test_an_episode_takes_no_place_in_the_slot() -> None:
    standing = value(1, 0)
    exception = value(2, 10, kind=MemoryKind.EPISODE)
    placement = place_in_slot(exception, [standing])
    assert placement == place_in_slot(exception, [])
    assert placement.supersedes == ()


def test_a_value_with_no_date_starts_when_it_was_said_once_it_replaces_one() -> None:
    old = value(1, 0)
    new = replace(value(2, 30), valid_from=None)
    placement = place_in_slot(new, [old])
    assert placement.supersedes == ("mem_1",)
    assert placement.memory.valid_from == new.observed_at
    assert place_in_slot(replace(new, id="mem_3"), []).memory.valid_from is None
