"""Consolidation passes on both backends: merging duplicates, supersession, promotion, staleness,
the review of a destructive pass, and the nightly job through a real worker."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from steward.domain import TaskSpec, TaskStatus
from steward.domain.audience import PRIVATE
from steward.domain.clock import SimulatedClock
from steward.domain.memory import Memory, MemoryKind, MemoryStatus, Source, SourceKind
from steward.domain.memory_pass import OperationKind, PassStatus
from steward.errors import InvalidTransition
from steward.harness.agent import AgentHarness
from steward.harness.workspace import Workspace
from steward.memory.book import MemoryBook
from steward.memory.consolidation import PassRules, approve_pass, consolidate, reject_pass
from steward.memory.extraction import ModelExtractor, Proposals, Transcript
from steward.memory.jobs import CONSOLIDATE, schedule_consolidation, with_memory_jobs
from steward.models import ScriptedModel
from steward.models.scripted import say
from steward.runtime.builtin import builtin_harness
from steward.runtime.scheduler import Scheduler
from steward.runtime.worker import Worker
from steward.store import Store
from support.agents import agent_worker
from support.memory import said_in

MAY = datetime(2026, 5, 1, tzinfo=UTC)
LENIENT = PassRules(max_share=1.0)
"""For tests of what a pass does, not of when it is held."""


async def stored(
    book: MemoryBook,
    person: str,
    content: str,
    *,
    ref: str,
    kind: MemoryKind = MemoryKind.PREFERENCE,
    importance: float = 0.5,
) -> Memory:
    """A memory written straight to the store, past the book's duplicate check: what two tasks
    writing the same thing at the same moment (or an import) leave behind."""
    now = book.clock.now()
    memory = Memory(
        id=f"mem_{ref}",
        person_id=person,
        kind=kind,
        content=content,
        sources=(said_in(ref),),
        importance=importance,
        observed_at=now,
        created_at=now,
        updated_at=now,
    )
    written = await book.store.memory.add_memory(memory, actor=f"agent:{ref}")
    assert written is not None
    return written


async def statuses(book: MemoryBook, *ids: str) -> list[MemoryStatus]:
    return [m.status for m in await book.store.memory.get_memories(ids)]


async def test_a_pass_merges_duplicates_into_the_oldest_with_every_source(
    book: MemoryBook, person: str, clock: SimulatedClock
) -> None:
    first = await stored(book, person, "Prefers aisle seats", ref="tsk_a", importance=0.4)
    clock.advance(timedelta(hours=1))
    again = await stored(book, person, "prefers aisle seats.", ref="tsk_b", importance=0.8)
    other = await stored(book, person, "Prefers tea to coffee", ref="tsk_c")

    done = await consolidate(book, person, rules=LENIENT)

    assert done.status is PassStatus.APPLIED
    [merge] = done.operations
    assert (merge.kind, merge.memory_ids, merge.skipped) == (
        OperationKind.MERGE,
        (first.id, again.id),
        None,
    )
    assert "(preference, archived) prefers aisle seats" in merge.after[again.id]
    kept = await book.store.memory.get_memory(first.id)
    assert (kept.status, kept.importance, [s.key for s in kept.sources]) == (
        MemoryStatus.ACTIVE,
        0.8,
        ["task:tsk_a", "task:tsk_b"],
    )
    assert await statuses(book, again.id, other.id) == [MemoryStatus.ARCHIVED, MemoryStatus.ACTIVE]
    hits = await book.retriever.search(
        person_id=person, query="aisle seats", audience=PRIVATE, at=clock.now()
    )
    assert [h.memory.id for h in hits] == [first.id]
    history = await book.history(again.id)
    assert [(v.actor, v.reason) for v in history] == [
        ("agent:tsk_b", "created"),
        (f"consolidation:{done.id}", f"merged into {first.id}"),
    ]
    assert history[0].memory.status is MemoryStatus.ACTIVE
    assert await book.store.memory_passes.get_memory_pass(done.id) == done


async def test_a_confirmed_newer_fact_is_promoted_and_supersedes_the_older_one(
    book: MemoryBook, person: str, clock: SimulatedClock
) -> None:
    lisbon = await book.write(
        person_id=person,
        content="Lives in Lisbon",
        kind=MemoryKind.FACT,
        slot="home_city",
        source=said_in("tsk_a"),
        actor="person",
    )
    # extracted twice, from two conversations: a candidate heard from two sources
    for ref in ("tsk_b", "tsk_c"):
        berlin = await book.write(
            person_id=person,
            content="Lives in Berlin",
            kind=MemoryKind.FACT,
            slot="home_city",
            source=said_in(ref),
            actor=f"extraction:{ref}",
            valid_from=MAY,
            candidate=True,
        )
    assert lisbon.memory is not None
    assert berlin.memory is not None
    assert berlin.memory.status is MemoryStatus.CANDIDATE

    done = await consolidate(book, person, rules=LENIENT)

    assert [(op.kind, op.memory_ids) for op in done.operations] == [
        (OperationKind.PROMOTE, (berlin.memory.id,)),
        (OperationKind.SUPERSEDE, (lisbon.memory.id, berlin.memory.id)),
    ]
    old = await book.store.memory.get_memory(lisbon.memory.id)
    new = await book.store.memory.get_memory(berlin.memory.id)
    assert (old.status, old.valid_to, old.superseded_by) == (
        MemoryStatus.ACTIVE,
        MAY,
        berlin.memory.id,
    )
    assert (new.status, new.supersedes) == (MemoryStatus.ACTIVE, lisbon.memory.id)
    history = await book.history(lisbon.memory.id)
    assert [v.reason for v in history] == ["created", f"superseded by {berlin.memory.id}"]
    assert history[0].memory.valid_to is None


async def test_an_episode_never_supersedes_the_standing_preference(
    book: MemoryBook, person: str, clock: SimulatedClock
) -> None:
    habit = await book.write(
        person_id=person,
        content="Prefers morning flights",
        kind=MemoryKind.PREFERENCE,
        slot="flight_time",
        source=said_in("tsk_a"),
        actor="person",
    )
    clock.advance(timedelta(days=3))
    once = await book.write(
        person_id=person,
        content="This time takes the red-eye to Boston",
        kind=MemoryKind.EPISODE,
        slot="flight_time",
        source=said_in("tsk_b"),
        actor="person",
    )
    assert habit.memory is not None
    assert once.memory is not None

    done = await consolidate(book, person, rules=LENIENT)

    assert done.operations == ()
    kept = await book.store.memory.get_memory(habit.memory.id)
    assert (kept.version, kept.valid_to, kept.superseded_by) == (1, None, None)
    assert await statuses(book, once.memory.id) == [MemoryStatus.ACTIVE]


async def test_a_pass_never_promotes_an_untrusted_candidate(
    book: MemoryBook, person: str, clock: SimulatedClock
) -> None:
    # the same claim in two strangers' mails, and a claim of the person's own, a month old
    for ref in ("mail-1", "mail-2"):
        claimed = await book.write(
            person_id=person,
            content="Agreed to pay the invoice from Acme",
            kind=MemoryKind.DECISION,
            source=Source(kind=SourceKind.CONNECTOR, ref=f"imap/{ref}", trusted=False),
            actor="extraction:imap",
        )
    own = await book.write(
        person_id=person,
        content="Plays the cello",
        kind=MemoryKind.FACT,
        source=said_in("tsk_a"),
        actor="extraction:tsk_a",
        candidate=True,
    )
    assert claimed.memory is not None
    assert own.memory is not None
    assert len(claimed.memory.sources) == 2
    clock.advance(timedelta(days=30))

    done = await consolidate(book, person, rules=LENIENT)

    assert [(op.kind, op.memory_ids) for op in done.operations] == [
        (OperationKind.PROMOTE, (own.memory.id,))
    ]
    assert await statuses(book, claimed.memory.id, own.memory.id) == [
        MemoryStatus.CANDIDATE,
        MemoryStatus.ACTIVE,
    ]


async def test_stale_notes_are_archived_and_recalled_or_important_ones_kept(
    book: MemoryBook, person: str, clock: SimulatedClock
) -> None:
    trivia = await stored(
        book, person, "Saw a heron", ref="tsk_a", kind=MemoryKind.NOTE, importance=0.2
    )
    recalled = await stored(
        book, person, "Likes herons", ref="tsk_b", kind=MemoryKind.NOTE, importance=0.2
    )
    weighty = await stored(
        book, person, "Passport renewed", ref="tsk_c", kind=MemoryKind.NOTE, importance=0.9
    )
    await book.store.memory.record_memory_uses([recalled.id])
    clock.advance(timedelta(days=181))

    done = await consolidate(book, person, rules=LENIENT)

    assert [(op.kind, op.memory_ids) for op in done.operations] == [
        (OperationKind.ARCHIVE, (trivia.id,))
    ]
    assert await statuses(book, trivia.id, recalled.id, weighty.id) == [
        MemoryStatus.ARCHIVED,
        MemoryStatus.ACTIVE,
        MemoryStatus.ACTIVE,
    ]


async def test_a_destructive_pass_is_held_until_approved_and_skips_what_changed_meanwhile(
    book: MemoryBook, person: str, clock: SimulatedClock
) -> None:
    first = await stored(book, person, "Prefers aisle seats", ref="tsk_a")
    again = await stored(book, person, "Prefers aisle seats", ref="tsk_b")
    old_notes = [
        await stored(book, person, text, ref=ref, kind=MemoryKind.NOTE, importance=0.1)
        for text, ref in (("Saw a heron", "tsk_c"), ("Bought stamps", "tsk_d"))
    ]
    keeper = await stored(book, person, "Ana is the sister", ref="tsk_e")
    clock.advance(timedelta(days=200))

    held = await consolidate(book, person)  # 3 of 5 active memories out of recall: 60% > 20%

    assert (held.status, held.drops, held.active, held.share) == (PassStatus.HELD, 3, 5, 0.6)
    everyone = [first, again, *old_notes, keeper]
    assert [m.version for m in await book.store.memory.get_memories([m.id for m in everyone])] == [
        1
    ] * 5
    assert await statuses(book, *(m.id for m in everyone)) == [MemoryStatus.ACTIVE] * 5
    assert held.describe()[0] == f"merge: same statement: {again.id} merged into {first.id}"

    # before the review, the person keeps one note alive and a task recalls the other
    await book.edit(old_notes[1].id, actor="person", importance=0.8)
    await book.store.memory.record_memory_uses([old_notes[0].id])
    approved = await approve_pass(book, held.id)

    assert approved.status is PassStatus.APPLIED
    assert [(op.kind, op.skipped) for op in approved.operations] == [
        (OperationKind.MERGE, None),
        (
            OperationKind.ARCHIVE,
            f"memory {old_notes[0].id} was recalled since the pass was planned",
        ),
        (OperationKind.ARCHIVE, f"memory {old_notes[1].id} changed since (version 2, planned 1)"),
    ]
    assert await statuses(book, *(m.id for m in everyone)) == [
        MemoryStatus.ACTIVE,
        MemoryStatus.ARCHIVED,
        MemoryStatus.ACTIVE,
        MemoryStatus.ACTIVE,
        MemoryStatus.ACTIVE,
    ]
    assert (await book.store.memory_passes.get_memory_pass(held.id)).status is PassStatus.APPLIED
    with pytest.raises(InvalidTransition):
        await approve_pass(book, held.id)


async def test_a_held_pass_can_be_rejected_and_is_expired_by_a_newer_one(
    book: MemoryBook, person: str, clock: SimulatedClock
) -> None:
    first = await stored(book, person, "Prefers aisle seats", ref="tsk_a")
    again = await stored(book, person, "Prefers aisle seats", ref="tsk_b")

    refused = await reject_pass(book, (await consolidate(book, person)).id)
    assert refused.status is PassStatus.REJECTED
    assert await statuses(book, first.id, again.id) == [MemoryStatus.ACTIVE] * 2

    older = await consolidate(book, person)
    newer = await consolidate(book, person)
    assert (older.status, newer.status) == (PassStatus.HELD, PassStatus.HELD)
    assert (await book.store.memory_passes.get_memory_pass(older.id)).status is PassStatus.EXPIRED
    held = await book.store.memory_passes.list_memory_passes(
        person_id=person, status=PassStatus.HELD
    )
    assert [p.id for p in held] == [newer.id]


async def test_the_nightly_job_runs_a_pass_through_a_worker_and_asks_for_review(
    book: MemoryBook, store: Store, person: str, clock: SimulatedClock
) -> None:
    first = await stored(book, person, "Prefers aisle seats", ref="tsk_a")
    again = await stored(book, person, "Prefers aisle seats", ref="tsk_b")
    trigger = await schedule_consolidation(store, clock, person_id=person)
    assert await schedule_consolidation(store, clock, person_id=person) == trigger
    assert trigger.next_fire_at == datetime(2026, 1, 6, 3, 0, tzinfo=UTC)

    clock.advance(trigger.next_fire_at - clock.now() + timedelta(seconds=1))
    await Scheduler(store, clock).tick()
    worker = Worker(store, with_memory_jobs(builtin_harness(), book), clock, poll_seconds=None)
    assert await worker.run_until_idle() == 1

    [task] = await store.tasks.list_tasks(person_id=person)
    assert (task.kind, task.status) == (CONSOLIDATE, TaskStatus.SUCCEEDED)
    pass_id = f"mps_{task.id}"
    assert task.result == {
        "pass": pass_id,
        "status": "held",
        "operations": 1,
        "skipped": 0,
        "share": 0.5,
        "extracted_from": 0,
    }
    assert await statuses(book, first.id, again.id) == [MemoryStatus.ACTIVE] * 2
    [review] = await store.inbox.list_notifications(person_id=person)
    assert (review.kind, review.ref, review.task_id) == ("memory_review", pass_id, task.id)
    assert "set aside 1 of 2 memories" in review.title

    applied = await approve_pass(book, pass_id)
    assert applied.operations[0].skipped is None
    assert await statuses(book, first.id, again.id) == [
        MemoryStatus.ACTIVE,
        MemoryStatus.ARCHIVED,
    ]


async def test_the_nightly_job_first_learns_from_tasks_finished_since_the_last_pass(
    book: MemoryBook, store: Store, person: str, clock: SimulatedClock, tmp_path: Path
) -> None:
    """Extraction is part of the nightly job: each finished agent task is read once, its
    statements become candidates with the task as their source."""
    chat = ScriptedModel([say("Noted, Berlin it is.")])
    harness = AgentHarness(model=chat, workspace=Workspace(tmp_path / "ws"))
    spec = TaskSpec(kind="agent", title="move", input={"instructions": "I moved to Berlin"})
    told = await store.tasks.create_task(spec, person_id=person, now=clock.now())
    await agent_worker(store, harness, clock).run_until_idle()
    assert (await store.tasks.get_task(told.id)).status is TaskStatus.SUCCEEDED

    answer = '[{"content": "Lives in Berlin", "kind": "fact", "slot": "home_city"}]'
    extractor = ModelExtractor(ScriptedModel([say(answer), say(answer)]))
    jobs = with_memory_jobs(builtin_harness(), book, extractor=extractor)
    results = []
    for _ in range(2):
        job = await store.tasks.create_task(
            TaskSpec(kind=CONSOLIDATE, title="nightly"), person_id=person, now=clock.now()
        )
        await Worker(store, jobs, clock, poll_seconds=None).run_until_idle()
        results.append((await store.tasks.get_task(job.id)).result)
        clock.advance(timedelta(days=1))

    assert [r["extracted_from"] for r in results if r] == [1, 0]  # the second night: nothing new
    [learned] = await store.memory.list_memories(person_id=person)
    assert (learned.content, learned.status) == ("Lives in Berlin", MemoryStatus.CANDIDATE)
    assert [s.key for s in learned.sources] == [f"task:{told.id}"]


async def test_rules_travel_in_the_task_input() -> None:
    rules = PassRules(max_share=0.5, stale_after=timedelta(days=30), max_operations=10)
    assert PassRules.from_json(rules.to_json()) == rules
    assert PassRules.from_json({}) == PassRules()
    assert "max_operations" not in PassRules().to_json()


async def test_what_one_night_cannot_read_the_next_night_reads_oldest_first(
    book: MemoryBook, store: Store, person: str, clock: SimulatedClock, tmp_path: Path
) -> None:
    told: list[str] = []
    for city in ("Porto", "Berlin", "Oslo"):
        chat = ScriptedModel([say("Noted.")])
        harness = AgentHarness(model=chat, workspace=Workspace(tmp_path / "ws"))
        spec = TaskSpec(kind="agent", title=city, input={"instructions": f"I visited {city}"})
        task = await store.tasks.create_task(spec, person_id=person, now=clock.now())
        await agent_worker(store, harness, clock).run_until_idle()
        told.append(task.id)
        clock.advance(timedelta(minutes=5))

    read: list[str] = []

    class Recording:
        async def propose(self, transcript: Transcript, *, known: Sequence[str]) -> Proposals:
            read.append(transcript.source.ref)
            return Proposals()

    jobs = with_memory_jobs(builtin_harness(), book, extractor=Recording())
    counts = []
    for _ in range(3):
        job = await store.tasks.create_task(
            TaskSpec(kind=CONSOLIDATE, title="nightly", input={"max_extractions": 2}),
            person_id=person,
            now=clock.now(),
        )
        await Worker(store, jobs, clock, poll_seconds=None).run_until_idle()
        counts.append((await store.tasks.get_task(job.id)).result["extracted_from"])  # type: ignore[index]
        clock.advance(timedelta(days=1))

    assert counts == [2, 1, 0]
    assert read == told


NOTE = MemoryKind.NOTE


async def test_a_forgotten_memory_leaves_the_diffs_that_quoted_it(
    book: MemoryBook, store: Store, person: str, clock: SimulatedClock
) -> None:
    for n in range(3):
        await stored(
            book, person, f"Note {n} about gardening", ref=f"tsk_{n}", kind=NOTE, importance=0.1
        )
    await stored(book, person, "Diagnosis is diabetes", ref="tsk_secret", kind=NOTE, importance=0.1)
    clock.advance(timedelta(days=400))  # all four are stale: archiving them all is held
    held = await consolidate(book, person, rules=PassRules(max_share=0.1))
    assert held.status is PassStatus.HELD
    assert any("diabetes" in line for line in held.describe())

    await book.forget_source(person, "task:tsk_secret", actor="person")

    [after] = await store.memory_passes.list_memory_passes(person_id=person)
    assert len(after.operations) == len(held.operations) - 1
    assert not any("diabetes" in line for line in after.describe())
