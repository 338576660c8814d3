"""The store: all durable state, and the only package that contains SQL.

``await Store.open(url)`` picks a backend from the URL (``sqlite:///path`` or
``postgresql://…``), brings the schema to the current revision and returns the store: one
repository per aggregate (``store.tasks``, ``store.schedule``, ``store.memory``, …), each a
small class over the shared :class:`~steward.store.backend.Backend`, with the same SQL on both
backends. A database that cannot be reached raises
:class:`~steward.errors.DatabaseUnavailable`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from datetime import UTC, datetime

from sqlalchemy import select
from sqlalchemy.engine import make_url

from steward.errors import ConfigError, DatabaseUnusable
from steward.store import migrate
from steward.store.activations import ActivationRepository, FinalStep
from steward.store.audit import AuditRepository
from steward.store.authority import AuthorityRepository
from steward.store.backend import Backend, DatabaseLimits
from steward.store.channels import ChannelRepository
from steward.store.deliveries import DeliveryRepository
from steward.store.effects import EffectRepository
from steward.store.feed import FeedRepository
from steward.store.fencing import Fence
from steward.store.goals import GoalRepository
from steward.store.heartbeats import HeartbeatRepository
from steward.store.ids import IdRepository
from steward.store.inbox import InboxRepository
from steward.store.mailchannel import MailChannelRepository
from steward.store.memory import MemoryRepository
from steward.store.memory_bulk import MemoryBulkRepository
from steward.store.memory_passes import MemoryPassRepository
from steward.store.memory_search import MemorySearchRepository
from steward.store.notify import Listener
from steward.store.persons import PersonRepository
from steward.store.reports import ReportRepository
from steward.store.schedule import ScheduleRepository
from steward.store.skills import SkillRepository
from steward.store.tasks import TaskRepository
from steward.store.tokens import TokenRepository
from steward.store.vault import SecretRepository
from steward.store.watches import WatchRepository
from steward.store.webwatches import WebWatchRepository
from steward.store.workers import WorkerRepository

__all__ = ["DatabaseLimits", "Fence", "FinalStep", "Store"]


class Store:
    """All of Steward's durable state: one repository per aggregate, all on one backend."""

    persons: PersonRepository
    goals: GoalRepository
    ids: IdRepository
    tasks: TaskRepository
    activations: ActivationRepository
    schedule: ScheduleRepository
    heartbeats: HeartbeatRepository
    effects: EffectRepository
    inbox: InboxRepository
    mailchannel: MailChannelRepository
    audit: AuditRepository
    feed: FeedRepository
    tokens: TokenRepository
    secrets: SecretRepository
    authority: AuthorityRepository
    memory: MemoryRepository
    memory_bulk: MemoryBulkRepository
    memory_search: MemorySearchRepository
    memory_passes: MemoryPassRepository
    skills: SkillRepository
    watches: WatchRepository
    webwatches: WebWatchRepository
    channels: ChannelRepository
    reports: ReportRepository
    deliveries: DeliveryRepository
    workers: WorkerRepository

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self.persons = PersonRepository(backend)
        self.goals = GoalRepository(backend)
        self.ids = IdRepository(backend)
        self.tasks = TaskRepository(backend)
        self.activations = ActivationRepository(backend)
        self.schedule = ScheduleRepository(backend)
        self.heartbeats = HeartbeatRepository(backend)
        self.effects = EffectRepository(backend)
        self.inbox = InboxRepository(backend)
        self.mailchannel = MailChannelRepository(backend)
        self.audit = AuditRepository(backend)
        self.feed = FeedRepository(backend)
        self.tokens = TokenRepository(backend)
        self.secrets = SecretRepository(backend)
        self.authority = AuthorityRepository(backend)
        self.memory = MemoryRepository(backend)
        self.memory_bulk = MemoryBulkRepository(backend)
        self.memory_search = MemorySearchRepository(backend)
        self.memory_passes = MemoryPassRepository(backend)
        self.skills = SkillRepository(backend)
        self.watches = WatchRepository(backend)
        self.webwatches = WebWatchRepository(backend)
        self.channels = ChannelRepository(backend)
        self.reports = ReportRepository(backend)
        self.deliveries = DeliveryRepository(backend)
        self.workers = WorkerRepository(backend)

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

    def on_deliveries_planned(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call ``callback`` after each commit in this process that planned deliveries (a
        report, an approval, a question, a digest); returns what stops it."""
        return self.backend.listen_planned(callback)

    def listener(self, callbacks: Mapping[str, Callable[[], None]]) -> Listener | None:
        """A LISTEN connection calling ``callbacks[channel]`` on each notification of
        :mod:`steward.store.notify`'s channels; None on SQLite (polling only)."""
        from steward.store.postgres import PostgresBackend

        if not isinstance(self.backend, PostgresBackend):
            return None
        return Listener(self.backend.dsn, callbacks)

    async def schema_revision(self) -> str | None:
        """The revision the database's schema is at (None: not set up); the code needs
        :func:`migrate.head_revision`. Raises :class:`~steward.errors.DatabaseUnavailable`."""
        return await self.backend.read(migrate.connection_revision)

    async def database_time(self) -> datetime:
        """The database server's own clock (to compare with this host's)."""
        now = self.backend.db_now()
        seconds = await self.backend.read(lambda conn: conn.execute(select(now)).scalar_one())
        return datetime.fromtimestamp(float(seconds), UTC)

    async def close(self) -> None:
        await self.backend.close()


def _migrate_if_behind(backend: Backend) -> None:
    """Migrate only when the schema is behind: a read decides, so opening a current database
    never waits for (nor takes) the write lock another process may hold for a long time."""
    current, head = migrate.current_revision(backend.engine), migrate.head_revision()
    if current == head:
        return
    if current is not None and not migrate.is_known(current):
        raise DatabaseUnusable(
            f"the database {backend.url} is at schema revision {current}, which a newer "
            f"Steward wrote (this one knows up to {head}): run that newer Steward on it"
        )
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
