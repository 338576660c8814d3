"""Connecting the person's accounts through the facade: against a real CalDAV server
(Radicale), on both store backends. Connecting is all or nothing; disconnecting revokes, and
with ``forget`` purges what came through the account."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from steward.connectors.base import ConnectionFailed, SettingsInvalid
from steward.domain.clock import SimulatedClock
from steward.domain.memory import MemoryKind, Source, SourceKind
from steward.domain.watch import Found
from steward.errors import NotFound, UsageError
from steward.service import Service
from steward.store import Store
from support.caldavserver import PersonCalendars


@pytest.fixture
async def svc(store: Store, clock: SimulatedClock, tmp_path: Path) -> Service:
    return Service(store, clock, data_dir=tmp_path)


@pytest.fixture
async def me(svc: Service) -> str:
    return (await svc.ensure_person()).id


def settings(calendars: PersonCalendars, **more: object) -> dict[str, object]:
    return {"url": calendars.server.url, "username": calendars.user, **more}


def password(calendars: PersonCalendars) -> str:
    return calendars.server.passwords[calendars.user]


async def nothing_stored(svc: Service, me: str) -> None:
    assert await svc.list_connections(person_id=me) == []
    assert await svc.list_secrets(person_id=me) == []


async def test_connecting_signs_in_and_keeps_the_credential_only_in_the_vault(
    svc: Service, me: str, calendars: PersonCalendars
) -> None:
    done = await svc.connect(
        person_id=me,
        kind="calendar",
        name="home",
        settings=settings(calendars, time_zone="Europe/Paris"),
        credential=password(calendars),
        bounds={"calendars": ["Work"]},
    )
    assert done.check == f"Signed in to 127.0.0.1 as {calendars.user}: 1 calendar (Work)"
    connection = done.connection
    assert (connection.kind, connection.name, connection.hosts) == (
        "calendar",
        "home",
        ("127.0.0.1",),
    )
    assert connection.scopes == ("calendar.read", "calendar.write", "calendar.respond")
    assert connection.settings["time_zone"] == "Europe/Paris"
    assert connection.bounds.calendars == ("work",)
    assert password(calendars) not in str(connection.settings)
    [secret] = await svc.list_secrets(person_id=me)
    assert (secret.name, secret.hosts) == (connection.secret, ("127.0.0.1",))

    [status] = await svc.connection_status(person_id=me)
    assert status.title == "Calendar (CalDAV)"
    assert status.may == "read calendars, add and change events, answer invitations"
    assert status.bounds == "only the calendar work"
    assert status.watch == "not watched yet"

    with pytest.raises(UsageError, match="an account named Home is already connected"):
        await svc.connect(
            person_id=me,
            kind="calendar",
            name="Home",
            settings=settings(calendars),
            credential=password(calendars),
        )
    assert len(await svc.list_secrets(person_id=me)) == 1


async def test_settings_that_do_not_fit_name_the_field_and_store_nothing(
    svc: Service, me: str, calendars: PersonCalendars
) -> None:
    with pytest.raises(SettingsInvalid, match=r"url: Value error, plain http is allowed only"):
        await svc.connect(
            person_id=me,
            kind="calendar",
            name="home",
            settings={"url": "http://calendar.example.com/", "username": "ana"},
            credential="secret",
        )
    with pytest.raises(SettingsInvalid, match="username: Field required"):
        await svc.connect(
            person_id=me,
            kind="calendar",
            name="home",
            settings={"url": calendars.server.url},
            credential="secret",
        )
    with pytest.raises(UsageError, match="no connector for 'fax'"):
        await svc.connect(person_id=me, kind="fax", name="home", settings={}, credential="x")
    await nothing_stored(svc, me)


async def test_a_wrong_password_is_refused_in_plain_words_and_nothing_remains(
    svc: Service, me: str, calendars: PersonCalendars
) -> None:
    with pytest.raises(ConnectionFailed, match=f"refused the sign-in as {calendars.user}"):
        await svc.connect(
            person_id=me,
            kind="calendar",
            name="home",
            settings=settings(calendars),
            credential="not-the-password",
        )
    await nothing_stored(svc, me)
    # the name is free again, and the right password works
    done = await svc.connect(
        person_id=me,
        kind="calendar",
        name="home",
        settings=settings(calendars),
        credential=password(calendars),
    )
    assert [c.id for c in await svc.list_connections(person_id=me)] == [done.connection.id]


async def test_a_read_only_account_offers_only_reading(
    svc: Service, me: str, calendars: PersonCalendars
) -> None:
    done = await svc.connect(
        person_id=me,
        kind="calendar",
        name="home",
        settings=settings(calendars),
        credential=password(calendars),
        read_only=True,
    )
    assert done.connection.scopes == ("calendar.read",)
    with pytest.raises(UsageError, match="not something a read-only account can offer"):
        await svc.connect(
            person_id=me,
            kind="calendar",
            name="other",
            settings=settings(calendars),
            credential=password(calendars),
            read_only=True,
            scopes=["calendar.write"],
        )
    assert len(await svc.list_connections(person_id=me)) == 1


async def test_testing_a_connection_says_what_it_found_or_what_is_wrong(
    svc: Service, me: str, calendars: PersonCalendars
) -> None:
    await svc.connect(
        person_id=me,
        kind="calendar",
        name="home",
        settings=settings(calendars),
        credential=password(calendars),
    )
    ok = await svc.test_connection("HOME", person_id=me)
    assert ok.ok
    assert ok.said == f"Signed in to 127.0.0.1 as {calendars.user}: 2 calendars (Home, Work)"
    # the password is changed on the server: the next test says so
    calendars.server.add_user(calendars.user)  # appended line; the first one still wins
    users = calendars.server.users_file
    users.write_text(users.read_text().replace(f"{calendars.user}:", f"{calendars.user}:x", 1))
    failed = await svc.test_connection("home", person_id=me)
    assert not failed.ok
    assert f"refused the sign-in as {calendars.user}" in failed.said
    with pytest.raises(NotFound):
        await svc.test_connection("work", person_id=me)


async def test_disconnect_revokes_deletes_the_credential_and_forget_purges_memories(
    svc: Service, me: str, calendars: PersonCalendars
) -> None:
    kept = await svc.connect(
        person_id=me,
        kind="calendar",
        name="home",
        settings=settings(calendars),
        credential=password(calendars),
    )
    gone = await svc.connect(
        person_id=me,
        kind="calendar",
        name="work",
        settings=settings(calendars),
        credential=password(calendars),
        read_only=True,
    )
    for connection, content in ((gone, "Dentist on Friday"), (kept, "Dinner with Dana")):
        await svc.memory.write(
            person_id=me,
            content=content,
            kind=MemoryKind.FACT,
            source=Source(
                kind=SourceKind.CONNECTOR, ref=f"{connection.connection.id}/e1", trusted=False
            ),
            actor="connector",
        )
    grant = await svc.add_grant(person_id=me, scopes=["calendar.write"])

    plain = await svc.disconnect_account("work", person_id=me)
    assert (plain.secret_deleted, plain.forgotten, plain.revoked) == (True, None, ())
    assert [s.name for s in await svc.list_secrets(person_id=me)] == [kept.connection.secret]
    with pytest.raises(NotFound):
        await svc.disconnect_account("work", person_id=me)

    forgot = await svc.disconnect_account("home", person_id=me, forget=True)
    assert [g.id for g in forgot.revoked] == [grant.id]
    assert forgot.forgotten == 1
    remaining = await svc.store.memory.list_memories(person_id=me, limit=10)
    assert [m.content for m in remaining] == ["Dentist on Friday"]
    assert await svc.list_secrets(person_id=me) == []
    assert await svc.connection_status(person_id=me) == []


async def test_the_status_says_how_watching_goes_in_the_persons_time_zone(
    svc: Service, store: Store, clock: SimulatedClock, calendars: PersonCalendars
) -> None:
    me = (await store.persons.create_person(name="ana", now=clock.now(), timezone="Asia/Tokyo")).id
    done = await svc.connect(
        person_id=me,
        kind="calendar",
        name="home",
        settings=settings(calendars),
        credential=password(calendars),
    )
    await store.watches.record(
        person_id=me,
        connection_id=done.connection.id,
        source="calendar.changed",
        found=[Found(type="calendar.changed", dedupe_key="k1")],
        cursor={"token": "t1"},
        now=clock.now(),  # 08:00 UTC on Monday 5 January: 17:00 in Tokyo
    )
    [status] = await svc.connection_status(person_id=me)
    assert (status.watch, status.failing) == ("watched; last looked at 17:00 on Mon 5 Jan", False)
    for minutes in (1, 2):
        await store.watches.record_failure(
            connection_id=done.connection.id,
            source="calendar.changed",
            error="cannot reach 127.0.0.1",
            now=clock.now() + timedelta(minutes=minutes),
            retry_at=clock.now() + timedelta(minutes=10),
        )
    [status] = await svc.connection_status(person_id=me)
    assert status.failing
    assert status.watch == (
        "could not reach it 2 times in a row (cannot reach 127.0.0.1); "
        "trying again at 17:10 on Mon 5 Jan"
    )


async def test_each_kind_of_account_says_which_settings_it_takes(svc: Service) -> None:
    calendar = {k.kind: k for k in await svc.account_kinds()}["calendar"]
    assert calendar.title == "Calendar (CalDAV)"
    fields = {s.name: s for s in calendar.settings}
    assert "auth" not in fields  # how it signs in is the way it is connected
    assert (fields["url"].required, fields["url"].shape) == (True, "text")
    assert (fields["time_zone"].required, fields["starting_soon_minutes"].shape) == (
        False,
        "integer",
    )
    assert fields["url"].description.startswith("CalDAV URL")


async def test_a_credential_for_a_kind_that_takes_none_is_refused_and_nothing_is_stored(
    svc: Service, me: str, tmp_path: Path
) -> None:
    kinds = {k.kind: k.credential for k in await svc.account_kinds()}
    assert kinds == {
        "mail": True,
        "calendar": True,
        "folder": False,
        "web": False,
        "feed": False,
        "browser": False,
    }
    with pytest.raises(UsageError, match="Folders on this machine takes no password"):
        await svc.connect(
            person_id=me,
            kind="folder",
            name="docs",
            settings={"roots": [str(tmp_path)]},
            credential="hunter2",
        )
    await nothing_stored(svc, me)
    with pytest.raises(UsageError, match="takes no OAuth provider"):
        await svc.start_oauth(
            person_id=me,
            kind="feed",
            provider="gmail",
            client_id="c",
            redirect_uri="http://127.0.0.1/cb",
        )
    # a code host takes the secret Steward makes, not one the person gives
    with pytest.raises(UsageError, match="GitHub takes no password"):
        await svc.connect(
            person_id=me,
            kind="github",
            name="code",
            settings={"repositories": ["octo/widgets"]},
            credential="mine",
        )
    await nothing_stored(svc, me)
    made = await svc.connect_codehost(
        person_id=me, kind="github", name="code", repositories=["octo/widgets"]
    )
    assert made.connection.secret is not None
