"""Times and events in plain words, for the model and for the person: arguments parsed in the
person's time zone, spans written as "Thu 10 Dec, 10:00-10:30" (with an en dash), events as
plain fields."""

from __future__ import annotations

from datetime import date, datetime, timedelta, tzinfo
from typing import Any

from steward.connectors.calendar.model import CalendarEvent

DASH = "\N{EN DASH}"
YOUR_TIME = "your time"
"""How a time given without a zone is labelled: it is read in the person's own zone."""


def parse_time(text: str, zone: tzinfo | None) -> datetime | date:
    """``2026-12-10`` (a day), ``2026-12-10T10:00`` (in ``zone``, the person's; kept naive when
    ``zone`` is None) or ``2026-12-10T10:00+01:00``. ValueError in plain words otherwise."""
    value = text.strip()
    try:
        if len(value) == 10:
            return date.fromisoformat(value)
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise ValueError(
            f"{text!r} is not a time; write 2026-12-10T10:00 (your time), "
            "2026-12-10T10:00+01:00, or 2026-12-10 for a whole day"
        ) from None
    if moment.tzinfo is None and zone is not None:
        return moment.replace(tzinfo=zone)
    return moment


def _zone_label(moment: datetime) -> str:
    if moment.tzinfo is None:
        return YOUR_TIME
    key = getattr(moment.tzinfo, "key", None)
    if key:
        return str(key)
    offset = moment.utcoffset() or timedelta(0)
    if not offset:
        return "UTC"
    sign = "+" if offset >= timedelta(0) else "-"
    minutes = abs(int(offset.total_seconds())) // 60
    return f"UTC{sign}{minutes // 60:02d}:{minutes % 60:02d}"


def _day(moment: date) -> str:
    return f"{moment:%a} {moment.day} {moment:%b}"


def span(start: datetime | date, end: datetime | date | None = None) -> str:
    """``Thu 10 Dec, 10:00-10:30 (Europe/Paris)``; ``Thu 10 Dec - Fri 11 Dec (all day)``
    (en dashes)."""
    if not isinstance(start, datetime):
        last = (
            end - timedelta(days=1) if end is not None and not isinstance(end, datetime) else None
        )
        if last is None or last <= start:
            return f"{_day(start)} (all day)"
        return f"{_day(start)} {DASH} {_day(last)} (all day)"
    label = _zone_label(start)
    if end is None or not isinstance(end, datetime):
        return f"{_day(start)}, {start:%H:%M} ({label})"
    if start.tzinfo is not None and end.tzinfo is not None:
        end = end.astimezone(start.tzinfo)
    if end.date() == start.date():
        return f"{_day(start)}, {start:%H:%M}{DASH}{end:%H:%M} ({label})"
    return f"{_day(start)}, {start:%H:%M} {DASH} {_day(end)}, {end:%H:%M} ({label})"


def span_of_args(start: Any, end: Any = None) -> str:
    """A span from a tool's time arguments as the model wrote them (for a summary, which has
    no time zone at hand: a time without one is the person's own)."""
    first = parse_time(str(start), None)
    last = parse_time(str(end), None) if end else None
    return span(first, last)


def local(moment: datetime | date, zone: tzinfo) -> datetime | date:
    return moment.astimezone(zone) if isinstance(moment, datetime) else moment


def event_fields(event: CalendarEvent, zone: tzinfo) -> dict[str, Any]:
    """An event as the model reads it: times in the person's zone, empty fields left out."""
    start, end = local(event.start, zone), local(event.end, zone)
    fields: dict[str, Any] = {
        "uid": event.uid,
        "calendar": event.calendar,
        "title": event.summary,
        "when": span(start, end),
        "start": start.isoformat(),
        "end": end.isoformat(),
        "location": event.location,
        "description": event.description,
        "organizer": event.organizer,
        "attendees": [
            {"address": a.address, "answer": a.partstat.value.lower()} for a in event.attendees
        ],
        "recurring": event.recurrence_id is not None,
        "cancelled": event.cancelled,
    }
    return {k: v for k, v in fields.items() if v not in ("", None, [], False)}
