"""iCalendar in and out (icalendar, recurring-ical-events): build, read, expand and change
events. Pure functions over parsed calendars; the CalDAV client does the I/O."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from datetime import UTC, date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import icalendar
import recurring_ical_events  # type: ignore[import-untyped]

from steward.connectors.calendar.model import (
    Attendee,
    CalendarEvent,
    EventEdit,
    NewEvent,
    PartStat,
)

PRODID = "-//Steward//Calendar connector//EN"
MARK = "X-STEWARD-EFFECT"
"""Property naming the effect of Steward's last write to an event (for reconcile)."""


class NotInvited(ValueError):
    """The person is not among the event's attendees, so there is nothing to answer."""


def mailto(address: str) -> str:
    return address if address.lower().startswith("mailto:") else f"mailto:{address}"


def address_of(value: Any) -> str:
    """The plain address of a CAL-ADDRESS value (``mailto:`` dropped)."""
    text = str(value)
    return text[7:] if text.lower().startswith("mailto:") else text


def _in_zone(moment: datetime | date, zone: ZoneInfo) -> datetime | date:
    """A datetime in the person's zone (a floating one is taken to be in it); dates as they are."""
    if not isinstance(moment, datetime):
        return moment
    if moment.tzinfo is None:
        return moment.replace(tzinfo=zone)
    return moment.astimezone(zone)


def _aware(moment: datetime | date, zone: ZoneInfo) -> datetime | date:
    """As read: an aware datetime keeps its own zone; a floating one gets the person's."""
    if isinstance(moment, datetime) and moment.tzinfo is None:
        return moment.replace(tzinfo=zone)
    return moment


def _attendee(address: str, partstat: PartStat = PartStat.NEEDS_ACTION) -> icalendar.vCalAddress:
    value = icalendar.vCalAddress(mailto(address))
    value.params["ROLE"] = "REQ-PARTICIPANT"
    value.params["PARTSTAT"] = partstat.value
    if partstat is PartStat.NEEDS_ACTION:
        value.params["RSVP"] = "TRUE"
    return value


def build(
    *, uid: str, event: NewEvent, organizer: str | None, zone: ZoneInfo, now: datetime
) -> icalendar.Calendar:
    """A VCALENDAR with one VEVENT; times written in the person's zone, with its VTIMEZONE."""
    vevent = icalendar.Event.new(
        uid=uid,
        summary=event.summary,
        start=_in_zone(event.start, zone),
        end=_in_zone(event.end, zone),
        stamp=now.astimezone(UTC),
        created=now.astimezone(UTC),
        sequence=0,
    )
    vevent.add("status", "CONFIRMED")
    if event.location:
        vevent.add("location", event.location)
    if event.description:
        vevent.add("description", event.description)
    if event.attendees:
        if organizer is None:
            raise ValueError("inviting people needs the person's own address as organizer")
        vevent.add("organizer", icalendar.vCalAddress(mailto(organizer)))
        for address in event.attendees:
            vevent.add("attendee", _attendee(address))
    calendar = icalendar.Calendar.new(prodid=PRODID, subcomponents=[vevent])
    calendar.add_missing_timezones()
    return calendar


def mark(calendar: icalendar.Calendar, key: str | None) -> None:
    """Name the effect writing it (None: an unjournalled write, which removes an old mark)."""
    event = master(calendar)
    event.pop(MARK, None)
    if key is not None:
        event.add(MARK, key)


def parse(data: str | bytes) -> icalendar.Calendar:
    return icalendar.Calendar.from_ical(data)


def components(calendar: icalendar.Calendar) -> list[icalendar.Event]:
    """Its VEVENTs: the master first, then overridden occurrences."""
    events = [c for c in calendar.walk("VEVENT") if isinstance(c, icalendar.Event)]
    return sorted(events, key=lambda c: "RECURRENCE-ID" in c)


def master(calendar: icalendar.Calendar) -> icalendar.Event:
    found = components(calendar)
    if not found:
        raise ValueError("the calendar object holds no event")
    return found[0]


def _attendees(component: icalendar.Event) -> tuple[Attendee, ...]:
    values = component.get("attendee", [])
    if not isinstance(values, list):
        values = [values]
    return tuple(
        Attendee(
            address=address_of(value),
            name=getattr(value, "params", {}).get("CN"),
            partstat=_partstat(getattr(value, "params", {}).get("PARTSTAT")),
        )
        for value in values
    )


def _partstat(value: str | None) -> PartStat:
    try:
        return PartStat((value or PartStat.NEEDS_ACTION.value).upper())
    except ValueError:  # DELEGATED, COMPLETED...: no answer the person has to act on
        return PartStat.NEEDS_ACTION


def _end(component: icalendar.Event, start: datetime | date) -> datetime | date:
    if "DTEND" in component:
        end: datetime | date = component.decoded("DTEND")
        return end
    if "DURATION" in component:
        duration: timedelta = component.decoded("DURATION")
        return start + duration
    # RFC 5545 3.6.1: no end means one day for a date, an instant for a datetime
    return start + timedelta(days=1) if not isinstance(start, datetime) else start


def to_event(
    component: icalendar.Event,
    *,
    calendar: str,
    zone: ZoneInfo,
    href: str | None = None,
    etag: str | None = None,
) -> CalendarEvent:
    """Read one VEVENT (a master or one expanded occurrence)."""
    start = _aware(component.decoded("DTSTART"), zone)
    end = _aware(_end(component, start), zone)
    organizer = component.get("organizer")
    recurrence = component.get("recurrence-id")
    return CalendarEvent(
        calendar=calendar,
        uid=str(component.get("uid", "")),
        summary=str(component.get("summary", "")),
        start=start,
        end=end,
        location=str(component.get("location", "")),
        description=str(component.get("description", "")),
        organizer=address_of(organizer) if organizer is not None else None,
        attendees=_attendees(component),
        cancelled=str(component.get("status", "")).upper() == "CANCELLED",
        transparent=str(component.get("transp", "")).upper() == "TRANSPARENT",
        recurrence_id=_aware(recurrence.dt, zone) if recurrence is not None else None,
        href=href,
        etag=etag,
        sequence=int(component.get("sequence", 0)),
        written_by=str(component[MARK]) if MARK in component else None,
    )


def expand(
    calendar: icalendar.Calendar,
    start: datetime,
    end: datetime,
    *,
    name: str,
    zone: ZoneInfo,
    href: str | None = None,
    etag: str | None = None,
) -> list[CalendarEvent]:
    """The occurrences overlapping ``[start, end)``: a series is expanded by its rules, with
    its exceptions and overridden occurrences; each keeps the wall-clock time of its own zone
    (a weekly 10:00 in Paris stays 10:00 across a change to or from summer time)."""
    occurrences = recurring_ical_events.of(calendar).between(start, end)
    found = [
        to_event(occurrence, calendar=name, zone=zone, href=href, etag=etag)
        for occurrence in occurrences
        if isinstance(occurrence, icalendar.Event)
    ]
    is_series = any("RRULE" in c or "RDATE" in c for c in components(calendar))
    if not is_series:  # a single event read through the expander has no occurrence id
        return found
    return [
        occ if occ.recurrence_id is not None else replace(occ, recurrence_id=occ.start)
        for occ in found
    ]


def _touch(component: icalendar.Event, now: datetime) -> None:
    """Mark a new revision (RFC 5545: the organizer bumps SEQUENCE on a significant change)."""
    component["SEQUENCE"] = int(component.get("sequence", 0)) + 1
    for name in ("DTSTAMP", "LAST-MODIFIED"):
        component.pop(name, None)
        component.add(name, now.astimezone(UTC))


def edit(
    calendar: icalendar.Calendar,
    change: EventEdit,
    *,
    organizer: str | None,
    zone: ZoneInfo,
    now: datetime,
) -> None:
    """Apply ``change`` to the series (its master event)."""
    event = master(calendar)
    if change.summary is not None:
        event.pop("SUMMARY", None)
        event.add("summary", change.summary)
    if change.start is not None or change.end is not None:
        old_start = event.decoded("DTSTART")
        old_end = _end(event, old_start)
        start = _in_zone(change.start, zone) if change.start is not None else old_start
        end = (
            _in_zone(change.end, zone) if change.end is not None else start + (old_end - old_start)
        )
        if isinstance(start, datetime) != isinstance(end, datetime) or end <= start:
            raise ValueError("the event must end after it starts, both times or both days")
        for name in ("DTSTART", "DTEND", "DURATION"):
            event.pop(name, None)
        event.add("dtstart", start)
        event.add("dtend", end)
        # a new time is a new question (RFC 5546 2.1.5): earlier answers no longer hold
        _ask_again(event)
    for name, value in (("LOCATION", change.location), ("DESCRIPTION", change.description)):
        if value is not None:
            event.pop(name, None)
            if value:
                event.add(name, value)
    if change.attendees is not None:
        _replace_attendees(event, change.attendees, organizer)
    _touch(event, now)
    calendar.add_missing_timezones()


def _ask_again(event: icalendar.Event) -> None:
    values = event.get("attendee", [])
    for value in values if isinstance(values, list) else [values]:
        value.params["PARTSTAT"] = PartStat.NEEDS_ACTION.value
        value.params["RSVP"] = "TRUE"


def _replace_attendees(
    event: icalendar.Event, addresses: Iterable[str], organizer: str | None
) -> None:
    kept = {a.address.lower(): a.partstat for a in _attendees(event)}
    event.pop("ATTENDEE", None)
    wanted = list(addresses)
    for address in wanted:
        event.add("attendee", _attendee(address, kept.get(address.lower(), PartStat.NEEDS_ACTION)))
    if wanted and "ORGANIZER" not in event:
        if organizer is None:
            raise ValueError("inviting people needs the person's own address as organizer")
        event.add("organizer", icalendar.vCalAddress(mailto(organizer)))


def cancel(calendar: icalendar.Calendar, *, now: datetime) -> None:
    """Mark every component cancelled (the series and its overridden occurrences)."""
    for component in components(calendar):
        component.pop("STATUS", None)
        component.add("status", "CANCELLED")
        _touch(component, now)


def respond(calendar: icalendar.Calendar, *, address: str, answer: PartStat, now: datetime) -> None:
    """Set the person's own PARTSTAT in every component that invites them.

    An attendee's reply does not bump SEQUENCE (RFC 5546 3.2.3: only the organizer revises).
    """
    answered = False
    for component in components(calendar):
        values = component.get("attendee", [])
        mine = [
            value
            for value in (values if isinstance(values, list) else [values])
            if address_of(value).lower() == address.lower()
        ]
        for value in mine:
            value.params["PARTSTAT"] = answer.value
            value.params.pop("RSVP", None)
        if mine:
            answered = True
            component.pop("DTSTAMP", None)
            component.add("dtstamp", now.astimezone(UTC))
    if not answered:
        raise NotInvited(f"{address} is not among the attendees")
