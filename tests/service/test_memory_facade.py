"""The memory part of the facade, on both backends: forgetting a conversation (subtasks
included) for good, deleting, archiving and restoring, versions and edit conflicts, MEMORY.md
round trips, and bad input that changes nothing."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from steward.domain import TaskSpec
from steward.domain.clock import SimulatedClock
from steward.domain.memory import Memory, MemoryKind, MemoryStatus, Source, SourceKind, WriteOutcome
from steward.domain.memory_pass import PassStatus
from steward.domain.personal import MemoryProposal, SkillProposal
from steward.errors import Conflict, InvalidTransition, NotFound, UsageError
from steward.memory.consolidation import PassRules, consolidate
from steward.memory.context import PersonalMemory
from steward.memory.skills import SkillLibrary
from steward.service import Service
from steward.store import Store
from steward.testing.embeddings import HashingEmbedder
from support.memory import everything


@pytest.fixture
async def svc(store: Store, clock: SimulatedClock) -> Service:
    return Service(store, clock)


@pytest.fixture
async def me(svc: Service) -> str:
    return (await svc.ensure_person()).id


async def contents(svc: Service, person: str, **filters: Any) -> list[str]:
    return sorted(m.content for m in await svc.list_memories(person_id=person, **filters))


async def found(svc: Service, person: str, query: str) -> list[str]:
    hits = await svc.search_memories(person_id=person, query=query)
    return [h.memory.content for h in hits]


async def test_forgetting_a_conversation_purges_it_and_its_subtasks_for_good(
    svc: Service, me: str, store: Store, clock: SimulatedClock
) -> None:
    chat = await svc.create_task(person_id=me, spec=TaskSpec(kind="agent"))
    sub = await store.tasks.create_task(
        TaskSpec(kind="agent"), person_id=me, parent_id=chat.id, now=clock.now()
    )
    subsub = await store.tasks.create_task(
        TaskSpec(kind="agent"), person_id=me, parent_id=sub.id, now=clock.now()
    )
    other = await svc.create_task(person_id=me, spec=TaskSpec(kind="agent"))
    agent = PersonalMemory(svc.memory)

    async def learn(task_id: str, content: str) -> str:
        return await agent.propose(
            MemoryProposal(person_id=me, content=content, kind="fact", task_id=task_id)
        )

    await learn(chat.id, "Ada's sister is called Ana")
    await learn(sub.id, "Ada's flat is in Kreuzberg")
    await learn(subsub.id, "Ada's dentist is Dr Weiss")
    await learn(other.id, "Ada's bank is in Hamburg")
    said_in_chat = await svc.memory.write(
        person_id=me,
        content="Ada's passport expires in June",
        kind=MemoryKind.FACT,
        source=Source(kind=SourceKind.CONVERSATION, ref=chat.id, trusted=True),
        actor=f"agent:{chat.id}",
    )
    assert said_in_chat.memory is not None
    # a memory derived in part from the conversation goes too
    await svc.memory.write(
        person_id=me,
        content="Ada's bank is in Hamburg",
        kind=MemoryKind.FACT,
        source=Source(kind=SourceKind.TASK, ref=sub.id, trusted=True),
        actor=f"agent:{sub.id}",
    )

    forgotten = await svc.forget_conversation(chat.id)

    assert forgotten.purged == 5
    assert await contents(svc, me, status="active") == []
    assert await found(svc, me, "Ada sister flat dentist passport bank") == []
    stones = {t.source_key for t in await svc.list_tombstones(person_id=me)}
    kinds = ("task", "conversation")
    assert stones == {f"{kind}:{t.id}" for t in (chat, sub, subsub) for kind in kinds}
    assert {t.source_key for t in forgotten.tombstones} == stones
    # a later write derived from the forgotten conversation creates nothing
    again = await learn(subsub.id, "Ada's dentist is Dr Weiss")
    assert "source was forgotten" in again
    assert await svc.store.memory.list_memories(person_id=me, limit=100) == []
    # the unrelated task's memories can be learned again, and forgetting again purges nothing
    assert (await learn(other.id, "Ada's bank is in Hamburg")).startswith("remembered")
    assert (await svc.forget_conversation(chat.id)).purged == 0
    assert await contents(svc, me) == ["Ada's bank is in Hamburg"]


async def test_forget_by_source_and_by_connection(svc: Service, me: str) -> None:
    def mail(item: str) -> Source:
        return Source(kind=SourceKind.CONNECTOR, ref=f"con_1/{item}", trusted=False)

    for item, content in (("m1", "Flight LH 123 on Friday"), ("m2", "Hotel booked in Rome")):
        await svc.memory.write(
            person_id=me, content=content, kind=MemoryKind.FACT, source=mail(item), actor="con"
        )
    await svc.remember(person_id=me, content="Prefers window seats", kind="preference")

    one = await svc.forget_source("connector:con_1/m1", person_id=me)
    assert (one.purged, [t.source_key for t in one.tombstones]) == (1, ["connector:con_1/m1"])
    assert await contents(svc, me) == ["Hotel booked in Rome", "Prefers window seats"]
    whole = await svc.forget_source(" connector:con_1 ", person_id=me)
    assert whole.purged == 1
    keys = [t.source_key for t in whole.tombstones]
    assert keys == ["connector:con_1", "connector:con_1/m2"]
    assert await contents(svc, me) == ["Prefers window seats"]


async def test_delete_archive_restore_and_promote(svc: Service, me: str) -> None:
    written = await svc.remember(person_id=me, content="Coffee: flat white", kind="preference")
    assert written.outcome is WriteOutcome.CREATED
    assert written.memory is not None
    memory_id = written.memory.id

    deleted = await svc.delete_memory(memory_id)
    assert deleted.status is MemoryStatus.DELETED
    assert await contents(svc, me) == []
    assert await found(svc, me, "coffee") == []
    assert await contents(svc, me, status="deleted") == ["Coffee: flat white"]
    assert (await svc.restore_memory(memory_id)).status is MemoryStatus.ACTIVE
    assert await found(svc, me, "coffee") == ["Coffee: flat white"]

    await svc.archive_memory(memory_id)
    assert await found(svc, me, "coffee") == []
    assert await contents(svc, me, status="archived") == ["Coffee: flat white"]
    with pytest.raises(UsageError, match="not a candidate"):
        await svc.promote_memory(memory_id)
    await svc.restore_memory(memory_id)
    with pytest.raises(UsageError, match="already active"):
        await svc.restore_memory(memory_id)

    reasons = [v.reason for v in (await svc.memory_detail(memory_id)).history]
    assert reasons == ["created", "deleted", "restored", "archived", "restored"]
    assert all(v.actor == "person" for v in (await svc.memory_detail(memory_id)).history)


async def test_an_untrusted_candidate_is_promoted_by_the_person_through_a_token(
    svc: Service, me: str
) -> None:
    proposed = await svc.memory.write(
        person_id=me,
        content="Works at Acme",
        kind=MemoryKind.FACT,
        slot="employer",
        source=Source(kind=SourceKind.CONNECTOR, ref="con_1/m9", trusted=False),
        actor="connector",
    )
    assert proposed.memory is not None
    assert proposed.memory.status is MemoryStatus.CANDIDATE
    assert await found(svc, me, "Acme") == []
    with pytest.raises(UsageError, match="is a candidate: promote it"):
        await svc.restore_memory(proposed.memory.id)
    _, token = await svc.create_token(person_id=me, name="phone", scopes=["control"])
    phone = await svc.authenticate(token)

    promoted = await phone.promote_memory(proposed.memory.id)

    assert promoted.status is MemoryStatus.ACTIVE
    assert await found(svc, me, "Acme") == ["Works at Acme"]
    last = (await svc.memory_detail(promoted.id)).history[-1]
    assert phone.principal is not None
    assert (last.actor, last.reason) == (f"person/token:{phone.principal.token.id}", "promoted")


async def test_a_move_shows_what_it_replaced_and_an_old_version_comes_back(
    svc: Service, me: str, clock: SimulatedClock
) -> None:
    lisbon = await svc.remember(
        person_id=me,
        content="Lives in Lisbon",
        kind="fact",
        slot="home_city",
        valid_from=datetime(2020, 1, 1, tzinfo=UTC),
    )
    clock.advance(timedelta(days=1))
    berlin = await svc.remember(
        person_id=me,
        content="Lives in Berlin",
        kind="fact",
        slot="home_city",
        valid_from=datetime(2026, 1, 1, tzinfo=UTC),
    )
    assert lisbon.memory is not None
    assert berlin.memory is not None

    new = await svc.memory_detail(berlin.memory.id)
    old = await svc.memory_detail(lisbon.memory.id)
    assert [m.id for m in new.supersedes] == [lisbon.memory.id]
    assert old.superseded_by is not None
    assert old.superseded_by.id == berlin.memory.id
    assert new.memory.provenance().startswith("person:say_")

    edited = await svc.edit_memory(berlin.memory.id, content="Lives in Berlin-Mitte")
    restored = await svc.restore_memory_version(berlin.memory.id, 1)
    assert (edited.version, restored.version, restored.content) == (2, 3, "Lives in Berlin")
    with pytest.raises(UsageError, match="no version 7"):
        await svc.restore_memory_version(berlin.memory.id, 7)


async def test_an_edit_of_a_stale_version_is_a_conflict_and_changes_nothing(
    svc: Service, me: str
) -> None:
    written = await svc.remember(person_id=me, content="Gym on Mondays", kind="note")
    assert written.memory is not None
    memory_id = written.memory.id
    await svc.edit_memory(memory_id, content="Gym on Tuesdays", expected_version=1)
    before = await everything(svc, me)

    with pytest.raises(Conflict, match="changed meanwhile"):
        await svc.edit_memory(memory_id, content="Gym on Fridays", expected_version=1)

    assert await everything(svc, me) == before


async def test_bad_input_is_one_clear_error_and_changes_nothing(svc: Service, me: str) -> None:
    written = await svc.remember(person_id=me, content="Tea, no sugar", kind="preference")
    assert written.memory is not None
    memory_id = written.memory.id
    before = await everything(svc, me)
    refused: list[tuple[Any, type[Exception], str]] = [
        (svc.memory_detail("mem_nope"), NotFound, "memory 'mem_nope' not found"),
        (svc.delete_memory("mem_nope"), NotFound, "not found"),
        (svc.edit_memory(memory_id, content="   "), UsageError, "needs content"),
        (svc.edit_memory(memory_id), UsageError, "nothing to change"),
        (svc.edit_memory(memory_id, audience="everyone"), UsageError, "bad audience"),
        (svc.edit_memory(memory_id, kind="opinion"), UsageError, "unknown kind 'opinion'"),
        (svc.remember(person_id=me, content=""), UsageError, "needs content"),
        (
            svc.remember(person_id=me, content="x", audience="group:"),
            UsageError,
            "bad group name",
        ),
        (svc.remember(person_id=me, content="x", importance=3), UsageError, "importance"),
        (svc.forget_source("gossip:x", person_id=me), UsageError, "bad source 'gossip:x'"),
        (svc.forget_source("task:a b", person_id=me), UsageError, "no spaces"),
        (svc.forget_source("task:", person_id=me), UsageError, "bad source reference"),
        (svc.forget_conversation("tsk_nope"), NotFound, "tsk_nope"),
        (svc.list_memories(person_id=me, status="gone"), UsageError, "unknown status"),
        (svc.list_memories(person_id=me, limit=0), UsageError, "limit"),
        (svc.search_memories(person_id=me, query=" "), UsageError, "what to search"),
        (svc.search_memories(person_id=me, query="tea", mode="vibes"), UsageError, "mode"),
        (
            svc.search_memories(person_id=me, query="tea", mode="semantic"),
            UsageError,
            "needs an embedder",
        ),
        (svc.restore_memory_version(memory_id, 0), UsageError, "no version 0"),
    ]
    for call, error, message in refused:
        with pytest.raises(error, match=message):
            await call
    assert await everything(svc, me) == before


async def test_semantic_search_with_an_embedder(store: Store, clock: SimulatedClock) -> None:
    svc = Service(store, clock, embedder=HashingEmbedder(synonyms={"flat": "apartment"}))
    me = (await svc.ensure_person()).id
    await svc.remember(person_id=me, content="Rents an apartment near the park", kind="fact")
    await svc.remember(person_id=me, content="Drinks green tea", kind="preference")

    hits = await svc.search_memories(person_id=me, query="flat", mode="semantic", limit=1)

    assert [h.memory.content for h in hits] == ["Rents an apartment near the park"]
    assert hits[0].matched == ("semantic",)


async def test_export_edit_import_round_trip_with_a_conflict(
    svc: Service, me: str, clock: SimulatedClock
) -> None:
    seat = await svc.remember(person_id=me, content="Prefers aisle seats", kind="preference")
    city = await svc.remember(person_id=me, content="Lives in Lisbon", kind="fact", slot="city")
    gym = await svc.remember(person_id=me, content="Gym on Mondays", kind="note")
    assert seat.memory is not None
    assert city.memory is not None
    assert gym.memory is not None
    exported = await svc.export_memories(person_id=me)
    # meanwhile the gym memory changes elsewhere
    await svc.edit_memory(gym.memory.id, content="Gym on Wednesdays")
    clock.advance(timedelta(minutes=5))
    edited = (
        exported.replace("Prefers aisle seats", "Prefers window seats")
        .replace("Gym on Mondays", "Gym on Thursdays")
        .replace("slot=city", "slot=city audience=group:family")
        .replace("## Notes\n", "## Notes\n\n- Allergic to peanuts <!-- importance=0.9 -->\n")
    )
    edited = "\n".join(line for line in edited.splitlines() if "Lives in Lisbon" not in line)

    report = await svc.import_memories(edited, person_id=me)

    assert report.applied
    assert report.edited == [seat.memory.id]
    assert [(c.memory_id, "version 2" in c.message) for c in report.conflicts] == [
        (gym.memory.id, True)
    ]
    assert report.missing == [city.memory.id]
    assert report.archived == []
    [new_id] = report.created
    new = (await svc.memory_detail(new_id)).memory
    assert (new.content, new.importance, new.sources[0].key) == (
        "Allergic to peanuts",
        0.9,
        "import:MEMORY.md",
    )
    assert await contents(svc, me) == [
        "Allergic to peanuts",
        "Gym on Wednesdays",
        "Lives in Lisbon",
        "Prefers window seats",
    ]
    # the same file again: what was applied is unchanged now, and nothing is created twice
    again = await svc.import_memories(edited, person_id=me, archive_missing=True)
    assert again.created == []
    assert again.edited == []
    assert again.unchanged == [seat.memory.id, new_id]
    assert [c.memory_id for c in again.conflicts] == [gym.memory.id]
    assert again.archived == [city.memory.id]
    assert await contents(svc, me, status="archived") == ["Lives in Lisbon"]


async def test_a_malformed_file_applies_nothing(svc: Service, me: str) -> None:
    written = await svc.remember(person_id=me, content="Likes jazz", kind="preference")
    assert written.memory is not None
    exported = await svc.export_memories(person_id=me)
    broken = exported.replace("Likes jazz", "Likes blues") + "- Orphan bullet <!-- mood=5 -->\n"
    before = await everything(svc, me)

    report = await svc.import_memories(broken, person_id=me, archive_missing=True)

    assert not report.applied
    assert [e.message.split(" ")[:2] for e in report.errors] == [["unknown", "field"]]
    assert report.errors[0].line == len(broken.splitlines())
    assert await everything(svc, me) == before


async def test_a_held_consolidation_pass_is_reviewed_through_the_facade(
    svc: Service, me: str
) -> None:
    """Two tasks wrote the same thing at once; merging them would set aside half of the
    active memories, so the pass waits; the person approves it and it applies."""
    now = svc.clock.now()
    for ref in ("tsk_a", "tsk_b"):  # what two tasks writing at the same moment leave behind
        await svc.store.memory.add_memory(
            Memory(
                id=f"mem_{ref}",
                person_id=me,
                kind=MemoryKind.PREFERENCE,
                content="Prefers aisle seats",
                sources=(Source(kind=SourceKind.TASK, ref=ref, trusted=True),),
                observed_at=now,
                created_at=now,
                updated_at=now,
            ),
            actor=f"agent:{ref}",
        )
    planned = await consolidate(svc.memory, me, rules=PassRules(max_share=0.2))
    [held] = await svc.list_memory_passes(person_id=me, status=PassStatus.HELD)
    assert held.id == planned.id

    with pytest.raises(NotFound):
        await svc.decide_memory_pass("mps_nope", approve=True)
    decided = await svc.decide_memory_pass(held.id, approve=True)

    assert decided.status is PassStatus.APPLIED
    assert await contents(svc, me, status=MemoryStatus.ACTIVE) == ["Prefers aisle seats"]
    with pytest.raises(InvalidTransition, match="only a held pass waits"):
        await svc.decide_memory_pass(held.id, approve=False)


async def test_forgetting_a_connection_forgets_its_items_now_and_later(
    svc: Service, me: str
) -> None:
    def item(ref: str) -> Source:
        return Source(kind=SourceKind.CONNECTOR, ref=ref, trusted=False)

    for ref, content in (("con_mail/m1", "Dentist is Dr. Silva"), ("con_mail/m2", "Gym at 7")):
        await svc.memory.write(
            person_id=me, content=content, kind=MemoryKind.FACT, source=item(ref), actor="agent:x"
        )
    kept = await svc.memory.write(
        person_id=me,
        content="Calendar says piano on Tuesdays",
        kind=MemoryKind.FACT,
        source=item("con_cal/e1"),
        actor="agent:x",
    )

    forgotten = await svc.forget_source("connector:con_mail", person_id=me)

    assert forgotten.purged == 2
    assert await contents(svc, me) == ["Calendar says piano on Tuesdays"]
    later = await svc.memory.write(
        person_id=me,
        content="Newsletter says the gym moved",
        kind=MemoryKind.FACT,
        source=item("con_mail/m9"),  # an item fetched after the connection was forgotten
        actor="agent:x",
    )
    assert (later.outcome, later.memory) == (WriteOutcome.FORGOTTEN, None)
    assert kept.memory is not None
    assert (await svc.memory_detail(kept.memory.id)).memory.content == kept.memory.content


async def test_forgetting_a_conversation_deletes_the_skills_learned_in_it(
    svc: Service, me: str
) -> None:
    chat = await svc.ask_agent(person_id=me, instructions="find the invoice total")
    library = SkillLibrary(svc.store, svc.clock)
    for name, task in (("invoice-total", chat.id), ("weather", "tsk_other")):
        await library.take(
            SkillProposal(
                person_id=me,
                name=name,
                description=f"How to do {name}",
                procedure="1. Look it up.",
                task_id=task,
            )
        )

    done = await svc.forget_conversation(chat.id)

    assert done.skills == 1
    assert [s.name for s in await svc.list_skills(person_id=me)] == ["weather"]
    forgotten = [e.data for e in await svc.audit_log(person_id=me) if e.kind == "skill_forgotten"]
    assert len(forgotten) == 1
    assert f"task:{chat.id}" in forgotten[0]["sources"]
