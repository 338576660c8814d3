"""A CalDAV account, async: the ``caldav`` library is blocking, so every call runs in a worker
thread, one at a time per account (its HTTP session is not shared between threads).

Writes are by UID: an event's UID is what makes a create idempotent (it is derived from the
effect's key) and what a reconcile looks for. Cancelling keeps the event, marked
``STATUS:CANCELLED`` with a new SEQUENCE, rather than deleting it: a scheduling server sends
the attendees a cancellation for either, but only the kept copy lets a reconcile after a crash
tell "cancelled" from "never existed", and the person still sees what was called off. Each
write can carry the key of the effect making it (``X-STEWARD-EFFECT``), so that a reconcile can
tell whether an update, a cancellation or an answer reached the server.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterable, Sequence
from datetime import date, datetime, time
from typing import Any, ClassVar, TypeVar, cast

from caldav.davclient import DAVClient
from caldav.elements import dav
from caldav.elements.base import BaseElement
from caldav.lib import error as caldav_error

from steward.connectors.calendar import ical
from steward.connectors.calendar.model import (
    BusySlot,
    CalendarCursor,
    CalendarEvent,
    CalendarInfo,
    ChangeKind,
    EventChange,
    EventEdit,
    NewEvent,
    PartStat,
    Seen,
)
from steward.connectors.calendar.settings import CalendarSettings
from steward.errors import EffectFailed, StewardRuntimeError

T = TypeVar("T")


class CalendarError(EffectFailed):
    """The server or the account certainly did not do what was asked (the message says why,
    in plain words): unknown calendar or event, refused sign-in, a change made meanwhile."""


class CalendarUnreachable(StewardRuntimeError):
    """The server could not be reached, or did not answer: try again later. For a write, its
    outcome is unknown."""


class GetCTag(BaseElement):
    """The collection tag (a calendarserver.org extension most servers speak)."""

    tag: ClassVar[str] = "{http://calendarserver.org/ns/}getctag"


class CalDAVAccount:
    """The person's calendars on one CalDAV server."""

    def __init__(
        self,
        settings: CalendarSettings,
        secret: str,
        *,
        only: Sequence[str] = (),
        timeout: int = 30,
    ) -> None:
        """``only``: the calendars this account may see (case-insensitive names; empty: all).
        The others are not listed, searched or written, also through an event's UID."""
        self.settings = settings
        self._only = {name.casefold() for name in only}
        self._secret = secret
        self._timeout = timeout
        self._lock = threading.Lock()
        self._client: DAVClient | None = None
        self._calendars: dict[str, Any] | None = None

    async def __aenter__(self) -> CalDAVAccount:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close its HTTP connections (the credential goes with them)."""
        client, self._client = self._client, None
        if client is not None:
            await asyncio.to_thread(client.close)

    # -- plumbing ---------------------------------------------------------------------------

    async def _run(self, fn: Callable[..., T], *args: Any) -> T:
        def locked() -> T:
            with self._lock:
                try:
                    return fn(*args)
                except caldav_error.AuthorizationError:
                    user = self.settings.username
                    raise CalendarError(
                        f"{self.settings.host} refused the sign-in as {user} "
                        f"(a wrong password, or {user} may not do this)"
                    ) from None
                except (caldav_error.DAVError, CalendarError):
                    raise
                except OSError as exc:  # the HTTP libraries' connection errors are OSErrors
                    raise CalendarUnreachable(
                        f"cannot reach {self.settings.host}: {exc.__class__.__name__}"
                    ) from exc

        return await asyncio.to_thread(locked)

    def _connect(self) -> DAVClient:
        if self._client is None:
            credentials: dict[str, Any]
            if self.settings.auth == "oauth2":
                credentials = {"password": self._secret, "auth_type": "bearer"}
            else:
                credentials = {
                    "username": self.settings.username,
                    "password": self._secret,
                    "auth_type": "basic",
                }
            self._client = DAVClient(
                url=self.settings.url,
                timeout=self._timeout,
                enable_rfc6764=False,  # the URL is given; no DNS discovery that could downgrade
                **credentials,
            )
        return self._client

    def _all(self, refresh: bool = False) -> dict[str, Any]:
        """Calendars by display name, read once per account."""
        if self._calendars is None or refresh:
            found: dict[str, Any] = {}
            # the blocking client's calls return values (the async client's, coroutines)
            listed = cast("list[Any]", self._connect().get_principal().get_calendars())
            for calendar in listed:
                name = str(calendar.get_display_name() or calendar.url.path.rstrip("/"))
                if not self._only or name.casefold() in self._only:
                    found.setdefault(name, calendar)
            self._calendars = found
        return self._calendars

    def _named(self, names: Iterable[str] | None) -> dict[str, Any]:
        """The calendars named (case does not matter), by their own names; all for None."""
        everything = self._all()
        if names is None:
            return everything
        chosen: dict[str, Any] = {}
        for wanted in names:
            name = _match(wanted, everything) or _match(wanted, self._all(refresh=True))
            everything = self._all()
            if name is None:
                known = ", ".join(sorted(everything)) or "none"
                raise CalendarError(f"there is no calendar named {wanted!r} (there are: {known})")
            chosen[name] = everything[name]
        return chosen

    def _target(self, name: str | None) -> tuple[str, Any]:
        name = name or self.settings.default_calendar
        if name is not None:
            [(found, calendar)] = self._named([name]).items()
            return found, calendar
        everything = self._all()
        if len(everything) == 1:
            return next(iter(everything.items()))
        known = ", ".join(sorted(everything)) or "none"
        raise CalendarError(f"say which calendar to use (there are: {known})")

    def _locate(self, uid: str) -> tuple[str, Any] | None:
        """The calendar name and resource holding ``uid``, or None."""
        for name, calendar in self._all().items():
            try:
                return name, calendar.get_event_by_uid(uid)
            except caldav_error.NotFoundError:
                continue
        return None

    def _read(self, name: str, resource: Any) -> CalendarEvent:
        parsed = ical.parse(resource.data)
        return ical.to_event(
            ical.master(parsed),
            calendar=name,
            zone=self.settings.zone,
            href=str(resource.url),
            etag=resource.etag,
        )

    # -- reading ----------------------------------------------------------------------------

    async def calendars(self) -> list[CalendarInfo]:
        """The account's calendars, with their change markers (this also checks sign-in)."""

        def read() -> list[CalendarInfo]:
            infos = []
            for name, calendar in self._all(refresh=True).items():
                props = calendar.get_properties([dav.SyncToken(), GetCTag()])
                token, ctag = props.get(dav.SyncToken.tag), props.get(GetCTag.tag)
                infos.append(
                    CalendarInfo(
                        name=name,
                        url=str(calendar.url),
                        sync_token=str(token) if token else None,
                        ctag=str(ctag) if ctag else None,
                    )
                )
            return infos

        return await self._run(read)

    async def events(
        self, start: datetime, end: datetime, calendars: Sequence[str] | None = None
    ) -> list[CalendarEvent]:
        """Every occurrence overlapping ``[start, end)`` in the chosen calendars (all by
        default), recurring events expanded, in time order."""

        def read() -> list[CalendarEvent]:
            found: list[CalendarEvent] = []
            for name, calendar in self._named(calendars).items():
                # the server selects objects by time range; expansion happens here, the same
                # on every server (server-side expansion differs in time zones and overrides)
                for resource in calendar.search(start=start, end=end, event=True, expand=False):
                    found.extend(
                        ical.expand(
                            ical.parse(resource.data),
                            start,
                            end,
                            name=name,
                            zone=self.settings.zone,
                            href=str(resource.url),
                            etag=resource.etag,
                        )
                    )
            return sorted(found, key=lambda e: (self._instant(e.start), e.summary))

        return await self._run(read)

    def _instant(self, moment: datetime | date) -> datetime:
        if isinstance(moment, datetime):
            return moment
        return datetime.combine(moment, time(), tzinfo=self.settings.zone)

    async def busy(
        self, start: datetime, end: datetime, calendars: Sequence[str] | None = None
    ) -> list[BusySlot]:
        """When the person is busy within ``[start, end)``, merged across the chosen calendars.

        Computed from the events (not the server's free-busy-query, which servers answer
        unevenly): an event counts unless it is cancelled, transparent, or declined by the
        person; an all-day event fills its days in the person's time zone.
        """
        me = (self.settings.email or "").lower()
        slots: list[tuple[datetime, datetime]] = []
        for event in await self.events(start, end, calendars):
            declined = any(
                a.address.lower() == me and a.partstat is PartStat.DECLINED for a in event.attendees
            )
            if event.cancelled or event.transparent or declined:
                continue
            begin, finish = self._instant(event.start), self._instant(event.end)
            slots.append((max(begin, start), min(finish, end)))
        merged: list[BusySlot] = []
        for begin, finish in sorted(slots):
            if finish <= begin:
                continue
            if merged and begin <= merged[-1].end:
                if finish > merged[-1].end:
                    merged[-1] = BusySlot(start=merged[-1].start, end=finish)
                continue
            merged.append(BusySlot(start=begin, end=finish))
        return merged

    def declined(self, event: CalendarEvent) -> bool:
        """The person said they will not come."""
        me = (self.settings.email or "").casefold()
        return any(
            a.address.casefold() == me and a.partstat is PartStat.DECLINED for a in event.attendees
        )

    async def find(self, uid: str) -> CalendarEvent | None:
        """The event with this UID in any calendar (its series, not an occurrence), or None."""

        def read() -> CalendarEvent | None:
            located = self._locate(uid)
            return self._read(*located) if located is not None else None

        return await self._run(read)

    # -- writing ----------------------------------------------------------------------------

    async def create(
        self,
        uid: str,
        event: NewEvent,
        *,
        calendar: str | None,
        now: datetime,
        key: str | None = None,
    ) -> CalendarEvent:
        """Store a new event under ``uid``. If an event with that UID is already there (this
        same create, applied before a crash), it is returned unchanged, not written twice."""
        if isinstance(event.start, datetime) != isinstance(event.end, datetime):
            raise CalendarError("start and end must both be times, or both be days")
        if event.end <= event.start:
            raise CalendarError("the event must end after it starts")

        def write() -> CalendarEvent:
            name, target = self._target(calendar)
            built = ical.build(
                uid=uid,
                event=event,
                organizer=self.settings.email,
                zone=self.settings.zone,
                now=now,
            )
            ical.mark(built, key)
            data = built.to_ical()
            try:
                resource = target.add_event(data.decode(), no_overwrite=True, increase_seqno=False)
            except caldav_error.ConsistencyError:
                located = self._locate(uid)
                if located is None:
                    raise
                return self._read(*located)
            return self._read(name, resource)

        try:
            return await self._run(write)
        except ValueError as exc:  # an invitation without the person's own address
            raise CalendarError(str(exc)) from None

    async def _rewrite(
        self, uid: str, change: Callable[[Any], None], *, what: str, key: str | None
    ) -> CalendarEvent:
        def write() -> CalendarEvent:
            located = self._locate(uid)
            if located is None:
                raise CalendarError(f"there is no event with UID {uid} to {what}")
            name, resource = located
            parsed = ical.parse(resource.data)
            change(parsed)
            ical.mark(parsed, key)
            resource.data = parsed.to_ical().decode()
            try:
                # If-Match on the ETag just read: a change made meanwhile is not overwritten
                resource.save(increase_seqno=False, precondition="etag")
            except caldav_error.ETagMismatchError:
                raise CalendarError(
                    f"the event changed while it was being updated; read it again to {what} it"
                ) from None
            resource.load()
            return self._read(name, resource)

        return await self._run(write)

    async def update(
        self, uid: str, edit: EventEdit, *, now: datetime, key: str | None = None
    ) -> CalendarEvent:
        """Change the event (the whole series) and return it as stored."""

        def change(parsed: Any) -> None:
            try:
                ical.edit(
                    parsed, edit, organizer=self.settings.email, zone=self.settings.zone, now=now
                )
            except ValueError as exc:
                raise CalendarError(str(exc)) from None

        return await self._rewrite(uid, change, what="update", key=key)

    async def cancel(self, uid: str, *, now: datetime, key: str | None = None) -> CalendarEvent:
        """Mark the event cancelled (kept, with a new SEQUENCE; see the module's note)."""
        return await self._rewrite(
            uid, lambda parsed: ical.cancel(parsed, now=now), what="cancel", key=key
        )

    async def respond(
        self, uid: str, answer: PartStat, *, now: datetime, key: str | None = None
    ) -> CalendarEvent:
        """Answer an invitation: set the person's own PARTSTAT in the event."""
        address = self.settings.email
        if address is None:
            raise CalendarError("answering an invitation needs the person's address")

        def change(parsed: Any) -> None:
            try:
                ical.respond(parsed, address=address, answer=answer, now=now)
            except ical.NotInvited:
                raise CalendarError(f"{address} is not invited to this event") from None

        return await self._rewrite(uid, change, what="answer", key=key)

    # -- change detection -------------------------------------------------------------------

    async def changes(
        self, calendar: str, cursor: CalendarCursor | None
    ) -> tuple[CalendarCursor, list[EventChange]]:
        """What changed in ``calendar`` since ``cursor``, and the cursor to ask from next.

        Without a cursor, this takes stock: the new cursor knows every event, and nothing is
        reported (what was there before the connection is not news). The server's sync-token
        says what changed (RFC 6578); a server without one is listed in full, and ETags tell
        what changed. An event whose ETag is the one already seen is not reported again.
        """

        def take_stock(target: Any) -> CalendarCursor:
            # the token first, then one listing with the events' data: a change between the
            # two is seen again next time, and its ETag tells whether it is news
            token = target.get_properties([dav.SyncToken()]).get(dav.SyncToken.tag)
            seen = {}
            for resource in target.search(event=True):
                event = self._read(calendar, resource)
                seen[str(resource.url.canonical())] = Seen(
                    uid=event.uid, etag=resource.etag or "", summary=event.summary
                )
            return CalendarCursor(token=str(token) if token else None, seen=seen)

        def read() -> tuple[CalendarCursor, list[EventChange]]:
            [target] = self._named([calendar]).values()
            if cursor is None:
                return take_stock(target), []
            collection = target.get_objects_by_sync_token(
                sync_token=cursor.token, load_objects=False
            )
            new_token = str(collection.sync_token) if collection.sync_token else None
            # a full listing: from no token, or the library's fallback for a server without
            # sync-tokens (its tokens are digests of ETags, ``fake-...``): absent means deleted
            full = cursor.token is None or (new_token or "").startswith("fake-")
            seen = dict(cursor.seen)
            deleted = {str(url) for url in collection.deleted_urls}
            present: set[str] = set()
            found: list[EventChange] = []
            for resource in collection.objects:
                href = str(resource.url.canonical())
                if href in deleted or resource.etag is None:
                    continue
                present.add(href)
                before = seen.get(href)
                if before is not None and before.etag == resource.etag:
                    continue
                if not resource.is_loaded():  # only what changed is fetched
                    resource.load()
                event = self._read(calendar, resource)
                seen[href] = Seen(uid=event.uid, etag=resource.etag, summary=event.summary)
                kind = ChangeKind.CREATED if before is None else ChangeKind.UPDATED
                found.append(_change(kind, event, resource.etag))
            gone = deleted | ({href for href in seen if href not in present} if full else set())
            for href in sorted(gone):
                last = seen.pop(href, None)
                if last is not None:
                    found.append(
                        EventChange(
                            kind=ChangeKind.DELETED,
                            calendar=calendar,
                            uid=last.uid,
                            etag=last.etag,
                            summary=last.summary,
                        )
                    )
            return CalendarCursor(token=new_token, seen=seen), found

        return await self._run(read)


def _match(wanted: str, calendars: dict[str, Any]) -> str | None:
    key = wanted.strip().casefold()
    return next((name for name in calendars if name.casefold() == key), None)


def _change(kind: ChangeKind, event: CalendarEvent, etag: str) -> EventChange:
    return EventChange(
        kind=kind,
        calendar=event.calendar,
        uid=event.uid,
        etag=etag,
        summary=event.summary,
        start=event.start,
        organizer=event.organizer,
    )
