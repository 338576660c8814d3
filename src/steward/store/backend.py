"""How transactions reach the database: the one place that differs between backends.

Every store operation is a plain function of a SQLAlchemy ``Connection`` that runs inside one
transaction. A backend decides which thread runs it and how commits are grouped; the SQL itself
is shared (see :mod:`steward.store.queries`).
"""

from __future__ import annotations

import abc
import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from sqlalchemy import ClauseElement, ColumnElement, Connection, Engine, Insert, Select, Table
from sqlalchemy.exc import DBAPIError

T = TypeVar("T")
Op = Callable[[Connection], T]


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

    async def read(self, op: Op[T]) -> T:
        """Run ``op`` in a read-only snapshot, on a reader thread."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._readers, self._read_sync, op)

    def _read_sync(self, op: Op[T]) -> T:
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
