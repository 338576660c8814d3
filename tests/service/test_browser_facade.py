"""The browser through the facade: each task's last view newest first, with its task's title,
in the person's time zone and in words; without a data directory there is nothing to show."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from steward.domain import TaskSpec
from steward.domain.clock import SimulatedClock
from steward.service import Service
from steward.store import Store
from support.screenshots import png, record_look


async def test_views_are_newest_first_in_the_persons_zone(
    store: Store, clock: SimulatedClock, tmp_path: Path
) -> None:
    owner = Service(store, clock, data_dir=tmp_path)
    kei = await store.persons.create_person(name="kei", now=clock.now(), timezone="Asia/Tokyo")
    spec = TaskSpec(kind="noop", title="Find a kettle")
    kettle = await owner.create_task(person_id=kei.id, spec=spec)
    spec = TaskSpec(kind="noop", title="Check the train times")
    train = await owner.create_task(person_id=kei.id, spec=spec)
    earlier = clock.now() - timedelta(days=1)
    record_look(tmp_path, kei.id, kettle.id, at=earlier, picture=png())
    record_look(tmp_path, kei.id, train.id, at=clock.now(), url="https://rail.example:8443/t")

    views = await owner.browser_views(person_id=kei.id)

    assert [v.task for v in views] == ["Check the train times", "Find a kettle"]
    assert [v.host for v in views] == ["rail.example", "shop.example"]
    assert views[0].when == "Monday 5 January at 17:00"  # 08:00 UTC, in Tokyo
    assert views[0].at.utcoffset() == timedelta(hours=9)
    assert views[1].when == "Sunday 4 January at 17:00"
    assert views[1].picture == f"browser/{kettle.id}/1.png"
    assert views[0].picture is None
    assert await Service(store, clock).browser_views(person_id=kei.id) == []
