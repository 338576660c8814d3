"""``steward memory import`` of statements (JSON lines or a JSON array) rather than a
``MEMORY.md``: a chat history, a mailbox, notes kept elsewhere, sent in parts with progress shown,
summed up in words."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator, Sequence

from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from steward.cli.common import (
    console,
    err_console,
    run,
    service,
    to_jsonable,
)
from steward.domain.memory import MemoryStatus
from steward.domain.memory_item import MemoryItem
from steward.errors import UsageError

PART = 1000
"""Statements per call: a remote call's body stays well under the server's 2 MB."""
PART_CHARS = 500_000
"""Characters of statements per call, for the same reason (long statements)."""


def looks_like_statements(text: str) -> bool:
    """JSON (lines or an array), not a ``MEMORY.md`` (whose first character is ``#`` or ``-``)."""
    return text.lstrip()[:1] in ("{", "[")


def import_statements(
    text: str, *, import_name: str, person: str | None, db: str | None, as_json: bool
) -> None:
    """Remember every statement of ``text``; a bad one refuses the file before anything is
    sent, naming its line."""
    places = _places(text)

    async def main() -> Counter[str]:
        from steward.domain.memory import WriteOutcome
        from steward.service.memory_items import parse_memory_items

        items = parse_memory_items(text)
        counts: Counter[str] = Counter()
        async with service(db) as svc:
            who = await svc.person(person)
            with Progress(
                TextColumn("importing"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeRemainingColumn(),
                console=err_console,
                transient=True,
                disable=len(items) <= PART,
            ) as progress:
                task = progress.add_task("import", total=len(items))
                for start, part in _parts(items):
                    try:
                        written = await svc.remember_many(
                            person_id=who.id, items=part, import_name=import_name
                        )
                    except UsageError as exc:
                        raise _placed(exc, places, start, done=counts.total()) from None
                    for w in written:
                        counts[w.outcome] += 1
                        if w.outcome is WriteOutcome.CREATED and w.memory is not None:
                            counts["candidate"] += w.memory.status is MemoryStatus.CANDIDATE
                    progress.advance(task, len(part))
        return counts

    counts = run(main)
    if as_json:
        console.print_json(data=to_jsonable({k: counts[k] for k in _COUNTED}))
        return
    console.print(escape(summary(counts)))


_COUNTED = ("created", "duplicate", "forgotten", "candidate")


def summary(counts: Counter[str]) -> str:
    """In words: ``Imported 9,812 memories (188 already known).``"""
    created = counts["created"]
    said = f"Imported {created:,} {'memory' if created == 1 else 'memories'}"
    notes = []
    if counts["duplicate"]:
        notes.append(f"{counts['duplicate']:,} already known")
    if counts["forgotten"]:
        notes.append(f"{counts['forgotten']:,} from sources you had forgotten, left out")
    if counts["candidate"]:
        notes.append(f"{counts['candidate']:,} kept for you to confirm")
    return f"{said} ({'; '.join(notes)})." if notes else f"{said}."


def _parts(items: Sequence[MemoryItem]) -> Iterator[tuple[int, list[MemoryItem]]]:
    start, part, chars = 0, list[MemoryItem](), 0
    for index, item in enumerate(items):
        if part and (len(part) == PART or chars + len(item.content) > PART_CHARS):
            yield start, part
            start, part, chars = index, [], 0
        part.append(item)
        chars += len(item.content)
    if part:
        yield start, part


def _places(text: str) -> list[str]:
    """Where each statement is in the file, as a person finds it."""
    if text.lstrip().startswith("["):
        return []
    return [f"line {n}" for n, line in enumerate(text.splitlines(), start=1) if line.strip()]


def _placed(exc: UsageError, places: Sequence[str], start: int, *, done: int) -> UsageError:
    """The server's refusal of a part, naming the statement's place in the file."""
    message = str(exc)
    found = re.match(r"item (\d+): ", message)
    if found is not None:
        index = start + int(found.group(1))
        where = places[index] if index < len(places) else f"item {index}"
        message = f"{where}: {message[found.end() :]}"
    if done:
        message += (
            f" ({done:,} statements before it were imported; importing the file again after "
            "fixing it adds only the rest)"
        )
    return UsageError(message)
