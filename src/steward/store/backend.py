"""How transactions reach the database: the one place that differs between backends.

Every store operation is a plain function of a SQLAlchemy ``Connection`` that runs inside one
transaction. A backend decides which thread runs it and how commits are grouped; the SQL itself
is shared (the repositories of :mod:`steward.store`).
"""

from __future__ import annotations

import abc
import asyncio
import contextlib
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from sqlalchemy import (
    ClauseElement,
    ColumnElement,
    Connection,
    Engine,
    Insert,
    Select,
    Table,
    select,
)
from sqlalchemy.exc import DBAPIError

from steward.errors import DatabaseUnavailable, DatabaseUnusable, LeaseLost

if TYPE_CHECKING:
    from steward.config import Settings

T = TypeVar("T")
Op = Callable[[Connection], T]

_LEASES = "steward.leases"
_PLANNED = "steward.deliveries_planned"
_ANNOUNCE = "steward.announce"
"""Key in a connection's info: the channels (:mod:`steward.store.notify`) to announce on when
the open transaction commits."""
"""Key in a connection's info: the leases the open transaction's fenced writes relied on."""


@dataclass(kw_only=True, frozen=True)
class DatabaseLimits:
    """How long the database may keep one process waiting, so that a paused or stuck process
    holds up the others only that long."""

    busy_timeout_seconds: float = 30.0
    """SQLite: how long a write waits for another process's write lock before it fails as
    :class:`~steward.errors.DatabaseUnavailable` (the runtime then retries)."""
    statement_timeout_seconds: float = 60.0
    """PostgreSQL: the longest a statement may run (0: no limit)."""
    lock_timeout_seconds: float = 30.0
    """PostgreSQL: the longest a statement waits for a lock (0: no limit)."""
    idle_in_transaction_timeout_seconds: float = 30.0
    """PostgreSQL: a session idle this long inside a transaction (its process paused or hung)
    is ended by the server, which releases its row locks so another worker can take its task
    over (0: no limit)."""

    @classmethod
    def of(cls, settings: Settings) -> DatabaseLimits:
        """The limits the settings give (``STEWARD_DATABASE_*_TIMEOUT_SECONDS``)."""
        return cls(
            busy_timeout_seconds=settings.database_busy_timeout_seconds,
            statement_timeout_seconds=settings.database_statement_timeout_seconds,
            lock_timeout_seconds=settings.database_lock_timeout_seconds,
            idle_in_transaction_timeout_seconds=(
                settings.database_idle_in_transaction_timeout_seconds
            ),
        )


def hold_lease(conn: Connection, task_id: str, epoch: int, expires_at: float) -> None:
    """Note that the open transaction's fenced write relied on a lease valid until
    ``expires_at`` (database time); :meth:`Backend.check_leases` re-checks it before commit."""
    held: dict[tuple[str, int], float] = conn.info.setdefault(_LEASES, {})
    key = (task_id, epoch)
    held[key] = min(expires_at, held.get(key, expires_at))


def one_line(exc: BaseException, limit: int = 300) -> str:
    """A driver's message on one line (they span several, with hints), bounded."""
    orig = exc.orig if isinstance(exc, DBAPIError) and exc.orig is not None else exc
    text = " ".join(str(orig).split()) or type(orig).__name__
    return text if len(text) <= limit else text[: limit - 1] + "…"


class Prepared:
    """A Core statement compiled once for a dialect and run on the driver's cursor.

    For the few statements on the hot path (the step checkpoint), SQLAlchemy's per-execution
    overhead costs more than SQLite itself; the SQL is still written once, in Core.
    """

    __slots__ = ("defaults", "order", "sql")

    def __init__(self, statement: ClauseElement, dialect: Any) -> None:
        compiled = statement.compile(dialect=dialect)
        self.sql: str = compiled.string
        # values fixed in the statement itself (constants in WHERE/SET) become parameters too
        self.defaults: dict[str, Any] = dict(compiled.params)
        self.order: tuple[str, ...] | None = (
            tuple(getattr(compiled, "positiontup", None) or ()) if dialect.positional else None
        )

    def run(self, conn: Connection, params: dict[str, Any]) -> Any:
        cursor = conn.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
        merged = self.defaults | params
        if self.order is None:
            cursor.execute(self.sql, merged)
        else:
            cursor.execute(self.sql, tuple(merged[name] for name in self.order))
        return cursor


class Backend(abc.ABC):
    """Runs operations in transactions and supplies the few dialect-specific SQL pieces."""

    name: str
    """``sqlite`` or ``postgresql``."""
    url: str
    """Where the data lives (password masked)."""
    engine: Engine
    """Engine for reads."""
    migration_engine: Engine
    """Engine schema migrations run on."""

    def __init__(self, *, read_threads: int) -> None:
        self._readers = ThreadPoolExecutor(read_threads, thread_name_prefix="steward-read")
        self._prepared: dict[str, Prepared] = {}
        self._planned_listeners: list[tuple[asyncio.AbstractEventLoop, Callable[[], None]]] = []

    def prepared(self, key: str, build: Callable[[], ClauseElement]) -> Prepared:
        """The statement ``build()`` makes, compiled for this dialect once and cached."""
        found = self._prepared.get(key)
        if found is None:
            found = self._prepared[key] = Prepared(build(), self.engine.dialect)
        return found

    @abc.abstractmethod
    async def write(self, op: Op[T], *, durable: bool = False) -> T:
        """Run ``op`` in a write transaction. ``durable`` asks that the commit survive a power
        loss before this returns (used for effect intents)."""

    @property
    @abc.abstractmethod
    def writer_alive(self) -> bool:
        """False once whatever commits writes can no longer do so (a dead writer thread): a
        write then waits for a commit that never comes, and a caller may fail at once."""

    async def read(self, op: Op[T]) -> T:
        """Run ``op`` in a read-only snapshot, on a reader thread."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._readers, self._read_sync, op)

    def _read_sync(self, op: Op[T]) -> T:
        try:
            try:
                with self.engine.connect() as conn:
                    return op(conn)
            except DBAPIError as exc:
                if not exc.connection_invalidated:
                    raise
            # the pooled connection had died (the database restarted): the pool has been
            # invalidated, and a read is safe to run again on a fresh connection
            with self.engine.connect() as conn:
                return op(conn)
        except Exception as exc:
            raise self.classify(exc) from exc

    @abc.abstractmethod
    def unavailable_reason(self, exc: BaseException) -> str | None:
        """Why ``exc`` means the database cannot be reached for now (restarting, refusing
        connections, locked beyond the busy timeout), or None if it is some other failure."""

    def unusable_reason(self, exc: BaseException) -> str | None:
        """Why ``exc`` means this database cannot be used at all (see
        :class:`DatabaseUnusable`), in the person's words, or None."""
        return None

    def classify(self, exc: Exception) -> Exception:
        """``exc`` as :class:`DatabaseUnavailable` or :class:`DatabaseUnusable` when it is
        one, else unchanged."""
        if isinstance(exc, DatabaseUnavailable | DatabaseUnusable):
            return exc
        reason = self.unavailable_reason(exc)
        if reason is not None:
            return DatabaseUnavailable(reason)
        unusable = self.unusable_reason(exc)
        return exc if unusable is None else DatabaseUnusable(unusable)

    @staticmethod
    def begin_fenced(conn: Connection) -> None:
        """Forget leases and plans noted by an earlier transaction on this (pooled)
        connection."""
        conn.info.pop(_LEASES, None)
        conn.info.pop(_PLANNED, None)
        conn.info.pop(_ANNOUNCE, None)

    @staticmethod
    def announce(conn: Connection, channel: str) -> None:
        """Tell other processes on ``channel`` once this transaction commits (a task became
        runnable, an event arrived), so they look now rather than at their next poll."""
        conn.info.setdefault(_ANNOUNCE, set()).add(channel)

    @staticmethod
    def announced(conn: Connection) -> set[str]:
        """The channels this transaction announces on (asked once, just before commit)."""
        found: set[str] = conn.info.pop(_ANNOUNCE, set())
        return found

    @staticmethod
    def note_planned(conn: Connection) -> None:
        """This transaction plans deliveries: wake this process's dispatcher once it commits
        (see :meth:`listen_planned`)."""
        conn.info[_PLANNED] = True

    @staticmethod
    def took_plans(conn: Connection) -> bool:
        """Whether this transaction planned deliveries (asked once, just before commit)."""
        return bool(conn.info.pop(_PLANNED, False))

    def listen_planned(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call ``callback`` (on the running loop) after each commit that planned deliveries
        in this process, so a report reaches the person now rather than at the dispatcher's
        next look. Returns what stops it. A commit that fails after the note wakes it for
        nothing, which is harmless: it only looks."""
        entry = (asyncio.get_running_loop(), callback)
        self._planned_listeners.append(entry)
        return lambda: self._planned_listeners.remove(entry)

    def committed_plans(self) -> None:
        """Wake the listeners (from the thread that committed)."""
        for loop, callback in list(self._planned_listeners):
            with contextlib.suppress(RuntimeError):  # its loop closed meanwhile
                loop.call_soon_threadsafe(callback)

    def check_leases(self, conn: Connection) -> None:
        """The last statement before commit: every lease a fenced write of this transaction
        relied on must still be valid by database time *now*. The fence itself is checked when
        its statement runs; a process paused between that statement and COMMIT would otherwise
        commit after its lease expired. Raises LeaseLost (the transaction rolls back)."""
        held: dict[tuple[str, int], float] | None = conn.info.pop(_LEASES, None)
        if not held:
            return
        now = self.prepared("db-now", lambda: select(self.db_now())).run(conn, {}).fetchone()[0]
        for (task_id, epoch), expires_at in held.items():
            if expires_at < now:
                raise LeaseLost(task_id, epoch)

    @abc.abstractmethod
    def db_now(self) -> ColumnElement[float]:
        """SQL expression for the database's own clock, in epoch seconds."""

    @abc.abstractmethod
    def insert_ignore(self, table: Table, values: dict[str, Any]) -> Insert:
        """INSERT that silently does nothing when a unique key already exists."""

    def lock_rows(self, query: Select[Any]) -> Select[Any]:
        """Lock selected rows for update, skipping rows another transaction holds."""
        return query

    def lock_for_update(self, query: Select[Any]) -> Select[Any]:
        """Lock selected rows for update, waiting for other holders."""
        return query

    async def close(self) -> None:
        self._readers.shutdown(wait=True)
        self.engine.dispose()
