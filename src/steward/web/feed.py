"""Reading the person's feed from a position: what happened since then, oldest first."""

from __future__ import annotations

from fastapi import Request

from steward.domain.feed import FeedEntry
from steward.domain.limits import MAX_SEQ
from steward.service import Service

PAGE = 1000
"""The most entries the facade returns at once."""


async def since(svc: Service, after: int, *, most: int) -> list[FeedEntry]:
    """Up to ``most`` entries after ``after``, oldest first (the newest ones if there are more)."""
    found: list[FeedEntry] = []
    while True:
        batch = await svc.feed(person_id="", after_seq=after, limit=PAGE)
        found.extend(batch)
        del found[:-most]
        if len(batch) < PAGE:
            return found
        after = batch[-1].seq


def cookie_seq(request: Request, name: str) -> int:
    value = request.cookies.get(name, "")
    # a cookie is the browser's to change: one that is not a seq starts from the beginning
    seq = int(value) if value.isascii() and value.isdigit() and len(value) < 20 else 0
    return seq if seq <= MAX_SEQ else 0
