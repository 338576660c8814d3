"""PostgreSQL backend (psycopg 3): many workers on many hosts share one database.

Transactions run on a small thread pool with a connection pool; row claims use
``FOR UPDATE SKIP LOCKED`` so concurrent workers never wait on each other's candidates.
Serialization failures and deadlocks are retried. Every session is bounded (statement, lock
and idle-in-transaction timeouts, :class:`~steward.store.backend.DatabaseLimits`), so a paused
or hung process cannot keep a task's row locked past them; a server that restarts, fails over or
refuses connections surfaces as :class:`~steward.errors.DatabaseUnavailable`.
"""

from __future__ import annotations

import asyncio
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import psycopg
from sqlalchemy import ColumnElement, Insert, Select, Table, create_engine, literal_column
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError
from sqlalchemy.pool import NullPool

from steward.store.backend import Backend, DatabaseLimits, Op, T, one_line

_RETRYABLE_SQLSTATES = {"40001", "40P01"}  # serialization_failure, deadlock_detected
_UNAVAILABLE_SQLSTATES = {
    "57P01",  # admin_shutdown: the server is stopping or restarting
    "57P02",  # crash_shutdown
    "57P03",  # cannot_connect_now: the database system is starting up
    "55P03",  # lock_not_available: lock_timeout (a paused process holds the lock)
    "25P03",  # idle_in_transaction_session_timeout
    "25006",  # read_only_sql_transaction: a primary demoted during a failover
    "58000",  # system_error
    "58030",  # io_error
}
"""Besides these, class 08 (connection exception) and class 53 (insufficient resources: disk
full, out of memory, too many connections). Not among them: 57014, a statement that ran past
statement_timeout: the same statement would time out again, so it fails the step (an attempt
counted) rather than waiting for the database to come back."""
CONNECT_TIMEOUT_SECONDS = 10
"""A host that does not answer at all (a failover in progress) fails the connect this soon."""


def _session_options(limits: DatabaseLimits) -> str:
    settings = {
        "statement_timeout": limits.statement_timeout_seconds,
        "lock_timeout": limits.lock_timeout_seconds,
        "idle_in_transaction_session_timeout": limits.idle_in_transaction_timeout_seconds,
    }
    return " ".join(f"-c {name}={round(s * 1000)}" for name, s in settings.items())


class PostgresBackend(Backend):
    name = "postgresql"

    def __init__(
        self, url: str, limits: DatabaseLimits | None = None, *, pool_size: int = 6
    ) -> None:
        super().__init__(read_threads=pool_size)
        parsed = make_url(url)
        if parsed.drivername in ("postgresql", "postgres"):
            parsed = parsed.set(drivername="postgresql+psycopg")
        self.url = parsed.render_as_string(hide_password=True)
        self.dsn = parsed.set(drivername="postgresql").render_as_string(hide_password=False)
        """The libpq connection string: for the LISTEN connection (:mod:`steward.store.notify`)."""
        bounded = {
            "connect_timeout": CONNECT_TIMEOUT_SECONDS,
            "options": _session_options(limits or DatabaseLimits()),
        }
        # Reads check a pooled connection optimistically: a read that finds it dead is simply
        # run again (Backend.read), which saves the pre-ping round trip on the sentinel's hot
        # path. Writes ping first: a write that fails while committing cannot be blindly rerun.
        self.engine = create_engine(
            parsed, pool_size=pool_size * 2, max_overflow=4, connect_args=bounded
        )
        self._write_engine = create_engine(
            parsed,
            pool_size=pool_size * 2,
            max_overflow=4,
            pool_pre_ping=True,
            connect_args=bounded,
        )
        # Migrations may rightly run longer than any statement timeout (an index on a big
        # table); they run once, at start-up, on a connection of their own.
        self.migration_engine = create_engine(
            parsed, poolclass=NullPool, connect_args={"connect_timeout": CONNECT_TIMEOUT_SECONDS}
        )
        self._writers = ThreadPoolExecutor(pool_size, thread_name_prefix="steward-write")

    async def write(self, op: Op[T], *, durable: bool = False) -> T:
        # Every PostgreSQL commit is durable (synchronous_commit is on by default).
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._writers, self._write_sync, op)

    def _write_sync(self, op: Op[T]) -> T:
        for attempt in range(8):
            try:
                with self._write_engine.begin() as conn:
                    self.begin_fenced(conn)
                    result = op(conn)
                    for channel in sorted(self.announced(conn)):
                        # delivered by the server only if (and once) this transaction commits
                        conn.exec_driver_sql(f"NOTIFY {channel}")
                    self.check_leases(conn)
                    planned = self.took_plans(conn)
                if planned:
                    self.committed_plans()
                return result
            # psycopg.Error: from a prepared statement, run on the driver's cursor
            except (DBAPIError, psycopg.Error) as exc:
                orig = exc.orig if isinstance(exc, DBAPIError) else exc
                code = getattr(orig, "sqlstate", None)
                if code not in _RETRYABLE_SQLSTATES or attempt == 7:
                    raise self.classify(exc) from exc
                time.sleep(0.005 * 2**attempt)
        raise AssertionError("unreachable")

    @property
    def writer_alive(self) -> bool:
        # writes run on a pool of threads, each write on a connection of its own
        return True

    def unavailable_reason(self, exc: BaseException) -> str | None:
        invalidated = isinstance(exc, DBAPIError) and exc.connection_invalidated
        orig = exc.orig if isinstance(exc, DBAPIError) else exc
        code = getattr(orig, "sqlstate", None)
        # no SQLSTATE: the connection itself failed (refused, reset, closed by the server)
        lost = code is None and isinstance(orig, psycopg.OperationalError | psycopg.InterfaceError)
        if (
            invalidated
            or lost
            or (code is not None and (code[:2] in ("08", "53") or code in _UNAVAILABLE_SQLSTATES))
        ):
            return one_line(exc)
        return None

    def db_now(self) -> ColumnElement[float]:
        return literal_column("CAST(extract(epoch from clock_timestamp()) AS double precision)")

    def insert_ignore(self, table: Table, values: dict[str, Any]) -> Insert:
        return pg_insert(table).values(values).on_conflict_do_nothing()

    def lock_rows(self, query: Select[Any]) -> Select[Any]:
        return query.with_for_update(skip_locked=True)

    def lock_for_update(self, query: Select[Any]) -> Select[Any]:
        # NO KEY UPDATE: still exclusive among claimers, but does not block inserts whose
        # foreign key points at the row (a task or event of the person being created).
        return query.with_for_update(key_share=True)

    async def close(self) -> None:
        self._writers.shutdown(wait=True)
        self._write_engine.dispose()
        self.migration_engine.dispose()
        await super().close()
