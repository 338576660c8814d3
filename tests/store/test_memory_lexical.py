"""Lexical search in any language, on both backends: memories in Chinese, Japanese, Korean and
Thai are found by the words in them, mixed with English in one memory or one query; English
keeps its stemming; a person's words are chosen by that person's own memories."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from datetime import timedelta

import pytest
from sqlalchemy import text

from steward.domain.audience import PRIVATE, PUBLIC, Audience
from steward.domain.clock import SimulatedClock
from steward.domain.lexicon import bigrams, index_text, terms
from steward.domain.memory import MemoryKind, WriteOutcome
from steward.memory.book import MemoryBook
from steward.store import Store, memory_search, migrate
from steward.store.memory_search import search_terms
from support.memory import said_in

Found = Callable[..., Awaitable[list[str]]]
"""``found(person, query, audience=, limit=)``: the contents the lexical search returns."""

SEATS = "我喜欢靠过道的座位，不喜欢红眼航班"  # noqa: RUF001 (a Chinese comma, as written)
MEETING = "周四和Dana开会讨论预算"
JAPANESE = "来週の会議は東京で行います"
KOREAN = "다음 주 회의는 서울에서 합니다"
THAI = "ฉันชอบที่นั่งริมทางเดิน"


@pytest.fixture
async def person(store: Store, clock: SimulatedClock) -> str:
    return (await store.persons.create_person(name="ada", now=clock.now())).id


@pytest.fixture
def book(store: Store, clock: SimulatedClock) -> MemoryBook:
    return MemoryBook(store, clock)


@pytest.fixture
def found(store: Store, clock: SimulatedClock) -> Found:
    async def search(
        person: str, query: str, *, audience: Audience = PRIVATE, limit: int = 50
    ) -> list[str]:
        hits = await store.memory_search.search_memories_text(
            person_id=person, query=query, audience=audience, at=clock.now(), limit=limit
        )
        by_id = {m.id: m.content for m in await store.memory.get_memories([h.id for h in hits])}
        return [by_id[h.id] for h in hits]

    return search


async def remember(
    book: MemoryBook,
    person: str,
    *contents: str,
    audience: Audience = PRIVATE,
    subjects: Sequence[str] = (),
) -> list[str]:
    ids = []
    for i, content in enumerate(contents):
        assert isinstance(book.clock, SimulatedClock)
        book.clock.advance(timedelta(seconds=1))  # newest first is well defined
        written = await book.write(
            person_id=person,
            content=content,
            kind=MemoryKind.FACT,
            source=said_in(f"tsk_{i}"),
            actor="person",
            audience=audience,
            subjects=subjects,
        )
        assert written.memory is not None
        ids.append(written.memory.id)
    return ids


def test_unspaced_runs_become_bigrams_and_the_rest_stays() -> None:
    assert bigrams("座位") == ["座位"]
    assert bigrams("猫") == ["猫"]
    assert bigrams("红眼航班") == ["红眼", "眼航", "航班"]
    assert index_text("周四和Dana开会") == " 周四 四和 Dana 开会 "
    assert index_text("Running late, again.") == "Running late, again."
    assert terms("周四和Dana开会, running!") == ["周四", "四和", "dana", "开会", "running"]
    # Thai vowel and tone marks are left out: SQLite's tokenizer would split a pair at them
    assert terms("ที่นั่ง") == ["ทน", "นง"]
    assert search_terms("the meeting on 周四") == ["meeting", "周四"]


async def test_chinese_is_found_by_its_words_and_not_by_others(
    book: MemoryBook, person: str, found: Found
) -> None:
    await remember(book, person, SEATS, "Prefers window seats on short flights")
    assert await found(person, "座位") == [SEATS]
    assert await found(person, "红眼航班") == [SEATS]
    assert await found(person, "过道") == [SEATS]
    assert await found(person, "火车") == []  # train: not in it
    assert await found(person, "座椅") == []  # shares a character, not a word


async def test_a_longer_word_ranks_the_memory_holding_all_of_it_first(
    book: MemoryBook, person: str, found: Found
) -> None:
    await remember(book, person, "明天的航班改到下午", SEATS)
    hits = await found(person, "红眼航班")
    assert hits == [SEATS, "明天的航班改到下午"]


async def test_japanese_korean_and_thai(book: MemoryBook, person: str, found: Found) -> None:
    await remember(book, person, JAPANESE, KOREAN, THAI)
    assert await found(person, "会議") == [JAPANESE]
    assert await found(person, "東京") == [JAPANESE]
    # a Korean word with a particle attached (회의는) is still found by the word alone
    assert await found(person, "회의") == [KOREAN]
    assert await found(person, "서울") == [KOREAN]
    assert await found(person, "ที่นั่ง") == [THAI]  # seat
    assert await found(person, "ทางเดิน") == [THAI]  # aisle
    assert await found(person, "大阪") == []


async def test_mixed_languages_in_one_memory_and_one_query(
    book: MemoryBook, person: str, found: Found
) -> None:
    await remember(book, person, MEETING, "Dana moved to Berlin")
    assert await found(person, "开会") == [MEETING]
    assert set(await found(person, "Dana")) == {MEETING, "Dana moved to Berlin"}
    assert (await found(person, "Dana 预算"))[0] == MEETING
    assert set(await found(person, "预算 Berlin")) == {MEETING, "Dana moved to Berlin"}


async def test_subjects_in_chinese_are_found(book: MemoryBook, person: str, found: Found) -> None:
    await remember(book, person, "Dana's birthday is in May", subjects=["生日聚会"])
    assert await found(person, "生日") == ["Dana's birthday is in May"]


async def test_english_keeps_its_stemming(book: MemoryBook, person: str, found: Found) -> None:
    await remember(book, person, "Goes running every morning", "Booked two flights to Lisbon")
    assert await found(person, "runs") == ["Goes running every morning"]
    assert await found(person, "flight") == ["Booked two flights to Lisbon"]


async def test_a_chinese_statement_said_twice_is_one_memory(
    store: Store, book: MemoryBook, person: str
) -> None:
    said = "下周四上午十点和Dana在公司三楼会议室开会讨论明年的预算"
    await remember(book, person, said)
    again = await book.write(
        person_id=person,
        content="下周四上午十点和Dana在公司三楼的会议室开会讨论明年的预算",  # one character more
        kind=MemoryKind.FACT,
        source=said_in("tsk_again"),
        actor="person",
    )
    other = await book.write(
        person_id=person,
        content="我不喜欢红眼航班",
        kind=MemoryKind.FACT,
        source=said_in("tsk_other"),
        actor="person",
    )
    assert again.outcome is WriteOutcome.DUPLICATE
    assert other.outcome is not WriteOutcome.DUPLICATE
    contents = {m.content for m in await store.memory.list_memories(person_id=person)}
    assert contents == {said, "我不喜欢红眼航班"}


@pytest.mark.parametrize("sample", [128, 4], ids=["counted", "estimated"])
async def test_other_peoples_memories_do_not_choose_this_persons_words(
    store: Store,
    book: MemoryBook,
    person: str,
    found: Found,
    monkeypatch: pytest.MonkeyPatch,
    sample: int,
) -> None:
    """With room for four matches, ``zebra`` (once in this person's memories) and ``apple``
    (three times) both fit; counted over everyone, another person's ten zebras would have
    left this person's zebra out. So they do when the person's share is estimated from the
    newest matches, all of them the other person's."""
    monkeypatch.setattr(memory_search, "POSTINGS_BUDGET", 4)
    monkeypatch.setattr(memory_search, "SAMPLE", sample)
    other = (await store.persons.create_person(name="bob", now=book.clock.now())).id
    await remember(book, person, "A zebra at the zoo")
    apples = ["apple pie recipe", "apple orchard visit", "apple cider vinegar"]
    await remember(book, person, *apples)
    await remember(book, other, *(f"zebra sighting number {i} kilo" for i in range(10)))
    hits = await found(person, "zebra apple")
    assert set(hits) == {"A zebra at the zoo", *apples}


async def test_a_word_past_the_budget_ranks_the_persons_newest_that_may_be_heard(
    store: Store,
    book: MemoryBook,
    person: str,
    found: Found,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """One word in more of the person's memories than the budget: its newest matches are
    ranked, looking further back (past nine private ones) until one may be heard; other
    people's newer matches do not crowd the window."""
    monkeypatch.setattr(memory_search, "POSTINGS_BUDGET", 4)
    other = (await store.persons.create_person(name="bob", now=book.clock.now())).id
    await remember(book, person, "kiwi smoothie for breakfast", audience=PUBLIC)
    words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india"]
    await remember(book, person, *(f"kiwi {w} {w}" for w in words))
    await remember(book, other, *(f"kiwi {w} juice" for w in words))
    assert await found(person, "kiwi", audience=PUBLIC, limit=1) == ["kiwi smoothie for breakfast"]
    newest = await found(person, "kiwi", limit=2)
    assert len(newest) == 2
    assert all(h.startswith("kiwi ") and "juice" not in h for h in newest)


async def test_memories_from_before_0016_are_found_by_their_words_after_it(
    db_url: str, clock: SimulatedClock
) -> None:
    """Undoing 0016 indexes a memory as 0015 did (its Chinese clause one token); a memory then
    written at 0015, the old way, and the first one are both found by a word once 0016 has
    re-indexed them."""
    store = await Store.open(db_url)
    try:
        book = MemoryBook(store, clock)
        person = (await store.persons.create_person(name="ada", now=clock.now())).id
        await remember(book, person, SEATS)
        engine = store.backend.engine
        sqlite = store.backend.name == "sqlite"
        await asyncio.to_thread(migrate.downgrade, engine, "0015")
        with engine.begin() as conn:
            if sqlite:
                match = "SELECT count(*) FROM memory_fts WHERE memory_fts MATCH '\"座位\"'"
                assert conn.execute(text(match)).scalar() == 0
            row = dict(conn.execute(text("SELECT * FROM memories")).one()._mapping)
            assert "lexical" not in row
            row |= {"id": "mem_at_0015", "content": MEETING, "content_hash": "0" * 32}
            if sqlite:
                row["fts_doc"] += 1
                conn.execute(
                    text("INSERT INTO memory_fts (rowid, content, subjects) VALUES (:d, :c, '')"),
                    {"d": row["fts_doc"], "c": MEETING},
                )
            names = ", ".join(row)
            values = ", ".join(f":{name}" for name in row)
            conn.execute(text(f"INSERT INTO memories ({names}) VALUES ({values})"), row)
        await asyncio.to_thread(migrate.upgrade, engine)
        for query, content in (("座位", SEATS), ("红眼航班", SEATS), ("开会", MEETING)):
            hits = await store.memory_search.search_memories_text(
                person_id=person, query=query, audience=PRIVATE, at=clock.now()
            )
            [memory] = await store.memory.get_memories([h.id for h in hits])
            assert memory.content == content
    finally:
        await store.close()
