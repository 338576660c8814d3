"""MEMORY.md: what is exported reads back as it was; malformed lines are reported by number and
apply nothing; edits, status changes, moves, conflicts and missing bullets on import."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from steward.domain.audience import Audience
from steward.domain.clock import SimulatedClock
from steward.domain.ids import new_id
from steward.domain.memory import MAX_CONTENT, Memory, MemoryKind, MemoryStatus, Source, SourceKind
from steward.memory.book import MemoryBook
from steward.memory.markdown import (
    ImportReport,
    Values,
    export_markdown,
    import_markdown,
    parse,
    render,
)
from steward.store import Store

MAY = datetime(2026, 5, 1, tzinfo=UTC)


async def remember(
    book: MemoryBook, person: str, content: str, kind: MemoryKind = MemoryKind.FACT, **more: Any
) -> Memory:
    written = await book.write(
        person_id=person,
        content=content,
        kind=kind,
        source=Source(kind=SourceKind.PERSON, ref=new_id("say"), trusted=True),
        actor="person",
        **more,
    )
    assert written.memory is not None
    return written.memory


async def apply(
    book: MemoryBook, person: str, text: str, *, archive_missing: bool = False
) -> ImportReport:
    return await import_markdown(
        book,
        text,
        person_id=person,
        source_ref="MEMORY.md",
        actor="person",
        archive_missing=archive_missing,
    )


async def test_every_field_exported_reads_back_as_it_was(book: MemoryBook, person: str) -> None:
    full = await remember(
        book,
        person,
        "Ana [sister] <!-- not a trailer --> lives in Porto",
        MemoryKind.RELATIONSHIP,
        subjects=["Ana Silva", "Porto"],
        slot="sister's city",
        audience=Audience.parse("group:family"),
        importance=0.8,
        confidence=0.7,
        valid_from=MAY,
        valid_to=MAY + timedelta(days=30),
    )
    candidate = await remember(book, person, "Likes opera", MemoryKind.PREFERENCE, candidate=True)
    archived = await remember(book, person, "Gym on Mondays", MemoryKind.NOTE)
    archived = await book.set_status(archived.id, MemoryStatus.ARCHIVED, actor="person")
    deleted = await remember(book, person, "Owes Bob 5 euros", MemoryKind.NOTE)
    await book.set_status(deleted.id, MemoryStatus.DELETED, actor="person")
    old = await remember(book, person, "Lives in Lisbon", slot="home_city", valid_from=MAY)
    new = await remember(
        book, person, "Lives in Berlin", slot="home_city", valid_from=MAY + timedelta(days=1)
    )

    text = await export_markdown(book, person_id=person)
    parsed = parse(text)

    assert parsed.errors == []
    assert parsed.person_id == person
    read = {e.memory_id: (e.version, e.values) for e in parsed.entries if e.memory_id}
    current = {m.id: m for m in await book.store.memory.get_memories(list(read))}
    assert len(parsed.entries) == len(read)
    assert set(read) == {full.id, candidate.id, archived.id, new.id}  # not deleted, not replaced
    for memory_id, (version, values) in read.items():
        assert (version, values) == (current[memory_id].version, Values.of(current[memory_id]))
    assert old.id not in text
    assert text.index("## Relationships") < text.index("Ana [sister]") < text.index("## Decisions")


def test_malformed_lines_are_reported_by_number() -> None:
    long = "x" * (MAX_CONTENT + 1)
    text = "\n".join(
        [
            "# Memory",  # 1
            "- before any heading",  # 2
            "## Facts",  # 3
            "Some prose the person wrote",  # 4
            "- Lives in Berlin <!-- mem_abc -->",  # 5
            "- Lives in Berlin <!-- mem_abc v2 audience=everyone -->",  # 6
            "- Lives in Berlin <!-- status=deleted -->",  # 7
            "- Lives in Berlin <!-- importance=high -->",  # 8
            "- Lives in Berlin <!-- valid_from=2026-05-01 valid_to=2026-04-01 -->",  # 9
            "- Lives in Berlin <!-- slot='home city -->",  # 10
            "-   <!-- mem_abc v2 -->",  # 11
            f"- {long}",  # 12
            "## Opinions",  # 13
            "- Under a bad heading",  # 14
            "## notes",  # 15
            "- Fine <!-- subject='Ana Silva' subject=Porto -->",  # 16
        ]
    )

    parsed = parse(text)

    assert [(e.line, e.message.split(":")[0]) for e in parsed.errors] == [
        (2, "a bullet before any '## <Kind>' heading"),
        (4, "not a memory"),
        (5, "mem_abc needs its version after it (like v3)"),
        (6, "bad audience 'everyone'"),
        (7, "status must be one of active, candidate, archived, not 'deleted'"),
        (8, "importance must be a number from 0 to 1, not 'high'"),
        (9, "valid_to must be after valid_from"),
        (10, "its trailer does not read"),
        (11, "an empty memory"),
        (12, f"a memory is at most {MAX_CONTENT} characters, not {MAX_CONTENT + 1}"),
        (13, "unknown heading 'Opinions'"),
    ]
    [fine] = parsed.entries
    assert (fine.line, fine.values.kind, fine.values.subjects) == (
        16,
        MemoryKind.NOTE,
        ("Ana Silva", "Porto"),
    )


def test_a_bullet_without_a_trailer_is_all_text() -> None:
    [entry] = parse("## Notes\n* Use <!-- and --> in HTML comments\n").entries
    assert (entry.memory_id, entry.values.content) == (None, "Use <!-- and --> in HTML comments")
    assert render([], person_id="per_x", exported_at=MAY).count("## ") == 6


async def test_status_kind_and_field_edits_apply_as_versions(book: MemoryBook, person: str) -> None:
    proposed = await remember(book, person, "Works at Acme", candidate=True)
    gym = await remember(book, person, "Gym on Mondays", MemoryKind.NOTE)
    text = await export_markdown(book, person_id=person)
    edited = (
        text.replace(" status=candidate", "")
        .replace(f"{gym.id} v1 audience=private", f"{gym.id} v1 audience=public status=archived")
        .replace("- Gym on Mondays", "- Gym on Tuesdays")
    )
    # move the gym bullet under Decisions
    lines = edited.splitlines()
    gym_line = next(line for line in lines if gym.id in line)
    lines.remove(gym_line)
    lines.insert(lines.index("## Decisions") + 1, gym_line)

    report = await apply(book, person, "\n".join(lines))

    assert (report.errors, report.conflicts) == ([], [])
    assert sorted(report.edited) == sorted([proposed.id, gym.id])
    promoted = await book.store.memory.get_memory(proposed.id)
    moved = await book.store.memory.get_memory(gym.id)
    assert promoted.status is MemoryStatus.ACTIVE
    assert (moved.kind, moved.content, str(moved.audience), moved.status) == (
        MemoryKind.DECISION,
        "Gym on Tuesdays",
        "public",
        MemoryStatus.ARCHIVED,
    )
    assert [v.reason for v in await book.history(gym.id)] == ["created", "edited", "imported"]


async def test_a_memory_changed_or_deleted_since_the_export_is_a_conflict(
    book: MemoryBook, person: str
) -> None:
    tea = await remember(book, person, "Drinks green tea", MemoryKind.PREFERENCE)
    jazz = await remember(book, person, "Likes jazz", MemoryKind.PREFERENCE)
    text = await export_markdown(book, person_id=person)
    await book.edit(tea.id, actor="person", content="Drinks black tea")
    await book.set_status(jazz.id, MemoryStatus.DELETED, actor="person")
    edited = text.replace("green tea", "mint tea").replace("Likes jazz", "Loves jazz")

    report = await apply(book, person, edited)

    assert {c.memory_id: c.message.split(";")[0] for c in report.conflicts} == {
        tea.id: "changed since the export (now version 2: edited)",
        jazz.id: "changed since the export (now version 2: deleted)",
    }
    assert (await book.store.memory.get_memory(tea.id)).content == "Drinks black tea"
    assert (await book.store.memory.get_memory(jazz.id)).status is MemoryStatus.DELETED
    # a bullet the person left alone is no conflict, however the memory changed
    assert (await apply(book, person, text)).conflicts == []


async def test_lines_that_cannot_apply_stop_the_whole_import(
    book: MemoryBook, person: str, store: Store, clock: SimulatedClock
) -> None:
    city = await remember(book, person, "Lives in Berlin", slot="home_city", valid_from=MAY)
    text = await export_markdown(book, person_id=person)
    bullet = next(line for line in text.splitlines() if city.id in line)
    other = (await store.persons.create_person(name="bob", now=clock.now())).id
    cases = {
        "cannot be removed": text.replace(" slot=home_city", ""),
        "already on line": text.replace(bullet, f"{bullet}\n{bullet}"),
        "has no version 9": text.replace(f"{city.id} v1", f"{city.id} v9"),
        "another person's export": text.replace(f"person={person}", f"person={other}"),
        "active or candidate": text + "- Old news <!-- status=archived -->\n",
    }
    before = await book.history(city.id)
    for expected, edited in cases.items():
        report = await apply(book, person, edited + "- Something new\n", archive_missing=True)
        assert not report.applied
        assert any(expected in e.message for e in report.errors), (expected, report.errors)
        assert (report.created, report.edited, report.archived) == ([], [], [])
    assert await book.history(city.id) == before
    assert len(await book.store.memory.list_memories(person_id=person)) == 1


async def test_new_bullets_from_a_forgotten_file_are_refused(book: MemoryBook, person: str) -> None:
    first = await apply(book, person, "## Notes\n- Likes chess\n")
    await book.forget_source(person, "import:MEMORY.md", actor="person")

    report = await apply(book, person, "## Notes\n- Likes chess\n- Likes go\n")

    assert len(first.created) == 1
    assert [e.message.split(" ")[0] for e in report.errors] == ["import:MEMORY.md"]
    assert await book.store.memory.list_memories(person_id=person) == []


async def test_missing_bullets_are_reported_and_archived_only_when_asked(
    book: MemoryBook, person: str, clock: SimulatedClock
) -> None:
    kept = await remember(book, person, "Likes chess", MemoryKind.PREFERENCE)
    dropped = await remember(book, person, "Likes go", MemoryKind.PREFERENCE)
    text = await export_markdown(book, person_id=person)
    clock.advance(timedelta(minutes=1))
    later = await remember(book, person, "Likes poker", MemoryKind.PREFERENCE)
    without = "\n".join(line for line in text.splitlines() if dropped.id not in line)

    reported = await apply(book, person, without)
    archived = await apply(book, person, without, archive_missing=True)
    stray = await apply(book, person, "## Facts\n- Something else\n")

    assert (reported.missing, reported.archived) == ([dropped.id], [])
    assert (archived.missing, archived.archived) == ([dropped.id], [dropped.id])
    assert (await book.store.memory.get_memory(dropped.id)).status is MemoryStatus.ARCHIVED
    assert (
        await book.store.memory.get_memory(later.id)
    ).status is MemoryStatus.ACTIVE  # made later
    assert reported.unchanged == [kept.id]
    # without the export's header every memory not in the file is missing
    assert sorted(stray.missing) == sorted([kept.id, dropped.id, later.id])
