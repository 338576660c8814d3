"""What the API tests share: the served API and its two tenants."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import httpx

from steward.service import Service
from steward.service.hooks import sign
from support.tenancy import Tenant


@dataclass
class Api:
    base: str
    """``http://127.0.0.1:<port>/api/v1``."""
    owner: Service
    """The machine owner's facade (what ``steward`` on the machine uses)."""
    a: Tenant
    b: Tenant

    def client(self, token: str | None) -> httpx.AsyncClient:
        headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
        return httpx.AsyncClient(base_url=self.base, headers=headers, timeout=30)


@dataclass
class Sse:
    """One Server-Sent Event as read off the wire."""

    id: str | None
    event: str | None
    data: Any


class EventReader:
    """Reads Server-Sent Events off an open stream, a few at a time."""

    def __init__(self, response: httpx.Response) -> None:
        self._lines = response.aiter_lines()

    async def next(self, count: int) -> list[Sse]:
        """The next ``count`` events (comments skipped)."""
        found: list[Sse] = []
        fields: dict[str, str] = {}
        async for line in self._lines:
            if not line:
                if "data" in fields or "id" in fields:
                    data = json.loads(fields["data"]) if "data" in fields else None
                    found.append(Sse(id=fields.get("id"), event=fields.get("event"), data=data))
                    if len(found) == count:
                        return found
                fields = {}
            elif not line.startswith(":"):
                name, _, value = line.partition(":")
                fields[name] = value.removeprefix(" ")
        raise AssertionError(f"the stream ended after {len(found)} of {count} events")


def delivery(secret: str, body: bytes, *, at: datetime, delivery_id: str = "d-1") -> dict[str, str]:
    """The headers a sender puts on a webhook delivery sent at ``at`` (Standard Webhooks)."""
    stamp = int(at.timestamp())
    return {
        "webhook-id": delivery_id,
        "webhook-timestamp": str(stamp),
        "webhook-signature": sign(secret, delivery_id, stamp, body),
    }
