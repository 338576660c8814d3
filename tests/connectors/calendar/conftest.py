"""A Radicale server for the session (``support.caldavserver``), fresh calendars per test, and
a person connected to them (settings, vault credential, connection) for the connector's tests."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from steward.connectors.base import ConnectorEnv
from steward.domain.clock import SimulatedClock
from steward.harness.workspace import Workspace
from steward.sentinel.egress import EgressBroker
from steward.sentinel.vault import Vault, VaultKeys, generate_key
from steward.service import Service
from steward.store import Store
from support.caldavserver import (
    CalDAVServer,
    Connected,
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


@pytest.fixture
async def connected(
    calendars: PersonCalendars, store: Store, clock: SimulatedClock, tmp_path: Path
) -> Connected:
    vault = Vault(VaultKeys(keys=(generate_key(),), source="test"))
    env = ConnectorEnv(
        store=store,
        broker=EgressBroker(store, vault, now=clock.now),
        clock=clock,
        workspace=Workspace(tmp_path / "workspace"),
    )
    svc = Service(store, clock)
    person = await svc.ensure_person()
    return Connected(
        calendars=calendars,
        store=store,
        clock=clock,
        env=env,
        svc=svc,
        person_id=person.id,
        vault=vault,
    )
