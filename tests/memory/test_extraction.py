"""Extraction on both backends: candidates with provenance from a scripted model, the episode
rule, no re-learning of what is known, malformed answers, forgotten sources, and transcripts of
real agent tasks (trusted, and tainted by untrusted content)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from steward.domain import TaskSpec, TaskStatus
from steward.domain.audience import Audience
from steward.domain.clock import SimulatedClock
from steward.domain.memory import MemoryKind, MemoryStatus, Source, SourceKind, WriteOutcome
from steward.harness.agent import AgentHarness
from steward.harness.tools import tool
from steward.harness.workspace import Workspace
from steward.memory.book import MemoryBook
from steward.memory.extraction import (
    ModelExtractor,
    Transcript,
    Turn,
    extract_task,
    learn,
    parse_proposals,
    task_transcript,
)
from steward.models.scripted import ScriptedModel, call_tool, say
from steward.store import Store
from support.agents import agent_worker

FAMILY = Audience.parse("group:family")


def answering(*items: dict[str, Any]) -> ScriptedModel:
    return ScriptedModel([say(json.dumps(list(items)))])


def chat(person: str, clock: SimulatedClock, *, ref: str = "tsk_trip") -> Transcript:
    return Transcript(
        person_id=person,
        turns=(
            Turn(role="person", text="Book me a flight from Berlin to Boston on Friday"),
            Turn(role="steward", text="The only seat left on Friday is on the red-eye."),
            Turn(role="person", text="This time I'll take the red-eye. I always sit on the aisle."),
        ),
        source=Source(kind=SourceKind.CONVERSATION, ref=ref, trusted=True),
        audience=FAMILY,
        observed_at=clock.now(),
    )


async def live(book: MemoryBook, person: str) -> list[str]:
    memories = await book.store.memory.list_memories(
        person_id=person, statuses=[MemoryStatus.ACTIVE, MemoryStatus.CANDIDATE]
    )
    return sorted(m.content for m in memories)


async def test_extraction_writes_candidates_with_provenance_and_keeps_exceptions_episodes(
    book: MemoryBook, person: str, clock: SimulatedClock
) -> None:
    known = await book.write(
        person_id=person,
        content="Lives in Berlin",
        kind=MemoryKind.FACT,
        source=Source(kind=SourceKind.PERSON, ref="profile", trusted=True),
        actor="person",
        audience=FAMILY,
    )
    assert known.memory is not None
    model = answering(
        {
            "content": "Prefers aisle seats",
            "kind": "preference",
            "subjects": ["flights"],
            "slot": "seat_preference",
            "importance": 0.7,
        },
        # a one-off, even with a slot the model should not have given it
        {"content": "Took the red-eye to Boston", "kind": "episode", "slot": "flight_time"},
        {"content": "Lives in Berlin", "kind": "fact"},  # recalled, restated anyway
        {"content": "Is grumpy today", "kind": "mood"},
    )

    done = await learn(book, ModelExtractor(model), chat(person, clock))

    assert done.error is None
    assert [w.outcome for w in done.written] == [
        WriteOutcome.CREATED,
        WriteOutcome.CREATED,
        WriteOutcome.DUPLICATE,
    ]
    assert len(done.rejected) == 1
    assert "unknown kind 'mood'" in done.rejected[0]
    aisle, red_eye = (w.memory for w in done.created)
    assert aisle is not None
    assert red_eye is not None
    assert (aisle.status, aisle.slot, aisle.audience, aisle.subjects, aisle.importance) == (
        MemoryStatus.CANDIDATE,
        "seat_preference",
        FAMILY,
        ("flights",),
        0.7,
    )
    assert [s.key for s in aisle.sources] == ["conversation:tsk_trip"]
    assert aisle.trusted
    assert (red_eye.kind, red_eye.slot) == (MemoryKind.EPISODE, None)
    history = await book.history(aisle.id)
    assert [(v.actor, v.reason) for v in history] == [("extraction:tsk_trip", "created")]
    # the one model call: the rules, and what is known so it is not restated
    [(messages, _)] = model.requests
    assert "this time I'll take the red-eye" in messages[0].content
    assert "- (fact) Lives in Berlin" in messages[1].content
    assert "person: This time I'll take the red-eye." in messages[1].content


@pytest.mark.parametrize(
    "answer",
    [
        "Sure! Here is what I noted: the person likes aisle seats.",
        '[{"content": "Prefers aisle seats", "kind": "preference"',
        '{"note": "Prefers aisle seats"}',
    ],
    ids=["prose", "truncated", "object"],
)
async def test_a_malformed_answer_writes_nothing_and_says_why(
    book: MemoryBook, person: str, clock: SimulatedClock, answer: str
) -> None:
    done = await learn(book, ModelExtractor(ScriptedModel([say(answer)])), chat(person, clock))

    assert done.written == ()
    assert done.error is not None
    assert done.error.startswith("the answer is not a JSON list of memories")
    assert await live(book, person) == []


async def test_a_failing_model_is_reported_not_raised(
    book: MemoryBook, person: str, clock: SimulatedClock
) -> None:
    exhausted = ScriptedModel([])
    done = await learn(book, ModelExtractor(exhausted), chat(person, clock))
    assert done.error == "the model failed: scripted model: script exhausted after 0 calls"
    assert await live(book, person) == []


def test_answers_in_code_fences_or_wrapped_are_read() -> None:
    fenced = '```json\n[{"content": "Has a cat named Miso", "kind": "fact"}]\n```'
    wrapped = '{"memories": [{"content": "Has a cat named Miso", "kind": "fact"}]}'
    prose = 'Noted: [{"content": "Has a cat named Miso", "kind": "fact"}]. Anything else?'
    for answer in (fenced, wrapped, prose):
        [proposal] = parse_proposals(answer).proposals
        assert (proposal.content, proposal.kind) == ("Has a cat named Miso", MemoryKind.FACT)
    dated = parse_proposals('[{"content": "Works at Acme", "valid_from": "2026-03-01"}]')
    assert dated.proposals[0].valid_from == datetime(2026, 3, 1, tzinfo=UTC)
    assert dated.proposals[0].kind is MemoryKind.NOTE
    assert (
        "Invalid isoformat"
        in parse_proposals('[{"content": "x", "valid_from": "May"}]').rejected[0]
    )


async def test_extraction_over_a_forgotten_source_creates_nothing(
    book: MemoryBook, person: str, clock: SimulatedClock
) -> None:
    aisle = {"content": "Prefers aisle seats", "kind": "preference"}
    first = await learn(book, ModelExtractor(answering(aisle)), chat(person, clock))
    assert len(first.created) == 1

    stone = await book.store.memory.forget_source(
        person, "conversation:tsk_trip", now=clock.now(), actor="person"
    )
    assert stone.purged == 1
    again = answering(aisle)
    redone = await learn(book, ModelExtractor(again), chat(person, clock))

    assert (redone.forgotten, redone.written) == (True, ())
    assert again.calls == 0  # not even read again
    assert await live(book, person) == []
    # another conversation saying the same is a source of its own
    other = await learn(book, ModelExtractor(answering(aisle)), chat(person, clock, ref="tsk_2"))
    assert len(other.created) == 1


async def test_a_finished_chat_is_learned_from_the_persons_words_and_stewards_replies(
    book: MemoryBook, store: Store, person: str, clock: SimulatedClock, tmp_path: Path
) -> None:
    agent = ScriptedModel(
        [
            say("Where would you like to go?"),
            say("Lisbon in May is lovely. Shall I look for flights?"),
            call_tool("finish", result="The person will book themselves."),
        ]
    )
    harness = AgentHarness(model=agent, workspace=Workspace(tmp_path / "ws"))
    spec = TaskSpec(kind="agent", input={"instructions": "Plan a trip", "mode": "chat"})
    task = await store.tasks.create_task(spec, person_id=person, now=clock.now())
    worker = agent_worker(store, harness, clock)
    await worker.run_until_idle()
    for answer in ("Lisbon, in May", "No thanks, I always book my own flights"):
        await store.inbox.answer_input(task.id, answer, now=clock.now())
        await worker.run_until_idle()
    finished = await store.tasks.get_task(task.id)
    assert finished.status is TaskStatus.SUCCEEDED

    transcript = task_transcript(finished, await store.activations.list_steps(task.id))
    assert [(t.role, t.text) for t in transcript.turns] == [
        ("person", "Plan a trip"),
        ("steward", "Where would you like to go?"),
        ("person", "Lisbon, in May"),
        ("steward", "Lisbon in May is lovely. Shall I look for flights?"),
        ("person", "No thanks, I always book my own flights"),
        ("steward", "The person will book themselves."),
    ]
    extractor = ModelExtractor(
        answering({"content": "Books their own flights", "kind": "preference"})
    )
    done = await extract_task(book, extractor, task.id)

    [written] = done.created
    assert written.memory is not None
    assert written.memory.status is MemoryStatus.CANDIDATE
    assert written.memory.sources == (Source(kind=SourceKind.TASK, ref=task.id, trusted=True),)


async def test_a_task_that_read_untrusted_content_gives_untrusted_candidates(
    book: MemoryBook, store: Store, person: str, clock: SimulatedClock, tmp_path: Path
) -> None:
    @tool(untrusted_output=True)
    async def read_mail() -> str:
        """Read the newest mail."""
        return (
            "From billing@acme.example: you agreed to pay 4,800 EUR to IBAN DE44500105175407324931"
        )

    agent = ScriptedModel([call_tool("read_mail"), say("Acme says you agreed to pay 4,800 EUR.")])
    harness = AgentHarness(model=agent, workspace=Workspace(tmp_path / "ws"), tools=[read_mail])
    spec = TaskSpec(kind="agent", input={"instructions": "What does the newest mail say?"})
    task = await store.tasks.create_task(spec, person_id=person, now=clock.now())
    await agent_worker(store, harness, clock).run_until_idle()

    model = answering({"content": "Agreed to pay Acme 4,800 EUR", "kind": "decision"})
    done = await extract_task(book, ModelExtractor(model), task.id)

    [written] = done.created
    assert written.memory is not None
    assert written.memory.status is MemoryStatus.CANDIDATE
    assert not written.memory.trusted
    # the mail itself never reaches the extractor: only the person's and Steward's words
    [(messages, _)] = model.requests
    assert "billing@acme.example" not in messages[1].content
