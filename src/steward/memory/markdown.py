"""``MEMORY.md``: a person's memories as a Markdown file they can read and edit, and the import
that applies their edits back.

The file has a ``## <Kind>`` heading per kind; each memory is one ``- `` bullet: its text, then
a trailer, an HTML comment that rendered Markdown hides::

    ## Facts

    - Lives in Berlin <!-- mem_3f… v3 audience=private slot=home_city -->

The trailer names the memory and the version exported, so an import tells the person's edits
from changes made since. A bullet that differs from the version it was exported at is an edit,
applied only if the memory has not changed since (otherwise a conflict: reported, never
overwritten). A bullet without an id is a new memory (its trailer may still set fields,
``<!-- slot=home_city -->``). An exported memory with no bullet is reported missing, and
archived only when asked. Moving a bullet under another heading changes its kind; the text,
``audience``, ``status`` (active, candidate, archived), ``slot``, ``subject`` (repeatable),
``importance``, ``confidence``, ``valid_from`` and ``valid_to`` may be edited.

The import reads the whole file against the store before it writes anything, and writes nothing
if any line is malformed: the person fixes the lines reported and imports again.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from steward.domain.audience import PRIVATE, Audience
from steward.domain.memory import (
    MAX_CONTENT,
    Memory,
    MemoryKind,
    MemoryStatus,
    Source,
    SourceKind,
    WriteOutcome,
)
from steward.errors import Conflict, UsageError

if TYPE_CHECKING:
    from steward.memory.book import MemoryBook

HEADER = "steward-memory"
"""The first word of the comment that says whose export a file is, and when it was made."""
_TITLES = {
    MemoryKind.PREFERENCE: "Preferences",
    MemoryKind.FACT: "Facts",
    MemoryKind.RELATIONSHIP: "Relationships",
    MemoryKind.DECISION: "Decisions",
    MemoryKind.EPISODE: "Episodes",
    MemoryKind.NOTE: "Notes",
}
_HEADINGS = {name.lower(): kind for kind, title in _TITLES.items() for name in (title, kind)}
_HELP = (
    "Edit a bullet's text or its fields to change a memory; move it under another heading to "
    "change its kind; add a bullet to add a memory; keep the comment that ends each bullet "
    "with it. Then: steward memory import <this file>"
)
_SHOWN = (MemoryStatus.ACTIVE, MemoryStatus.CANDIDATE, MemoryStatus.ARCHIVED)
"""Statuses exported (deleted memories are restored with the CLI, not from the file)."""
_ID = re.compile(r"^mem_\w+$")
_VERSION = re.compile(r"^v(\d+)$")
_PAIR = re.compile(r"^(\w+)=(.*)$", re.DOTALL)
_BULLET = re.compile(r"^[-*]\s+(.*)$")
_HEADING = re.compile(r"^##\s+(.*?)\s*$")


@dataclass(kw_only=True, frozen=True)
class Values:
    """What a bullet says about a memory: everything the file lets the person edit."""

    kind: MemoryKind
    """From the heading the bullet is under."""
    content: str
    """The bullet's text, whitespace collapsed."""
    audience: Audience = PRIVATE
    """``audience=``."""
    status: MemoryStatus = MemoryStatus.ACTIVE
    """``status=`` (active when absent)."""
    slot: str | None = None
    """``slot=``."""
    subjects: tuple[str, ...] = ()
    """``subject=``, once per subject."""
    importance: float = 0.5
    """``importance=`` (0.5 when absent)."""
    confidence: float = 1.0
    """``confidence=`` (1 when absent)."""
    valid_from: datetime | None = None
    """``valid_from=``, ISO 8601 (a date alone is midnight UTC)."""
    valid_to: datetime | None = None
    """``valid_to=``, likewise."""

    @classmethod
    def of(cls, memory: Memory) -> Values:
        return cls(**{f.name: getattr(memory, f.name) for f in fields(cls)})


@dataclass(kw_only=True, frozen=True)
class Entry:
    """One bullet of the file."""

    line: int
    """Its line number, from 1."""
    memory_id: str | None
    """The memory it was exported from; None for a bullet the person added."""
    version: int | None
    """The version it was exported at (with ``memory_id``)."""
    values: Values
    """What it says."""


@dataclass(kw_only=True, frozen=True)
class ImportNote:
    """A line of the file the import did not apply, and why."""

    line: int
    """Its line number (0: not about one line)."""
    memory_id: str | None
    """The memory it is about, if any."""
    message: str
    """What is wrong, for the person."""


@dataclass(kw_only=True, frozen=True)
class ImportReport:
    """What an import of ``MEMORY.md`` did."""

    created: list[str] = field(default_factory=list)
    """Memories added from new bullets."""
    edited: list[str] = field(default_factory=list)
    """Memories changed (each got a new version)."""
    unchanged: list[str] = field(default_factory=list)
    """Memories whose bullet says what they said when exported (or a new bullet repeating one
    already remembered)."""
    conflicts: list[ImportNote] = field(default_factory=list)
    """Edits not applied because the memory changed (or went) since the export."""
    missing: list[str] = field(default_factory=list)
    """Exported memories whose bullet is gone from the file."""
    archived: list[str] = field(default_factory=list)
    """Of those, the ones archived (only when asked)."""
    errors: list[ImportNote] = field(default_factory=list)
    """Malformed lines. When there are any, nothing was applied."""

    @property
    def applied(self) -> bool:
        return not self.errors


@dataclass(kw_only=True, frozen=True)
class ParsedFile:
    """A file read, before anything is looked up."""

    entries: list[Entry]
    """Its bullets, in order."""
    errors: list[ImportNote]
    """Its malformed lines."""
    person_id: str | None
    """Whose export it says it is (None without a header)."""
    exported_at: datetime | None
    """When it was exported (None without a header)."""


# --- export ---------------------------------------------------------------------------------


def exported(memory: Memory) -> bool:
    """Whether a memory belongs in the file: kept, and not replaced by a newer one."""
    return memory.status in _SHOWN and memory.superseded_by is None


def render(memories: Sequence[Memory], *, person_id: str, exported_at: datetime) -> str:
    """The file for these memories (those :func:`exported` says belong in it)."""
    order = {status: i for i, status in enumerate(_SHOWN)}
    lines = [
        "# Memory",
        "",
        f"<!-- {HEADER} person={person_id} exported={exported_at.isoformat()} -->",
        f"<!-- {_HELP} -->",
    ]
    for kind, title in _TITLES.items():
        lines += ["", f"## {title}", ""]
        mine = sorted(
            (m for m in memories if m.kind is kind and exported(m)),
            key=lambda m: (order[m.status], m.created_at, m.id),
        )
        lines += [f"- {m.content} <!-- {_trailer(m)} -->" for m in mine]
    return "\n".join(lines).replace("\n\n\n", "\n\n") + "\n"


def _trailer(memory: Memory) -> str:
    pairs: list[tuple[str, str]] = [("audience", str(memory.audience))]
    if memory.status is not MemoryStatus.ACTIVE:
        pairs.append(("status", str(memory.status)))
    if memory.slot is not None:
        pairs.append(("slot", memory.slot))
    pairs += [("subject", s) for s in memory.subjects]
    if memory.importance != Values.importance:
        pairs.append(("importance", repr(memory.importance)))
    if memory.confidence != Values.confidence:
        pairs.append(("confidence", repr(memory.confidence)))
    for name in ("valid_from", "valid_to"):
        when: datetime | None = getattr(memory, name)
        if when is not None:
            pairs.append((name, when.isoformat()))
    words = [memory.id, f"v{memory.version}", *(f"{k}={shlex.quote(v)}" for k, v in pairs)]
    return " ".join(words)


async def export_markdown(book: MemoryBook, *, person_id: str) -> str:
    memories = await book.store.memory.list_memories(
        person_id=person_id, statuses=list(_SHOWN), limit=1_000_000
    )
    return render(memories, person_id=person_id, exported_at=book.clock.now())


# --- parsing --------------------------------------------------------------------------------


def parse(text: str) -> ParsedFile:
    """Read a file; every malformed line is an error with its number, nothing is looked up."""
    entries: list[Entry] = []
    errors: list[ImportNote] = []
    kind: MemoryKind | None = None
    bad_heading = False  # its bullets are not reported a second time
    person_id: str | None = None
    exported_at: datetime | None = None

    def error(line: int, message: str) -> None:
        errors.append(ImportNote(line=line, memory_id=None, message=message))

    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line == "#" or line.startswith("# "):  # blank, or the title
            continue
        if line.startswith("<!--") and line.endswith("-->"):
            try:
                header = _header(line[4:-3])
            except UsageError as exc:
                error(number, str(exc))
                continue
            if header is not None:
                person_id, exported_at = header
            continue
        heading = _HEADING.match(line)
        if heading is not None:
            kind = _HEADINGS.get(heading.group(1).lower())
            bad_heading = kind is None
            if kind is None:
                titles = ", ".join(_TITLES.values())
                error(number, f"unknown heading {heading.group(1)!r}: use one of {titles}")
            continue
        bullet = _BULLET.match(line)
        if bullet is None:
            error(
                number,
                "not a memory: each memory is one '- ' bullet under a '## <Kind>' heading",
            )
            continue
        if kind is None:
            if not bad_heading:
                error(number, "a bullet before any '## <Kind>' heading: put it under one")
            continue
        try:
            entries.append(_entry(number, bullet.group(1), kind))
        except UsageError as exc:
            error(number, str(exc))
    return ParsedFile(entries=entries, errors=errors, person_id=person_id, exported_at=exported_at)


def _header(body: str) -> tuple[str, datetime] | None:
    """``steward-memory person=… exported=…`` as (person, time); None for any other comment."""
    words = body.split()
    if not words or words[0] != HEADER:
        return None
    pairs = dict(w.split("=", 1) for w in words[1:] if "=" in w)
    if "person" not in pairs or "exported" not in pairs:
        raise UsageError(f"the {HEADER} comment needs person= and exported=")
    return pairs["person"], _when(pairs["exported"], "exported")


def _entry(line: int, text: str, kind: MemoryKind) -> Entry:
    content, words = _split_trailer(text)
    content = " ".join(content.split())
    memory_id: str | None = None
    version: int | None = None
    if words and _ID.match(words[0]):
        memory_id, words = words[0], words[1:]
        found = _VERSION.match(words[0]) if words else None
        if found is None:
            raise UsageError(f"{memory_id} needs its version after it (like v3)")
        version, words = int(found.group(1)), words[1:]
    values = _values(kind, content, words)
    return Entry(line=line, memory_id=memory_id, version=version, values=values)


def _split_trailer(text: str) -> tuple[str, list[str]]:
    """A bullet's text and the words of its trailer (none when it has none). The trailer is
    the first ``<!-- … -->`` that ends the line and reads as one, so a memory's text may itself
    contain comment marks."""
    stripped = text.rstrip()
    if not stripped.endswith("-->"):
        return stripped, []
    problem = "its comment is not a trailer (like <!-- mem_… v3 audience=private -->)"
    for found in re.finditer(re.escape("<!--"), stripped):
        try:
            words = shlex.split(stripped[found.end() : -3])
        except ValueError as exc:
            problem = f"its trailer does not read: {exc}"
            continue
        if all(_ID.match(w) or _VERSION.match(w) or _PAIR.match(w) for w in words):
            return stripped[: found.start()], words
    raise UsageError(problem)


_KEYS = (
    "audience",
    "status",
    "slot",
    "subject",
    "importance",
    "confidence",
    "valid_from",
    "valid_to",
)


def _values(kind: MemoryKind, content: str, words: Sequence[str]) -> Values:
    if not content:
        raise UsageError("an empty memory: write its text before the comment")
    if len(content) > MAX_CONTENT:
        raise UsageError(f"a memory is at most {MAX_CONTENT} characters, not {len(content)}")
    given: dict[str, Any] = {}
    subjects: list[str] = []
    for word in words:
        found = _PAIR.match(word)
        if found is None:
            raise UsageError(f"{word!r} in the trailer is not a field=value")
        key, value = found.groups()
        if key not in _KEYS:
            raise UsageError(f"unknown field {key!r} in the trailer: use {', '.join(_KEYS)}")
        if key == "subject":
            if value.strip():
                subjects.append(value.strip())
            continue
        if key in given:
            raise UsageError(f"{key} is given twice")
        given[key] = _value(key, value)
    values = Values(kind=kind, content=content, subjects=tuple(subjects), **given)
    if (
        values.valid_from is not None
        and values.valid_to is not None
        and values.valid_to <= values.valid_from
    ):
        raise UsageError("valid_to must be after valid_from")
    return values


def _value(key: str, value: str) -> Any:
    if key == "audience":
        return Audience.parse(value)
    if key == "status":
        try:
            status = MemoryStatus(value)
        except ValueError:
            status = MemoryStatus.DELETED
        if status not in _SHOWN:
            shown = ", ".join(_SHOWN)
            raise UsageError(f"status must be one of {shown}, not {value!r}")
        return status
    if key in ("importance", "confidence"):
        try:
            number = float(value)
        except ValueError:
            number = -1.0
        if not 0.0 <= number <= 1.0:
            raise UsageError(f"{key} must be a number from 0 to 1, not {value!r}")
        return number
    if key in ("valid_from", "valid_to"):
        return _when(value, key)
    slot = value.strip()
    if not slot:
        raise UsageError("an empty slot: leave slot= out instead")
    return slot


def _when(value: str, what: str) -> datetime:
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise UsageError(f"{what} must be an ISO-8601 date or time, not {value!r}") from None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


# --- import ---------------------------------------------------------------------------------


@dataclass(kw_only=True, frozen=True)
class _Edit:
    entry: Entry
    current: Memory


async def import_markdown(
    book: MemoryBook,
    text: str,
    *,
    person_id: str,
    source_ref: str,
    actor: str,
    archive_missing: bool = False,
) -> ImportReport:
    """Apply an edited file to the person's memories (see the module's doc)."""
    parsed = parse(text)
    report = ImportReport(errors=list(parsed.errors))
    source = Source(kind=SourceKind.IMPORT, ref=source_ref, trusted=True)
    if parsed.person_id is not None and parsed.person_id != person_id:
        report.errors.append(
            ImportNote(line=0, memory_id=None, message="this file is another person's export")
        )
    edits = await _plan(book, parsed, person_id, source, report)
    stored = await book.store.memory.list_memories(
        person_id=person_id, statuses=list(_SHOWN), limit=1_000_000
    )
    named = {e.memory_id for e in parsed.entries}
    report.missing.extend(
        m.id
        for m in stored
        if exported(m)
        and m.id not in named
        and (parsed.exported_at is None or m.created_at <= parsed.exported_at)
    )
    if report.errors:
        return report
    for edit in edits:
        await _apply_edit(book, edit, actor, report)
    for entry in parsed.entries:
        if entry.memory_id is None:
            await _create(book, entry, person_id, source, actor, report)
    if archive_missing:
        missing = set(report.missing)
        for memory in stored:
            if memory.id in missing and memory.status is not MemoryStatus.ARCHIVED:
                await book.set_status(
                    memory.id, MemoryStatus.ARCHIVED, actor=actor, reason="missing from the import"
                )
                report.archived.append(memory.id)
    return report


async def _plan(
    book: MemoryBook, parsed: ParsedFile, person_id: str, source: Source, report: ImportReport
) -> list[_Edit]:
    """Look every bullet up (reading only): the edits to make; conflicts, unchanged bullets and
    errors go into ``report``."""
    named = [e.memory_id for e in parsed.entries if e.memory_id is not None]
    found = {
        m.id: m for m in await book.store.memory.get_memories(named) if m.person_id == person_id
    }
    seen: dict[str, int] = {}
    edits: list[_Edit] = []
    for entry in parsed.entries:
        memory_id = entry.memory_id
        if memory_id is None or entry.version is None:
            continue
        if memory_id in seen:
            report.errors.append(
                ImportNote(
                    line=entry.line,
                    memory_id=memory_id,
                    message=f"{memory_id} is already on line {seen[memory_id]}",
                )
            )
            continue
        seen[memory_id] = entry.line
        current = found.get(memory_id)
        if current is None:
            note = f"memory {memory_id!r} not found (forgotten since the export?); not re-created"
            report.conflicts.append(ImportNote(line=entry.line, memory_id=memory_id, message=note))
            continue
        history = {v.version: v for v in await book.history(memory_id)}
        baseline = history.get(entry.version)
        if baseline is None:
            report.errors.append(
                ImportNote(
                    line=entry.line,
                    memory_id=memory_id,
                    message=f"{memory_id} has no version {entry.version}",
                )
            )
            continue
        before = Values.of(baseline.memory)
        if entry.values in (before, Values.of(current)):  # untouched, or applied before
            report.unchanged.append(memory_id)
            continue
        cleared = [
            name
            for name in ("slot", "valid_from", "valid_to")
            if getattr(before, name) is not None and getattr(entry.values, name) is None
        ]
        if cleared:
            report.errors.append(
                ImportNote(
                    line=entry.line,
                    memory_id=memory_id,
                    message=f"{' and '.join(cleared)} cannot be removed from a memory; "
                    "give a new value or leave it as it was",
                )
            )
            continue
        if current.version != entry.version or current.status is MemoryStatus.DELETED:
            latest = history[max(history)]
            why = "deleted" if current.status is MemoryStatus.DELETED else latest.reason
            message = (
                f"changed since the export (now version {current.version}: {why}); "
                "your edit was not applied: export again and redo it"
            )
            report.conflicts.append(
                ImportNote(line=entry.line, memory_id=memory_id, message=message)
            )
            continue
        edits.append(_Edit(entry=entry, current=current))
    new = [e for e in parsed.entries if e.memory_id is None]
    report.errors.extend(
        ImportNote(line=e.line, memory_id=None, message="a new memory starts active or candidate")
        for e in new
        if e.values.status is MemoryStatus.ARCHIVED
    )
    if new:
        forgotten = {
            t.source_key for t in await book.store.memory.list_tombstones(person_id=person_id)
        }
        if source.key in forgotten:
            report.errors.append(
                ImportNote(
                    line=0,
                    memory_id=None,
                    message=f"{source.key} was forgotten, so nothing new is taken from it: "
                    "import the file under another name",
                )
            )
    return edits


async def _apply_edit(book: MemoryBook, edit: _Edit, actor: str, report: ImportReport) -> None:
    want, current = edit.entry.values, edit.current
    changes = {
        f.name: getattr(want, f.name)
        for f in fields(Values)
        if f.name != "status" and getattr(want, f.name) != getattr(current, f.name)
    }
    memory_id = current.id
    try:
        if changes:
            await book.edit(memory_id, actor=actor, expected_version=edit.entry.version, **changes)
        if want.status is not current.status:
            await book.set_status(memory_id, want.status, actor=actor, reason="imported")
    except Conflict as exc:
        report.conflicts.append(
            ImportNote(line=edit.entry.line, memory_id=memory_id, message=str(exc))
        )
        return
    report.edited.append(memory_id)


async def _create(
    book: MemoryBook,
    entry: Entry,
    person_id: str,
    source: Source,
    actor: str,
    report: ImportReport,
) -> None:
    values = entry.values
    written = await book.write(
        person_id=person_id,
        content=values.content,
        kind=values.kind,
        source=source,
        actor=actor,
        subjects=values.subjects,
        slot=values.slot,
        audience=values.audience,
        confidence=values.confidence,
        importance=values.importance,
        valid_from=values.valid_from,
        valid_to=values.valid_to,
        candidate=values.status is MemoryStatus.CANDIDATE,
    )
    if written.memory is None:
        note = ImportNote(line=entry.line, memory_id=None, message=written.describe())
        report.conflicts.append(note)
    elif written.outcome is WriteOutcome.CREATED:
        report.created.append(written.memory.id)
    else:
        report.unchanged.append(written.memory.id)
