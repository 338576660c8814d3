"""A fake mail and calendar service for the demo, served on loopback next to Steward.

The agent reaches it only the way it would reach a real one: reading through the ``http_fetch``
tool, sending through the office's mail tool (:mod:`steward.demo.mail`), both under the
person's policy and through the egress broker, with a vault secret the broker puts on the wire.
So every request must carry ``Authorization: Bearer <the demo secret>``; anything else is 401.

* ``GET /mail/inbox`` — messages that arrived since the previous fetch (then they count as
  read). One more arrives every ``every`` seconds of the demo's clock, so each scheduled check
  finds something new until the script of messages runs out.
* ``POST /mail/send`` — a JSON ``{"to", "subject", "text"}``; kept in :attr:`FakeOffice.sent`,
  once per ``Idempotency-Key`` header (a retried send is not sent again).
* ``GET /calendar/events`` — today's events.

Every request is logged in :attr:`FakeOffice.requests`, so the demo's test can see that the
agent really called it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from steward.domain.clock import Clock

INBOX_PATH = "/mail/inbox"
SEND_PATH = "/mail/send"
CALENDAR_PATH = "/calendar/events"

DANA = "dana.park@acme.example"
"""The correspondent the demo's reply goal is about."""
CONTACTS = {DANA: "Dana Park", "sam@family.example": "Sam"}
"""The office's address book: whom an address belongs to."""

MAIL: tuple[tuple[str, str, str], ...] = (
    (
        DANA,
        "Thursday?",
        "Hi! Could we meet on Thursday at 10:00 to go over the Q3 contract renewal? — Dana",
    ),
    ("billing@cloudhost.example", "Your invoice for May", "Invoice 2291 for 48.00 EUR is ready."),
    ("noreply@github.example", "[steward] CI passed on main", "All checks have passed."),
    ("sam@family.example", "Dinner on Sunday", "Mum asks if you can bring dessert."),
    (DANA, "Agenda for Thursday", "I'll bring the draft renewal; can you check the SLA numbers?"),
    ("newsletter@lisbon-events.example", "This week in Lisbon", "Fado night at the Alfama."),
)
"""(from, subject, body) of the messages, in the order they arrive."""

CALENDAR: tuple[tuple[str, str], ...] = (
    ("09:00", "Stand-up"),
    ("12:30", "Lunch with Sam"),
    ("16:00", "Dentist"),
)
"""(time, title) of today's events."""


@dataclass(kw_only=True, frozen=True)
class Seen:
    """One request the service received."""

    method: str
    path: str
    authorized: bool
    """It carried the demo secret."""


@dataclass
class FakeOffice:
    """The service's state; :meth:`app` serves it."""

    secret: str
    """The bearer token it accepts (the vault holds it; the agent only sees a placeholder)."""
    every: float
    """Seconds between arriving messages."""
    clock: Clock
    """The demo's clock: messages arrive on its time."""
    started: datetime | None = None
    """When the office opened (its first inbox read, at the latest)."""
    delivered: int = 0
    """Messages the inbox has handed out so far."""
    requests: list[Seen] = field(default_factory=list)
    sent: list[dict[str, Any]] = field(default_factory=list)
    keys: dict[str, int] = field(default_factory=dict)
    """Idempotency key → the index in :attr:`sent` of the mail it sent."""

    def __post_init__(self) -> None:
        if self.started is None:
            self.started = self.clock.now()

    def app(self) -> Starlette:
        return Starlette(
            routes=[
                Route(INBOX_PATH, self._inbox, methods=["GET"]),
                Route(SEND_PATH, self._send, methods=["POST"]),
                Route(CALENDAR_PATH, self._calendar, methods=["GET"]),
            ]
        )

    def _admit(self, request: Request) -> bool:
        authorized = request.headers.get("authorization") == f"Bearer {self.secret}"
        self.requests.append(
            Seen(method=request.method, path=request.url.path, authorized=authorized)
        )
        return authorized

    async def _inbox(self, request: Request) -> JSONResponse:
        if not self._admit(request):
            return _unauthorized()
        # the first message is there at once; then one more per period
        now = self.clock.now()
        opened = self.started or now
        elapsed = (now - opened).total_seconds()
        arrived = min(len(MAIL), 1 + int(elapsed / self.every))
        fresh = range(self.delivered, arrived)
        self.delivered = max(self.delivered, arrived)
        messages = [
            {
                "id": f"msg-{i + 1}",
                "from": MAIL[i][0],
                "subject": MAIL[i][1],
                "body": MAIL[i][2],
                "received_at": (now - timedelta(seconds=5)).isoformat(timespec="seconds"),
            }
            for i in fresh
        ]
        return JSONResponse({"messages": messages, "unread": len(messages)})

    async def _send(self, request: Request) -> JSONResponse:
        if not self._admit(request):
            return _unauthorized()
        try:
            mail = json.loads(await request.body())
        except ValueError:
            return JSONResponse({"error": "the body must be JSON"}, status_code=400)
        if not isinstance(mail, dict) or not mail.get("to"):
            return JSONResponse({"error": "say who the mail is to"}, status_code=400)
        key = request.headers.get("idempotency-key")
        if key is None or key not in self.keys:
            self.sent.append(mail)
            if key is not None:
                self.keys[key] = len(self.sent) - 1
        number = self.keys[key] + 1 if key is not None else len(self.sent)
        return JSONResponse({"id": f"sent-{number}", "status": "sent"})

    async def _calendar(self, request: Request) -> JSONResponse:
        if not self._admit(request):
            return _unauthorized()
        today = self.clock.now().date().isoformat()
        events = [{"date": today, "time": t, "title": title} for t, title in CALENDAR]
        return JSONResponse({"events": events})


def _unauthorized() -> JSONResponse:
    return JSONResponse({"error": "missing or wrong bearer token"}, status_code=401)
