"""The calendar's trigger sources: ``calendar.changed`` (an event created, changed or deleted,
by anyone) and ``calendar.starting`` (an event starts in N minutes). No model is involved; the
watcher stores what a poll finds with the new cursor in one transaction, once per dedupe key.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from steward.connectors.base import ConnectorEnv, Poll
from steward.connectors.calendar.access import open_account
from steward.connectors.calendar.caldav_client import CalDAVAccount
from steward.connectors.calendar.model import (
    CalendarCursor,
    CalendarEvent,
    ChangeKind,
    EventChange,
    Seen,
)
from steward.connectors.calendar.wording import local
from steward.domain.authority import Connection
from steward.domain.watch import Found

CHANGED = "calendar.changed"
STARTING = "calendar.starting"
LOOKAHEAD = timedelta(days=1)
"""How far past the announcement window a poll looks, to know when the next one is due."""


def _cursor_in(stored: dict[str, Any]) -> CalendarCursor:
    return CalendarCursor(
        token=stored.get("token"),
        seen={
            href: Seen(uid=uid, etag=etag, summary=summary)
            for href, (uid, etag, summary) in stored.get("seen", {}).items()
        },
    )


def _cursor_out(cursor: CalendarCursor, marker: str | None) -> dict[str, Any]:
    return {
        "token": cursor.token,
        "marker": marker,
        "seen": {href: [s.uid, s.etag, s.summary] for href, s in cursor.seen.items()},
    }


@dataclass
class ChangedSource:
    """Events created, changed or deleted in the connection's calendars, by anyone.

    The cursor holds, per calendar, the sync-token (RFC 6578) and the ETag of every event seen,
    so that a restart neither misses nor repeats a change. A calendar whose sync-token (or
    collection tag) is the one stored is not asked further. The first poll, and the first of a
    calendar that appears later, takes stock without reporting anything.
    """

    env: ConnectorEnv
    name: str = CHANGED

    async def poll(self, connection: Connection, cursor: dict[str, Any] | None) -> Poll:
        async with await open_account(self.env, connection) as account:
            stored: dict[str, Any] = (cursor or {}).get("calendars", {})
            after: dict[str, Any] = {}
            found: list[Found] = []
            for info in await account.calendars():
                marker = info.sync_token or info.ctag
                before = stored.get(info.name)
                if before is not None and marker is not None and before.get("marker") == marker:
                    after[info.name] = before
                    continue
                moved, changes = await account.changes(
                    info.name, _cursor_in(before) if before is not None else None
                )
                after[info.name] = _cursor_out(moved, marker)
                found.extend(self._found(connection, account, change) for change in changes)
            return Poll(found=found, cursor={"calendars": after})

    def _found(self, connection: Connection, account: CalDAVAccount, change: EventChange) -> Found:
        # a deletion keeps the last ETag seen: its key must differ from that version's change
        version = f"deleted:{change.etag}" if change.kind is ChangeKind.DELETED else change.etag
        start = local(change.start, account.settings.zone) if change.start else None
        return Found(
            type=CHANGED,
            dedupe_key=f"cal:{connection.id}:{change.uid}:{version}",
            payload={
                "account": connection.name,
                "calendar": change.calendar,
                "uid": change.uid,
                "summary": change.summary,
                "start": start.isoformat() if start is not None else None,
                "change": change.kind.value,
                "organizer": change.organizer,
                "untrusted": True,
            },
        )

    async def wait(self, connection: Connection, seconds: float) -> None:
        await self.env.clock.sleep_until(self.env.clock.now() + timedelta(seconds=seconds))


@dataclass
class StartingSource:
    """Announces that an event starts in N minutes (N from the settings, 15 by default).

    Each poll announces the timed events that start within the next N minutes (not those
    cancelled or declined, and not all-day ones); the dedupe key names the occurrence's start,
    so an event is announced once, and again only if it moves. Between polls it sleeps until
    the next announcement is due, on the clock.
    """

    env: ConnectorEnv
    name: str = STARTING
    _due: dict[str, datetime] = field(default_factory=dict)

    async def poll(self, connection: Connection, cursor: dict[str, Any] | None) -> Poll:
        async with await open_account(self.env, connection) as account:
            now = self.env.clock.now()
            lead = timedelta(minutes=account.settings.starting_soon_minutes)
            found: list[Found] = []
            later: list[datetime] = []
            for event in await account.events(now, now + lead + LOOKAHEAD):
                if not isinstance(event.start, datetime) or event.cancelled:
                    continue
                if event.start < now or account.declined(event):
                    continue
                if event.start > now + lead:
                    later.append(event.start - lead)
                    continue
                found.append(self._found(connection, account, event, event.start, now))
            if later:
                self._due[connection.id] = min(later)
            else:
                self._due.pop(connection.id, None)
            return Poll(found=found, cursor={"checked_at": now.isoformat()})

    def _found(
        self,
        connection: Connection,
        account: CalDAVAccount,
        event: CalendarEvent,
        begins: datetime,
        now: datetime,
    ) -> Found:
        start = begins.astimezone(account.settings.zone)
        return Found(
            type=STARTING,
            dedupe_key=f"calstart:{connection.id}:{event.uid}:{begins.isoformat()}",
            payload={
                "account": connection.name,
                "calendar": event.calendar,
                "uid": event.uid,
                "summary": event.summary,
                "start": start.isoformat(),
                "minutes": max(0, round((begins - now).total_seconds() / 60)),
                "location": event.location,
                "untrusted": True,
            },
        )

    async def wait(self, connection: Connection, seconds: float) -> None:
        deadline = self.env.clock.now() + timedelta(seconds=seconds)
        due = self._due.get(connection.id)
        await self.env.clock.sleep_until(min(deadline, due) if due is not None else deadline)
