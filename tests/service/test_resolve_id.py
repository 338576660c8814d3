"""A shortened id is completed to the caller's one goal, task or trigger it starts; several or
none is a clear refusal (others' ids are never named)."""

from __future__ import annotations

from pathlib import Path

import pytest

from steward.domain import TaskSpec
from steward.domain.clock import SimulatedClock
from steward.errors import NotFound, UsageError
from steward.service import Service
from steward.store import Store
from support.cli import cli, cli_json


async def test_a_prefix_resolves_to_one_id_or_is_refused_clearly(
    store: Store, clock: SimulatedClock
) -> None:
    svc = Service(store, clock)
    me = await svc.ensure_person()
    tasks = [await svc.create_task(person_id=me.id, spec=TaskSpec(kind="noop")) for _ in range(7)]
    ids = sorted(t.id for t in tasks)
    # ids share their first characters (they begin with the time): the shared part names 7
    common = ids[0][: next(i for i in range(len(ids[0])) if len({x[i] for x in ids}) > 1)]
    with pytest.raises(UsageError, match="more than one task starts with") as refused:
        await svc.resolve_id(common)
    assert str(refused.value).count("tsk_") == 5 + 1  # five named, and the prefix itself
    for whole in ids:
        assert await svc.resolve_id(whole) == whole
        unique = next(
            whole[:n]
            for n in range(len(common) + 1, len(whole) + 1)
            if sum(x.startswith(whole[:n]) for x in ids) == 1
        )
        assert await svc.resolve_id(unique) == whole
    with pytest.raises(NotFound, match="no task starts with 'tsk_zz'"):
        await svc.resolve_id("tsk_zz")
    with pytest.raises(UsageError, match="is not an id"):
        await svc.resolve_id("01a2")
    # another person's token does not see them: to it, they do not exist
    other = await store.persons.create_person(name="someone else", now=clock.now())
    _, token = await svc.create_token(person_id=other.id, name="t", scopes=["read"])
    theirs = await svc.authenticate(token)
    with pytest.raises(NotFound, match="no task starts with"):
        await theirs.resolve_id(ids[0][:-4])
    with pytest.raises(NotFound, match=f"task '{ids[0]}' not found"):  # as for any other call
        await theirs.resolve_id(ids[0])


def test_the_cli_takes_a_shortened_id(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'ids.db'}"
    goal = cli_json(db, "goal", "create", "Short ids")
    task = cli_json(db, "task", "create", "noop", "--goal", goal["id"][:-20])
    assert task["goal_id"] == goal["id"]
    shown = cli_json(db, "task", "show", task["id"][:-20])
    assert shown["id"] == task["id"]
    assert cli_json(db, "goal", "pause", goal["id"][:-20])["status"] == "paused"
    code, out = cli(db, "goal", "show", "gol_zzz")
    assert code == 1, out
    assert "no goal starts with 'gol_zzz'" in out
