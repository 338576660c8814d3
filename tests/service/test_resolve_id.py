"""A shortened id is completed to the caller's one object of its kind it starts; several or
none is a clear refusal (others' ids are never named). Objects with a name the person gave
are found by it too."""

from __future__ import annotations

from collections.abc import Awaitable
from dataclasses import dataclass
from pathlib import Path

import pytest

from steward.domain import TaskSpec
from steward.domain.clock import SimulatedClock
from steward.errors import NotFound, UsageError
from steward.service import Service
from steward.service.ids import ID_KINDS
from steward.store import Store
from steward.store.ids import KINDS
from support.tenancy import Tenant, make_tenant

OBJECTS = {
    "gol": "goal",
    "tsk": "task",
    "trg": "trigger",
    "apr": "approval",
    "eff": "effect",
    "mem": "memory",
    "mps": "memory_pass",
    "skl": "skill",
    "chn": "channel",
    "con": "connection",
    "tok": "token",
    "grt": "grant",
    "rul": "rule",
    "wch": "watch",
}
"""Each kind of id, and the tenant's object of that kind (support.tenancy)."""
NAMES = {
    "gol": lambda t: t.goal.title,
    "trg": lambda t: t.trigger.name,
    "skl": lambda t: t.skill.name,
    "chn": lambda t: t.channel.name,
    "con": lambda t: t.connection.name,
    "tok": lambda t: t.token.name,
    "wch": lambda t: t.watch.name,
}
"""The kinds whose objects have a name the person gave, and the tenant's."""


@dataclass(kw_only=True, frozen=True)
class Two:
    """Two tenants, the owner's service and ann's token's."""

    ann: Tenant
    bob: Tenant
    owner: Service
    as_ann: Service


@pytest.fixture
async def two(store: Store, clock: SimulatedClock, tmp_path: Path) -> Two:
    ann = await make_tenant(store, clock, "ann", tmp_path)
    bob = await make_tenant(store, clock, "bob", tmp_path)
    owner = Service(store, clock, data_dir=tmp_path)
    return Two(ann=ann, bob=bob, owner=owner, as_ann=await owner.authenticate(ann.read))


def _id(tenant: Tenant, kind: str) -> str:
    found: str = getattr(tenant, OBJECTS[kind]).id
    return found


def test_every_kind_is_covered() -> None:
    assert set(OBJECTS) == set(ID_KINDS) == set(KINDS)
    assert set(NAMES) == {kind for kind, where in KINDS.items() if where.name is not None}


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
        assert await svc.resolve_id(unique, "tsk") == whole
    with pytest.raises(NotFound, match="no task starts with 'tsk_zz'"):
        await svc.resolve_id("tsk_zz")
    with pytest.raises(UsageError, match="is not an id"):
        await svc.resolve_id("01a2")
    with pytest.raises(UsageError, match="is a task's id; give a goal"):
        await svc.resolve_id(ids[0], "gol")
    with pytest.raises(UsageError, match="is not a task's id: it starts with tsk_"):
        await svc.resolve_id("noop", "tsk")  # a task has no name
    # another person's token does not see them: to it, they do not exist
    other = await store.persons.create_person(name="someone else", now=clock.now())
    _, token = await svc.create_token(person_id=other.id, name="t", scopes=["read"])
    theirs = await svc.authenticate(token)
    with pytest.raises(NotFound, match="no task starts with"):
        await theirs.resolve_id(ids[0][:-4])
    with pytest.raises(NotFound, match=f"task '{ids[0]}' not found"):  # as for any other call
        await theirs.resolve_id(ids[0])


@pytest.mark.parametrize("kind", sorted(OBJECTS))
async def test_every_kind_resolves_only_the_callers_own(kind: str, store: Store, two: Two) -> None:
    ann, bob, owner, as_ann = two.ann, two.bob, two.owner, two.as_ann
    mine, theirs = _id(ann, kind), _id(bob, kind)
    what = ID_KINDS[kind]
    everyone = await store.ids.starting_with(kind, f"{kind}_", person_id=None, limit=50)
    unique = _unique_start(mine, everyone)
    for svc, who in ((owner, None), (as_ann, None), (owner, ann.person.id)):
        assert await svc.resolve_id(mine, kind, person_id=who) == mine
        assert await svc.resolve_id(unique, kind, person_id=who) == mine
    # the owner sees both by their shared start; ann's token, and the owner asking for ann,
    # only hers
    shared = next(n for n in range(len(mine)) if mine[: n + 1] != theirs[: n + 1])
    with pytest.raises(UsageError, match=f"more than one {what} starts with") as refused:
        await owner.resolve_id(mine[:shared], kind)
    assert mine in str(refused.value)
    assert theirs in str(refused.value)
    for svc, who in ((as_ann, None), (owner, ann.person.id)):
        answer = await _answer(svc.resolve_id(mine[:shared], kind, person_id=who))
        assert mine in answer
        assert theirs not in answer
    with pytest.raises(NotFound, match=f"{what} '{theirs}' not found"):
        await as_ann.resolve_id(theirs, kind)
    with pytest.raises(NotFound, match=f"no {what} starts with"):
        await as_ann.resolve_id(_unique_start(theirs, everyone), kind)
    with pytest.raises(NotFound, match=f"no {what} starts with"):
        await as_ann.resolve_id(f"{kind}_zz", kind)


def _unique_start(whole: str, ids: list[str]) -> str:
    """The shortest start of ``whole`` that no other of ``ids`` has."""
    return next(
        whole[:n]
        for n in range(whole.index("_") + 2, len(whole) + 1)
        if not any(i != whole and i.startswith(whole[:n]) for i in ids)
    )


async def _answer(resolving: Awaitable[str]) -> str:
    """The id found, or the refusal's words."""
    try:
        return await resolving
    except UsageError as exc:
        return str(exc)


@pytest.mark.parametrize("kind", sorted(NAMES))
async def test_a_named_object_is_found_by_its_name(kind: str, two: Two) -> None:
    ann, bob, owner, as_ann = two.ann, two.bob, two.owner, two.as_ann
    name = NAMES[kind](ann)
    assert await as_ann.resolve_id(name, kind) == _id(ann, kind)
    assert await as_ann.resolve_id(f"  {name.upper()} ", kind) == _id(ann, kind)
    theirs = NAMES[kind](bob)
    assert await owner.resolve_id(theirs, kind, person_id=bob.person.id) == _id(bob, kind)
    # by bob's name, ann's token finds hers (tenants call a channel and a token alike) or none
    answer = await _answer(as_ann.resolve_id(theirs, kind))
    assert answer == (
        _id(ann, kind) if theirs == name else f"{ID_KINDS[kind]} {theirs!r} not found"
    )
    if theirs == name:
        with pytest.raises(UsageError, match=f"more than one {ID_KINDS[kind]} is called"):
            await owner.resolve_id(name, kind)  # the owner, for no one in particular, sees both


async def test_a_name_several_objects_share_is_refused_naming_them(
    store: Store, clock: SimulatedClock
) -> None:
    svc = Service(store, clock)
    me = await svc.ensure_person()
    first = await svc.create_goal(person_id=me.id, title="Weekly report")
    second = await svc.create_goal(person_id=me.id, title="weekly REPORT")
    other = await svc.create_goal(person_id=me.id, title="Weekly report, longer")
    with pytest.raises(UsageError, match="more than one goal is called 'weekly report'") as no:
        await svc.resolve_id("weekly report", "gol")
    assert first.id in str(no.value)
    assert second.id in str(no.value)
    assert other.id not in str(no.value)
    assert await svc.resolve_id("Weekly report, LONGER", "gol") == other.id
    with pytest.raises(NotFound, match="goal 'Weekly' not found"):
        await svc.resolve_id("Weekly", "gol")  # a name is whole, not a start
