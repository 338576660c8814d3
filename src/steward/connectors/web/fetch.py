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

No request carries a secret: a URL with a ``{{secret:…}}`` placeholder is refused, the broker
is told to refuse one on every hop (a redirect's ``Location`` is the site's choice), and a
stored validator carrying one is not sent. Reading a page uses no credential (that is
``http_fetch``'s business, under its own scope). Once a public address answered, no later hop
may go to a private or local one (a public page cannot lead Steward into the person's network).
A body is read as it arrives and no further than ``max_bytes`` (decompressed).

Errors name the host the caller asked for and the status, never text the site chose (a reason
phrase, a redirect's target): an error goes to the model without being marked as others' words.
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
from steward.connectors.web.politeness import (
    MAX_WAIT_SECONDS,
    HostPacer,
    RobotsRules,
    parse_robots,
)
from steward.domain.clock import Clock
from steward.errors import StewardRuntimeError, UsageError
from steward.sentinel.egress import (
    EgressBroker,
    EgressFailed,
    EgressNotSent,
    EgressRefused,
    EgressResponse,
)
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
    """The decoded body; ``""`` when ``not_modified`` or ``moved_to``."""
    moved_to: str | None = None
    """Where a redirect to another host pointed, not followed (``other_hosts=False``):
    nothing was read there; the status is the redirect's."""


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
        other_hosts: bool = True,
    ) -> Page:
        """GET ``url`` for ``person_id``'s ``actor`` (an action of ``scope``, which a
        connection must offer for a private host), conditionally when validators are given.
        With ``other_hosts=False`` a redirect to another host is not followed: the page comes
        back with ``moved_to``. Raises :class:`FetchRefused` or :class:`FetchFailed` in plain
        words that name the host asked for, never text the site chose."""
        given = url.strip()
        if _placeholder(given):
            raise FetchRefused(
                "a web address to read cannot carry a {{secret:…}} placeholder; "
                "reading a page uses no credential"
            )
        asked = _parse(given)
        headers = {"User-Agent": self._user_agent, "Accept": _ACCEPT}
        # validators are the site's words, kept from its last answer: never a channel for a
        # secret (the broker refuses placeholders anyway; this keeps the read working)
        if etag and not _placeholder(etag):
            headers["If-None-Match"] = etag
        if last_modified and not _placeholder(last_modified):
            headers["If-Modified-Since"] = last_modified
        hop = _Hop(asked=asked, at=asked)
        for _ in range(MAX_REDIRECTS + 1):
            if self._respect_robots:
                await self._check_robots(person_id, hop, actor, scope)
            response = await self._send(person_id, hop, actor, scope, headers, max_bytes)
            location = _header(response, "location")
            if response.status not in _REDIRECTS or not location:
                return self._page(hop, response, etag, last_modified, max_bytes)
            following = hop.to(location, public=response.public)
            if not other_hosts and following.at.host != hop.at.host:
                return Page(
                    url=hop.at.text,
                    status=response.status,
                    not_modified=False,
                    etag=None,
                    last_modified=None,
                    content_type="",
                    text="",
                    moved_to=following.at.text,
                )
            hop = following
        raise FetchFailed(f"{url} redirects more than {MAX_REDIRECTS} times; not followed")

    async def _send(
        self,
        person_id: str,
        hop: _Hop,
        actor: str,
        scope: str,
        headers: dict[str, str],
        max_bytes: int,
    ) -> EgressResponse:
        """One request, in the host's turn, through the broker (with no secret, at most
        ``max_bytes`` of the body, and only to a public address once a public one answered)."""
        target = hop.at
        waiting = self._pacer.blocked_for(target.host)
        if waiting is not None:
            raise FetchFailed(
                f"{hop.where} asked us to wait; not asking again for {_duration(waiting)}",
                retry_after=waiting,
            )
        rules = self._robots.get(_site(target))
        delay = rules.crawl_delay(self._agent) if rules is not None else None
        if delay is not None and not 0 <= delay <= MAX_WAIT_SECONDS:
            raise FetchRefused(
                f"{hop.where} asks robots to wait more than {_duration(MAX_WAIT_SECONDS)} "
                "between two pages (its robots.txt); nothing there is read"
            )
        await self._pacer.turn(target.host, at_least=delay or 0.0)
        try:
            return await self._broker.request(
                person_id=person_id,
                method="GET",
                url=target.text,
                actor=actor,
                headers=headers,
                scope=scope,
                secrets_allowed=False,
                max_bytes=max_bytes,
                public_only=hop.public,
            )
        except EgressRefused as exc:
            if hop.at.host == hop.asked.host:  # the broker names the caller's host
                raise FetchRefused(str(exc)) from None
            raise FetchRefused(
                f"{hop.asked.host} redirects to an address Steward may not read from there; "
                "nothing was sent to it"
            ) from None
        except EgressNotSent:
            raise FetchFailed(f"could not reach {hop.where}") from None
        except EgressFailed:
            raise FetchFailed(f"{hop.where} stopped answering before the page was read") from None

    def _page(
        self,
        hop: _Hop,
        response: EgressResponse,
        etag: str | None,
        last_modified: str | None,
        max_bytes: int,
    ) -> Page:
        status = response.status
        if status in _BUSY:
            raise self._busy(hop, response)
        if status == 304:
            return Page(
                url=hop.at.text,
                status=304,
                not_modified=True,
                etag=_header(response, "etag") or etag,
                last_modified=_header(response, "last-modified") or last_modified,
                content_type=_header(response, "content-type") or "",
                text="",
            )
        if not 200 <= status < 300:
            raise FetchFailed(f"{hop.where} answered {status}", status=status)
        if response.truncated:
            raise FetchRefused(
                f"the page at {hop.asked.text} is more than the {_size(max_bytes)} read at "
                "most; it was not kept"
            )
        return Page(
            url=hop.at.text,
            status=status,
            not_modified=False,
            etag=_header(response, "etag"),
            last_modified=_header(response, "last-modified"),
            content_type=_header(response, "content-type") or "",
            text=response.text,
        )

    def _busy(self, hop: _Hop, response: EgressResponse) -> FetchFailed:
        """A 429 or 503: the host is left alone for as long as its Retry-After asks, an hour
        at most (a longer wait is not promised: the host is asked again after the hour)."""
        asked_for = _retry_after(_header(response, "retry-after"), self._clock.now())
        retry_after = None if asked_for is None else min(asked_for, MAX_WAIT_SECONDS)
        if retry_after is not None:
            self._pacer.hold_off(hop.at.host, retry_after)
        wait = ""
        if asked_for is not None and asked_for > MAX_WAIT_SECONDS:
            wait = (
                f"; it asks us to wait more than {_duration(MAX_WAIT_SECONDS)}, "
                f"so it is not asked again for {_duration(MAX_WAIT_SECONDS)}"
            )
        elif retry_after:
            wait = f"; it asks us to wait {_duration(retry_after)}"
        return FetchFailed(
            f"{hop.where} is busy (it answered {response.status}){wait}",
            retry_after=retry_after,
            status=response.status,
        )

    # --- robots.txt --------------------------------------------------------------------------

    async def _check_robots(self, person_id: str, hop: _Hop, actor: str, scope: str) -> None:
        rules = await self._rules(person_id, hop, actor, scope)
        if rules.unreachable is not None:
            raise FetchRefused(
                f"{hop.where}'s robots.txt could not be read ({rules.unreachable}), so "
                "nothing there is read for now (the rule for robots.txt); tried again in "
                f"{_duration(ROBOTS_RETRY.total_seconds())}"
            )
        if not rules.allows(hop.at.text, self._agent):
            page = hop.asked.text if hop.at is hop.asked else "the page it redirects to"
            raise FetchRefused(
                f"{hop.where}'s robots.txt asks robots like Steward not to read {page}; "
                "it was not fetched"
            )

    async def _rules(self, person_id: str, hop: _Hop, actor: str, scope: str) -> RobotsRules:
        """The site's robots.txt, fetched by one caller at a time: the others sleep on the
        clock until it is in (a simulated clock sees them asleep, not stuck)."""
        site = _site(hop.at)
        while (pending := self._robots_pending.get(site)) is not None:
            await self._clock.sleep_until(self._clock.now() + ROBOTS_KEPT, wake=pending)
        rules = self._robots.get(site)
        if rules is not None and self._clock.now() - rules.fetched_at < _kept(rules):
            return rules
        done = self._robots_pending[site] = asyncio.Event()
        try:
            rules = await self._fetch_robots(person_id, hop, actor, scope)
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

    async def _fetch_robots(
        self, person_id: str, page: _Hop, actor: str, scope: str
    ) -> RobotsRules:
        hop = page.robots()
        headers = {"User-Agent": self._user_agent, "Accept": "text/plain"}
        for _ in range(MAX_REDIRECTS + 1):
            # unreachable (or asked to wait): nothing is read, and nothing is kept, so the
            # next request asks for robots.txt again
            response = await self._send(person_id, hop, actor, scope, headers, ROBOTS_MAX_BYTES)
            location = _header(response, "location")
            if response.status in _REDIRECTS and location:
                hop = hop.to(location, public=response.public)
                continue
            busy = self._busy(hop, response) if response.status in _BUSY else None
            if busy is not None and busy.retry_after is not None:
                raise busy
            now = self._clock.now()
            if 200 <= response.status < 300:
                return parse_robots(response.text, now)  # at most ROBOTS_MAX_BYTES of it
            if 400 <= response.status < 500 and response.status != 429:
                return RobotsRules(fetched_at=now, parser=None)
            return RobotsRules(
                fetched_at=now, parser=None, unreachable=f"it answered {response.status}"
            )
        return RobotsRules(fetched_at=self._clock.now(), parser=None)  # redirect loop: none


@dataclass(kw_only=True, frozen=True)
class _Hop:
    """Where one request of a fetch goes, and what the fetch was asked for."""

    asked: Url
    """The address the caller gave: errors name its host, never one a site chose."""
    at: Url
    """This request's address (the caller's, or where a redirect led)."""
    public: bool = False
    """A public address answered earlier in this fetch: a private one may not follow."""

    @property
    def where(self) -> str:
        """The host to name in a message."""
        if self.at.host == self.asked.host:
            return self.asked.host
        return f"{self.asked.host} (after a redirect)"

    def to(self, location: str, *, public: bool) -> _Hop:
        """The next hop, where a redirect to ``location`` leads."""
        try:
            following = parse_url(urljoin(self.at.text, location))
        except UrlRefused:
            raise FetchRefused(
                f"{self.asked.host} redirects to something that is not a web address; not followed"
            ) from None
        return _Hop(asked=self.asked, at=following, public=self.public or public)

    def robots(self) -> _Hop:
        """The hop that asks for this page's site's robots.txt."""
        return _Hop(
            asked=self.asked, at=parse_url(f"{_site(self.at)}/robots.txt"), public=self.public
        )


def _placeholder(text: str) -> bool:
    return bool(referenced(text, {}, None, None, None))


def _kept(rules: RobotsRules) -> timedelta:
    return ROBOTS_RETRY if rules.unreachable is not None else ROBOTS_KEPT


def _parse(url: str) -> Url:
    """The caller's address (its own words: shown as given when it is refused)."""
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
    except (TypeError, ValueError, OverflowError):
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
