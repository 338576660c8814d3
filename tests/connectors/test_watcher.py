"""The watcher runs each active connection's trigger sources under a lease: what a poll finds
is stored once with its cursor, a failing source backs off and recovers, exactly one process
polls a source, and a disconnected account stops being watched.

The trigger source here is a list in memory (this module is registered as the connector of the
kind ``listfeed``): what is under test is the watcher, not a protocol."""

from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import pytest
from pydantic import BaseModel

from steward.connectors import registry
from steward.connectors.base import ConnectorEnv, Poll, TriggerSource
from steward.connectors.watch import Watcher
from steward.domain.authority import Connection
from steward.domain.clock import SimulatedClock
from steward.domain.ids import new_id
from steward.domain.watch import Found
from steward.harness.tools import Tool
from steward.harness.workspace import Workspace
from steward.sentinel.egress import EgressBroker
from steward.sentinel.vault import Vault, VaultKeys, generate_key
from steward.store import Store
from support.startup import scaled
from support.waiting import eventually


@dataclass
class ListSource:
    """New items of a list: the cursor is how many were seen."""

    items: list[str]
    name: str = "list.item"
    polls: Counter[str] = field(default_factory=Counter)
    broken: bool = False
    holder: str = ""

    async def poll(self, connection: Connection, cursor: dict[str, Any] | None) -> Poll:
        self.polls[self.holder] += 1
        if self.broken:
            raise ConnectionRefusedError("the list server is down")
        seen = len(self.items) if cursor is None else int(cursor["seen"])
        found = [
            Found(type=self.name, dedupe_key=f"{connection.id}:{i}", payload={"item": item})
            for i, item in enumerate(self.items[seen:], start=seen)
        ]
        return Poll(found=found, cursor={"seen": len(self.items)})

    async def wait(self, connection: Connection, seconds: float) -> None:
        await asyncio.sleep(min(seconds, 0.05))


class ListConnector:
    kind: ClassVar[str] = "listfeed"
    title: ClassVar[str] = "A list"
    scopes: ClassVar[tuple[str, ...]] = ("list.read",)
    read_scopes: ClassVar[tuple[str, ...]] = ("list.read",)
    settings: ClassVar[type[BaseModel]] = BaseModel
    credential: ClassVar[bool] = False
    source = ListSource(items=[])

    def hosts(self, settings: BaseModel) -> tuple[str, ...]:
        return ()

    async def check(self, connection: Connection, env: ConnectorEnv) -> str:
        return "fine"

    def tools(self, env: ConnectorEnv) -> list[Tool]:
        return []

    def sources(self, env: ConnectorEnv) -> list[TriggerSource]:
        return [self.source]


CONNECTOR = ListConnector()


@pytest.fixture
def source(monkeypatch: pytest.MonkeyPatch) -> ListSource:
    monkeypatch.setitem(registry._MODULES, "listfeed", __name__)
    fresh = ListSource(items=[])
    monkeypatch.setattr(ListConnector, "source", fresh)
    return fresh


def env(store: Store, clock: SimulatedClock, tmp_path: Path) -> ConnectorEnv:
    vault = Vault(VaultKeys(keys=(generate_key(),), source="test"))
    return ConnectorEnv(
        store=store,
        broker=EgressBroker(store, vault, now=clock.now),
        clock=clock,
        workspace=Workspace(tmp_path),
    )


async def connected(store: Store, clock: SimulatedClock) -> Connection:
    person = await store.persons.create_person(name="Ada", now=clock.now())
    return await store.authority.add_connection(
        Connection(
            id=new_id("con"),
            person_id=person.id,
            kind="listfeed",
            name="reading list",
            scopes=("list.read",),
            created_at=clock.now(),
        )
    )


async def test_a_poll_starts_from_now_then_stores_each_new_item_once(
    store: Store, clock: SimulatedClock, tmp_path: Path, source: ListSource
) -> None:
    con = await connected(store, clock)
    woken: list[int] = []
    watcher = Watcher(
        env=env(store, clock, tmp_path), holder="a", on_events=lambda: woken.append(1)
    )
    source.items += ["old"]
    assert await watcher.poll_once(con, source) == 0  # first run: nothing old is an event
    assert await store.schedule.list_events(person_id=con.person_id) == []
    source.items += ["one", "two"]
    assert await watcher.poll_once(con, source) == 0
    assert await watcher.poll_once(con, source) == 0  # nothing new: nothing stored, no wake
    events = await store.schedule.list_events(person_id=con.person_id)
    assert sorted(e.payload["item"] for e in events) == ["one", "two"]
    assert woken == [1]


async def test_a_failing_source_keeps_its_cursor_backs_off_and_recovers(
    store: Store, clock: SimulatedClock, tmp_path: Path, source: ListSource
) -> None:
    con = await connected(store, clock)
    watcher = Watcher(env=env(store, clock, tmp_path), holder="a", max_backoff_seconds=60)
    await watcher.poll_once(con, source)
    source.broken = True
    source.items += ["while down"]
    assert [await watcher.poll_once(con, source) for _ in range(3)] == [1, 2, 3]
    state = await store.watches.get(con.id, source.name)
    assert state is not None
    assert (state.failures, state.last_error) == (3, "the list server is down")
    assert state.retry_at is not None
    assert state.retry_at > clock.now()  # no process polls it before then
    waits = [watcher.backoff(n) for n in (1, 2, 3, 10)]
    assert 4 <= waits[0] <= 6
    assert 8 <= waits[1] <= 12
    assert 16 <= waits[2] <= 24
    assert waits[3] <= 60 * 1.2
    source.broken = False
    assert await watcher.poll_once(con, source) == 0
    events = await store.schedule.list_events(person_id=con.person_id)
    assert [e.payload["item"] for e in events] == ["while down"]  # nothing missed


async def test_a_first_poll_that_fails_is_followed_by_a_first_run_not_a_replay(
    store: Store, clock: SimulatedClock, tmp_path: Path, source: ListSource
) -> None:
    con = await connected(store, clock)
    watcher = Watcher(env=env(store, clock, tmp_path), holder="a")
    source.items += ["years", "of", "old", "mail"]
    source.broken = True
    assert await watcher.poll_once(con, source) == 1
    source.broken = False
    assert await watcher.poll_once(con, source) == 0
    assert await store.schedule.list_events(person_id=con.person_id) == []


async def test_two_processes_one_poller_and_a_disconnect_stops_the_watch(
    store: Store, clock: SimulatedClock, tmp_path: Path, source: ListSource
) -> None:
    con = await connected(store, clock)
    stop = asyncio.Event()
    watchers = [
        Watcher(
            env=env(store, clock, tmp_path),
            holder=name,
            interval_seconds=0.05,
            refresh_seconds=0.05,
        )
        for name in ("a", "b")
    ]

    # each watcher's polls are counted under its name
    async def poll(connection: Connection, cursor: dict[str, Any] | None) -> Poll:
        task = asyncio.current_task()
        source.holder = task.get_name() if task else ""
        return await ListSource.poll(source, connection, cursor)

    source.poll = poll  # type: ignore[method-assign]
    runs = [asyncio.create_task(w.run(stop)) for w in watchers]
    try:
        await eventually(
            lambda: _positive(sum(source.polls.values())), "a first poll", seconds=scaled(10)
        )
        source.items += ["new"]

        async def stored() -> bool:
            return len(await store.schedule.list_events(person_id=con.person_id)) == 1

        await eventually(stored, "the new item as an event", seconds=scaled(10))
        assert len(source.polls) == 1  # one watch task, in one process, polled it
        await store.authority.disconnect(con.id, person_id=con.person_id, now=clock.now())

        async def unwatched() -> bool:
            return not any(w._running for w in watchers)

        await eventually(unwatched, "the watch to stop after the disconnect", seconds=scaled(10))
    finally:
        stop.set()
        await asyncio.gather(*runs)


async def _positive(n: int) -> bool:
    return n > 0
