"""``steward memory``: what Steward remembers about you — list, search, show, add, edit, delete,
archive, restore, promote, history, forget, and ``MEMORY.md`` export and import."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Sequence
from datetime import UTC, date, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.markup import escape
from rich.table import Table

from steward.cli.common import (
    DbOption,
    JsonOption,
    PersonOption,
    console,
    emit_one,
    fail,
    parse_time,
    read_input,
    run,
    service,
    to_jsonable,
    working,
)
from steward.cli.memory_bulk import import_statements, looks_like_statements
from steward.domain.memory import Memory, MemoryVersion
from steward.domain.memory_pass import PassStatus

if TYPE_CHECKING:
    from steward.memory.markdown import ImportReport

memory_app = typer.Typer(
    help="What Steward remembers about you, where it learned it, and forgetting.",
    no_args_is_help=True,
)

KindOption = typer.Option(
    None, "--kind", help="preference, fact, relationship, decision, episode or note."
)
AudienceOption = typer.Option(
    None, "--audience", help="Who may hear it: private, public or group:<name>."
)
SlotOption = typer.Option(
    None, "--slot", help="What it is the value of (home_city): a newer one supersedes it."
)
SubjectOption = typer.Option(None, "--subject", help="Who or what it is about (repeatable).")
ImportanceOption = typer.Option(None, "--importance", help="0 to 1: how much it matters.")
ValidFromOption = typer.Option(None, "--valid-from", help="True from (2026-05-01 or ISO time).")
ValidToOption = typer.Option(None, "--valid-to", help="True until (2026-05-01 or ISO time).")


def _when(value: str | None) -> datetime | None:
    """A date (midnight UTC) or an ISO-8601 time with an offset."""
    if value is None:
        return None
    try:
        day = date.fromisoformat(value)
    except ValueError:
        return parse_time(value)
    return datetime(day.year, day.month, day.day, tzinfo=UTC)


def _table(columns: Sequence[str], rows: Sequence[Sequence[object]], title: str = "") -> None:
    """A table whose cells are shown as written (a memory may contain [brackets])."""
    table = Table(title=title or None)
    for column in columns:
        table.add_column(column)
    for row in rows:
        table.add_row(*(escape("" if cell is None else str(cell)) for cell in row))
    console.print(table)


def _print_json(value: object) -> None:
    print(json.dumps(to_jsonable(value), indent=2))


def _memories(memories: Sequence[Memory], *, as_json: bool, title: str) -> None:
    if as_json:
        _print_json(list(memories))
        return
    _table(
        ["id", "kind", "status", "content", "audience", "slot", "v", "observed"],
        [
            [
                m.id,
                m.kind,
                m.status,
                m.content,
                m.audience,
                m.slot,
                m.version,
                m.observed_at.date().isoformat(),
            ]
            for m in memories
        ],
        title,
    )


@memory_app.command("list")
def memory_list(
    status: str | None = typer.Option(
        None, help="candidate, active, archived or deleted (default: all but deleted)."
    ),
    kind: str | None = KindOption,
    limit: int = typer.Option(100, help="Most memories."),
    offset: int = typer.Option(0, help="Skip this many (newest first)."),
    person: str | None = PersonOption,
    db: str | None = DbOption,
    as_json: bool = JsonOption,
) -> None:
    """Your memories, newest first."""

    async def main() -> None:
        async with service(db) as svc:
            who = await svc.person(person)
            found = await svc.list_memories(
                person_id=who.id, status=status, kind=kind, limit=limit, offset=offset
            )
        _memories(found, as_json=as_json, title="memories")

    run(main)


@memory_app.command("search")
def memory_search(
    query: str,
    audience: str = typer.Option(
        "private", help="Search as heard by: private (everything), public or group:<name>."
    ),
    mode: str | None = typer.Option(
        None, help="lexical, semantic or hybrid (default: hybrid with embeddings, else lexical)."
    ),
    limit: int = typer.Option(10, help="Most results."),
    person: str | None = PersonOption,
    db: str | None = DbOption,
    as_json: bool = JsonOption,
) -> None:
    """What recall would find now: active, valid memories the audience may hear."""

    async def main() -> None:
        async with service(db) as svc:
            who = await svc.person(person)
            hits = await svc.search_memories(
                person_id=who.id, query=query, audience=audience, mode=mode, limit=limit
            )
        if as_json:
            _print_json(hits)
            return
        _table(
            ["id", "score", "kind", "content", "found by", "provenance"],
            [
                [
                    h.memory.id,
                    f"{h.score:.4f}",
                    h.memory.kind,
                    h.memory.content,
                    "+".join(h.matched),
                    h.memory.provenance(),
                ]
                for h in hits
            ],
            f"memories matching {query!r}",
        )

    run(main)


@memory_app.command("show")
def memory_show(memory_id: str, db: str | None = DbOption, as_json: bool = JsonOption) -> None:
    """A memory with its provenance, what it replaced, and its version history."""

    async def main() -> None:
        async with service(db) as svc:
            detail = await svc.memory_detail(await svc.resolve_id(memory_id, "mem"))
        if as_json:
            _print_json(detail)
            return
        m = detail.memory
        say = console.print
        say(f"[bold]{m.id}[/bold] ({m.kind}, {m.status}, version {m.version})")
        say(escape(m.content))
        say(f"[bold]from[/bold]: {escape(m.provenance())}")
        facts = [
            ("audience", m.audience),
            ("slot", m.slot),
            ("subjects", ", ".join(m.subjects) or None),
            ("valid", f"{_day(m.valid_from) or '…'} to {_day(m.valid_to) or 'now'}"),
            ("confidence", m.confidence),
            ("importance", m.importance),
            ("recalled", f"{m.uses} times"),
        ]
        for name, value in facts:
            if value is not None:
                say(f"[bold]{name}[/bold]: {escape(str(value))}")
        for old in detail.supersedes:
            say(f"[bold]replaced[/bold]: {old.id} {escape(old.content)}")
        if detail.superseded_by is not None:
            new = detail.superseded_by
            say(f"[bold]replaced by[/bold]: {new.id} {escape(new.content)}")
        _history(detail.history)

    run(main)


def _day(when: datetime | None) -> str | None:
    return None if when is None else when.date().isoformat()


def _history(versions: Sequence[MemoryVersion]) -> None:
    _table(
        ["v", "at", "actor", "reason", "status", "content"],
        [
            [
                v.version,
                v.at.strftime("%Y-%m-%d %H:%M:%S"),
                v.actor,
                v.reason,
                v.memory.status,
                v.memory.content,
            ]
            for v in versions
        ],
        "history",
    )


@memory_app.command("history")
def memory_history(memory_id: str, db: str | None = DbOption, as_json: bool = JsonOption) -> None:
    """Every version of a memory: who changed it, when and why."""

    async def main() -> None:
        async with service(db) as svc:
            detail = await svc.memory_detail(await svc.resolve_id(memory_id, "mem"))
        if as_json:
            _print_json(detail.history)
        else:
            _history(detail.history)

    run(main)


@memory_app.command("add")
def memory_add(
    content: str,
    kind: str = typer.Option(
        "note", help="preference, fact, relationship, decision, episode or note."
    ),
    slot: str | None = SlotOption,
    subject: list[str] | None = SubjectOption,
    audience: str = typer.Option(
        "private", help="Who may hear it: private, public or group:<name>."
    ),
    importance: float = typer.Option(0.5, help="0 to 1: how much it matters."),
    valid_from: str | None = ValidFromOption,
    valid_to: str | None = ValidToOption,
    person: str | None = PersonOption,
    db: str | None = DbOption,
    as_json: bool = JsonOption,
) -> None:
    """Tell Steward something to remember about you."""

    async def main() -> None:
        async with service(db) as svc:
            who = await svc.person(person)
            written = await svc.remember(
                person_id=who.id,
                content=content,
                kind=kind,
                subjects=subject or (),
                slot=slot,
                audience=audience,
                importance=importance,
                valid_from=_when(valid_from),
                valid_to=_when(valid_to),
            )
        if as_json:
            _print_json(written)
        else:
            console.print(escape(written.describe()))

    run(main)


@memory_app.command("edit")
def memory_edit(
    memory_id: str,
    content: str | None = typer.Option(None, help="The new text."),
    kind: str | None = KindOption,
    slot: str | None = SlotOption,
    subject: list[str] | None = SubjectOption,
    audience: str | None = AudienceOption,
    importance: float | None = ImportanceOption,
    confidence: float | None = typer.Option(None, help="0 to 1: how sure it is right."),
    valid_from: str | None = ValidFromOption,
    valid_to: str | None = ValidToOption,
    expect_version: int | None = typer.Option(
        None, help="Refuse if the memory is no longer at this version (someone changed it)."
    ),
    db: str | None = DbOption,
    as_json: bool = JsonOption,
) -> None:
    """Change a memory; the old version stays in its history."""

    async def main() -> None:
        async with service(db) as svc:
            edited = await svc.edit_memory(
                await svc.resolve_id(memory_id, "mem"),
                expected_version=expect_version,
                content=content,
                kind=kind,
                subjects=subject,
                slot=slot,
                audience=audience,
                importance=importance,
                confidence=confidence,
                valid_from=_when(valid_from),
                valid_to=_when(valid_to),
            )
        _changed(edited, "edited", as_json=as_json)

    run(main)


def _changed(memory: Memory, what: str, *, as_json: bool) -> None:
    if as_json:
        emit_one(memory, as_json=True)
    else:
        console.print(f"{memory.id} {what} (now version {memory.version}, {memory.status})")


def _status_command(name: str, doc: str) -> None:
    def command(memory_id: str, db: str | None = DbOption, as_json: bool = JsonOption) -> None:
        async def main() -> None:
            async with service(db) as svc:
                change = {
                    "delete": svc.delete_memory,
                    "archive": svc.archive_memory,
                    "promote": svc.promote_memory,
                }[name]
                memory = await change(await svc.resolve_id(memory_id, "mem"))
            _changed(memory, f"{name}d", as_json=as_json)

        run(main)

    command.__doc__ = doc
    memory_app.command(name)(command)


_status_command("delete", "Delete a memory: never recalled again; `restore` undoes it.")
_status_command("archive", "Set a memory aside: kept, never recalled; `restore` undoes it.")
_status_command("promote", "Confirm a candidate memory, so that it is recalled.")


@memory_app.command("restore")
def memory_restore(
    memory_id: str,
    version: int | None = typer.Option(
        None, help="Make this earlier version current again (see `memory history`)."
    ),
    db: str | None = DbOption,
    as_json: bool = JsonOption,
) -> None:
    """Bring an archived or deleted memory back, or (with --version) an earlier version."""

    async def main() -> None:
        async with service(db) as svc:
            whole = await svc.resolve_id(memory_id, "mem")
            if version is None:
                memory = await svc.restore_memory(whole)
            else:
                memory = await svc.restore_memory_version(whole, version)
        _changed(memory, "restored", as_json=as_json)

    run(main)


@memory_app.command("forget")
def memory_forget(
    source: str | None = typer.Argument(
        None,
        help="A source: task:<id>, conversation:<id>, connector:<connection>[/<item>], "
        "person:<id>, import:<file>.",
    ),
    conversation: str | None = typer.Option(
        None, "--conversation", help="A conversation's task id: it and all its subtasks."
    ),
    person: str | None = PersonOption,
    db: str | None = DbOption,
    as_json: bool = JsonOption,
) -> None:
    """Purge every memory derived from a source, and never derive anything from it again."""
    if (source is None) == (conversation is None):
        raise typer.BadParameter("give a source, or --conversation TASK_ID (one of them)")

    async def main() -> None:
        async with service(db) as svc:
            with working("forgetting"):
                if conversation is not None:
                    done = await svc.forget_conversation(await svc.resolve_id(conversation, "tsk"))
                else:
                    who = await svc.person(person)
                    done = await svc.forget_source(source or "", person_id=who.id)
        if as_json:
            _print_json(done)
            return
        keys = ", ".join(t.source_key for t in done.tombstones)
        console.print(
            escape(
                f"forgot {keys}: {done.purged} memories and {done.skills} skills purged; "
                "nothing is derived from "
                f"{'them' if len(done.tombstones) > 1 else 'it'} again"
            )
        )

    run(main)


@memory_app.command("forgotten")
def memory_forgotten(
    person: str | None = PersonOption, db: str | None = DbOption, as_json: bool = JsonOption
) -> None:
    """The sources you had forgotten (tombstones), oldest first."""

    async def main() -> None:
        async with service(db) as svc:
            who = await svc.person(person)
            stones = await svc.list_tombstones(person_id=who.id)
        if as_json:
            _print_json(stones)
        else:
            _table(
                ["source", "forgotten at", "purged"],
                [[t.source_key, t.at.strftime("%Y-%m-%d %H:%M:%S"), t.purged] for t in stones],
                "forgotten sources",
            )

    run(main)


@memory_app.command("export")
def memory_export(
    output: Path | None = typer.Option(
        None, "--output", "-o", help="Write to this file (default: print it)."
    ),
    person: str | None = PersonOption,
    db: str | None = DbOption,
) -> None:
    """Your memories as an editable MEMORY.md (edit it, then `memory import` it)."""

    async def main() -> str:
        async with service(db) as svc:
            who = await svc.person(person)
            return await svc.export_memories(person_id=who.id)

    text = run(main)
    if output is None:
        sys.stdout.write(text)
        return
    try:
        output.write_text(text, encoding="utf-8")
    except OSError as exc:
        fail(f"cannot write {output}: {exc.strerror}")
    console.print(escape(f"wrote {output}"))


@memory_app.command("import")
def memory_import(
    file: Path = typer.Argument(
        ..., help="An edited MEMORY.md, or statements as JSON lines (- reads standard input)."
    ),
    archive_missing: bool = typer.Option(
        False, help="Archive the memories whose bullet you removed (else only report them)."
    ),
    name: str | None = typer.Option(
        None,
        "--name",
        help="Statements: the import's name (default: the file's); its memories cite "
        "import:<name>/<ref>, and forgetting import:<name> forgets them all.",
    ),
    person: str | None = PersonOption,
    db: str | None = DbOption,
    as_json: bool = JsonOption,
) -> None:
    """Apply your edits to MEMORY.md, or remember many statements at once.

    MEMORY.md: nothing is applied if a line is malformed; an edit of a memory that changed
    since the export is a conflict, not applied. Exits 1 on either.

    Statements (a chat history, a mailbox): one JSON object a line (or a JSON array), each
    with "content" and optionally "kind", "subjects", "slot", "audience", "importance",
    "valid_from", "valid_to", "observed_at" (when it was said), "ref" (its id in the import)
    and "trusted" (false for text written by others). What is already known is not written
    again, so importing the same file twice adds nothing."""
    stdin = str(file) == "-"
    text = read_input(str(file))
    if looks_like_statements(text):
        default = "stdin" if stdin else re.sub(r"[^A-Za-z0-9._-]+", "_", file.stem)[:100]
        import_statements(text, import_name=name or default, person=person, db=db, as_json=as_json)
        return

    async def main() -> ImportReport:
        async with service(db) as svc:
            who = await svc.person(person)
            with working("importing memories"):
                return await svc.import_memories(
                    text,
                    person_id=who.id,
                    file_name="MEMORY.md" if stdin else file.name,
                    archive_missing=archive_missing,
                )

    report = run(main)
    if as_json:
        _print_json({**to_jsonable(report), "applied": report.applied})
    else:
        _print_report(report)
    if report.errors or report.conflicts:
        raise typer.Exit(1)


def _print_report(report: ImportReport) -> None:
    say = console.print
    for note in report.errors:
        where = f"line {note.line}: " if note.line else ""
        say(escape(f"error: {where}{note.message}"))
    if report.errors:
        say("nothing was applied: fix the lines above and import again")
        return
    counts = [
        ("created", report.created),
        ("edited", report.edited),
        ("unchanged", report.unchanged),
        ("archived", report.archived),
    ]
    say(", ".join(f"{len(ids)} {what}" for what, ids in counts))
    for note in report.conflicts:
        say(escape(f"conflict: line {note.line}: {note.memory_id or 'new'}: {note.message}"))
    if report.missing:
        also = "archived" if report.archived else "kept (--archive-missing archives them)"
        say(f"missing from the file, {also}: {', '.join(report.missing)}")


@memory_app.command("passes")
def memory_passes(
    held: bool = typer.Option(False, "--held", help="Only the passes waiting for your review."),
    person: str | None = PersonOption,
    db: str | None = DbOption,
    as_json: bool = JsonOption,
) -> None:
    """Consolidation passes, newest first, with what each changed (or would change)."""

    async def main() -> None:
        async with service(db) as svc:
            who = await svc.person(person)
            passes = await svc.list_memory_passes(
                person_id=who.id, status=PassStatus.HELD if held else None
            )
        if as_json:
            _print_json(passes)
            return
        _table(
            ["pass", "status", "created", "changes", "drops"],
            [
                [
                    p.id,
                    p.status,
                    p.created_at.strftime("%Y-%m-%d %H:%M"),
                    len(p.operations),
                    p.drops,
                ]
                for p in passes
            ],
            "consolidation passes",
        )
        for held_pass in (p for p in passes if p.status is PassStatus.HELD):
            console.print(f"\n{held_pass.id} waits for you:")
            for line in held_pass.describe():
                console.print(f"  {escape(line)}")

    run(main)


@memory_app.command("review")
def memory_review(
    pass_id: str,
    approve: bool = typer.Option(
        ..., "--approve/--reject", help="Apply the held pass, or refuse it."
    ),
    db: str | None = DbOption,
    as_json: bool = JsonOption,
) -> None:
    """Decide a consolidation pass held for your review."""

    async def main() -> None:
        async with service(db) as svc:
            whole = await svc.resolve_id(pass_id, "mps")
            decided = await svc.decide_memory_pass(whole, approve=approve)
        if as_json:
            _print_json(decided)
            return
        skipped = [op for op in decided.operations if op.skipped]
        console.print(f"pass {decided.id}: {decided.status}")
        for op in skipped:
            console.print(f"  skipped: {escape(str(op.skipped))}")

    run(main)
