"""Retrieval: fusion keeps a strong match either search alone finds; importance and recency
only break ties; a named time recalls what was true then; a second hop follows the entities of
the first results; a reranker reorders the fused top; the audience is always enforced."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from steward.domain.audience import PRIVATE, Audience
from steward.domain.clock import SimulatedClock
from steward.domain.memory import MemoryKind
from steward.errors import StewardRuntimeError
from steward.memory.book import MemoryBook
from steward.memory.ranking import TIE_MARGIN, tie_broken
from steward.memory.retrieval import Retriever, SearchMode
from steward.store import Store
from steward.testing.embeddings import HashingEmbedder
from support.memory import said_in

NOW = datetime(2026, 10, 15, 12, tzinfo=UTC)


@pytest.fixture
def embedder() -> HashingEmbedder:
    return HashingEmbedder(synonyms={"flat": "apartment", "home": "apartment"})


@pytest.fixture
def hybrid_book(store: Store, clock: SimulatedClock, embedder: HashingEmbedder) -> MemoryBook:
    return MemoryBook(store, clock, embedder=embedder)


async def remember(
    book: MemoryBook,
    person: str,
    content: str,
    *,
    observed_at: datetime | None = None,
    importance: float = 0.5,
    **fields: object,
) -> str:
    written = await book.write(
        person_id=person,
        content=content,
        kind=fields.pop("kind", MemoryKind.FACT),  # type: ignore[arg-type]
        source=said_in("tsk_r"),
        actor="agent:tsk_r",
        observed_at=observed_at,
        importance=importance,
        **fields,  # type: ignore[arg-type]
    )
    assert written.memory is not None
    return written.memory.id


async def ids(retriever: Retriever, person: str, query: str, **options: object) -> list[str]:
    hits = await retriever.search(
        person_id=person,
        query=query,
        audience=options.pop("audience", PRIVATE),  # type: ignore[arg-type]
        at=options.pop("at", NOW),  # type: ignore[arg-type]
        **options,  # type: ignore[arg-type]
    )
    return [hit.memory.id for hit in hits]


async def test_a_match_only_words_find_is_in_the_hybrid_top_five(
    hybrid_book: MemoryBook, person: str
) -> None:
    for i in range(60):  # many memories share the question's common words: both searches
        await remember(hybrid_book, person, f"Reminder {i}: the front door was painted")
    # the rare number, twice: PostgreSQL's ranking counts matches, not how rare they are
    keypad = await remember(hybrid_book, person, "Gate keypad opens with 4471, 4471 then hash")
    found = await ids(hybrid_book.retriever, person, "door code 4471", mode=SearchMode.HYBRID)
    assert keypad in found[:5]


async def test_a_paraphrase_only_meaning_finds_is_in_the_hybrid_top_five(
    hybrid_book: MemoryBook, person: str
) -> None:
    for i in range(60):
        await remember(hybrid_book, person, f"Note {i}: the red umbrella is kept by the door")
    flat = await remember(hybrid_book, person, "Her apartment overlooks the river in Lyon")
    found = await ids(hybrid_book.retriever, person, "umbrella flat", mode=SearchMode.HYBRID)
    assert flat in found[:5]


@given(
    stronger=st.floats(min_value=1e-6, max_value=1.0),
    ratio=st.floats(min_value=1 + TIE_MARGIN + 1e-9, max_value=100.0),
    priors=st.tuples(st.floats(0.0, 1.0), st.floats(0.0, 1.0)),
)
def test_importance_and_recency_never_lift_a_clearly_weaker_match(
    stronger: float, ratio: float, priors: tuple[float, float]
) -> None:
    weaker = stronger / ratio
    assert tie_broken(stronger, priors[0]) > tie_broken(weaker, priors[1])


async def test_importance_and_recency_order_equal_matches_only(
    book: MemoryBook, person: str
) -> None:
    old = NOW - timedelta(days=300)
    strong = await remember(
        book,
        person,
        "Allergic to penicillin, penicillin causes hives",
        observed_at=old,
        importance=0.1,
    )
    weak = await remember(
        book, person, "Asked the pharmacy about penicillin once", observed_at=NOW, importance=1.0
    )
    same_old = await remember(book, person, "Likes sailing on lakes", observed_at=old)
    same_new = await remember(book, person, "Enjoys sailing near coasts", observed_at=NOW)
    assert (await ids(book.retriever, person, "penicillin"))[:2] == [strong, weak]
    assert (await ids(book.retriever, person, "sailing"))[:2] == [same_new, same_old]


async def test_last_may_recalls_the_home_of_then_and_no_time_the_home_of_now(
    book: MemoryBook, person: str, clock: SimulatedClock
) -> None:
    lyon = await remember(
        book,
        person,
        "Lives in Lyon",
        slot="home_city",
        observed_at=datetime(2026, 1, 5, tzinfo=UTC),
    )
    berlin = await remember(
        book,
        person,
        "Lives in Berlin now",
        slot="home_city",
        observed_at=datetime(2026, 8, 20, tzinfo=UTC),
    )
    assert (await ids(book.retriever, person, "where did I live last May?"))[0] == lyon
    assert (
        await ids(
            book.retriever, person, "去年五月我住在哪里 live", at=datetime(2027, 2, 1, tzinfo=UTC)
        )
    )[0] == lyon
    now = await ids(book.retriever, person, "where do I live?")
    assert now[0] == berlin
    assert lyon not in now


async def test_what_was_said_in_the_named_time_ranks_first(book: MemoryBook, person: str) -> None:
    march = await remember(
        book,
        person,
        "Booked a dentist visit",
        observed_at=datetime(2026, 3, 10, tzinfo=UTC),
        importance=0.1,
    )
    later = await remember(
        book,
        person,
        "Booked a dentist visit for the kids, dentist at nine",
        observed_at=datetime(2026, 9, 30, tzinfo=UTC),
        importance=0.9,
    )
    found = await ids(book.retriever, person, "which dentist visit did I book in March?")
    assert found[:2] == [march, later]


async def test_before_an_event_found_in_memory(book: MemoryBook, person: str) -> None:
    await remember(
        book,
        person,
        "Drives a red bicycle to work",
        slot="commute",
        observed_at=datetime(2026, 2, 1, tzinfo=UTC),
    )
    await remember(
        book, person, "The move to Berlin happened", observed_at=datetime(2026, 6, 1, tzinfo=UTC)
    )
    await remember(
        book,
        person,
        "Takes the tram to work",
        slot="commute",
        observed_at=datetime(2026, 6, 2, tzinfo=UTC),
    )
    hits = await book.retriever.search(
        person_id=person, query="how did I get to work before the move?", audience=PRIVATE, at=NOW
    )
    assert hits[0].memory.content == "Drives a red bicycle to work"


async def test_a_second_hop_finds_what_the_first_results_lead_to(
    book: MemoryBook, person: str
) -> None:
    await remember(
        book, person, "My sister Ana married Tom last spring", subjects=("Ana", "Tom", "sister")
    )
    for i in range(20):
        await remember(book, person, f"Bought item {i} at the market")
    employer = await remember(
        book, person, "Tom is an engineer at Acme Robotics", subjects=("Tom", "Acme Robotics")
    )
    question = "where does the person my sister married work?"
    assert employer not in await ids(book.retriever, person, question)
    assert employer in (await ids(book.retriever, person, question, hops=2))[:3]


class WordReranker:
    """Scores a text by whether it holds a chosen word: a stand-in for a cross-encoder."""

    name = "fake-rerank"

    def __init__(self, word: str) -> None:
        self.word = word
        self.asked: list[str] = []

    async def score(self, query: str, texts: Sequence[str]) -> list[float]:
        self.asked.append(query)
        return [1.0 if self.word in text else 0.0 for text in texts]


async def test_a_reranker_reorders_the_fused_top(
    book: MemoryBook, person: str, store: Store
) -> None:
    first = await remember(book, person, "Coffee coffee coffee every morning", importance=0.9)
    second = await remember(book, person, "Coffee with oat milk, no sugar")
    reranker = WordReranker("oat")
    retriever = Retriever(store, reranker=reranker)
    assert (await ids(retriever, person, "coffee"))[:2] == [second, first]
    assert (await ids(retriever, person, "coffee", rerank=False))[:2] == [first, second]
    assert reranker.asked == ["coffee"]
    with pytest.raises(StewardRuntimeError):
        await ids(book.retriever, person, "coffee", rerank=True)


async def test_the_audience_is_enforced_through_time_and_hops(
    book: MemoryBook, person: str
) -> None:
    family = Audience.parse("group:family")
    await remember(
        book, person, "My sister Ana married Tom", subjects=("Ana", "Tom"), audience=family
    )
    secret = await remember(book, person, "Tom owes me money since March", subjects=("Tom",))
    for query in ("who did my sister marry?", "what happened in March with Tom?"):
        assert secret not in await ids(book.retriever, person, query, audience=family, hops=2)


async def test_a_named_time_is_read_in_the_persons_own_time_zone(
    book: MemoryBook, store: Store, clock: SimulatedClock
) -> None:
    # asked at midnight in Auckland (11:00 UTC): "yesterday" there is 1 December, while in UTC
    # it would be 30 November
    kiwi = (
        await store.persons.create_person(name="kiri", now=clock.now(), timezone="Pacific/Auckland")
    ).id
    asked = datetime(2026, 12, 1, 11, tzinfo=UTC)
    on_the_first = await remember(
        book,
        kiwi,
        "Paid the plumber for the sink",
        observed_at=datetime(2026, 12, 1, 2, tzinfo=UTC),  # 15:00 on 1 December there
        importance=0.1,
    )
    before = await remember(
        book,
        kiwi,
        "Paid the plumber for the sink and the tap",
        observed_at=datetime(2026, 11, 30, 2, tzinfo=UTC),  # 30 November there
        importance=0.9,
    )
    found = await ids(book.retriever, kiwi, "what did I pay the plumber yesterday?", at=asked)
    assert found[:2] == [on_the_first, before]
    in_utc = await ids(
        book.retriever, kiwi, "what did I pay the plumber yesterday?", at=asked, timezone="UTC"
    )
    assert in_utc[:2] == [before, on_the_first]
