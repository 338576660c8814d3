"""The live stream: the person's feed as Server-Sent Events. A client that reconnects with the
last event id it saw (``Last-Event-ID``, as browsers do by themselves) gets everything after
it, so no event is lost across a dropped connection.

A stream re-checks its token at every poll (one indexed read), so revoking the token ends its
open streams within a second; and one person has at most a few streams open at once
(:class:`Streams`), so nobody can tie up the server for everyone else."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Annotated

from fastapi import APIRouter, Depends, Header, Query, Request
from fastapi.sse import EventSourceResponse, ServerSentEvent

from steward.api.common import Caller, bearer, token_of
from steward.domain.feed import FeedEntry
from steward.domain.limits import MAX_SEQ
from steward.errors import TooMany, Unauthorized, UsageError
from steward.service import Service
from steward.service.encode import to_jsonable

router = APIRouter(tags=["stream"])

POLL_SECONDS = 0.5
"""How often an idle stream looks for new entries (the feed is shared by every process), and
checks that its token is still valid."""
KEEPALIVE_SECONDS = 15.0
"""A comment line this often keeps proxies from closing an idle stream."""
BATCH = 200
STREAMS_PER_PERSON = 16
"""Streams one person may have open at once (unless the app is told otherwise)."""


class Streams:
    """How many streams each person has open, against the most allowed."""

    def __init__(self, most: int) -> None:
        self.most = most
        self.open: Counter[str] = Counter()

    def take(self, person_id: str) -> None:
        if self.open[person_id] >= self.most:
            raise TooMany(f"at most {self.most} live streams may be open at once; close one first")
        self.open[person_id] += 1

    def give_back(self, person_id: str) -> None:
        self.open[person_id] -= 1
        if not self.open[person_id]:
            del self.open[person_id]


@dataclass(kw_only=True)
class Opening:
    """Where a stream starts, checked before the response begins (afterwards, an error could
    only cut the stream, not answer the request)."""

    svc: Service
    token: str
    cursor: int
    goal_id: str | None
    first: list[FeedEntry]


async def opening(
    svc: Caller,
    request: Request,
    last_event_id: Annotated[str | None, Header(max_length=20)] = None,
    after: Annotated[
        int | None,
        Query(ge=0, le=MAX_SEQ, description="Resume after this seq (else Last-Event-ID)."),
    ] = None,
    goal_id: Annotated[str | None, Query(max_length=160)] = None,
) -> AsyncIterator[Opening]:
    cursor = after if after is not None else _seq(last_event_id)
    # the first read checks the goal and the token's scope
    first = await svc.feed(person_id="", after_seq=cursor, goal_id=goal_id, limit=BATCH)
    token = token_of(request, await bearer(request))
    person_id = (await svc.person(None)).id
    streams: Streams = request.app.state.streams
    streams.take(person_id)
    try:  # given back when the stream ends, however it ends
        yield Opening(svc=svc, token=token, cursor=cursor, goal_id=goal_id, first=first)
    finally:
        streams.give_back(person_id)


@router.get(
    "/stream",
    response_class=EventSourceResponse,
    summary="The feed as Server-Sent Events (resumes after Last-Event-ID)",
)
async def stream(
    request: Request, start: Annotated[Opening, Depends(opening)]
) -> AsyncIterator[ServerSentEvent]:
    svc, cursor, pending = start.svc, start.cursor, start.first
    quiet = time.monotonic()
    while True:
        for entry in pending:
            yield ServerSentEvent(id=str(entry.seq), event=entry.kind, data=to_jsonable(entry))
            cursor = entry.seq
        now = time.monotonic()
        if pending:
            quiet = now
        elif now - quiet >= KEEPALIVE_SECONDS:
            yield ServerSentEvent(comment="keep-alive")
            quiet = now
        if len(pending) < BATCH:
            if await request.is_disconnected():
                return
            await asyncio.sleep(POLL_SECONDS)
        try:  # a token revoked meanwhile ends the stream here, quietly
            svc = await request.app.state.service.authenticate(start.token)
        except Unauthorized:
            return
        pending = await svc.feed(person_id="", after_seq=cursor, goal_id=start.goal_id, limit=BATCH)


def _seq(last_event_id: str | None) -> int:
    if not last_event_id:
        return 0
    try:
        seq = int(last_event_id)
    except ValueError:
        raise UsageError(
            f"Last-Event-ID must be an event id from this stream, not {last_event_id!r}"
        ) from None
    if seq < 0:
        raise UsageError("Last-Event-ID must not be negative")
    if seq > MAX_SEQ:
        raise UsageError(f"Last-Event-ID must be at most {MAX_SEQ}")
    return seq
