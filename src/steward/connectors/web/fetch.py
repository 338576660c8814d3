"""The polite web fetcher: every web page Steward reads (``web_read``, watches, feeds) comes
through here.

Every request — each redirect hop and each robots.txt too — goes through the egress broker,
which checks the address (a private or loopback host only when an active connection of the
person that offers the caller's scope names it) and follows no redirect itself; the fetcher
follows up to :data:`MAX_REDIRECTS`, so each hop is checked again. On top of that it is polite:

- at most one request per host per ``per_host_seconds`` (or the site's ``Crawl-delay``, when
  longer), start to start, concurrent callers queued, the waits on the clock;
- robots.txt fetched once per site and kept for a day, respected for our user agent's product
  token (``Steward``): a 4xx means there is none (everything allowed); a 5xx or a 429 means
  nothing is allowed until it is tried again half an hour later (RFC 9309 §2.3.1.4), unless
  the host said when to come back (Retry-After); a host that cannot be reached is not read,
  and its robots.txt is asked for again with the next request;
- a 429 or 503 with ``Retry-After`` leaves the host alone until then
  (:attr:`FetchFailed.retry_after`); callers asking meanwhile are told at once;
- conditional GET: ``If-None-Match`` / ``If-Modified-Since`` when the caller has validators,
  and a 304 comes back as a :class:`Page` with ``not_modified``.

A URL carrying a ``{{secret:…}}`` placeholder is refused: reading a page uses no credential
(that is ``http_fetch``'s business, under its own scope).
"""

from __future__ import annotations

import asyncio
import weakref
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from email.utils import parsedate_to_datetime
from importlib.metadata import version
from urllib.parse import urljoin

from steward.connectors.base import ConnectorEnv
from steward.connectors.web.politeness import HostPacer, RobotsRules, parse_robots
from steward.domain.clock import Clock
from steward.errors import StewardRuntimeError, UsageError
from steward.sentinel.egress import EgressBroker, EgressFailed, EgressRefused, EgressResponse
from steward.sentinel.urls import Url, UrlRefused, parse_url
from steward.sentinel.wire import referenced

BOT_INFO_URL = "https://steward.invalid/docs/web"
"""Where a site's owner reads what this visitor is (in the user agent). No public page exists
yet: a deployment sets its own with ``user_agent``."""
DEFAULT_USER_AGENT = f"Steward/{version('steward')} (personal agent; +{BOT_INFO_URL})"
"""How the fetcher introduces itself; its product token (``Steward``) is what robots.txt
groups are matched against."""
MAX_REDIRECTS = 5
"""Redirects followed for one fetch (RFC 9309 asks at least five for robots.txt)."""
ROBOTS_KEPT = timedelta(hours=24)
"""How long a site's robots.txt is trusted before it is fetched again."""
ROBOTS_RETRY = timedelta(minutes=30)
"""How soon an unreadable robots.txt (5xx, unreachable) is tried again."""
KEPT_SITES = 4096
"""Past this many sites, robots.txt files that are out of date are forgotten."""
ROBOTS_MAX_BYTES = 512_000
"""What of a robots.txt is read (RFC 9309: at least 500 KiB)."""
_REDIRECTS = frozenset({301, 302, 303, 307, 308})
_BUSY = frozenset({429, 503})
_ACCEPT = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"


class FetchRefused(UsageError):
    """The fetch was not made, or its answer not kept: robots.txt disallows it, the URL is not
    http(s), the host is not one the person allowed, or the page is too big. Plain words."""


class FetchFailed(StewardRuntimeError):
    """The page could not be fetched: a network error, a 4xx/5xx answer, a 429; the message
    says which in plain words."""

    def __init__(
        self, message: str, *, retry_after: float | None = None, status: int | None = None
    ) -> None:
        super().__init__(message)
        self.retry_after = retry_after
        """Seconds the site asked us to wait (Retry-After), when it did."""
        self.status = status
        """The HTTP status the site answered, when it answered."""


@dataclass(kw_only=True, frozen=True)
class Page:
    """One fetched web page."""

    url: str
    """The final URL (after the redirects the fetcher followed)."""
    status: int
    """The HTTP status: a 2xx, or 304 when ``not_modified``."""
    not_modified: bool
    """The server answered 304 to our conditional GET: the caller's copy is current."""
    etag: str | None
    """The ``ETag`` to send next time (``If-None-Match``)."""
    last_modified: str | None
    """The ``Last-Modified`` to send next time (``If-Modified-Since``)."""
    content_type: str
    """The declared content type (``text/html; charset=utf-8``), ``""`` when none."""
    text: str
    """The decoded body; ``""`` when ``not_modified``."""


class Fetcher:
    """Fetches web pages politely, through the egress broker."""

    def __init__(
        self,
        broker: EgressBroker,
        clock: Clock,
        *,
        user_agent: str = DEFAULT_USER_AGENT,
        per_host_seconds: float = 1.0,
        respect_robots: bool = True,
    ) -> None:
        self._broker = broker
        self._clock = clock
        self._user_agent = user_agent
        self._agent = user_agent.split("/", 1)[0].strip() or user_agent
        self._respect_robots = respect_robots
        self._pacer = HostPacer(clock, per_host_seconds)
        self._robots: dict[str, RobotsRules] = {}
        self._robots_pending: dict[str, asyncio.Event] = {}

    async def get(
        self,
        *,
        person_id: str,
        url: str,
        actor: str,
        scope: str,
        etag: str | None = None,
        last_modified: str | None = None,
        max_bytes: int = 2_000_000,
    ) -> Page:
        """GET ``url`` for ``person_id``'s ``actor`` (an action of ``scope``, which a
        connection must offer for a private host), conditionally when validators are given.
        Raises :class:`FetchRefused` or :class:`FetchFailed` in plain words."""
        current = url.strip()
        if referenced(current, {}, None, None, None):
            raise FetchRefused(
                "a web address to read cannot carry a {{secret:…}} placeholder; "
                "reading a page uses no credential"
            )
        headers = {"User-Agent": self._user_agent, "Accept": _ACCEPT}
        if etag:
            headers["If-None-Match"] = etag
        if last_modified:
            headers["If-Modified-Since"] = last_modified
        for _hop in range(MAX_REDIRECTS + 1):
            target = _parse(current)
            if self._respect_robots:
                await self._check_robots(person_id, target, actor, scope)
            response = await self._send(person_id, target, actor, scope, headers)
            location = _header(response, "location")
            if response.status not in _REDIRECTS or not location:
                return self._page(target, response, etag, last_modified, max_bytes)
            current = urljoin(current, location)
        raise FetchFailed(f"{url} redirects more than {MAX_REDIRECTS} times; not followed")

    async def _send(
        self, person_id: str, target: Url, actor: str, scope: str, headers: dict[str, str]
    ) -> EgressResponse:
        """One request, in the host's turn, through the broker."""
        waiting = self._pacer.blocked_for(target.host)
        if waiting is not None:
            raise FetchFailed(
                f"{target.host} asked us to wait; not asking again for {_duration(waiting)}",
                retry_after=waiting,
            )
        rules = self._robots.get(_site(target))
        delay = rules.crawl_delay(self._agent) if rules is not None else None
        await self._pacer.turn(target.host, at_least=delay or 0.0)
        try:
            return await self._broker.request(
                person_id=person_id,
                method="GET",
                url=target.text,
                actor=actor,
                headers=headers,
                scope=scope,
            )
        except EgressRefused as exc:
            raise FetchRefused(str(exc)) from None
        except EgressFailed as exc:
            raise FetchFailed(f"could not reach {target.host}: {exc}") from None

    def _page(
        self,
        target: Url,
        response: EgressResponse,
        etag: str | None,
        last_modified: str | None,
        max_bytes: int,
    ) -> Page:
        status = response.status
        if status in _BUSY:
            raise self._busy(target, response)
        if status == 304:
            return Page(
                url=target.text,
                status=304,
                not_modified=True,
                etag=_header(response, "etag") or etag,
                last_modified=_header(response, "last-modified") or last_modified,
                content_type=_header(response, "content-type") or "",
                text="",
            )
        if not 200 <= status < 300:
            raise FetchFailed(
                f"{target.host} answered {status} {response.reason} for {target.text}",
                status=status,
            )
        declared = _header(response, "content-length")
        size = int(declared) if declared and declared.isdigit() else 0
        size = max(size, len(response.text.encode("utf-8")))
        if size > max_bytes:
            raise FetchRefused(
                f"the page at {target.text} is {_size(size)}, more than the {_size(max_bytes)} "
                "read at most; it was not kept"
            )
        return Page(
            url=target.text,
            status=status,
            not_modified=False,
            etag=_header(response, "etag"),
            last_modified=_header(response, "last-modified"),
            content_type=_header(response, "content-type") or "",
            text=response.text,
        )

    def _busy(self, target: Url, response: EgressResponse) -> FetchFailed:
        """A 429 or 503: the host is left alone for as long as its Retry-After asks."""
        retry_after = _retry_after(_header(response, "retry-after"), self._clock.now())
        if retry_after is not None:
            self._pacer.hold_off(target.host, retry_after)
        wait = f"; it asks us to wait {_duration(retry_after)}" if retry_after else ""
        return FetchFailed(
            f"{target.host} is busy ({response.status} {response.reason}){wait}",
            retry_after=retry_after,
            status=response.status,
        )

    # --- robots.txt --------------------------------------------------------------------------

    async def _check_robots(self, person_id: str, target: Url, actor: str, scope: str) -> None:
        rules = await self._rules(person_id, target, actor, scope)
        if rules.unreachable is not None:
            raise FetchRefused(
                f"{target.host}'s robots.txt could not be read ({rules.unreachable}), so "
                "nothing there is read for now (the rule for robots.txt); tried again in "
                f"{_duration(ROBOTS_RETRY.total_seconds())}"
            )
        if not rules.allows(target.text, self._agent):
            raise FetchRefused(
                f"{target.host}'s robots.txt asks robots like Steward not to read "
                f"{target.text}; it was not fetched"
            )

    async def _rules(self, person_id: str, target: Url, actor: str, scope: str) -> RobotsRules:
        """The site's robots.txt, fetched by one caller at a time: the others sleep on the
        clock until it is in (a simulated clock sees them asleep, not stuck)."""
        site = _site(target)
        while (pending := self._robots_pending.get(site)) is not None:
            await self._clock.sleep_until(self._clock.now() + ROBOTS_KEPT, wake=pending)
        rules = self._robots.get(site)
        if rules is not None and self._clock.now() - rules.fetched_at < _kept(rules):
            return rules
        done = self._robots_pending[site] = asyncio.Event()
        try:
            rules = await self._fetch_robots(person_id, site, actor, scope)
            if len(self._robots) >= KEPT_SITES:  # a long-lived process visits many sites
                now = self._clock.now()
                self._robots = {
                    k: r for k, r in self._robots.items() if now - r.fetched_at < _kept(r)
                }
            self._robots[site] = rules
        finally:
            del self._robots_pending[site]
            done.set()
        return rules

    async def _fetch_robots(self, person_id: str, site: str, actor: str, scope: str) -> RobotsRules:
        current = f"{site}/robots.txt"
        headers = {"User-Agent": self._user_agent, "Accept": "text/plain"}
        for _hop in range(MAX_REDIRECTS + 1):
            target = _parse(current)
            # unreachable (or asked to wait): nothing is read, and nothing is kept, so the
            # next request asks for robots.txt again
            response = await self._send(person_id, target, actor, scope, headers)
            location = _header(response, "location")
            if response.status in _REDIRECTS and location:
                current = urljoin(current, location)
                continue
            busy = self._busy(target, response) if response.status in _BUSY else None
            if busy is not None and busy.retry_after is not None:
                raise busy
            now = self._clock.now()
            if 200 <= response.status < 300:
                return parse_robots(response.text[:ROBOTS_MAX_BYTES], now)
            if 400 <= response.status < 500 and response.status != 429:
                return RobotsRules(fetched_at=now, parser=None)
            return RobotsRules(
                fetched_at=now,
                parser=None,
                unreachable=f"it answered {response.status} {response.reason}",
            )
        return RobotsRules(fetched_at=self._clock.now(), parser=None)  # redirect loop: none


def _kept(rules: RobotsRules) -> timedelta:
    return ROBOTS_RETRY if rules.unreachable is not None else ROBOTS_KEPT


def _parse(url: str) -> Url:
    try:
        return parse_url(url)
    except UrlRefused as exc:
        raise FetchRefused(f"cannot read {url!r}: {exc}") from None


def _site(target: Url) -> str:
    """The origin a robots.txt covers (scheme, host and port: RFC 9309 §2.3)."""
    host = f"[{target.host}]" if ":" in target.host else target.host
    default = 443 if target.scheme == "https" else 80
    port = "" if target.port == default else f":{target.port}"
    return f"{target.scheme}://{host}{port}"


def _header(response: EgressResponse, name: str) -> str | None:
    for key, value in response.headers.items():
        if key.lower() == name:
            return value
    return None


def _retry_after(value: str | None, now: datetime) -> float | None:
    """Retry-After in seconds: delay-seconds or an HTTP date (RFC 9110 §10.2.3)."""
    if not value:
        return None
    text = value.strip()
    if text.isdigit():
        return float(text)
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - now).total_seconds())


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{round(seconds)} seconds"
    if seconds < 90 * 60:
        return f"{round(seconds / 60)} minutes"
    return f"{round(seconds / 3600, 1):g} hours"


def _size(n: int) -> str:
    if n >= 1_000_000:
        return f"{n / 1_000_000:.1f} MB"
    return f"{max(1, round(n / 1000))} kB"


_shared: dict[int, Fetcher] = {}


def shared_fetcher(env: ConnectorEnv) -> Fetcher:
    """The one fetcher of ``env`` (the web tools, watches and feeds of one process share its
    pacing and its robots.txt cache), made on first use and dropped with ``env``."""
    key = id(env)
    fetcher = _shared.get(key)
    if fetcher is None:
        fetcher = _shared[key] = Fetcher(env.broker, env.clock)
        weakref.finalize(env, _shared.pop, key, None)
    return fetcher
