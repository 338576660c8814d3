"""Remembering many statements at once (``Service.remember_many``), on both backends: the rules
of one ``remember`` hold — repeats (stored, and earlier in the same call), slots in observed
order, forgotten sources, candidates from untrusted text — a bad item refuses the whole call,
the same import twice writes nothing new, and each new memory gets its vector."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from steward.domain.audience import Audience
from steward.domain.clock import SimulatedClock
from steward.domain.memory import MemoryKind, MemoryStatus, WriteOutcome
from steward.domain.memory_item import MemoryItem
from steward.errors import UsageError
from steward.service import Service
from steward.service.memory import MOST_IMPORTED
from steward.service.memory_items import parse_memory_items
from steward.store import Store
from steward.testing.embeddings import HashingEmbedder
from support.memory import everything

CREATED, DUPLICATE, FORGOTTEN = WriteOutcome.CREATED, WriteOutcome.DUPLICATE, WriteOutcome.FORGOTTEN
TEA = "Ada's favourite tea is a smoky lapsang souchong from Fujian province"


@pytest.fixture
async def svc(store: Store, clock: SimulatedClock) -> Service:
    return Service(store, clock)


@pytest.fixture
async def me(svc: Service) -> str:
    return (await svc.ensure_person()).id


def said(content: str, **fields: Any) -> MemoryItem:
    return MemoryItem(content=content, **fields)


async def test_repeats_of_stored_memories_and_of_earlier_items_write_nothing_new(
    svc: Service, me: str
) -> None:
    stored = await svc.remember(person_id=me, content="Ada prefers aisle seats on long flights")
    near_stored = await svc.remember(person_id=me, content=TEA)
    written = await svc.remember_many(
        person_id=me,
        import_name="chat",
        items=[
            said("ada prefers aisle seats on long flights.", ref="m1"),  # exact, stored
            said(f"{TEA}, strong", ref="m2"),  # near, stored
            said("Ada lives in Berlin", ref="m3"),
            said("Berlin: Ada lives in", ref="m4"),  # near, earlier in the call
            said("ada lives in berlin!", ref="m5"),  # exact, earlier in the call
            said("Ada lives in Berlin", audience=Audience.parse("public"), ref="m6"),
        ],
    )

    assert [w.outcome for w in written] == [
        DUPLICATE,
        DUPLICATE,
        CREATED,
        DUPLICATE,
        DUPLICATE,
        CREATED,  # the same words for another audience are another memory
    ]
    assert written[0].memory is not None
    assert stored.memory is not None
    assert written[0].memory.id == stored.memory.id
    assert written[1].memory is not None
    assert near_stored.memory is not None
    assert written[1].memory.id == near_stored.memory.id
    berlin = written[2].memory
    assert berlin is not None
    assert {w.memory.id for w in written[2:5] if w.memory} == {berlin.id}
    # a repeat cites its own source: forgetting any of them forgets the memory
    assert [s.key for s in berlin.sources] == ["import:chat/m3", "import:chat/m4", "import:chat/m5"]
    assert [s.key for s in written[0].memory.sources][1:] == ["import:chat/m1"]
    history = await svc.memory.history(stored.memory.id)
    assert [v.reason for v in history] == ["created", "also from import:chat/m1"]
    assert len(await svc.list_memories(person_id=me)) == 4


async def test_a_later_value_of_a_slot_supersedes_the_earlier_in_observed_order(
    svc: Service, me: str, clock: SimulatedClock
) -> None:
    now = clock.now()
    years = [now - timedelta(days=365 * n) for n in (4, 2, 3)]
    fact, slot = MemoryKind.FACT, "home_city"
    written = await svc.remember_many(
        person_id=me,
        import_name="notes",
        items=[
            said("Ada lives in Lisbon", kind=fact, slot=slot, observed_at=years[0]),
            said("Ada moved to Berlin", kind=fact, slot=slot, observed_at=years[1]),
            # older news than Berlin, told later: it sits between Lisbon and Berlin
            said("Ada moved to Madrid", kind=fact, slot=slot, observed_at=years[2]),
            # an exception never supersedes
            said("This week Ada is in Rome", kind=MemoryKind.EPISODE, slot="home_city"),
            # no times: the list's order decides
            said("Ada's seat: aisle", kind=MemoryKind.PREFERENCE, slot="seat"),
            said("Ada's seat: window", kind=MemoryKind.PREFERENCE, slot="seat"),
        ],
    )
    ids = [w.memory.id for w in written if w.memory is not None]
    assert len(ids) == 6
    lisbon, berlin, madrid, rome, aisle, window = await svc.store.memory.get_memories(ids)
    assert lisbon.superseded_by == madrid.id
    assert lisbon.valid_to == years[2]
    assert madrid.supersedes == lisbon.id
    assert madrid.superseded_by == berlin.id
    assert madrid.valid_to == years[1]
    assert berlin.supersedes == madrid.id
    assert berlin.valid_to is None
    assert rome.supersedes is None
    assert rome.superseded_by is None
    assert aisle.superseded_by == window.id
    assert window.supersedes == aisle.id
    found = await svc.search_memories(person_id=me, query="Lisbon Madrid Berlin", limit=10)
    assert {h.memory.content for h in found} == {"Ada moved to Berlin"}


async def test_a_forgotten_import_or_item_gives_nothing_again(svc: Service, me: str) -> None:
    items = [said("Ada's dentist is Dr Weiss", ref="a"), said("Ada's bank is in Hamburg", ref="b")]
    first = await svc.remember_many(person_id=me, import_name="mail", items=items)
    assert [w.outcome for w in first] == [CREATED, CREATED]

    one = await svc.forget_source("import:mail/a", person_id=me)
    assert one.purged == 1
    again = await svc.remember_many(person_id=me, import_name="mail", items=items)
    assert [w.outcome for w in again] == [FORGOTTEN, DUPLICATE]

    whole = await svc.forget_source("import:mail", person_id=me)
    assert whole.purged == 1
    assert await svc.list_memories(person_id=me) == []
    last = await svc.remember_many(
        person_id=me, import_name="mail", items=[*items, said("Ada's GP is Dr Ng", ref="c")]
    )
    assert [w.outcome for w in last] == [FORGOTTEN] * 3
    assert await svc.list_memories(person_id=me) == []


async def test_untrusted_items_are_candidates_a_trusted_repeat_does_not_promote_them(
    svc: Service, me: str
) -> None:
    written = await svc.remember_many(
        person_id=me,
        import_name="inbox",
        items=[
            said("Ada owes Bob 50 euros", trusted=False, ref="x"),
            said("Ada owes Bob 50 euros", ref="y"),
        ],
    )
    assert [w.outcome for w in written] == [CREATED, DUPLICATE]
    memory = written[0].memory
    assert memory is not None
    assert memory.status is MemoryStatus.CANDIDATE
    # text from others waits for the person, whoever repeats it
    assert [s.trusted for s in memory.sources] == [False, True]
    assert await svc.search_memories(person_id=me, query="owes Bob") == []


async def test_a_bad_item_refuses_the_whole_call_and_writes_nothing(
    svc: Service, me: str, clock: SimulatedClock
) -> None:
    await svc.remember(person_id=me, content="Ada likes tea")
    before = await everything(svc, me)
    good = said("Ada likes coffee too")
    bad: list[tuple[MemoryItem, str]] = [
        (said("   "), "item 1: a memory needs content"),
        (said("x" * 2001), "item 1: a memory is one statement"),
        (said("later", observed_at=clock.now() + timedelta(hours=1)), "item 1: observed_at"),
        (said("naive", observed_at=datetime(2024, 1, 1)), "item 1: observed_at needs a time"),
        (said("imp", importance=2.0), "item 1: importance must be between 0 and 1"),
        (
            said("valid", valid_from=clock.now(), valid_to=clock.now() - timedelta(days=1)),
            "item 1: valid_to must be after valid_from",
        ),
        (said("ref", ref="has space"), "item 1: bad source reference"),
    ]
    for item, message in bad:
        with pytest.raises(UsageError, match=message):
            await svc.remember_many(person_id=me, items=[good, item])
    with pytest.raises(UsageError, match="bad import name"):
        await svc.remember_many(person_id=me, import_name="a:b", items=[good])
    with pytest.raises(UsageError, match=f"at most {MOST_IMPORTED}"):
        await svc.remember_many(person_id=me, items=[good] * (MOST_IMPORTED + 1))
    assert await everything(svc, me) == before


async def test_importing_the_same_file_twice_writes_nothing_new(
    svc: Service, me: str, clock: SimulatedClock
) -> None:
    start = datetime(2024, 3, 1, 9, tzinfo=UTC)
    items = [
        said(f"On day {n} Ada walked {n} km by the river", observed_at=start + timedelta(days=n))
        for n in range(1, 40)
    ] + [
        said("Ada's manager is Joan", kind=MemoryKind.RELATIONSHIP, slot="manager"),
        said("Ada's manager is Priya", kind=MemoryKind.RELATIONSHIP, slot="manager"),
    ]
    first = await svc.remember_many(person_id=me, import_name="diary", items=items)
    assert {w.outcome for w in first} == {CREATED}
    before = await everything(svc, me)
    clock.advance(timedelta(days=1))
    second = await svc.remember_many(person_id=me, import_name="diary", items=items)
    assert {w.outcome for w in second} == {DUPLICATE}
    assert [w.memory.id for w in second if w.memory] == [w.memory.id for w in first if w.memory]
    assert await everything(svc, me) == before


async def test_each_new_memory_gets_its_vector(store: Store, clock: SimulatedClock) -> None:
    embedder = HashingEmbedder()
    svc = Service(store, clock, embedder=embedder)
    me = (await svc.ensure_person()).id
    written = await svc.remember_many(
        person_id=me,
        items=[said(f"Ada's note number {n} is about {word}") for n, word in enumerate("abcdef")]
        + [said("Ada's note number 0 is about a")],
    )
    created = {w.memory.id for w in written if w.outcome is CREATED and w.memory}
    assert len(created) == 6
    delta = await store.memory_search.memory_vectors_since(
        person_id=me, model=embedder.name, after_seq=0
    )
    assert sorted(memory_id for _, memory_id, _ in delta.rows) == sorted(created)
    hits = await svc.search_memories(person_id=me, query="note about c", mode="semantic")
    assert hits
    assert hits[0].memory.content == "Ada's note number 2 is about c"


@pytest.mark.parametrize(
    ("line", "said_back"),
    [
        ('{"content": ""}', "line 1: a memory needs content"),
        ('{"kind": "fact"}', "line 1: a memory needs content"),
        ('{"content": "x", "colour": "red"}', "line 1: “colour” is not a field of a statement"),
        ('{"content": "x", "importance": 3}', "line 1: importance is a number from 0 to 1"),
        ('{"content": "x", "kind": "blob"}', "line 1: kind is one of 'preference'"),
        (
            '{"content": "x", "observed_at": "2026-05-01T09:00"}',
            "line 1: observed_at needs a time zone",
        ),
        ('{"content": "x", "valid_to": "in May"}', "line 1: valid_to is not a date and time"),
        ('{"content": "' + "x" * 2001 + '"}', "line 1: content is longer than 2000 characters"),
        (
            '{"content": "x", "subjects": ' + json.dumps(["a"] * 51) + "}",
            "subjects has more than 50",
        ),
        ('{"content": "x"}\n[1]', "line 2: a statement is a JSON object"),
        ('{"content": "x"}\n{"content": ', "line 2: not a JSON object"),
    ],
)
def test_a_bad_line_is_named_and_said_in_plain_words(line: str, said_back: str) -> None:
    with pytest.raises(UsageError) as refused:
        parse_memory_items(line)
    assert said_back in str(refused.value)
    # pydantic's own wording stays out of what the person reads
    assert "Field required" not in str(refused.value)
    assert "should be" not in str(refused.value)
