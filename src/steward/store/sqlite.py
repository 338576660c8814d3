"""SQLite backend: WAL, one writer connection per process on its own thread, group commit.

Measured on this project's machine, crossing threads costs more than the SQL: a thread hop per
statement (aiosqlite) gives ~600 checkpoints/s, one hop per transaction ~2,100/s. So every write
transaction is one hop into a single writer thread, and whatever queued up while the previous
commit ran is committed together in the next one (group commit). A batch in which any operation
raises is rolled back and its operations re-run one by one, so one failure never sinks another
(unless the database is locked by another process beyond the busy timeout: then the whole
batch fails as :class:`~steward.errors.DatabaseUnavailable`, for the caller to retry later).
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Connection,
    Insert,
    Table,
    create_engine,
    event,
    literal_column,
)
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.engine import make_url
from sqlalchemy.pool import NullPool

from steward.errors import DatabaseUnavailable
from steward.filemodes import private_dir, private_file, tighten
from steward.store.backend import Backend, DatabaseLimits, Op, T, one_line

MAX_BATCH = 256
MMAP_BYTES = 256 * 1024 * 1024
"""Of the database file each connection maps (no more is mapped than the file holds)."""
_TRANSIENT = ("database or disk is full", "disk I/O error", "unable to open database file")
"""SQLite errors that can pass (space freed, a disk or mount back): waited out like a lock."""


@dataclass(slots=True)
class _Job:
    op: Op[Any]
    durable: bool
    loop: asyncio.AbstractEventLoop
    future: asyncio.Future[Any]


def _deliver(results: list[tuple[asyncio.Future[Any], Any, BaseException | None]]) -> None:
    for future, value, error in results:
        if future.cancelled():
            continue
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(value)


def _switch_to_wal(cursor: Any, attempts: int = 50) -> None:
    for attempt in range(attempts):
        try:
            cursor.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or attempt == attempts - 1:
                raise
            time.sleep(0.05)


def _drop(conn: Connection | None) -> None:
    """Close a writer connection that failed, to reconnect afresh next time."""
    if conn is not None:
        with contextlib.suppress(Exception):
            conn.close()


def _make_private(database: Path) -> None:
    """Create the database file 0600 before SQLite does (it would make it 0644, and its
    ``-wal`` and ``-shm`` with the same mode), or tighten one, and its companions, that other
    users could read (see :mod:`steward.filemodes`)."""
    if not database.parent.exists():  # the person's own directory is theirs to set
        private_dir(database.parent)
    private_file(database)
    for suffix in ("-wal", "-shm", "-journal"):
        tighten(database.with_name(database.name + suffix))


class SQLiteBackend(Backend):
    name = "sqlite"

    def __init__(self, url: str, limits: DatabaseLimits | None = None) -> None:
        super().__init__(read_threads=2)
        self._busy_timeout_ms = round((limits or DatabaseLimits()).busy_timeout_seconds * 1000)
        parsed = make_url(url)
        database = parsed.database or ""
        if database and database != ":memory:":
            _make_private(Path(database))
        self.path = database
        self.url = url
        # Readers: autocommit driver mode and deferred BEGIN, so WAL snapshots never block.
        self.engine = create_engine(url, connect_args={"check_same_thread": False})
        self._configure(self.engine, begin="BEGIN")
        # The writer: one connection, BEGIN IMMEDIATE so a transaction takes the write lock
        # up front (no deadlock-prone lock upgrades between processes).
        self._writer_engine = create_engine(
            url, poolclass=NullPool, connect_args={"check_same_thread": False}
        )
        self._configure(self._writer_engine, begin="BEGIN IMMEDIATE")
        # Migrations write: run them under BEGIN IMMEDIATE too, so processes starting at once
        # on a new file queue up instead of failing on a read-to-write lock upgrade.
        self.migration_engine = self._writer_engine
        self._queue: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._writer, name="steward-writer", daemon=True)
        self._thread.start()

    def _configure(self, engine: Any, *, begin: str) -> None:
        @event.listens_for(engine, "connect")
        def _on_connect(dbapi_conn: Any, _record: Any) -> None:
            dbapi_conn.isolation_level = None  # we issue BEGIN ourselves
            cur = dbapi_conn.cursor()
            cur.execute(f"PRAGMA busy_timeout={self._busy_timeout_ms}")
            # WAL is a property of the file: switch once. Switching takes an exclusive lock
            # that does not wait on the busy handler, so don't ask again when it is set.
            if cur.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
                _switch_to_wal(cur)
            cur.execute("PRAGMA synchronous=NORMAL")
            # read through the OS page cache in place rather than copying pages into each
            # connection's small private cache: recall touches index pages all over the file
            cur.execute(f"PRAGMA mmap_size={MMAP_BYTES}")
            cur.execute("PRAGMA foreign_keys=ON")
            cur.close()

        @event.listens_for(engine, "begin")
        def _on_begin(conn: Connection) -> None:
            conn.exec_driver_sql(begin)

    async def write(self, op: Op[T], *, durable: bool = False) -> T:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        self._queue.put(_Job(op=op, durable=durable, loop=loop, future=future))
        return await future

    def _writer(self) -> None:
        conn: Connection | None = None
        full_sync = False
        try:
            while True:
                first = self._queue.get()
                if first is None:
                    return
                batch = [first]
                stop = False
                while len(batch) < MAX_BATCH:
                    try:
                        job = self._queue.get_nowait()
                    except queue.Empty:
                        break
                    if job is None:
                        stop = True
                        break
                    batch.append(job)
                try:
                    if conn is None:
                        conn = self._writer_engine.connect()
                        full_sync = False  # the connect hook set NORMAL
                    durable = any(job.durable for job in batch)
                    if durable != full_sync:
                        # FULL syncs the WAL at commit; it also makes every earlier NORMAL commit
                        # durable, since they sit before it in the same log. SQLite refuses to
                        # change it inside a transaction, and conn.exec_driver_sql would begin
                        # one: use a bare driver cursor.
                        cursor = conn.connection.cursor()
                        cursor.execute(f"PRAGMA synchronous={'FULL' if durable else 'NORMAL'}")
                        cursor.close()
                        full_sync = durable
                except Exception as exc:
                    # The database cannot be reached: fail this batch rather than the thread
                    # (which would leave every later write waiting forever); reconnect next time.
                    error = self.classify(exc)
                    self._deliver(batch, [(job.future, None, error) for job in batch])
                    _drop(conn)
                    conn = None
                else:
                    if self._run_batch(conn, batch) is not None:
                        _drop(conn)
                        conn = None
                if stop:
                    return
        finally:
            if conn is not None:
                conn.close()

    def _run_batch(self, conn: Connection, batch: list[_Job]) -> DatabaseUnavailable | None:
        """Run the batch in one transaction and deliver its results. When the database was
        unavailable every job of the batch gets that error, which is returned: the caller
        drops the connection (a failed BEGIN may leave it in an unknown state)."""
        outcomes: list[tuple[asyncio.Future[Any], Any, BaseException | None]] = []
        try:
            with conn.begin():
                self.begin_fenced(conn)
                values = [job.op(conn) for job in batch]
                self.check_leases(conn)
                planned = self.took_plans(conn)
        except BaseException as exc:
            reason = self.unavailable_reason(exc)
            if reason is not None:
                # re-running the jobs one by one would wait out the busy timeout for each
                error = DatabaseUnavailable(reason)
                self._deliver(batch, [(job.future, None, error) for job in batch])
                return error
            if len(batch) > 1:
                for done, job in enumerate(batch):
                    failed = self._run_batch(conn, [job])
                    if failed is not None:
                        rest = batch[done + 1 :]
                        self._deliver(rest, [(j.future, None, failed) for j in rest])
                        return failed
                return None
            outcomes.append(
                (batch[0].future, None, self.classify(exc) if isinstance(exc, Exception) else exc)
            )
        else:
            outcomes = [(job.future, v, None) for job, v in zip(batch, values, strict=True)]
            if planned:
                self.committed_plans()
        self._deliver(batch, outcomes)
        return None

    @property
    def writer_alive(self) -> bool:
        return self._thread.is_alive()

    def unusable_reason(self, exc: BaseException) -> str | None:
        orig = getattr(exc, "orig", None) or exc
        if not isinstance(orig, sqlite3.DatabaseError):
            return None
        if "file is not a database" in str(orig):
            return (
                f"{self.path} is not a SQLite database: check --db or $STEWARD_DATABASE_URL "
                "(Steward creates its database itself where it is told to)"
            )
        if "readonly database" in str(orig):
            return (
                f"the database {self.path} is read-only for this user, so nothing can be "
                "written: check the permissions of the file and of its directory"
            )
        return None

    def unavailable_reason(self, exc: BaseException) -> str | None:
        orig = getattr(exc, "orig", None) or exc
        if not isinstance(orig, sqlite3.OperationalError):
            return None
        if "locked" in str(orig) or "busy" in str(orig):
            return f"{one_line(orig)} (another process held its write lock too long)"
        if any(sign in str(orig) for sign in _TRANSIENT):
            return one_line(orig)
        return None

    @staticmethod
    def _deliver(
        batch: list[_Job], outcomes: list[tuple[asyncio.Future[Any], Any, BaseException | None]]
    ) -> None:
        by_loop: dict[asyncio.AbstractEventLoop, list[Any]] = {}
        for job, outcome in zip(batch, outcomes, strict=True):
            by_loop.setdefault(job.loop, []).append(outcome)
        for loop, items in by_loop.items():
            with contextlib.suppress(RuntimeError):  # loop already closed: nobody is waiting
                loop.call_soon_threadsafe(_deliver, items)

    def db_now(self) -> ColumnElement[float]:
        return literal_column("((julianday('now') - 2440587.5) * 86400.0)")

    def insert_ignore(self, table: Table, values: dict[str, Any]) -> Insert:
        return sqlite_insert(table).values(values).on_conflict_do_nothing()

    async def close(self) -> None:
        self._queue.put(None)
        await asyncio.get_running_loop().run_in_executor(None, self._thread.join)
        self._writer_engine.dispose()
        await super().close()
