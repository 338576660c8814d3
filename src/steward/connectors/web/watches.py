"""The web-watch runner: checks every enabled watch when it is due, without a model.

One loop claims due watches in batches (:meth:`~steward.store.webwatches.WebWatchRepository.
claim_due`, under a lease, so processes never check one watch twice) and checks up to
:attr:`WebWatchRunner.concurrency` at once; with nothing due it sleeps on the clock until the
earliest next check (a simulated clock then jumps there: thirty days replay in seconds).

A check fetches the page through the polite :class:`~steward.connectors.web.fetch.Fetcher`
for the watch's person under the ``web.read`` scope (a private host only when a connection of
the person names it), conditionally: an unchanged page is a 304 and nothing more is done.
Otherwise the value is extracted (off the event loop) and the conditions evaluated
(:mod:`~steward.connectors.web.condition`); the new state, a reading when the value changed
and — only when it matters — one ``web.changed`` event with the old and new values are stored
in one transaction. The next check is one interval later, give or take the jitter.

A check that fails (the site is down, answers 404, refuses by robots.txt, is not what the
selector reads) is retried later and later: the interval doubled per failure in a row, at
most :attr:`WebWatchRunner.max_backoff_seconds` (or the interval, when longer), ±20 %, and
never before the site's ``Retry-After``. The failures, the last error and the retry time are
stored, so the person reads why, and another process taking over keeps the backoff.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import httpx
import structlog

from steward import telemetry
from steward.connectors.web.condition import evaluate
from steward.connectors.web.extract import extract
from steward.connectors.web.fetch import Fetcher, FetchFailed
from steward.domain.clock import Clock
from steward.domain.webwatch import WEB_READ, Value, Verdict, WebWatch
from steward.store import Store
from steward.store.webwatches import CheckResult

log = structlog.get_logger(__name__)


@dataclass(kw_only=True)
class WebWatchRunner:
    """Checks every person's web watches when they are due."""

    store: Store
    """Where the watches, their claims and their events are."""
    fetcher: Fetcher
    """Fetches politely (per-host pacing, robots.txt, conditional GET)."""
    clock: Clock
    """Every time read and every wait."""
    holder: str
    """This process's name in the watches' leases."""
    concurrency: int = 64
    """Checks in flight at once."""
    batch: int = 256
    """Most watches claimed in one transaction."""
    lease_seconds: float = 600.0
    """How long a claim holds: longer than a check (the fetcher's waits and timeouts)."""
    refresh_seconds: float = 60.0
    """Longest sleep before looking again (another process may have added a watch)."""
    max_backoff_seconds: float = 86400.0
    """Longest wait after repeated failures (unless the interval is longer)."""
    on_events: Callable[[], None] | None = None
    """Called when a check stored a new event (the scheduler routes it)."""
    _wake: asyncio.Event = field(default_factory=asyncio.Event)

    def notify(self) -> None:
        """A watch was added or resumed: look for due watches now."""
        self._wake.set()

    async def run(self, stop: asyncio.Event) -> None:
        """Check watches until ``stop`` is set."""
        in_flight: dict[asyncio.Task[None], WebWatch] = {}
        stopping = asyncio.create_task(stop.wait())
        stopping.add_done_callback(lambda _: self._wake.set())
        self.clock.register()
        try:
            while not stop.is_set():
                claimed: list[WebWatch] = []
                free = self.concurrency - len(in_flight)
                if free > 0:
                    claimed = await self._claim(min(free, self.batch))
                for watch in claimed:
                    in_flight[asyncio.create_task(self.check(watch))] = watch
                if claimed and len(claimed) == min(free, self.batch):
                    continue  # more may be due
                if in_flight:
                    # checks are running (the clock must not jump): the next one to end frees
                    # a slot; a second later, look for watches that fell due meanwhile
                    await asyncio.wait(
                        [*in_flight, stopping], timeout=1.0, return_when=asyncio.FIRST_COMPLETED
                    )
                    in_flight = {t: w for t, w in in_flight.items() if not t.done()}
                    continue
                await self._sleep(stop)
        finally:
            self.clock.unregister()
            stopping.cancel()
            for task in in_flight:
                task.cancel()
            await asyncio.gather(*in_flight, stopping, return_exceptions=True)
            with contextlib.suppress(Exception):  # the database may be what stopped us
                await self.store.webwatches.release(
                    [w.id for w in in_flight.values()], holder=self.holder
                )

    async def _claim(self, limit: int) -> list[WebWatch]:
        try:
            return await self.store.webwatches.claim_due(
                holder=self.holder,
                now=self.clock.now(),
                limit=limit,
                lease_seconds=self.lease_seconds,
                lease_now=self.clock.lease_now(),
            )
        except Exception as exc:  # the database, most likely: try again after a sleep
            log.warning("cannot claim web watches", error=str(exc))
            return []

    async def _sleep(self, stop: asyncio.Event) -> None:
        """Until the earliest watch is due, or a nudge (or stop). The set of watches is read
        again every :attr:`refresh_seconds` (another process may have added one): a read, not
        a claim, while nothing is due."""
        while True:
            # cleared before reading, so that a nudge during the read (a watch added after
            # it looked) still wakes the sleep below; a stop meanwhile is seen here
            self._wake.clear()
            if stop.is_set():
                return
            now = self.clock.now()
            due: datetime | None = None
            with contextlib.suppress(Exception):  # the database: look again after a while
                due = await self.store.webwatches.next_due()
            if due is not None and due <= now:
                return
            deadline = now + timedelta(seconds=self.refresh_seconds)
            await self.clock.sleep_until(
                deadline if due is None else min(due, deadline), self._wake
            )
            if self._wake.is_set():
                return

    async def check(self, watch: WebWatch) -> None:
        """Check one claimed watch and store what came of it."""
        try:
            result = await self._look(watch)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            telemetry.watch_checked("web", "failed")
            await self._failed(watch, exc)
            return
        telemetry.watch_checked("web", "changed" if result.changed else "ok")
        try:
            stored = await self.store.webwatches.record_check(
                watch, holder=self.holder, result=result
            )
        except Exception as exc:  # the database: the lease lapses and the watch comes back
            log.warning("cannot record a web watch's check", watch=watch.id, error=str(exc))
            return
        if watch.failures:
            log.info("web watch recovered", watch=watch.id, host=watch.host)
        if stored is not None and stored[1] and self.on_events is not None:
            self.on_events()

    async def _look(self, watch: WebWatch) -> CheckResult:
        known = watch.value is not None  # without a value, validators would hide the page
        page = await self.fetcher.get(
            person_id=watch.person_id,
            url=watch.url,
            actor=f"watch:{watch.id}",
            scope=WEB_READ,
            etag=watch.etag if known else None,
            last_modified=watch.last_modified if known else None,
        )
        now = self.clock.now()
        if page.not_modified and watch.value is not None:
            return CheckResult(
                at=now,
                next_check_at=self._next(watch, now),
                value=watch.value,
                matched=watch.matched,
                changed=False,
                etag=page.etag,
                last_modified=page.last_modified,
            )
        # parsing a large page takes milliseconds: not on the loop every other check shares
        value, text = await asyncio.to_thread(extract, watch.extract, page.text, page.content_type)
        verdict = evaluate(
            watch.conditions, old=watch.value, old_matched=watch.matched, new=value, page=text
        )
        return CheckResult(
            at=now,
            next_check_at=self._next(watch, now),
            value=value,
            matched=verdict.matched,
            changed=verdict.changed,
            etag=page.etag,
            last_modified=page.last_modified,
            event=payload(watch, value, verdict) if verdict.fire else None,
        )

    async def _failed(self, watch: WebWatch, exc: Exception) -> None:
        error = str(exc) or type(exc).__name__
        failures = watch.failures + 1
        delay = self.backoff(watch, failures)
        if isinstance(exc, FetchFailed) and exc.retry_after is not None:
            delay = max(delay, exc.retry_after)
        retry_at = self.clock.now() + timedelta(seconds=delay)
        try:
            await self.store.webwatches.record_failure(
                watch, holder=self.holder, error=error, retry_at=retry_at
            )
        except Exception as db_exc:
            log.warning("cannot record a web watch's failure", watch=watch.id, error=str(db_exc))
            return
        if failures == 1:
            log.warning("web watch failing", watch=watch.id, host=watch.host, error=error)

    def backoff(self, watch: WebWatch, failures: int) -> float:
        """Seconds before the next try after ``failures`` failed checks in a row: the interval
        doubled each time, capped, ±20 % so the watches of one failing site spread out."""
        cap = max(self.max_backoff_seconds, watch.interval_seconds)
        base = min(cap, watch.interval_seconds * 2.0 ** min(failures - 1, 30))
        return base * random.uniform(0.8, 1.2)

    def _next(self, watch: WebWatch, now: datetime) -> datetime:
        jitter = random.uniform(-watch.jitter_seconds, watch.jitter_seconds)
        return now + timedelta(seconds=watch.interval_seconds + jitter)


def shared_tls_clients() -> Callable[..., httpx.AsyncClient]:
    """An HTTP client factory for the egress broker whose clients share one TLS context,
    the default one: loading the certificate store takes tens of milliseconds, which for
    every check of ten thousand watches would cost more than the checks."""
    return functools.partial(httpx.AsyncClient, verify=httpx.create_ssl_context())


def payload(watch: WebWatch, new: Value, verdict: Verdict) -> dict[str, Any]:
    """The ``web.changed`` event: which watch, the old and the new value (in words and as
    numbers), what matched. The values come from the page: ``untrusted``."""
    old = watch.value
    return {
        "watch_id": watch.id,
        "watch": watch.name,
        "url": watch.url,
        "old": None if old is None else old.describe(),
        "new": new.describe(),
        "old_value": None if old is None else old.text,
        "new_value": new.text,
        "old_number": None if old is None or old.number is None else str(old.number),
        "new_number": None if new.number is None else str(new.number),
        "currency": new.currency,
        "matched": list(verdict.reasons),
        "untrusted": True,
    }
