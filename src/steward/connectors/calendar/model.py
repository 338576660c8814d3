"""What the calendar connector reads and writes, as plain values (no I/O, no library types)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date, datetime
from enum import StrEnum
from types import MappingProxyType


class PartStat(StrEnum):
    """An attendee's answer to an invitation (RFC 5545 PARTSTAT)."""

    NEEDS_ACTION = "NEEDS-ACTION"
    ACCEPTED = "ACCEPTED"
    DECLINED = "DECLINED"
    TENTATIVE = "TENTATIVE"


class ChangeKind(StrEnum):
    """What happened to an event since the connector last looked."""

    CREATED = "created"
    UPDATED = "updated"
    DELETED = "deleted"


@dataclass(kw_only=True, frozen=True)
class CalendarInfo:
    """One calendar of the account."""

    name: str
    """Its display name (what the person calls it: Work, Home)."""
    url: str
    """Its collection URL."""
    sync_token: str | None
    """The server's current sync-token (RFC 6578), or None where it has none."""
    ctag: str | None
    """The server's current collection tag, or None where it has none."""


@dataclass(kw_only=True, frozen=True)
class Attendee:
    """Someone invited to an event."""

    address: str
    """Their e-mail address (without ``mailto:``)."""
    name: str | None = None
    """Their display name, where the event gives one."""
    partstat: PartStat = PartStat.NEEDS_ACTION
    """Their answer so far."""


@dataclass(kw_only=True, frozen=True)
class CalendarEvent:
    """An event, or one occurrence of a recurring event, as stored on the server."""

    calendar: str
    """Name of the calendar it is in."""
    uid: str
    """Its iCalendar UID (the same for every occurrence of a series)."""
    summary: str
    """Its title."""
    start: datetime | date
    """When it starts: an aware datetime, or a date for an all-day event."""
    end: datetime | date
    """When it ends (exclusive): an aware datetime, or the day after an all-day event."""
    location: str = ""
    """Where, as written."""
    description: str = ""
    """Its description, as written (by whoever wrote the event)."""
    organizer: str | None = None
    """The organizer's address, if it has one."""
    attendees: tuple[Attendee, ...] = ()
    """Who is invited."""
    cancelled: bool = False
    """STATUS:CANCELLED: it will not take place."""
    transparent: bool = False
    """TRANSP:TRANSPARENT: it does not make the person busy."""
    recurrence_id: datetime | date | None = None
    """For an occurrence of a series: which one (its original start)."""
    href: str | None = None
    """URL of the resource holding it."""
    etag: str | None = None
    """ETag of that resource when read."""
    sequence: int = 0
    """Its revision number (RFC 5545 SEQUENCE)."""
    written_by: str | None = None
    """The effect key of Steward's last write to it (``X-STEWARD-EFFECT``): how a reconcile
    after a crash tells whether that write reached the server."""

    @property
    def all_day(self) -> bool:
        return not isinstance(self.start, datetime)


@dataclass(kw_only=True, frozen=True)
class NewEvent:
    """An event to create."""

    summary: str
    """Its title."""
    start: datetime | date
    """An aware datetime, or a date for an all-day event."""
    end: datetime | date
    """Exclusive end, of the same kind as :attr:`start`."""
    location: str = ""
    """Where."""
    description: str = ""
    """Its description."""
    attendees: tuple[str, ...] = ()
    """Addresses to invite (the person is the organizer)."""


@dataclass(kw_only=True, frozen=True)
class EventEdit:
    """A change to an event: fields left None stay as they are."""

    summary: str | None = None
    """New title."""
    start: datetime | date | None = None
    """New start (the duration is kept when only the start moves)."""
    end: datetime | date | None = None
    """New end."""
    location: str | None = None
    """New place."""
    description: str | None = None
    """New description."""
    attendees: tuple[str, ...] | None = None
    """New list of invitees (replaces the old one; answers of those who stay are kept)."""


@dataclass(kw_only=True, frozen=True)
class BusySlot:
    """A stretch of time in which the person is busy."""

    start: datetime
    """When it starts (aware)."""
    end: datetime
    """When it ends (aware, exclusive)."""


@dataclass(kw_only=True, frozen=True)
class Seen:
    """What the connector last saw of one resource in a calendar."""

    uid: str
    """The event's UID."""
    etag: str
    """The resource's ETag then."""
    summary: str = ""
    """Its title then (to say what was deleted)."""


@dataclass(kw_only=True, frozen=True)
class CalendarCursor:
    """Where change detection stopped in one calendar."""

    token: str | None
    """The sync-token to ask from (the library's digest of ETags where the server has none)."""
    seen: Mapping[str, Seen] = field(default_factory=dict)
    """Each resource's URL and what was last seen of it."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "seen", MappingProxyType(dict(self.seen)))


@dataclass(kw_only=True, frozen=True)
class EventChange:
    """An event created, changed or deleted in a calendar since the cursor."""

    kind: ChangeKind
    """What happened."""
    calendar: str
    """Name of the calendar."""
    uid: str
    """The event's UID."""
    etag: str
    """The resource's new ETag (its last known one for a deletion)."""
    summary: str
    """Its title."""
    start: datetime | date | None = None
    """Its (first) start; None for a deletion."""
    organizer: str | None = None
    """The organizer's address, if any."""
