"""The watcher: runs every active connection's trigger sources, turning changes into events.

One watch per connection and trigger source, each under a lease in the database, so across all
processes exactly one polls it (another takes over when its holder dies). A poll's events and
its new cursor are stored in one transaction (:meth:`~steward.store.watches.WatchRepository.
record`), and events are deduplicated by their keys: a crash anywhere neither loses nor repeats
a change. No model is involved: a watch costs nothing until something changes, and what the
change then starts is decided by the person's event triggers and waits.

A source that fails (server down, password changed) is retried with exponential backoff and
jitter, up to :attr:`Watcher.max_backoff_seconds`; the next try's time, the failures and the
last error are stored (so another process taking the watch over keeps the backoff, and the
person's status page can say what is wrong), and the watch says in the log when it started
failing and when it recovered.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import structlog

from steward import telemetry
from steward.connectors import registry
from steward.connectors.base import ConnectorEnv, TriggerSource
from steward.domain.authority import Connection
from steward.domain.watch import WatchState
from steward.errors import NotFound

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
    _stopped: list[asyncio.Task[None]] = field(default_factory=list)

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
                except Exception as exc:  # the database, most likely: the watches go on
                    log.warning("watcher cannot read connections", error=str(exc))
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), self.refresh_seconds)
        finally:
            tasks = [*self._running.values(), *self._stopped]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            self._running.clear()
            self._stopped.clear()

    async def _refresh(self) -> None:
        wanted: dict[tuple[str, str], tuple[Connection, TriggerSource]] = {}
        for connection in await self.env.store.authority.list_active_connections():
            if connection.kind not in registry.kinds():
                continue  # an http or MCP connection: nothing to watch
            try:
                found = registry.sources(connection.kind, self.env)
            except Exception as exc:  # one broken connector must not stop the others
                log.error("connector failed to load", kind=connection.kind, error=str(exc))
                continue
            for source in found:
                wanted[(connection.id, source.name)] = (connection, source)
        for key, task in list(self._running.items()):
            if key in wanted and not task.done():
                continue
            if task.done() and not task.cancelled() and task.exception() is not None:
                log.error("watch stopped", watch=key, error=str(task.exception()))
            task.cancel()
            self._stopped.append(task)
            del self._running[key]
        for key, (connection, source) in wanted.items():
            if key not in self._running:
                self._running[key] = asyncio.create_task(
                    self._watch(connection, source), name=f"watch {key[0]} {key[1]}"
                )
        done = [t for t in self._stopped if t.done()]
        await asyncio.gather(*done, return_exceptions=True)
        self._stopped = [t for t in self._stopped if not t.done()]

    async def _watch(self, connection: Connection, source: TriggerSource) -> None:
        """Poll under the watch's lease until cancelled. Any failure — of the source or of the
        database — waits and tries again; the lease is renewed at least every interval, so a
        long backoff does not hand the watch to another process."""
        lease = f"watch:{connection.id}:{source.name}"
        store = self.env.store
        try:
            while True:
                try:
                    held = await store.schedule.acquire_lease(
                        lease, holder=self.holder, ttl_seconds=self.lease_seconds
                    )
                    if held is None:  # another process watches it; look again later
                        await asyncio.sleep(self.interval_seconds)
                        continue
                    state = await store.watches.get(connection.id, source.name)
                    wait = _seconds_until(state.retry_at if state else None, self.env)
                    if wait > 0:  # backing off (maybe after another process's failures)
                        await asyncio.sleep(min(wait, self.interval_seconds))
                        continue
                    if await self.poll_once(connection, source, state=state):
                        continue  # failed: the stored retry time decides the next try
                    await source.wait(connection, self.interval_seconds)
                except asyncio.CancelledError:
                    raise
                except Exception as exc:  # the database, most likely: wait and go on
                    log.warning("watch interrupted", watch=lease, error=str(exc))
                    await asyncio.sleep(self.backoff(1))
        except asyncio.CancelledError:
            with contextlib.suppress(Exception):
                await store.schedule.release_lease(lease, holder=self.holder)
            raise

    async def poll_once(
        self, connection: Connection, source: TriggerSource, *, state: WatchState | None = None
    ) -> int:
        """Poll ``source`` once and store what it found; returns the failures in a row (0: it
        worked). ``state``: the watch state just read, if the caller has it."""
        store = self.env.store
        if state is None:
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
        except NotFound:
            return 0  # disconnected meanwhile: nothing is recorded, the watch is stopped soon
        except Exception as exc:
            telemetry.watch_checked("account", "failed")
            error = str(exc) or type(exc).__name__
            failures = (state.failures if state else 0) + 1
            now = self.env.clock.now()
            failures = await store.watches.record_failure(
                connection_id=connection.id,
                source=source.name,
                error=error,
                now=now,
                retry_at=now + timedelta(seconds=self.backoff(failures)),
            )
            if failures == 1:
                log.warning(
                    "watch failing", connection=connection.name, source=source.name, error=error
                )
            return failures
        found_new = any(created for _, created in stored)
        telemetry.watch_checked("account", "changed" if found_new else "ok")
        if state is not None and state.failures:
            log.info("watch recovered", connection=connection.name, source=source.name)
        if found_new and self.on_events is not None:
            self.on_events()
        return 0

    def backoff(self, failures: int) -> float:
        """Seconds to wait after ``failures`` failed polls in a row: doubling from 5 s, with
        ±20 % jitter so many watches of one server do not retry together."""
        base: float = min(self.max_backoff_seconds, 5.0 * 2.0 ** min(failures - 1, 16))
        return base * random.uniform(0.8, 1.2)


def _seconds_until(when: datetime | None, env: ConnectorEnv) -> float:
    return 0.0 if when is None else (when - env.clock.now()).total_seconds()
