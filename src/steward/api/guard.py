"""What wraps every request, as plain ASGI (it never buffers or wraps a streamed response):
a limit on the request body, enforced before the body is read (a declared ``Content-Length``
over it) or while it is read (counting the chunks), as a 413 problem detail; a 401 before the
body is read when a change comes without a token; the ``Server-Timing`` header; and for an
unexpected failure a 500 problem detail and a bounded, redacted log record written off the
event loop, so one bad request never stalls anyone else's."""

from __future__ import annotations

import asyncio
import time

import structlog
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException
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


class BodyTooLarge(HTTPException):
    """A request body over its route's limit (an HTTP error, so the app's handler answers it
    as a problem detail wherever the body is being read)."""

    def __init__(self, most: int) -> None:
        super().__init__(413, "request body too large")
        self.most = most


class Guard:
    def __init__(
        self,
        app: ASGIApp,
        *,
        api_prefix: str,
        unsigned: tuple[str, ...],
        max_body: int,
        max_bodies: dict[str, int],
    ) -> None:
        self.app = app
        self.api_prefix = api_prefix
        """Where the token-only API lives."""
        self.unsigned = unsigned
        """Prefixes under it that take no token (webhook deliveries, signed instead)."""
        self.max_body = max_body
        """Bytes in a request body."""
        self.max_bodies = max_bodies
        """Another limit for the paths under each of these prefixes."""

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
        path: str = scope.get("path", "")
        most = next((n for p, n in self.max_bodies.items() if path.startswith(p)), self.max_body)
        if _declared_length(scope) > most:
            await too_large(most)(scope, receive, send)
            return
        started = time.perf_counter()
        responding = False
        read = 0

        async def counted() -> Message:
            nonlocal read
            message = await receive()
            read += len(message.get("body", b""))
            if read > most:
                raise BodyTooLarge(most)
            return message

        async def timed(message: Message) -> None:
            nonlocal responding
            if message["type"] == "http.response.start":
                responding = True
                # how long the server spent, for the person's browser tools and for bench/
                spent = (time.perf_counter() - started) * 1000
                timing = (b"server-timing", f"app;dur={spent:.1f}".encode())
                message["headers"] = [*message.get("headers", ()), timing]
            await send(message)

        try:
            await self.app(scope, counted, timed)
        except BodyTooLarge:  # read outside a route (its handler answers one inside)
            if not responding:
                await too_large(most)(scope, receive, send)
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


def _declared_length(scope: Scope) -> int:
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            return int(value) if value.isdigit() else 0
    return 0


def too_large(most: int) -> JSONResponse:
    """The answer to a body over ``most`` bytes."""
    return problem(413, "Content too large", f"a request body here is at most {most} bytes")
