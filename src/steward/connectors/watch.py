"""The watcher: runs every active connection's trigger sources, turning changes into events.

One watch per connection and trigger source, each under a lease in the database, so across all
processes exactly one polls it (another takes over when its holder dies). A poll's events and
its new cursor are stored in one transaction (:meth:`~steward.store.watches.WatchRepository.
record`), and events are deduplicated by their keys: a crash anywhere neither loses nor repeats
a change. No model is involved: a watch costs nothing until something changes, and what the
change then starts is decided by the person's event triggers and waits.

A source that fails (server down, password changed) is retried with exponential backoff and
jitter, up to :attr:`Watcher.max_backoff_seconds`; its failures and last error are kept for the
person's status page, and the watch says in the log when it started failing and when it
recovered.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import Callable
from dataclasses import dataclass, field

import structlog

from steward.connectors import registry
from steward.connectors.base import ConnectorEnv, TriggerSource
from steward.domain.authority import Connection
from steward.errors import DatabaseUnavailable, UsageError

log = structlog.get_logger(__name__)


@dataclass(kw_only=True)
class Watcher:
    """Runs the trigger sources of every active connection of every person."""

    env: ConnectorEnv
    """What the sources work with."""
    holder: str
    """This process's name in the watch leases."""
    interval_seconds: float = 60.0
    """Longest wait between polls of one source (IMAP IDLE returns sooner on a change)."""
    refresh_seconds: float = 10.0
    """How often the set of connections is re-read (a new connection starts being watched)."""
    max_backoff_seconds: float = 900.0
    """Longest wait after repeated failures."""
    on_events: Callable[[], None] | None = None
    """Called when a poll stored new events (wakes the scheduler to route them)."""
    _running: dict[tuple[str, str], asyncio.Task[None]] = field(default_factory=dict)

    @property
    def lease_seconds(self) -> float:
        """A watch's lease outlives one wait and its poll, with margin."""
        return self.interval_seconds * 2 + 60.0

    async def run(self, stop: asyncio.Event) -> None:
        """Watch until ``stop`` is set."""
        try:
            while not stop.is_set():
                try:
                    await self._refresh()
                except DatabaseUnavailable as exc:
                    log.warning("watcher cannot read connections", error=str(exc))
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), self.refresh_seconds)
        finally:
            for task in self._running.values():
                task.cancel()
            await asyncio.gather(*self._running.values(), return_exceptions=True)
            self._running.clear()

    async def _refresh(self) -> None:
        wanted: dict[tuple[str, str], tuple[Connection, TriggerSource]] = {}
        for connection in await self.env.store.authority.list_active_connections():
            try:
                found = registry.sources(connection.kind, self.env)
            except UsageError:
                continue  # a kind without a connector (an http or MCP connection)
            for source in found:
                wanted[(connection.id, source.name)] = (connection, source)
        for key, task in list(self._running.items()):
            if key not in wanted or task.done():
                task.cancel()
                del self._running[key]
        for key, (connection, source) in wanted.items():
            if key not in self._running:
                self._running[key] = asyncio.create_task(
                    self._watch(connection, source), name=f"watch {key[0]} {key[1]}"
                )

    async def _watch(self, connection: Connection, source: TriggerSource) -> None:
        lease = f"watch:{connection.id}:{source.name}"
        store = self.env.store
        try:
            while True:
                held = await store.schedule.acquire_lease(
                    lease, holder=self.holder, ttl_seconds=self.lease_seconds
                )
                if held is None:  # another process watches it; look again later
                    await asyncio.sleep(self.interval_seconds)
                    continue
                failures = await self.poll_once(connection, source)
                if failures:
                    await asyncio.sleep(self.backoff(failures))
                else:
                    await source.wait(connection, self.interval_seconds)
        except asyncio.CancelledError:
            with contextlib.suppress(Exception):
                await store.schedule.release_lease(lease, holder=self.holder)
            raise

    async def poll_once(self, connection: Connection, source: TriggerSource) -> int:
        """Poll ``source`` once and store what it found; returns the failures in a row (0: it
        worked)."""
        store = self.env.store
        state = await store.watches.get(connection.id, source.name)
        try:
            polled = await source.poll(connection, state.cursor if state else None)
            stored = await store.watches.record(
                person_id=connection.person_id,
                connection_id=connection.id,
                source=source.name,
                found=polled.found,
                cursor=polled.cursor,
                now=self.env.clock.now(),
            )
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            error = str(exc) or type(exc).__name__
            try:
                failures = await store.watches.record_failure(
                    connection_id=connection.id,
                    source=source.name,
                    error=error,
                    now=self.env.clock.now(),
                )
            except DatabaseUnavailable:
                failures = (state.failures if state else 0) + 1
            if failures == 1:
                log.warning(
                    "watch failing", connection=connection.name, source=source.name, error=error
                )
            return failures
        if state is not None and state.failures:
            log.info("watch recovered", connection=connection.name, source=source.name)
        if any(created for _, created in stored) and self.on_events is not None:
            self.on_events()
        return 0

    def backoff(self, failures: int) -> float:
        """Seconds to wait after ``failures`` failed polls in a row: doubling from 5 s, with
        ±20 % jitter so many watches of one server do not retry together."""
        base: float = min(self.max_backoff_seconds, 5.0 * 2.0 ** min(failures - 1, 16))
        return base * random.uniform(0.8, 1.2)
