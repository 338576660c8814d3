"""One-time login links: ``steward up`` prints ``http://host:port/login?code=…`` on a first
start (no control token yet); opening it signs that browser in with a new control-scoped token.

A code works once, for :data:`CODE_TTL`, and only its SHA-256 is kept (in this process: the
link is printed by the process that serves it, and a restart prints a new one)."""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

CODE_TTL = timedelta(minutes=15)
"""How long a printed link works."""


@dataclass(kw_only=True, frozen=True)
class _Issued:
    person_id: str
    """Whom the link signs in."""
    expires_at: datetime
    """Unused by then: it no longer works."""


def _digest(code: str) -> str:
    return hashlib.sha256(code.encode()).hexdigest()


class LoginCodes:
    """The codes issued and not yet used, by hash."""

    def __init__(self, now: Callable[[], datetime], ttl: timedelta = CODE_TTL) -> None:
        self.now = now
        """The time, from the service's :class:`~steward.domain.clock.Clock`."""
        self.ttl = ttl
        self._issued: dict[str, _Issued] = {}

    def issue(self, person_id: str) -> str:
        """A new code for ``person_id`` (the plaintext is returned, never kept)."""
        now = self.now()
        self._issued = {h: i for h, i in self._issued.items() if i.expires_at > now}
        code = secrets.token_urlsafe(24)
        self._issued[_digest(code)] = _Issued(person_id=person_id, expires_at=now + self.ttl)
        return code

    def redeem(self, code: str) -> str | None:
        """The person ``code`` signs in, once; None when it is unknown, used or expired."""
        issued = self._issued.pop(_digest(code.strip()), None)
        if issued is None or issued.expires_at <= self.now():
            return None
        return issued.person_id
