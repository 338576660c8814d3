"""Local endpoints that channels send to, over real sockets on 127.0.0.1: an HTTP receiver
that records every request (a JSON webhook, an ntfy server, a Web Push service) and an SMTP
server (aiosmtpd) that records every message.

    with receiving() as rx:
        ...  # send to f"json://127.0.0.1:{rx.port}/hook"
        [hit] = rx.hits
        assert hit.json()["title"] == "Hello"

``rx.status`` is what the receiver answers (200 by default); ``rx.check`` may inspect each
request first and return a status of its own (a push service verifying a VAPID signature);
``rx.location`` is where a 3xx answer redirects to.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from email import message_from_bytes, policy
from email.message import EmailMessage
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, cast

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import SMTP, Envelope, Session

from support.mailserver import free_port


@dataclass(kw_only=True)
class Hit:
    """One request the receiver got."""

    method: str
    path: str
    headers: dict[str, str]
    """Header names lower-cased."""
    body: bytes
    at: float = field(default_factory=time.monotonic)
    """When it arrived (``time.monotonic``)."""

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass(kw_only=True)
class Receiver:
    """An HTTP server on 127.0.0.1 that records what it is sent."""

    port: int
    hits: list[Hit] = field(default_factory=list)
    status: int = 200
    """What it answers every request."""
    check: Callable[[Hit], int | None] | None = None
    """Looks at each request first; a status it returns is answered instead of ``status``."""
    location: str | None = None
    """Where a 3xx answer redirects to."""
    arrived: threading.Condition = field(default_factory=threading.Condition)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


@contextmanager
def receiving() -> Iterator[Receiver]:
    receiver = Receiver(port=free_port())

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            hit = Hit(
                method="POST",
                path=self.path,
                headers={k.lower(): v for k, v in self.headers.items()},
                body=self.rfile.read(length),
            )
            status = receiver.check(hit) if receiver.check is not None else None
            with receiver.arrived:
                receiver.hits.append(hit)
                receiver.arrived.notify_all()
            answer = status or receiver.status
            body = b'{"id":"msg-1"}' if answer < 300 else b'{"error":"no"}'
            self.send_response(answer)
            self.send_header("Content-Type", "application/json")
            if 300 <= answer < 400 and receiver.location:
                self.send_header("Location", receiver.location)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", receiver.port), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


@dataclass(kw_only=True)
class MailSink:
    """An SMTP server on 127.0.0.1 (no sign-in, no TLS) that keeps what it accepts."""

    port: int
    messages: list[EmailMessage] = field(default_factory=list)
    recipients: list[list[str]] = field(default_factory=list)
    arrived: list[float] = field(default_factory=list)
    """When each message was accepted (``time.monotonic``)."""


@contextmanager
def mail_sink() -> Iterator[MailSink]:
    sink = MailSink(port=free_port())

    class Handler:
        async def handle_DATA(self, server: SMTP, session: Session, envelope: Envelope) -> str:
            data = cast(bytes, envelope.original_content or envelope.content)
            parsed = message_from_bytes(data, policy=policy.default)
            sink.messages.append(cast(EmailMessage, parsed))
            sink.recipients.append(list(envelope.rcpt_tos))
            sink.arrived.append(time.monotonic())
            return "250 OK"

    controller = Controller(Handler(), hostname="127.0.0.1", port=sink.port)
    controller.start()
    try:
        yield sink
    finally:
        controller.stop()
