"""The facade's web watches on both backends: through a token, another person's watch answers
exactly as one that does not exist; a read token changes nothing; a refused watch stores
nothing."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest

from steward.domain.clock import SimulatedClock
from steward.domain.webwatch import Condition, ConditionKind, Extract, Extractor
from steward.errors import Forbidden, NotFound, UsageError
from steward.service import Service
from steward.store import Store
from support.tenancy import make_tenant

CSS = Extract(how=Extractor.CSS, expr=".price")


async def test_tenancy_and_scopes(store: Store, clock: SimulatedClock, tmp_path: Path) -> None:
    a = await make_tenant(store, clock, "ann", tmp_path)
    b = await make_tenant(store, clock, "bob", tmp_path)
    owner = Service(store, clock, data_dir=tmp_path)
    as_a = await owner.authenticate(a.control)
    assert [w.id for w in await as_a.list_watches()] == [a.watch.id]
    for call in (
        as_a.get_watch(b.watch.id),
        as_a.watch_history(b.watch.id),
        as_a.set_watch_enabled(b.watch.id, False),
        as_a.remove_watch(b.watch.id),
        as_a.find_watch(b.watch.name),
    ):
        with pytest.raises(NotFound):
            await call
    with pytest.raises(NotFound):  # B's goal, named in A's watch
        await as_a.add_watch(person_id="", url="https://x.io/", extract=CSS, goal_id=b.goal.id)
    read_only = await owner.authenticate(a.read)
    with pytest.raises(Forbidden):
        await read_only.add_watch(person_id="", url="https://x.io/", extract=CSS)
    with pytest.raises(Forbidden):
        await read_only.set_watch_enabled(a.watch.id, False)
    assert (await owner.get_watch(b.watch.id)).enabled
    assert [w.id for w in await as_a.list_watches()] == [a.watch.id]


@pytest.mark.parametrize(
    ("conditions", "extract", "words"),
    [
        ([Condition(kind=ConditionKind.BELOW)], CSS, "say the number for below"),
        ([Condition(kind=ConditionKind.CONTAINS, text="  ")], CSS, "say the text"),
        ([Condition(kind=ConditionKind.PRESENT, text="x")], CSS, "takes no text"),
        ([Condition(kind=ConditionKind.LACKS, threshold=Decimal(1))], CSS, "takes no number"),
        (
            [Condition(kind=ConditionKind.ABSENT)],
            Extract(how=Extractor.TEXT),
            "appearing needs a selector",
        ),
        ([Condition(kind=ConditionKind.CHANGED)] * 9, CSS, "at most 8 conditions"),
    ],
)
async def test_conditions_that_cannot_work_are_refused(
    store: Store,
    clock: SimulatedClock,
    conditions: list[Condition],
    extract: Extract,
    words: str,
) -> None:
    svc = Service(store, clock)
    person = await svc.ensure_person()
    with pytest.raises(UsageError, match=words):
        await svc.add_watch(
            person_id=person.id, url="https://x.io/", extract=extract, conditions=conditions
        )
    assert await svc.list_watches(person_id=person.id) == []
    assert await svc.list_triggers(person_id=person.id) == []
