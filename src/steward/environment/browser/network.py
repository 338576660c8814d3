"""What the person's browser may send where: every request Chromium makes passes through
:class:`Guard` (a Playwright route on the whole context, so pop-ups and cross-site frames too).

* A top-level (main-frame) navigation may reach only the connection's hosts. Chromium follows a
  redirect without showing it to a route, so a main-frame document is fetched here without
  following redirects: a redirect to an allowed host is followed by a fresh navigation (which
  is checked again), one to any other host is refused before anything is sent there.
* A main-frame navigation that is not a GET sends a form: only :meth:`BrowserSession.submit`
  may, and only to the current page's host.
* A page's WebSocket is closed before it connects.
* Anything else (images, scripts, frames, XHR): a GET may reach any public address, and the
  connection's hosts; never a private, loopback or link-local address nor a ``localhost``
  name that the connection does not name (a page must not reach the person's router or local
  services). Other methods only to the page's own host, and never in research mode.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Literal
from urllib.parse import urljoin, urlsplit

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Request, Route, WebSocketRoute

from steward.sentinel.urls import UrlRefused, ip_of, is_public, normalise_host

NAVIGATION_SECONDS = 30.0
"""How long one page may take to answer (and to load)."""
_READ_METHODS = frozenset({"GET", "HEAD"})
_REDIRECTS = frozenset({301, 302, 303, 307, 308})

Refusal = Literal["host", "submit", "research", "resend"]
"""Why a main-frame navigation was stopped: an unallowed host, a form sent outside
``submit``, any non-GET in research mode, a redirect asking to send a form again."""


@dataclass(kw_only=True, frozen=True)
class Rules:
    """Where a task's browser may go."""

    hosts: frozenset[str]
    """Normalised hosts (``steward.sentinel.urls.host_key``) top-level navigation may reach."""
    research: bool = False
    """Read-only: no typing, every non-GET request aborted."""


def host_of(url: str) -> str:
    """The normalised host of an http(s) URL; ``""`` for anything else (about:blank, a
    Chromium error page, a host that cannot be read one way only)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return ""
    try:
        return normalise_host(parts.hostname)
    except UrlRefused:
        return ""


def reachable(host: str) -> bool:
    """Whether a page's subresource may reach ``host`` when the connection does not name it:
    a public address or a name, never a local one."""
    if not host or host == "localhost" or host.endswith(".localhost"):
        return False
    address = ip_of(host)
    return address is None or is_public(address)


@dataclass
class Guard:
    """The route every request goes through, and what it stopped during the current action."""

    rules: Rules
    """The task's rules (replaced when a later call brings new ones)."""
    page_host: str = ""
    """The host of the page the session shows (its XHR may send to it)."""
    submitting: str | None = None
    """During ``submit``: the one host a form may be sent to."""
    refused: list[tuple[Refusal, str]] = field(default_factory=list)
    """Main-frame navigations stopped since the action began: (why, host)."""
    follow: str | None = None
    """A redirect to an allowed host, to be followed by a fresh navigation."""
    unanswered: str | None = None
    """Why a main-frame document let through could not be fetched, if it could not."""
    navigations: int = 0
    """Main-frame navigations let through since the action began."""
    pending: set[Request] = field(default_factory=set)
    """Main-frame documents let through and not yet finished loading."""
    settled: asyncio.Event = field(default_factory=asyncio.Event)
    """Set while nothing is pending."""
    blocked: int = 0
    """Other requests aborted (for the record; they do not fail the action)."""

    def begin(self, *, submit_host: str | None = None) -> None:
        self.settled.set()
        self.pending.clear()
        self.refused.clear()
        self.follow = None
        self.unanswered = None
        self.navigations = 0
        self.submitting = submit_host

    async def route(self, route: Route, request: Request) -> None:
        try:
            if _main_frame(request):
                await self._navigate(route, request)
            elif self._allowed(request):
                await route.fallback()
            else:
                self.blocked += 1
                await route.abort("blockedbyclient")
        except PlaywrightError:
            # the page or the browser went away while the request waited: nothing to decide
            return

    async def socket(self, socket: WebSocketRoute) -> None:
        """A page's WebSocket is closed at once: once open it sends whatever it likes, to
        wherever it connected, outside every rule above."""
        self.blocked += 1
        try:
            await socket.close(code=1008, reason="not allowed by the person's browser")
        except PlaywrightError:
            return

    def finished(self, request: Request) -> None:
        """A request ended (loaded or failed)."""
        self.pending.discard(request)
        if not self.pending:
            self.settled.set()

    def _allowed(self, request: Request) -> bool:
        scheme = urlsplit(request.url).scheme
        if scheme not in ("http", "https"):
            return scheme in ("data", "blob")
        host = host_of(request.url)
        method = request.method.upper()
        if method not in _READ_METHODS:
            return not self.rules.research and bool(host) and host == self.page_host
        return host in self.rules.hosts or reachable(host)

    async def _navigate(self, route: Route, request: Request) -> None:
        host = host_of(request.url)
        method = request.method.upper()
        why = self._refusal(host, method)
        if why is not None:
            self.refused.append((why, host or request.url))
            await route.abort("aborted")  # ERR_ABORTED: Chromium stays on the page it showed
            return
        # pending from now: the action waits for a slow answer (a shop placing the order)
        self.pending.add(request)
        self.settled.clear()
        try:
            response = await route.fetch(max_redirects=0, timeout=NAVIGATION_SECONDS * 1000)
        except PlaywrightError as exc:
            # unreachable, refused, timed out: said in the action's words, the page stays
            self.unanswered = f"{host} did not answer ({_first_line(exc)})"
            await self._stop(route, request)
            return
        location = response.headers.get("location")
        if response.status in _REDIRECTS and location:
            target = urljoin(request.url, location)
            if response.status in (307, 308) and method not in _READ_METHODS:
                self.refused.append(("resend", host_of(target) or target))
            elif host_of(target) not in self.rules.hosts:
                self.refused.append(("host", host_of(target) or target))
            else:
                self.follow = target
            await self._stop(route, request)
            return
        self.navigations += 1
        await route.fulfill(response=response)

    async def _stop(self, route: Route, request: Request) -> None:
        try:
            await route.abort("aborted")  # ERR_ABORTED: Chromium stays on the page it showed
        finally:
            self.finished(request)

    def _refusal(self, host: str, method: str) -> Refusal | None:
        if host not in self.rules.hosts:
            return "host"
        if method in _READ_METHODS:
            return None
        if self.rules.research:
            return "research"
        return None if self.submitting == host else "submit"


def _main_frame(request: Request) -> bool:
    if not request.is_navigation_request():
        return False
    try:
        return request.frame.parent_frame is None
    except PlaywrightError:
        # a new window's first navigation is issued before its frame exists: a top level
        return True


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
