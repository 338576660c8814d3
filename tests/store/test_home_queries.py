"""The first page ("While you were away") asks the database the same number of questions
however many goals the person has: what each goal spent is read for all of them at once.
(Here, not in tests/web: only store tests may touch the engine, to count its queries.)"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event

from steward.domain.clock import SimulatedClock
from steward.service import Service
from steward.store import Store
from steward.testing.http_server import serving
from support.tenancy import make_tenant
from support.web import Site, dashboard


@pytest.fixture
async def site(store: Store, clock: SimulatedClock, tmp_path: Path) -> AsyncIterator[Site]:
    a = await make_tenant(store, clock, "ann", tmp_path)
    b = await make_tenant(store, clock, "bob", tmp_path)
    owner = Service(store, clock, data_dir=tmp_path)
    async with serving(dashboard(owner)) as url:
        site = Site(url=url, owner=owner, store=store, clock=clock, a=a, b=b)
        try:
            yield site
        finally:
            await site.close()


@contextmanager
def counting(store: Store) -> Iterator[list[str]]:
    seen: list[str] = []

    def count(*args: Any) -> None:
        seen.append(str(args[2]))

    engine = store.backend.engine
    event.listen(engine, "before_cursor_execute", count)
    try:
        yield seen
    finally:
        event.remove(engine, "before_cursor_execute", count)


async def test_the_first_page_does_not_query_once_per_goal(site: Site) -> None:
    me = await site.session(site.a.control)
    assert (await me.get("/")).status_code == 200  # warm: logins, prepared statements
    with counting(site.store) as few:
        first = await me.get("/")
    assert first.status_code == 200
    for n in range(10):
        await site.owner.create_goal(person_id=site.a.person.id, title=f"goal {n}")
    with counting(site.store) as many:
        second = await me.get("/")
    assert second.status_code == 200
    assert len(many) == len(few), "\n".join(many)


async def test_every_goals_usage_at_once_is_each_goals_usage(site: Site) -> None:
    pid = site.a.person.id
    other = await site.owner.create_goal(person_id=pid, title="nothing spent yet")
    usages = await site.owner.goal_usages(person_id=pid)
    assert set(usages) == {site.a.goal.id, other.id}
    for goal_id, usage in usages.items():
        assert usage == (await site.owner.goal_detail(goal_id))["usage"]
    assert usages[site.a.goal.id]["activations"] >= 1
