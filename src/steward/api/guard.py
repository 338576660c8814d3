"""What wraps every request, as plain ASGI (it never buffers or wraps a streamed response):
the ``Server-Timing`` header, a 401 before the body is read when a change comes without a
token, and for an unexpected failure a 500 problem detail and a bounded, redacted log record
written off the event loop, so one bad request never stalls anyone else's."""

from __future__ import annotations

import asyncio
import time

import structlog
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from steward.api.common import problem, token_of
from steward.errors import Unauthorized
from steward.logs import redact, short_traceback

log = structlog.get_logger(__name__)

_CHANGES = frozenset({"POST", "PUT", "PATCH", "DELETE"})
CRASHED = "Steward failed to do this; see its log"


async def log_crash(scope: Scope, exc: BaseException) -> None:
    """One record for a failed request: its route and a short traceback, never locals or
    credentials, formatted and written in a worker thread."""

    def write() -> None:
        log.error(
            "request crashed",
            method=scope.get("method", ""),
            path=redact(str(scope.get("path", ""))[:300]),
            error=redact(f"{type(exc).__name__}: {exc}"),
            traceback=short_traceback(exc),
        )

    await asyncio.to_thread(write)


class Guard:
    def __init__(self, app: ASGIApp, *, api_prefix: str, unsigned: tuple[str, ...]) -> None:
        self.app = app
        self.api_prefix = api_prefix
        """Where the token-only API lives."""
        self.unsigned = unsigned
        """Prefixes under it that take no token (webhook deliveries, signed instead)."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if self._needs_token_first(scope):
            try:
                token_of(Request(scope), None)
            except Unauthorized as exc:
                await problem(401, type(exc).__name__, str(exc))(scope, receive, send)
                return
        started = time.perf_counter()
        responding = False

        async def timed(message: Message) -> None:
            nonlocal responding
            if message["type"] == "http.response.start":
                responding = True
                # how long the server spent, for the person's browser tools and for bench/
                spent = (time.perf_counter() - started) * 1000
                message.setdefault("headers", []).append(
                    (b"server-timing", f"app;dur={spent:.1f}".encode())
                )
            await send(message)

        try:
            await self.app(scope, receive, timed)
        except Exception as exc:
            await log_crash(scope, exc)
            if not responding:  # else the stream is cut: nothing more can be said in it
                await problem(500, "Internal error", CRASHED)(scope, receive, send)

    def _needs_token_first(self, scope: Scope) -> bool:
        """A change to the API with no bearer header is refused before its body is read."""
        path: str = scope.get("path", "")
        return (
            scope.get("method") in _CHANGES
            and path.startswith(self.api_prefix)
            and not path.startswith(self.unsigned)
            and not any(name == b"authorization" for name, _ in scope.get("headers", ()))
        )
