"""The store: all durable state, and the only package that contains SQL.

``await Store.open(url)`` picks a backend from the URL (``sqlite:///path`` or
``postgresql://…``), brings the schema to the current revision and returns one async interface
that both backends implement with the same SQL. A database that cannot be reached raises
:class:`~steward.errors.DatabaseUnavailable`.
"""

from __future__ import annotations

import asyncio

from sqlalchemy.engine import make_url

from steward.errors import ConfigError
from steward.store import migrate
from steward.store.activations import ActivationQueries, FinalStep
from steward.store.audit import AuditQueries
from steward.store.authority import AuthorityQueries
from steward.store.backend import Backend, DatabaseLimits
from steward.store.effects import EffectQueries
from steward.store.feed import FeedQueries
from steward.store.inbox import InboxQueries
from steward.store.memory import MemoryQueries
from steward.store.memory_extra import MemoryExtraQueries
from steward.store.memory_passes import PassQueries
from steward.store.memory_search import MemorySearchQueries
from steward.store.schedule import ScheduleQueries
from steward.store.skills import SkillQueries
from steward.store.tasks import Fence
from steward.store.tokens import TokenQueries
from steward.store.vault import SecretQueries

__all__ = ["DatabaseLimits", "Fence", "FinalStep", "Store"]


class Store(
    ActivationQueries,
    ScheduleQueries,
    EffectQueries,
    InboxQueries,
    AuditQueries,
    FeedQueries,
    TokenQueries,
    SecretQueries,
    AuthorityQueries,
    # before MemoryQueries, which it extends
    PassQueries,
    MemoryQueries,
    MemorySearchQueries,
    MemoryExtraQueries,
    SkillQueries,
):
    """All of Steward's durable state behind one async interface."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend

    @classmethod
    async def open(
        cls, url: str, *, migrate_schema: bool = True, limits: DatabaseLimits | None = None
    ) -> Store:
        backend = _backend_for(url, limits)
        try:
            if migrate_schema:
                await asyncio.to_thread(_migrate_if_behind, backend)
        except BaseException as exc:
            await backend.close()
            error = backend.classify(exc) if isinstance(exc, Exception) else exc
            if error is exc:
                raise
            raise error from exc
        return cls(backend)

    @property
    def url(self) -> str:
        return self.backend.url

    @property
    def dialect(self) -> str:
        return self.backend.name

    async def close(self) -> None:
        await self.backend.close()


def _migrate_if_behind(backend: Backend) -> None:
    """Migrate only when the schema is behind: a read decides, so opening a current database
    never waits for (nor takes) the write lock another process may hold for a long time."""
    if migrate.current_revision(backend.engine) != migrate.head_revision():
        migrate.upgrade(backend.migration_engine)


def _backend_for(url: str, limits: DatabaseLimits | None) -> Backend:
    try:
        parsed = make_url(url)
    except Exception as exc:
        raise ConfigError(f"not a database URL: {url!r} ({exc})") from exc
    if parsed.get_backend_name() == "sqlite":
        if parsed.database in (None, "", ":memory:"):
            raise ConfigError(
                "in-memory SQLite cannot be shared between the writer and reader connections; "
                "use a file: sqlite:///path/to/steward.db"
            )
        from steward.store.sqlite import SQLiteBackend

        return SQLiteBackend(url, limits)
    if parsed.get_backend_name() in ("postgresql", "postgres"):
        from steward.store.postgres import PostgresBackend

        return PostgresBackend(url, limits)
    raise ConfigError(
        f"unsupported database {parsed.get_backend_name()!r}: use sqlite:///path or postgresql://…"
    )
