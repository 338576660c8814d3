"""Reading the person's feed from a position: what happened since then, and where it ends now
(where a page's live view starts listening)."""

from __future__ import annotations

from fastapi import Request

from steward.domain.feed import FeedEntry
from steward.service import Service

PAGE = 1000
"""The most entries the facade returns at once."""
CURSOR_COOKIE = "steward_cursor"
"""Where the feed ended when the browser last looked: the next page reads on from there
instead of from the start (seqs are global and only grow, so an old value is safe)."""


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


async def head(svc: Service, request: Request) -> int:
    """The seq of the person's newest entry (or of an older one of anyone's, if newer)."""
    after = cookie_seq(request, CURSOR_COOKIE)
    newest = await since(svc, after, most=1)
    return newest[-1].seq if newest else after


def cookie_seq(request: Request, name: str) -> int:
    value = request.cookies.get(name, "")
    return int(value) if value.isdigit() else 0
