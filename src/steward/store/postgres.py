"""PostgreSQL backend (psycopg 3): many workers on many hosts share one database.

Transactions run on a small thread pool with a connection pool; row claims use
``FOR UPDATE SKIP LOCKED`` so concurrent workers never wait on each other's candidates.
Serialization failures and deadlocks are retried.
"""

from __future__ import annotations

import asyncio
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from sqlalchemy import ColumnElement, Insert, Select, Table, create_engine, literal_column
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError

from steward.store.backend import Backend, Op, T

_RETRYABLE_SQLSTATES = {"40001", "40P01"}  # serialization_failure, deadlock_detected


class PostgresBackend(Backend):
    name = "postgresql"

    def __init__(self, url: str, *, pool_size: int = 6) -> None:
        super().__init__(read_threads=pool_size)
        parsed = make_url(url)
        if parsed.drivername in ("postgresql", "postgres"):
            parsed = parsed.set(drivername="postgresql+psycopg")
        self.url = parsed.render_as_string(hide_password=True)
        # Reads check a pooled connection optimistically: a read that finds it dead is simply
        # run again (Backend.read), which saves the pre-ping round trip on the sentinel's hot
        # path. Writes ping first: a write that fails while committing cannot be blindly rerun.
        self.engine = create_engine(parsed, pool_size=pool_size * 2, max_overflow=4)
        self._write_engine = create_engine(
            parsed, pool_size=pool_size * 2, max_overflow=4, pool_pre_ping=True
        )
        self.migration_engine = self._write_engine
        self._writers = ThreadPoolExecutor(pool_size, thread_name_prefix="steward-write")

    async def write(self, op: Op[T], *, durable: bool = False) -> T:
        # Every PostgreSQL commit is durable (synchronous_commit is on by default).
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._writers, self._write_sync, op)

    def _write_sync(self, op: Op[T]) -> T:
        for attempt in range(8):
            try:
                with self._write_engine.begin() as conn:
                    return op(conn)
            except DBAPIError as exc:
                code = getattr(exc.orig, "sqlstate", None)
                if code not in _RETRYABLE_SQLSTATES or attempt == 7:
                    raise
                time.sleep(0.005 * 2**attempt)
        raise AssertionError("unreachable")

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
        await super().close()
