"""Where each file of a person's workspace came from, kept outside the workspace.

The workspace itself is the shell's to change, so what wrote each file cannot be kept in it: a
small SQLite database per person, ``<data>/environment/<person>/provenance.sqlite`` (0600, its
folder 0700; SQLite's own transactions make every write atomic, and several worker processes
may record at once). One row per workspace path: the task and tool that last wrote it, what its
contents came from in words, their sha256 and the clock's time (:class:`FileOrigin`).

Who records: ``workspace_write`` (the assistant's text), the shell (every file one command
created or changed, found by walking the workspace before and after it; files it removed are
forgotten), and the browser (its downloads and screenshots). What reads it: ``workspace_list``
and ``workspace_read`` (each file with its origin, "changed since" when its contents no longer
match), and the dashboard's Files page.

A record says who wrote a file last through Steward's own tools; a file changed by hand, or by
a command whose change the bounded walk missed, shows as "changed since" once its hash is
checked, never as someone else's work.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from steward.domain.workspace import FileOrigin
from steward.filemodes import private_dir, private_file
from steward.harness.workspace import path_part

FILE = "provenance.sqlite"
SCHEMA = """
CREATE TABLE IF NOT EXISTS origins (
    path TEXT PRIMARY KEY,
    task_id TEXT,
    tool TEXT NOT NULL,
    origin TEXT NOT NULL,
    sha256 TEXT NOT NULL,
    at TEXT NOT NULL
)
"""
BUSY_SECONDS = 30.0
"""How long a write waits for another process's."""
MAX_HASHED_BYTES = 64 << 20
"""The largest file whose contents are hashed to tell whether it changed since."""
INSIDE = "/workspace/"


def key(path: str) -> str:
    """A workspace path as records are kept: from the workspace, without ``/workspace/``,
    ``./`` or doubled slashes."""
    path = path.strip()
    if path.startswith(INSIDE):
        path = path[len(INSIDE) :]
    return "/".join(p for p in path.split("/") if p not in ("", "."))


@dataclass(frozen=True)
class Provenance:
    """The records of every person, under ``root`` (``<data>/environment`` in the app)."""

    root: Path

    def person_dir(self, person_id: str) -> Path:
        return self.root / path_part(person_id)

    async def record(
        self,
        person_id: str,
        path: str,
        *,
        task_id: str | None,
        tool: str,
        origin: str,
        sha256: str,
        at: datetime,
    ) -> FileOrigin:
        """Record who wrote ``path`` (workspace-relative) last, replacing what was recorded."""
        made = FileOrigin(
            path=key(path), task_id=task_id, tool=tool, origin=origin, sha256=sha256, at=at
        )
        await self.record_all(person_id, [made])
        return made

    async def record_all(self, person_id: str, origins: Iterable[FileOrigin]) -> None:
        """Record several files at once (one transaction)."""
        rows = [
            (key(o.path), o.task_id, o.tool, o.origin, o.sha256, o.at.isoformat()) for o in origins
        ]
        if rows:
            await asyncio.to_thread(self._write, person_id, SQL_RECORD, rows)

    async def forget(self, person_id: str, path: str) -> None:
        """Forget ``path`` (it was removed)."""
        await self.forget_all(person_id, [path])

    async def forget_all(self, person_id: str, paths: Iterable[str]) -> None:
        rows = [(key(p),) for p in paths]
        if rows:
            await asyncio.to_thread(self._write, person_id, SQL_FORGET, rows)

    async def of(self, person_id: str, path: str) -> FileOrigin | None:
        """What wrote ``path`` last, if that was recorded."""
        return (await self.of_all(person_id, [path])).get(key(path))

    async def of_all(self, person_id: str, paths: Iterable[str]) -> dict[str, FileOrigin]:
        """The records of those of ``paths`` that have one, by path."""
        wanted = sorted({key(p) for p in paths})
        return await asyncio.to_thread(self._read, person_id, wanted)

    def _write(self, person_id: str, sql: str, rows: Sequence[tuple[object, ...]]) -> None:
        with self._opened(person_id) as db, db:
            db.executemany(sql, rows)

    def _read(self, person_id: str, paths: list[str]) -> dict[str, FileOrigin]:
        if not paths or not (self.person_dir(person_id) / FILE).exists():
            return {}  # nothing recorded yet: not made by looking
        found: dict[str, FileOrigin] = {}
        with self._opened(person_id) as db:
            for start in range(0, len(paths), 500):
                part = paths[start : start + 500]
                marks = ",".join("?" * len(part))
                for row in db.execute(f"SELECT * FROM origins WHERE path IN ({marks})", part):
                    found[row[0]] = FileOrigin(
                        path=row[0],
                        task_id=row[1],
                        tool=row[2],
                        origin=row[3],
                        sha256=row[4],
                        at=datetime.fromisoformat(row[5]),
                    )
        return found

    @contextlib.contextmanager
    def _opened(self, person_id: str) -> Iterator[sqlite3.Connection]:
        where = private_dir(self.person_dir(person_id)) / FILE
        private_file(where)
        db = sqlite3.connect(where, timeout=BUSY_SECONDS, isolation_level="DEFERRED")
        try:
            db.execute(SCHEMA)
            yield db
        finally:
            db.close()


SQL_RECORD = "INSERT OR REPLACE INTO origins VALUES (?, ?, ?, ?, ?, ?)"
SQL_FORGET = "DELETE FROM origins WHERE path = ?"


def sha256_of(fd: int) -> str | None:
    """The hash of an open file's contents (read from its start), or None when it is larger
    than :data:`MAX_HASHED_BYTES` (not checked)."""
    if os.fstat(fd).st_size > MAX_HASHED_BYTES:
        return None
    digest = hashlib.sha256()
    offset = 0
    while chunk := os.pread(fd, 1 << 20, offset):
        digest.update(chunk)
        offset += len(chunk)
    return digest.hexdigest()
