"""A person connected to fresh calendars on the session's Radicale (``caldav_server`` and
``calendars`` come from ``support.caldav_fixtures``): settings, vault credential, connection."""

from __future__ import annotations

from pathlib import Path

import pytest

from steward.connectors.base import ConnectorEnv
from steward.domain.clock import SimulatedClock
from steward.harness.workspace import Workspace
from steward.sentinel.egress import EgressBroker
from steward.sentinel.vault import Vault, VaultKeys, generate_key
from steward.service import Service
from steward.store import Store
from support.caldavserver import Connected, PersonCalendars


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
