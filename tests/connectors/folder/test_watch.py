"""The folder watch on real files and a real store (each backend): the first look reports
nothing; a file created, changed or deleted is reported once, after two looks agree (a file
written in chunks gives one event, as it ended up); temporary files never; a file created
while the watcher was down is reported once after the restart; the wait returns when the
operating system says something changed."""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import timedelta
from pathlib import Path

import pytest

from connectors.folder.world import Folders, folders_of
from steward.connectors.folder.scan import TooManyFiles, snapshot
from steward.connectors.folder.settings import settings_of
from steward.connectors.folder.sources import PER_POLL, FilesSource
from steward.connectors.watch import Watcher
from steward.domain.authority import Connection
from steward.domain.clock import Clock, SimulatedClock
from steward.domain.event import Event
from steward.store import Store
from support.startup import scaled
from support.waiting import eventually


async def events(folders: Folders) -> list[Event]:
    found = await folders.store.schedule.list_events(person_id=folders.person_id, limit=2000)
    return sorted(found, key=lambda e: (e.received_at, e.payload["path"]))


async def seen(folders: Folders) -> list[tuple[str, str]]:
    return [(e.type, e.payload["path"]) for e in await events(folders)]


async def polls(watcher: Watcher, connection: Connection, source: FilesSource, n: int) -> None:
    for _ in range(n):
        assert await watcher.poll_once(connection, source) == 0


async def watching(folders: Folders) -> Callable[[int], Awaitable[None]]:
    """Connected, and looked at once: a function polling n times more."""
    connection = await folders.connect()
    watcher = Watcher(env=folders.env, holder="test")
    source = folders.source()

    async def poll(n: int) -> None:
        await polls(watcher, connection, source, n)

    await poll(1)
    return poll


async def test_created_changed_deleted_each_once_after_two_looks(folders: Folders) -> None:
    poll = await watching(folders)
    assert await seen(folders) == []  # the files already there are not news
    letter = folders.documents / "letter.txt"
    letter.write_text("Dear Dana")
    await poll(1)
    assert await seen(folders) == []  # one look: it may still be being written
    await poll(3)
    assert await seen(folders) == [("file.created", "Documents/letter.txt")]
    [created] = await events(folders)
    assert created.payload == {
        "account": "files",
        "root": "Documents",
        "path": "Documents/letter.txt",
        "name": "letter.txt",
        "change": "created",
        "size": 9,
        "modified": created.payload["modified"],
        "untrusted": True,
    }
    assert created.payload["modified"].endswith(("+01:00", "+02:00"))  # Europe/Paris

    os.utime(letter, ns=(0, letter.stat().st_mtime_ns + 10**9))
    (folders.invoices / "shop-0042.txt").unlink()
    await poll(3)
    assert sorted(await seen(folders)) == [
        ("file.changed", "Documents/letter.txt"),
        ("file.created", "Documents/letter.txt"),
        ("file.deleted", "Invoices/shop-0042.txt"),
    ]
    keys = [e.dedupe_key for e in await events(folders)]
    assert len(set(keys)) == 3
    assert all(len(k) <= 200 for k in keys)


async def test_a_file_written_in_chunks_is_one_event_as_it_ended_up(folders: Folders) -> None:
    poll = await watching(folders)
    download = folders.documents / "report.txt"
    with download.open("w") as file:
        for chunk in range(4):
            file.write("x" * 1000)
            file.flush()
            os.utime(download, ns=(0, 1_700_000_000 * 10**9 + chunk))  # each chunk a new time
            await poll(1)
    await poll(2)
    assert await seen(folders) == [("file.created", "Documents/report.txt")]
    assert (await events(folders))[0].payload["size"] == 4000


async def test_temporary_and_partial_files_are_never_reported(folders: Folders) -> None:
    poll = await watching(folders)
    for name in ("~$report.docx", ".~lock.x.odt#", "a.swp", "film.mkv.part", "x.crdownload"):
        (folders.documents / name).write_text("partial")
    (folders.documents / ".git").mkdir()
    (folders.documents / ".git" / "HEAD").write_text("ref")
    await poll(3)
    assert await seen(folders) == []


async def test_a_repeated_poll_gives_the_same_keys(folders: Folders) -> None:
    """A poll whose result was lost (a crash before the store) is repeated from the same
    cursor: its events have the same keys, so nothing is stored twice."""
    con = await folders.connect()
    source = folders.source()
    first = await source.poll(con, None)
    (folders.documents / "new.txt").write_text("new")
    second = await source.poll(con, first.cursor)
    again = [await source.poll(con, second.cursor) for _ in range(2)]
    assert [f.dedupe_key for f in again[0].found] == [f.dedupe_key for f in again[1].found]
    assert [f.type for f in again[0].found] == ["file.created"]


async def test_a_burst_of_changes_is_reported_over_several_polls(folders: Folders) -> None:
    poll = await watching(folders)
    burst = folders.documents / "burst"
    burst.mkdir()
    for n in range(PER_POLL + 20):
        (burst / f"{n:04}.txt").write_text("x")
    await poll(2)
    assert len(await seen(folders)) == PER_POLL
    await poll(1)
    assert len(await seen(folders)) == PER_POLL + 20


def test_more_files_than_a_watch_keeps_is_a_plain_failure(tmp_path: Path) -> None:
    for n in range(4):
        (tmp_path / f"{n}.txt").write_text("x")
    connection = Connection(
        id="con_x",
        person_id="p",
        kind="folder",
        name="files",
        scopes=("folder.read",),
        created_at=Clock().now(),
        settings={"roots": [f"Mine={tmp_path}"]},
    )
    with pytest.raises(TooManyFiles, match="your folders hold more than 3 files"):
        snapshot(settings_of(connection), most=3)


async def test_a_file_created_while_down_is_reported_once_after_the_restart(
    store: Store, tmp_path: Path
) -> None:
    """Two watchers, one after the other, on one store and the system clock."""
    folders = await folders_of(store, Clock(), tmp_path / "restart")
    con = await folders.connect()

    @contextlib.asynccontextmanager
    async def running(holder: str) -> AsyncIterator[None]:
        stop = asyncio.Event()
        watcher = Watcher(env=folders.env, holder=holder, interval_seconds=0.3, refresh_seconds=0.1)
        task = asyncio.create_task(watcher.run(stop))
        try:
            yield
            await asyncio.sleep(1.5)  # a few more polls: nothing is reported again
        finally:
            stop.set()
            await task

    def reported(*names: str) -> Callable[[], Awaitable[bool]]:
        async def check() -> bool:
            return await seen(folders) == [("file.created", f"Documents/{n}") for n in names]

        return check

    async def looked() -> bool:
        return await store.watches.get(con.id, "file.changes") is not None

    async with running("first"):
        await eventually(looked, "a first look", seconds=scaled(20))
        (folders.documents / "while-up.txt").write_text("written while watched")
        await eventually(reported("while-up.txt"), "the new file", seconds=scaled(30))
    (folders.documents / "while-down.txt").write_text("written while no watcher ran")
    async with running("second"):
        await eventually(
            reported("while-up.txt", "while-down.txt"),
            "the file made meanwhile",
            seconds=scaled(30),
        )
    assert await reported("while-up.txt", "while-down.txt")()


async def test_the_wait_ends_when_a_file_changes(store: Store, tmp_path: Path) -> None:
    folders = await folders_of(store, Clock(), tmp_path / "waiting")
    con = await folders.connect()
    source = folders.source()
    await source.poll(con, None)

    async def write_until_heard() -> None:
        # the watch listens a moment after the wait begins: write until it has heard
        for n in range(10_000):
            await asyncio.sleep(0.5)
            (folders.invoices / f"new-{n}.txt").write_text("new")

    writer = asyncio.create_task(write_until_heard())
    loop = asyncio.get_running_loop()
    began = loop.time()
    try:
        await source.wait(con, 600)
    finally:
        writer.cancel()
    assert loop.time() - began < scaled(60)  # far sooner than the 600 s asked


async def test_a_change_that_happens_again_is_reported_again(folders: Folders) -> None:
    """A file deleted and put back as it was (from the Trash: the same time and size) is
    created twice: each time is news."""
    poll = await watching(folders)
    notes = folders.documents / "notes.md"
    kept = notes.read_bytes(), notes.stat().st_mtime_ns
    for _ in range(2):
        notes.unlink()
        await poll(2)
        notes.write_bytes(kept[0])
        os.utime(notes, ns=(0, kept[1]))
        await poll(2)
    assert sorted(await seen(folders)) == [
        ("file.created", "Documents/notes.md"),
        ("file.created", "Documents/notes.md"),
        ("file.deleted", "Documents/notes.md"),
        ("file.deleted", "Documents/notes.md"),
    ]


async def test_a_file_that_never_settles_is_looked_at_less_often_and_still_reported(
    folders: Folders, clock: SimulatedClock
) -> None:
    """A log written to at every look: the looks back off, and it is reported once it has
    been changing for a minute, then again a minute later."""
    connection = await folders.connect()
    watcher = Watcher(env=folders.env, holder="test")
    source = folders.source()
    await polls(watcher, connection, source, 1)
    log = folders.documents / "app.log"
    waits = []
    for n in range(14):
        with log.open("a") as file:
            file.write(f"line {n}\n")
        await polls(watcher, connection, source, 1)
        waits.append(source.waiting(connection, 60.0))
        clock.advance(timedelta(seconds=10))
    assert waits[:6] == [2.0, 4.0, 8.0, 16.0, 32.0, 60.0]
    assert await seen(folders) == [
        ("file.created", "Documents/app.log"),  # after a minute of changes
        ("file.changed", "Documents/app.log"),  # and a minute later
    ]
