"""The folders' trigger source: a file created, changed or deleted in a connection's roots
becomes a ``file.created``, ``file.changed`` or ``file.deleted`` event, without a model.

A poll looks at every file (relative path → modification time in ns and size; at most
:data:`~steward.connectors.folder.scan.MAX_WATCHED`) and compares with the cursor's snapshot
of what was last reported. The first poll takes stock and reports nothing.

**Debounce.** A difference is reported only once two looks in a row agree on it: a file still
being written (in several chunks, or a download) is "settling" in the cursor until it stops
changing, and is then reported once, as it ended up. While something settles, the wait is
short — :data:`SETTLE_SECONDS`, doubled with each look that finds something still changing, up
to the connection's usual wait — so a file that never settles (a log) is not looked at every
two seconds forever; and a file still changing after :data:`RESTLESS_SECONDS` is reported as
it is then (and again after as long, if it goes on changing).

Temporary and partial files (``~$x.docx``, ``.swp``, ``.part``,
``.crdownload``: see :func:`~steward.connectors.folder.paths.ignored`) are never reported, and
links are not followed.

**Waiting.** Between polls the wait listens with ``watchfiles`` (inotify, FSEvents...: the
operating system says when something changed, with its own debounce) and ends at the first
change, or at the end of its time on the clock. Where the operating system cannot tell (a
network drive, too many folders for inotify), the wait simply runs its time: polls still find
every change, a little later.

The dedupe key names the change by its place in the connection's history: the cursor counts
the changes reported (``reported``), each change's key carries its number, the kind and the
file. A poll repeated after a crash starts from the same cursor, so it numbers its changes
alike and stores nothing twice; a change that happens again later — a file deleted and put back
with the same time and size, from the Trash — has a new number, so it is reported again.

Payload: ``account``, ``root``, ``path``
(``Documents/taxes/2025.txt``, as the folder tools take it), ``name``, ``change``, ``size``
(bytes), ``modified`` (ISO, in the person's zone) and ``untrusted``: whoever named the file may
not be the person.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import structlog
from watchfiles import Change, awatch

from steward.connectors.base import ConnectionFailed, ConnectorEnv, Poll
from steward.connectors.folder.paths import ignored
from steward.connectors.folder.scan import Version, snapshot
from steward.connectors.folder.settings import FolderSettings, settings_of
from steward.connectors.folder.wording import modified
from steward.domain.authority import Connection
from steward.domain.watch import Found

log = structlog.get_logger(__name__)

CHANGES = "file.changes"
"""The source's name; its events are typed by the change (below)."""
CREATED = "file.created"
CHANGED = "file.changed"
DELETED = "file.deleted"
PER_POLL = 500
"""The most changes one poll reports (the rest come with the next, at once)."""
SETTLE_SECONDS = 2.0
"""The first wait while a change waits for its second look (doubled at each look that finds
something still changing)."""
RESTLESS_SECONDS = 60.0
"""A file changing at every look for this long is reported as it is then."""
DEBOUNCE_MS = 1_600
"""``watchfiles`` gathers changes this long at most before it says something changed."""


def _version(value: Any) -> Version | None:
    """A version as the cursor keeps it (a JSON list; null: the file is not there)."""
    return None if value is None else (int(value[0]), int(value[1]))


@dataclass
class FilesSource:
    """Files created, changed or deleted in the connection's roots."""

    env: ConnectorEnv
    name: str = CHANGES
    _settling: dict[str, int] = field(default_factory=dict)
    """The connections with a change waiting for its second look (their wait is short), and
    how many looks in a row found one."""
    _behind: set[str] = field(default_factory=set)
    """The connections whose last poll left changes for the next (their wait ends at once)."""

    async def poll(self, connection: Connection, cursor: dict[str, Any] | None) -> Poll:
        settings = settings_of(connection)
        now = await asyncio.to_thread(snapshot, settings)
        if cursor is None:  # first look: start from now
            return Poll(found=[], cursor={"files": now, "settling": {}, "reported": 0})
        reported = {k: (int(v[0]), int(v[1])) for k, v in cursor["files"].items()}
        before = {k: _version(v) for k, v in cursor.get("settling", {}).items()}
        started: dict[str, float] = cursor.get("since", {})
        files: dict[str, Version] = dict(reported)
        settling: dict[str, Version | None] = {}
        since: dict[str, float] = {}
        found: list[Found] = []
        counted = int(cursor.get("reported", 0))
        moment = self.env.clock.now().timestamp()
        for key in sorted(now.keys() | reported.keys() | before.keys()):
            current, last = now.get(key), reported.get(key)
            if current == last:
                continue
            first = started.get(key, moment) if key in before else moment
            settled = key in before and before[key] == current
            restless = key in before and moment - first >= RESTLESS_SECONDS
            if (settled or restless) and len(found) < PER_POLL:
                number = counted + len(found) + 1
                found.append(self._found(connection, settings, key, number, last, current))
                if current is None:
                    del files[key]
                else:
                    files[key] = current
            else:  # new, still changing, or beyond this poll's share: looked at again
                settling[key] = current
                since[key] = first
        looks = self._settling.pop(connection.id, 0)
        self._behind.discard(connection.id)
        if settling:
            self._settling[connection.id] = looks + 1
        if len(found) >= PER_POLL:
            self._behind.add(connection.id)
        return Poll(
            found=found,
            cursor={
                "files": files,
                "settling": settling,
                "since": since,
                "reported": counted + len(found),
            },
        )

    def waiting(self, connection: Connection, seconds: float) -> float:
        """How long the next wait is at most: ``seconds``, or shorter while something settles
        (:data:`SETTLE_SECONDS`, doubled at each look in a row that found something changing),
        or nothing when changes are waiting."""
        if connection.id in self._behind:
            return 0.0
        looks = self._settling.get(connection.id, 0)
        if looks:
            return min(seconds, SETTLE_SECONDS * float(2 ** min(looks - 1, 16)))
        return seconds

    def _found(
        self,
        connection: Connection,
        settings: FolderSettings,
        key: str,
        number: int,
        last: Version | None,
        current: Version | None,
    ) -> Found:
        kind = CREATED if last is None else DELETED if current is None else CHANGED
        version = current if current is not None else last
        assert version is not None  # a key is looked at only when one of them is a file
        mtime_ns, size = version
        digest = hashlib.sha256(key.encode()).hexdigest()[:32]
        root, _, _ = key.partition("/")
        return Found(
            type=kind,
            dedupe_key=f"file:{connection.id}:{number}:{kind}:{digest}",
            payload={
                "account": connection.name,
                "root": root,
                "path": key,
                "name": key.rpartition("/")[2],
                "change": kind.removeprefix("file."),
                "size": size,
                "modified": modified(mtime_ns, settings.zone).isoformat(),
                "untrusted": True,
            },
        )

    async def wait(self, connection: Connection, seconds: float) -> None:
        seconds = self.waiting(connection, seconds)
        if not seconds:
            return  # changes are waiting: poll again now
        try:
            roots = [r.path for r in settings_of(connection).folders]
        except ConnectionFailed:  # a root removed: the next poll says so
            roots = []
        changed = asyncio.Event()
        stop = asyncio.Event()
        listening = asyncio.create_task(_listen(roots, changed, stop))
        try:
            clock = self.env.clock
            await clock.sleep_until(clock.now() + timedelta(seconds=seconds), changed)
        finally:
            stop.set()
            listening.cancel()
            await asyncio.gather(listening, return_exceptions=True)


async def _listen(roots: list[str], changed: asyncio.Event, stop: asyncio.Event) -> None:
    """Set ``changed`` when the operating system says a file under ``roots`` changed (not an
    ignored one); when it cannot tell, just return (the wait runs its time)."""

    def noticed(_: Change, path: str) -> bool:
        for root in roots:
            if path.startswith(root + os.sep):
                inner = path[len(root) + 1 :].split(os.sep)
                return not any(ignored(part) for part in inner)
        return True

    if not roots:
        return
    try:
        watching = awatch(*roots, watch_filter=noticed, debounce=DEBOUNCE_MS, stop_event=stop)
        async with contextlib.aclosing(watching) as changes:
            async for _ in changes:
                changed.set()
                return
    except Exception as exc:  # no notifications here (inotify limits, a network drive)
        log.info("folder watch without notifications", error=str(exc))
