"""Being a polite visitor of someone else's site: one request per host at a time, robots.txt.

:class:`HostPacer` spaces requests to one host at least ``seconds`` apart (start to start),
queuing concurrent callers in arrival order, waiting on the :class:`~steward.domain.clock.Clock`
(a simulated clock skips the waits). A host that answered 429 or 503 with ``Retry-After`` is
left alone until then: callers are told at once rather than queued for what may be hours.

:class:`RobotsRules` is one host's robots.txt as read by `Protego`_ (the parser Scrapy uses:
it follows RFC 9309 — longest match wins, ``Allow`` beats ``Disallow`` on a tie, ``*`` and
``$`` wildcards — and reads ``Crawl-delay``, which the standard library's ``urllib.robotparser``
gets wrong on wildcards and longest-match order).

.. _Protego: https://github.com/scrapy/protego
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import datetime, timedelta

from protego import Protego

from steward.domain.clock import Clock

MAX_WAIT_SECONDS = 3600.0
"""The longest wait a site may ask (Crawl-delay, Retry-After): longer is not honoured."""
KEPT_HOSTS = 4096
"""Past this many hosts, those with nothing pending are forgotten."""


@dataclass(kw_only=True, frozen=True)
class RobotsRules:
    """What one host's robots.txt allows, as fetched at one time."""

    fetched_at: datetime
    """When it was fetched (it is fetched again after a day)."""
    parser: Protego | None
    """The parsed file; None when there is none (any 4xx): everything is allowed."""
    unreachable: str | None = None
    """Why it could not be read (a 5xx, a 429): then nothing is allowed, as RFC 9309 asks,
    until it is tried again."""

    def allows(self, url: str, agent: str) -> bool:
        """Whether ``agent`` (the product token of our user agent) may fetch ``url``."""
        if self.unreachable is not None:
            return False
        return self.parser is None or bool(self.parser.can_fetch(url, agent))

    def crawl_delay(self, agent: str) -> float | None:
        """The ``Crawl-delay`` the site asks of ``agent``, in seconds, if any."""
        if self.parser is None:
            return None
        delay = self.parser.crawl_delay(agent)
        return float(delay) if delay is not None else None


def parse_robots(text: str, fetched_at: datetime) -> RobotsRules:
    """Rules from a robots.txt body."""
    return RobotsRules(fetched_at=fetched_at, parser=Protego.parse(text))


@dataclass(kw_only=True)
class _Host:
    next_at: datetime | None = None
    """The earliest start of the next request not yet given its turn."""
    blocked_until: datetime | None = None
    """Retry-After: no request before this."""


class HostPacer:
    """Spaces the requests to each host.

    Each caller is given the next free start time at once (so callers are served in arrival
    order) and sleeps on the clock until then: nothing waits on a lock, so a simulated clock,
    which moves when every participant sleeps on it, sees every queued caller as asleep.
    """

    def __init__(self, clock: Clock, seconds: float) -> None:
        self._clock = clock
        self._seconds = seconds
        self._hosts: dict[str, _Host] = {}

    def blocked_for(self, host: str) -> float | None:
        """Seconds until ``host`` may be asked again after a Retry-After, or None."""
        state = self._hosts.get(host)
        if state is None or state.blocked_until is None:
            return None
        left = (state.blocked_until - self._clock.now()).total_seconds()
        return left if left > 0 else None

    async def turn(self, host: str, *, at_least: float = 0.0) -> None:
        """Wait for this caller's turn at ``host``: at least the pacer's spacing (or
        ``at_least``, a site's Crawl-delay, when longer) after the previous request began."""
        now = self._clock.now()
        if host not in self._hosts and len(self._hosts) >= KEPT_HOSTS:
            self._forget_idle(now)
        state = self._hosts.setdefault(host, _Host())
        start = now if state.next_at is None or state.next_at < now else state.next_at
        spacing = min(max(self._seconds, at_least), MAX_WAIT_SECONDS)
        reserved = state.next_at = start + timedelta(seconds=spacing)
        if start > now:
            try:
                await self._clock.sleep_until(start)
            except asyncio.CancelledError:
                if state.next_at == reserved:  # nobody queued behind: the turn is free again
                    state.next_at = start
                raise

    def _forget_idle(self, now: datetime) -> None:
        """Hosts whose next turn and Retry-After are past need no state."""
        self._hosts = {
            host: state
            for host, state in self._hosts.items()
            if (state.next_at is not None and state.next_at > now)
            or (state.blocked_until is not None and state.blocked_until > now)
        }

    def hold_off(self, host: str, seconds: float) -> None:
        """The host asked us (Retry-After) to wait ``seconds`` before asking again."""
        state = self._hosts.setdefault(host, _Host())
        until = self._clock.now() + timedelta(seconds=min(seconds, MAX_WAIT_SECONDS))
        if state.blocked_until is None or until > state.blocked_until:
            state.blocked_until = until
