"""``steward up`` watches the person's connected accounts: a calendar another person changes
becomes one ``calendar.changed`` event in the running process, no model and no task involved."""

from __future__ import annotations

import dataclasses
import subprocess
from pathlib import Path

import pytest

from steward.connectors.calendar.sources import CHANGED
from steward.sentinel.vault import KEY_ENV, Vault, VaultKeys, generate_key
from steward.store import Store
from support.caldavserver import Connected, vcalendar
from support.processes import log_tails, spawn, start_deadline, stop_all, until

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("startup")]


def meeting(uid: str) -> str:
    return vcalendar(
        "BEGIN:VEVENT",
        f"UID:{uid}",
        "DTSTAMP:20251201T000000Z",
        "DTSTART;TZID=Europe/Paris:20260107T120000",
        "DURATION:PT1H",
        "SUMMARY:Planning",
        "END:VEVENT",
    )


async def test_a_running_steward_turns_a_calendar_change_into_one_event(
    connected: Connected, db_url: str, tmp_path: Path
) -> None:
    key = generate_key()  # the process opens the credential with the same vault key
    world = dataclasses.replace(connected, vault=Vault(VaultKeys(keys=(key,), source="test")))
    con = await world.connect(name="Cal")
    store: Store = world.store
    server, work = world.calendars.server, world.calendars.work
    logs = tmp_path / "logs"
    logs.mkdir()
    env = {
        "STEWARD_DATA_DIR": str(tmp_path / "data"),
        KEY_ENV: key,
        "STEWARD_WATCH_INTERVAL_SECONDS": "0.5",
    }
    procs: dict[str, subprocess.Popen[bytes]] = {
        "up": spawn("up", db_url, logs / "up.log", "--no-http", env=env)
    }
    try:

        async def took_stock() -> bool:  # the first poll notes what is there, emitting nothing
            state = await store.watches.get(con.id, CHANGED)
            return state is not None and state.cursor is not None

        await until(took_stock, "the first poll of the calendar", procs, logs, start_deadline())
        await server.put_event(as_user="dana", calendar_url=work, ics=meeting("plan@dana"))

        async def announced() -> bool:
            found = await store.schedule.list_events(person_id=world.person_id)
            return any(e.type == CHANGED for e in found)

        await until(announced, "the change to become an event", procs, logs, start_deadline())
        found = await store.schedule.list_events(person_id=world.person_id)
        [event] = [e for e in found if e.type == CHANGED]
        assert event.payload["uid"] == "plan@dana", log_tails(logs)
        assert event.payload["change"] == "created"
        assert event.payload["untrusted"] is True
    finally:
        stop_all(procs)
    assert procs["up"].returncode == 0, log_tails(logs)
