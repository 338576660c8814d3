"""The CalDAV account against a real Radicale: recurrence across a change of summer time,
free/busy, create/update/cancel/respond by UID, and change detection."""

from __future__ import annotations

import socket
from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from steward.connectors.calendar.caldav_client import (
    CalDAVAccount,
    CalendarError,
    CalendarUnreachable,
)
from steward.connectors.calendar.model import (
    BusySlot,
    CalendarCursor,
    ChangeKind,
    EventEdit,
    NewEvent,
    PartStat,
)
from steward.connectors.calendar.settings import CalendarSettings
from steward.testing.model_server import serve_in_thread
from support.caldavserver import PersonCalendars, vcalendar

PARIS = ZoneInfo("Europe/Paris")
DAV_METHODS = ["GET", "PUT", "DELETE", "OPTIONS", "PROPFIND", "REPORT", "PROPPATCH"]
FORWARDED = {"content-type", "depth", "if-match", "if-none-match", "prefer"}
NOW = datetime(2026, 12, 1, 8, 0, tzinfo=UTC)


def account(calendars: PersonCalendars, **extra: object) -> CalDAVAccount:
    settings = CalendarSettings.model_validate(
        {
            "url": calendars.server.url,
            "username": calendars.user,
            "email": f"{calendars.user}@example.test",
            "time_zone": "Europe/Paris",
            **extra,
        }
    )
    return CalDAVAccount(settings, calendars.server.passwords[calendars.user])


WEEKLY_PARIS = vcalendar(
    "BEGIN:VEVENT",
    "UID:standup@dana",
    "DTSTAMP:20261001T000000Z",
    "DTSTART;TZID=Europe/Paris:20261019T100000",
    "DTEND;TZID=Europe/Paris:20261019T103000",
    "RRULE:FREQ=WEEKLY;COUNT=4",
    "SUMMARY:Standup",
    "END:VEVENT",
)


async def test_a_weekly_event_keeps_its_wall_clock_time_across_the_end_of_summer_time(
    calendars: PersonCalendars,
) -> None:
    # Paris leaves summer time on Sunday 25 October 2026: 10:00 is 08:00 UTC before, 09:00 after
    await calendars.server.put_event(as_user="dana", calendar_url=calendars.work, ics=WEEKLY_PARIS)
    events = await account(calendars).events(
        datetime(2026, 10, 1, tzinfo=UTC), datetime(2026, 12, 1, tzinfo=UTC)
    )
    assert [e.start.astimezone(PARIS).strftime("%d %H:%M") for e in events] == [
        "19 10:00",
        "26 10:00",
        "02 10:00",
        "09 10:00",
    ]
    assert [e.start.astimezone(UTC).hour for e in events] == [8, 9, 9, 9]
    assert {e.uid for e in events} == {"standup@dana"}
    assert all(e.calendar == "Work" and e.recurrence_id == e.start for e in events)
    assert events[1].end - events[1].start == timedelta(minutes=30)


async def test_an_exchange_style_time_zone_is_read_from_its_own_definition(
    calendars: PersonCalendars,
) -> None:
    """Outlook names zones its own way and defines them inline; summer time starts on 29 March
    2026 by that definition, so 10:00 moves from 09:00 to 08:00 UTC."""
    ics = vcalendar(
        "BEGIN:VTIMEZONE",
        "TZID:W. Europe Standard Time",
        "BEGIN:STANDARD",
        "DTSTART:16010101T030000",
        "TZOFFSETFROM:+0200",
        "TZOFFSETTO:+0100",
        "RRULE:FREQ=YEARLY;INTERVAL=1;BYDAY=-1SU;BYMONTH=10",
        "END:STANDARD",
        "BEGIN:DAYLIGHT",
        "DTSTART:16010101T020000",
        "TZOFFSETFROM:+0100",
        "TZOFFSETTO:+0200",
        "RRULE:FREQ=YEARLY;INTERVAL=1;BYDAY=-1SU;BYMONTH=3",
        "END:DAYLIGHT",
        "END:VTIMEZONE",
        "BEGIN:VEVENT",
        "UID:exchange@dana",
        "DTSTAMP:20260101T000000Z",
        "DTSTART;TZID=W. Europe Standard Time:20260320T100000",
        "DTEND;TZID=W. Europe Standard Time:20260320T110000",
        "RRULE:FREQ=WEEKLY;COUNT=3",
        "SUMMARY:Weekly sync",
        "END:VEVENT",
    )
    await calendars.server.put_event(as_user="dana", calendar_url=calendars.work, ics=ics)
    events = await account(calendars).events(
        datetime(2026, 3, 1, tzinfo=UTC), datetime(2026, 5, 1, tzinfo=UTC)
    )
    assert [e.start.astimezone(UTC).strftime("%d %H:%M") for e in events] == [
        "20 09:00",
        "27 09:00",
        "03 08:00",
    ]


async def test_an_overridden_occurrence_and_an_exception_are_honoured(
    calendars: PersonCalendars,
) -> None:
    ics = vcalendar(
        "BEGIN:VEVENT",
        "UID:review@dana",
        "DTSTAMP:20261001T000000Z",
        "DTSTART;TZID=Europe/Paris:20261102T140000",
        "DTEND;TZID=Europe/Paris:20261102T150000",
        "RRULE:FREQ=DAILY;COUNT=4",
        "EXDATE;TZID=Europe/Paris:20261104T140000",
        "SUMMARY:Review",
        "END:VEVENT",
        "BEGIN:VEVENT",
        "UID:review@dana",
        "DTSTAMP:20261001T000000Z",
        "RECURRENCE-ID;TZID=Europe/Paris:20261103T140000",
        "DTSTART;TZID=Europe/Paris:20261103T160000",
        "DTEND;TZID=Europe/Paris:20261103T170000",
        "SUMMARY:Review (moved)",
        "END:VEVENT",
    )
    await calendars.server.put_event(as_user="dana", calendar_url=calendars.home, ics=ics)
    events = await account(calendars).events(
        datetime(2026, 11, 1, tzinfo=UTC), datetime(2026, 11, 10, tzinfo=UTC), ["Home"]
    )
    assert [(e.summary, e.start.astimezone(PARIS).strftime("%d %H:%M")) for e in events] == [
        ("Review", "02 14:00"),
        ("Review (moved)", "03 16:00"),
        ("Review", "05 14:00"),
    ]


async def test_all_day_and_floating_events(calendars: PersonCalendars) -> None:
    for ics in (
        vcalendar(
            "BEGIN:VEVENT",
            "UID:holiday@dana",
            "DTSTAMP:20261001T000000Z",
            "DTSTART;VALUE=DATE:20261210",
            "DTEND;VALUE=DATE:20261212",
            "SUMMARY:Away",
            "END:VEVENT",
        ),
        vcalendar(
            "BEGIN:VEVENT",
            "UID:floating@dana",
            "DTSTAMP:20261001T000000Z",
            "DTSTART:20261210T090000",
            "DTEND:20261210T093000",
            "SUMMARY:Gym",
            "END:VEVENT",
        ),
    ):
        await calendars.server.put_event(as_user="dana", calendar_url=calendars.home, ics=ics)
    events = await account(calendars).events(
        datetime(2026, 12, 9, tzinfo=UTC), datetime(2026, 12, 13, tzinfo=UTC)
    )
    away = next(e for e in events if e.summary == "Away")
    gym = next(e for e in events if e.summary == "Gym")
    assert (away.all_day, away.start, away.end) == (True, date(2026, 12, 10), date(2026, 12, 12))
    # a floating time is read in the person's zone
    assert gym.start == datetime(2026, 12, 10, 9, 0, tzinfo=PARIS)


async def test_free_busy_merges_calendars_and_skips_what_does_not_make_the_person_busy(
    calendars: PersonCalendars,
) -> None:
    me = f"{calendars.user}@example.test"

    def event(uid: str, start: str, end: str, *extra: str) -> str:
        return vcalendar(
            "BEGIN:VEVENT",
            f"UID:{uid}",
            "DTSTAMP:20261001T000000Z",
            f"DTSTART;TZID=Europe/Paris:20261208T{start}00",
            f"DTEND;TZID=Europe/Paris:20261208T{end}00",
            f"SUMMARY:{uid}",
            *extra,
            "END:VEVENT",
        )

    for url, ics in [
        (calendars.work, event("a", "0900", "1000")),
        (calendars.home, event("b", "0930", "1100")),  # overlaps a, in the other calendar
        (calendars.work, event("c", "1200", "1300", "TRANSP:TRANSPARENT")),
        (calendars.work, event("d", "1300", "1400", "STATUS:CANCELLED")),
        (
            calendars.work,
            event(
                "e",
                "1500",
                "1600",
                "ORGANIZER:mailto:dana@example.test",
                f"ATTENDEE;PARTSTAT=DECLINED:mailto:{me}",
            ),
        ),
        (calendars.work, event("f", "1700", "1800")),
    ]:
        await calendars.server.put_event(as_user="dana", calendar_url=url, ics=ics)
    acct = account(calendars)
    day = datetime(2026, 12, 8, tzinfo=PARIS)
    busy = await acct.busy(day, day + timedelta(days=1))
    assert busy == [
        BusySlot(start=day.replace(hour=9), end=day.replace(hour=11)),
        BusySlot(start=day.replace(hour=17), end=day.replace(hour=18)),
    ]
    assert await acct.busy(day, day + timedelta(days=1), ["Home"]) == [
        BusySlot(start=day.replace(hour=9, minute=30), end=day.replace(hour=11))
    ]
    # the range clips
    assert await acct.busy(day.replace(hour=10), day.replace(hour=17, minute=30)) == [
        BusySlot(start=day.replace(hour=10), end=day.replace(hour=11)),
        BusySlot(start=day.replace(hour=17), end=day.replace(hour=17, minute=30)),
    ]


async def test_create_update_cancel_by_uid(calendars: PersonCalendars) -> None:
    acct = account(calendars)
    start = datetime(2026, 12, 10, 10, 0, tzinfo=PARIS)
    created = await acct.create(
        "steward-key-1@steward",
        NewEvent(
            summary="Coffee with Dana",
            start=start,
            end=start + timedelta(minutes=30),
            location="Café Zéphyr",
            description="Talk about Thursday",
            attendees=("dana@example.test",),
        ),
        calendar="Work",
        now=NOW,
    )
    assert created.href is not None
    assert created.etag
    assert created.organizer == f"{calendars.user}@example.test"
    assert [(a.address, a.partstat) for a in created.attendees] == [
        ("dana@example.test", PartStat.NEEDS_ACTION)
    ]
    found = await acct.find("steward-key-1@steward")
    assert found is not None
    assert (found.calendar, found.summary, found.start, found.location) == (
        "Work",
        "Coffee with Dana",
        start,
        "Café Zéphyr",
    )
    assert await acct.find("nobody@steward") is None

    # the same UID again (a retry after a crash) returns the stored event, not a second one
    again = await acct.create(
        "steward-key-1@steward",
        NewEvent(summary="Coffee with Dana", start=start, end=start + timedelta(minutes=30)),
        calendar="Work",
        now=NOW,
    )
    assert again.etag == created.etag
    day = await acct.events(start - timedelta(hours=1), start + timedelta(hours=2))
    assert [e.summary for e in day] == ["Coffee with Dana"]

    # Dana accepts (in the shared copy); inviting Lu as well keeps her answer
    await account(calendars, email="dana@example.test").respond(
        "steward-key-1@steward", PartStat.ACCEPTED, now=NOW
    )
    invited = await acct.update(
        "steward-key-1@steward",
        EventEdit(attendees=("dana@example.test", "lu@x.test")),
        now=NOW,
    )
    assert [(a.address, a.partstat) for a in invited.attendees] == [
        ("dana@example.test", PartStat.ACCEPTED),
        ("lu@x.test", PartStat.NEEDS_ACTION),
    ]
    assert invited.sequence == 1
    # a new time asks everyone again
    moved = await acct.update(
        "steward-key-1@steward", EventEdit(start=start + timedelta(hours=1)), now=NOW
    )
    assert moved.start == start + timedelta(hours=1)
    assert moved.end == start + timedelta(hours=1, minutes=30)  # the duration is kept
    assert moved.sequence == 2
    assert moved.etag != invited.etag
    assert [(a.address, a.partstat) for a in moved.attendees] == [
        ("dana@example.test", PartStat.NEEDS_ACTION),
        ("lu@x.test", PartStat.NEEDS_ACTION),
    ]
    with pytest.raises(CalendarError, match="must end after it starts"):
        await acct.update("steward-key-1@steward", EventEdit(end=start), now=NOW)

    cancelled = await acct.cancel("steward-key-1@steward", now=NOW)
    assert cancelled.cancelled
    assert cancelled.sequence == 3
    assert await acct.busy(start, start + timedelta(hours=3)) == []
    with pytest.raises(CalendarError, match="no event"):
        await acct.cancel("nobody@steward", now=NOW)


async def test_an_all_day_event_is_written_as_days(calendars: PersonCalendars) -> None:
    acct = account(calendars)
    made = await acct.create(
        "away@steward",
        NewEvent(summary="Away", start=date(2026, 12, 24), end=date(2026, 12, 27)),
        calendar="Home",
        now=NOW,
    )
    assert (made.all_day, made.start, made.end) == (True, date(2026, 12, 24), date(2026, 12, 27))
    paris_day = datetime(2026, 12, 26, tzinfo=PARIS)
    assert await acct.busy(paris_day, paris_day + timedelta(days=2)) == [
        BusySlot(start=paris_day, end=paris_day + timedelta(days=1))
    ]
    with pytest.raises(CalendarError, match="both be times, or both be days"):
        await acct.create(
            "mixed@steward",
            NewEvent(summary="x", start=date(2026, 12, 24), end=paris_day),
            calendar="Home",
            now=NOW,
        )


async def test_answering_an_invitation_sets_only_the_persons_own_answer(
    calendars: PersonCalendars,
) -> None:
    me = f"{calendars.user}@example.test"
    await calendars.server.put_event(
        as_user="dana",
        calendar_url=calendars.work,
        ics=vcalendar(
            "BEGIN:VEVENT",
            "UID:planning@dana",
            "DTSTAMP:20261001T000000Z",
            "DTSTART:20261214T090000Z",
            "DTEND:20261214T100000Z",
            "SUMMARY:Planning",
            "SEQUENCE:3",
            "ORGANIZER:mailto:dana@example.test",
            "ATTENDEE;PARTSTAT=ACCEPTED:mailto:dana@example.test",
            f"ATTENDEE;PARTSTAT=NEEDS-ACTION;RSVP=TRUE:mailto:{me.upper()}",
            "END:VEVENT",
        ),
    )
    answered = await account(calendars).respond("planning@dana", PartStat.TENTATIVE, now=NOW)
    assert [(a.address.lower(), a.partstat) for a in answered.attendees] == [
        ("dana@example.test", PartStat.ACCEPTED),
        (me, PartStat.TENTATIVE),
    ]
    assert answered.sequence == 3  # an attendee's answer is not a new revision
    stranger = account(calendars, email="someone@else.test")
    with pytest.raises(CalendarError, match="not invited"):
        await stranger.respond("planning@dana", PartStat.ACCEPTED, now=NOW)


async def test_a_calendar_must_be_named_when_there_are_several(calendars: PersonCalendars) -> None:
    start = datetime(2026, 12, 10, 10, 0, tzinfo=PARIS)
    event = NewEvent(summary="x", start=start, end=start + timedelta(hours=1))
    with pytest.raises(CalendarError, match=r"say which calendar.*Home, Work"):
        await account(calendars).create("k@steward", event, calendar=None, now=NOW)
    with pytest.raises(CalendarError, match="no calendar named 'Gym'"):
        await account(calendars).create("k@steward", event, calendar="Gym", now=NOW)
    made = await account(calendars, default_calendar="Home").create(
        "k@steward", event, calendar=None, now=NOW
    )
    assert made.calendar == "Home"


async def test_change_detection_reports_what_someone_else_did(calendars: PersonCalendars) -> None:
    acct = account(calendars)
    before = await calendars.server.put_event(
        as_user="dana", calendar_url=calendars.work, ics=WEEKLY_PARIS
    )
    cursor, changes = await acct.changes("Work", None)
    assert changes == []  # taking stock: what was there before is not news
    assert cursor.token
    assert [s.uid for s in cursor.seen.values()] == ["standup@dana"]

    same, changes = await acct.changes("Work", cursor)
    assert changes == []

    lunch = vcalendar(
        "BEGIN:VEVENT",
        "UID:lunch@dana",
        "DTSTAMP:20261001T000000Z",
        "DTSTART:20261215T120000Z",
        "DTEND:20261215T130000Z",
        "SUMMARY:Lunch",
        "ORGANIZER:mailto:dana@example.test",
        "END:VEVENT",
    )
    href = await calendars.server.put_event(as_user="dana", calendar_url=calendars.work, ics=lunch)
    cursor, changes = await acct.changes("Work", same)
    assert [(c.kind, c.uid, c.summary, c.organizer) for c in changes] == [
        (ChangeKind.CREATED, "lunch@dana", "Lunch", "dana@example.test")
    ]
    assert changes[0].start == datetime(2026, 12, 15, 12, 0, tzinfo=UTC)

    await calendars.server.replace_event(
        as_user="dana", href=href, ics=lunch.replace("SUMMARY:Lunch", "SUMMARY:Lunch at noon")
    )
    await calendars.server.delete(as_user="dana", href=before)
    cursor, changes = await acct.changes("Work", cursor)
    assert sorted((c.kind, c.uid, c.summary) for c in changes) == [
        (ChangeKind.DELETED, "standup@dana", "Standup"),
        (ChangeKind.UPDATED, "lunch@dana", "Lunch at noon"),
    ]
    assert [s.uid for s in cursor.seen.values()] == ["lunch@dana"]


async def test_a_cursor_from_a_server_without_sync_tokens_still_sees_deletions(
    calendars: PersonCalendars,
) -> None:
    """An unknown sync-token gets a full listing back; what is missing from it was deleted."""
    acct = account(calendars)
    href = await calendars.server.put_event(
        as_user="dana", calendar_url=calendars.work, ics=WEEKLY_PARIS
    )
    cursor, _ = await acct.changes("Work", None)
    await calendars.server.delete(as_user="dana", href=href)
    stale = CalendarCursor(token="fake-0", seen=cursor.seen)
    _, changes = await acct.changes("Work", stale)
    assert [(c.kind, c.uid) for c in changes] == [(ChangeKind.DELETED, "standup@dana")]


async def test_a_wrong_password_is_a_plain_refusal(calendars: PersonCalendars) -> None:
    settings = CalendarSettings(url=calendars.server.url, username=calendars.user)
    with pytest.raises(CalendarError, match=f"refused the sign-in as {calendars.user}"):
        await CalDAVAccount(settings, "wrong").calendars()


async def test_an_oauth_account_sends_its_access_token_as_a_bearer_token(
    calendars: PersonCalendars,
) -> None:
    """Google Calendar's CalDAV endpoint takes an OAuth 2.0 access token. Here a small gateway
    in front of Radicale plays that part: it admits only the token, and signs in to Radicale."""
    server, user = calendars.server, calendars.user
    seen: list[str] = []

    async def gateway(request: Request) -> Response:
        seen.append(request.headers.get("authorization", ""))
        if request.headers.get("authorization") != "Bearer tok-123":
            return Response(status_code=401, headers={"WWW-Authenticate": "Bearer"})
        async with server.client(user) as http:
            answer = await http.request(
                request.method,
                f"{server.url.rstrip('/')}{request.url.path}",
                content=await request.body(),
                headers={k: v for k, v in request.headers.items() if k in FORWARDED},
            )
        kept = {k: v for k, v in answer.headers.items() if k in ("content-type", "etag")}
        return Response(answer.content, answer.status_code, headers=kept)

    app = Starlette(routes=[Route("/{path:path}", gateway, methods=DAV_METHODS)])
    with serve_in_thread(app) as url:
        settings = CalendarSettings(url=url, username=user, auth="oauth2")
        async with CalDAVAccount(settings, "tok-123") as acct:
            assert sorted(c.name for c in await acct.calendars()) == ["Home", "Work"]
        async with CalDAVAccount(settings, "expired") as acct:
            with pytest.raises(CalendarError, match="refused the sign-in"):
                await acct.calendars()
    assert set(seen) == {"Bearer tok-123", "Bearer expired"}


async def test_a_server_that_does_not_answer_is_unreachable_in_plain_words() -> None:
    with socket.socket() as closed:  # a port nothing listens on
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    settings = CalendarSettings(url=f"http://127.0.0.1:{port}/", username="person")
    with pytest.raises(CalendarUnreachable, match=r"cannot reach 127\.0\.0\.1"):
        await CalDAVAccount(settings, "secret").calendars()


async def test_calendars_are_listed_with_their_change_markers(calendars: PersonCalendars) -> None:
    infos = await account(calendars).calendars()
    assert sorted(i.name for i in infos) == ["Home", "Work"]
    assert all(i.sync_token for i in infos)
