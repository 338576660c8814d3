"""Fixtures of a Radicale server for the session and fresh calendars per test, for every test
directory that connects a calendar (``pytest_plugins`` in ``tests/conftest.py``)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from support.caldavserver import (
    CalDAVServer,
    PersonCalendars,
    radicale_missing,
    running_radicale,
    skip_or_fail,
)


@pytest.fixture(scope="session")
def caldav_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CalDAVServer]:
    missing = radicale_missing()
    if missing is not None:
        skip_or_fail(missing)
    with running_radicale(tmp_path_factory.mktemp("radicale")) as server:
        yield server


@pytest.fixture
async def calendars(caldav_server: CalDAVServer) -> PersonCalendars:
    """``Work`` and ``Home`` of a person of this test's own."""
    user = f"person-{uuid.uuid4().hex[:8]}"
    caldav_server.add_user(user)
    work = await caldav_server.make_calendar(user, "work", "Work")
    home = await caldav_server.make_calendar(user, "home", "Home")
    return PersonCalendars(server=caldav_server, user=user, work=work, home=home)
