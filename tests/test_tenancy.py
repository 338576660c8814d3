"""Tenant isolation through the service facade, the one door of every interface.

Person A holds an API token. For every public method of :class:`~steward.service.Service`,
called through A's token on B's objects (or naming B), the answer is "not found" — exactly as
for an id that does not exist — and nothing of B's changes; the same call on A's own objects
passes the check, so a method that refused everyone would fail here. A ``read`` token may only
read. A new public method fails :func:`test_every_public_method_is_covered` until it has a
case here.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Awaitable, Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from steward.connectors.mail.person import PersonLetter
from steward.connectors.matrix.room import RoomMessage
from steward.domain import Budget, GoalStatus, TaskSpec, TriggerKind
from steward.domain.channel import Channel
from steward.domain.clock import SimulatedClock
from steward.domain.ids import new_id
from steward.domain.memory_item import MemoryItem
from steward.domain.task import TaskRequest
from steward.domain.trigger import TriggerBudget
from steward.domain.webwatch import Extract, Extractor
from steward.errors import Forbidden, NotFound, StewardError, Unauthorized
from steward.service import Service
from steward.service.encode import to_jsonable
from steward.store import Store
from support.screenshots import png, record_look
from support.tenancy import Tenant, ids_of, make_tenant, state_of, take_picture

Call = Callable[[Service, Tenant], Awaitable[Any]]
READ, CONTROL, OWNER, OWN = "read", "control", "owner", "own"
"""OWN: names no person or object; answers for the token's person only."""


def _pid(t: Tenant) -> str:
    return t.person.id


PUSH = {
    "endpoint": "https://1.1.1.1/push/laptop",
    "keys": {
        "p256dh": "BNcRdreALRFXTkOOUHK1EtK2wtaz5Ry4YfYCA_0QTpQtUbVlUls0VJXg7A8u-"
        "Ts1XbjhazAkj7I99e8QcYP7DkM",
        "auth": "tBHItJI5svbpez7KI4CCXg",
    },
}
"""A browser's push subscription (a public push service, by address: nothing is looked up)."""

CASES: dict[str, tuple[str, Call]] = {
    "ensure_person": (OWN, lambda s, t: s.ensure_person()),
    "person": (READ, lambda s, t: s.person(_pid(t))),
    "create_goal": (CONTROL, lambda s, t: s.create_goal(person_id=_pid(t), title="x")),
    "set_goal_status": (CONTROL, lambda s, t: s.set_goal_status(t.goal.id, GoalStatus.PAUSED)),
    "set_goal_budget": (CONTROL, lambda s, t: s.set_goal_budget(t.goal.id, Budget(max_steps=5))),
    "list_goals": (READ, lambda s, t: s.list_goals(person_id=_pid(t))),
    "goal_detail": (READ, lambda s, t: s.goal_detail(t.goal.id)),
    "timeline": (READ, lambda s, t: s.timeline(t.goal.id)),
    "create_task": (
        CONTROL,
        lambda s, t: s.create_task(person_id=_pid(t), spec=TaskSpec(kind="noop")),
    ),
    "create_tasks": (
        CONTROL,
        lambda s, t: s.create_tasks(
            person_id=_pid(t),
            requests=[TaskRequest(spec=TaskSpec(kind="noop"), goal_id=t.goal.id)],
        ),
    ),
    "get_task": (READ, lambda s, t: s.get_task(t.task.id)),
    # a whole id, so that it names one person's task only
    "resolve_id": (READ, lambda s, t: s.resolve_id(t.task.id)),
    "task_detail": (READ, lambda s, t: s.task_detail(t.task.id)),
    "count_tasks": (OWN, lambda s, t: s.count_tasks()),
    "status": (OWN, lambda s, t: s.status()),
    "readiness": (OWN, lambda s, t: s.readiness()),
    "control_task": (CONTROL, lambda s, t: s.control_task(t.task.id, "pause")),
    "list_tasks": (READ, lambda s, t: s.list_tasks(person_id=_pid(t), kind="noop")),
    "add_trigger": (
        CONTROL,
        lambda s, t: s.add_trigger(
            person_id=_pid(t), kind=TriggerKind.CRON, spec="0 8 * * *", task=TaskSpec(kind="noop")
        ),
    ),
    "feed": (READ, lambda s, t: s.feed(person_id=_pid(t), goal_id=t.goal.id)),
    "feed_head": (READ, lambda s, t: s.feed_head(person_id=_pid(t))),
    "list_triggers": (READ, lambda s, t: s.list_triggers(person_id=_pid(t))),
    "webhook_secret": (CONTROL, lambda s, t: s.webhook_secret(t.trigger.id)),
    "set_trigger_enabled": (CONTROL, lambda s, t: s.set_trigger_enabled(t.trigger.id, False)),
    "set_trigger_budget": (
        CONTROL,
        lambda s, t: s.set_trigger_budget(t.trigger.id, TriggerBudget(runs=3)),
    ),
    "trigger_reports": (READ, lambda s, t: s.trigger_reports(person_id=_pid(t))),
    "follow_ups": (READ, lambda s, t: s.follow_ups(t.goal.id)),
    "list_reports": (READ, lambda s, t: s.list_reports(person_id=_pid(t))),
    "goal_usages": (READ, lambda s, t: s.goal_usages(person_id=_pid(t))),
    "mark_reports_read": (READ, lambda s, t: s.mark_reports_read([t.report.id])),
    "set_quiet_hours": (
        CONTROL,
        lambda s, t: s.set_quiet_hours("22:00-07:00", person_id=_pid(t)),
    ),
    "set_digest_time": (CONTROL, lambda s, t: s.set_digest_time("19:30", person_id=_pid(t))),
    "set_timezone": (CONTROL, lambda s, t: s.set_timezone("Europe/Lisbon", person_id=_pid(t))),
    "send_event": (CONTROL, lambda s, t: s.send_event(person_id=_pid(t), type="ping")),
    "list_events": (READ, lambda s, t: s.list_events(person_id=_pid(t))),
    "list_effects": (READ, lambda s, t: s.list_effects(task_id=t.task.id)),
    "prune": (OWNER, lambda s, t: s.prune(older_than=timedelta(days=1))),
    "in_doubt_effects": (READ, lambda s, t: s.in_doubt_effects(_pid(t))),
    "resolve_effect": (CONTROL, lambda s, t: s.resolve_effect(t.effect.id, applied=True)),
    "ask_agent": (CONTROL, lambda s, t: s.ask_agent(person_id=_pid(t), instructions="hi")),
    "answer_task": (CONTROL, lambda s, t: s.answer_task(t.task.id, "yes")),
    "steps": (READ, lambda s, t: s.steps(t.task.id)),
    "list_approvals": (READ, lambda s, t: s.list_approvals(person_id=_pid(t))),
    "get_approval": (READ, lambda s, t: s.get_approval(t.approval.id)),
    "approval_origins": (READ, lambda s, t: s.approval_origins(t.approval)),
    "approval_picture": (READ, lambda s, t: _picture(s, t)),
    "decide_approval": (
        CONTROL,
        lambda s, t: s.decide_approval(t.approval.id, approve=True, scope="always"),
    ),
    "list_notifications": (READ, lambda s, t: s.list_notifications(person_id=_pid(t))),
    "mark_read": (READ, lambda s, t: s.mark_read(t.notification)),
    "audit_log": (READ, lambda s, t: s.audit_log(person_id=_pid(t))),
    "recent_audit": (READ, lambda s, t: s.recent_audit(person_id=_pid(t))),
    "verify_audit": (OWNER, lambda s, t: s.verify_audit()),
    "create_token": (
        CONTROL,
        lambda s, t: s.create_token(person_id=_pid(t), name="x", scopes=["control"]),
    ),
    "list_tokens": (READ, lambda s, t: s.list_tokens(person_id=_pid(t))),
    "revoke_token": (CONTROL, lambda s, t: s.revoke_token(t.token.id, person_id=_pid(t))),
    "add_connection": (
        CONTROL,
        lambda s, t: s.add_connection(person_id=_pid(t), kind="x", name="x", scopes=["x.read"]),
    ),
    "list_connections": (READ, lambda s, t: s.list_connections(person_id=_pid(t))),
    # nothing answers on port 9: A's own connect is refused on its merits, and nothing is kept
    "connect": (
        CONTROL,
        lambda s, t: s.connect(
            person_id=_pid(t),
            kind="calendar",
            name="x",
            settings={"url": "http://127.0.0.1:9/", "username": "x"},
            credential="pw",
        ),
    ),
    "start_oauth": (
        CONTROL,
        lambda s, t: s.start_oauth(
            person_id=_pid(t),
            kind="calendar",
            provider="gmail",
            client_id="x",
            redirect_uri="http://127.0.0.1:9/callback",
        ),
    ),
    "connect_oauth": (
        CONTROL,
        lambda s, t: s.connect_oauth(
            person_id=_pid(t),
            kind="calendar",
            name="x",
            provider="custom",
            username="x",
            client_id="x",
            redirect_uri="http://127.0.0.1:9/callback",
            code="c",
            code_verifier="v",
            token_endpoint="http://127.0.0.1:9/token",
            settings={"url": "http://127.0.0.1:9/"},
        ),
    ),
    "test_connection": (
        CONTROL,
        lambda s, t: s.test_connection(t.connection.id, person_id=_pid(t)),
    ),
    "disconnect_account": (
        CONTROL,
        lambda s, t: s.disconnect_account(t.connection.id, person_id=_pid(t), forget=True),
    ),
    "connect_codehost": (
        CONTROL,
        lambda s, t: s.connect_codehost(
            person_id=_pid(t), kind="github", name="x", repositories=["octo/widgets"]
        ),
    ),
    # A's own connection is not a code host's: refused on its merits
    "rotate_codehost_secret": (
        CONTROL,
        lambda s, t: s.rotate_codehost_secret(t.connection.id, person_id=_pid(t)),
    ),
    "connection_status": (READ, lambda s, t: s.connection_status(person_id=_pid(t))),
    "account_kinds": (OWN, lambda s, t: s.account_kinds()),
    "disconnect": (CONTROL, lambda s, t: s.disconnect(t.connection.id, person_id=_pid(t))),
    "list_grants": (READ, lambda s, t: s.list_grants(person_id=_pid(t))),
    "add_grant": (CONTROL, lambda s, t: s.add_grant(person_id=_pid(t), scopes=["email.send"])),
    "revoke_grant": (CONTROL, lambda s, t: s.revoke_grant(t.grant.id, person_id=_pid(t))),
    "add_rule": (
        CONTROL,
        lambda s, t: s.add_rule(person_id=_pid(t), pattern="x.*", mode="deny"),
    ),
    "list_rules": (READ, lambda s, t: s.list_rules(person_id=_pid(t))),
    "delete_rule": (CONTROL, lambda s, t: s.delete_rule(t.rule.id, person_id=_pid(t))),
    "put_secret": (
        CONTROL,
        lambda s, t: s.put_secret(person_id=_pid(t), name="mail", value="x", hosts=["evil.io"]),
    ),
    "list_secrets": (READ, lambda s, t: s.list_secrets(person_id=_pid(t))),
    "delete_secret": (CONTROL, lambda s, t: s.delete_secret("mail", person_id=_pid(t))),
    "rotate_vault_key": (OWNER, lambda s, t: s.rotate_vault_key()),
    "remember": (CONTROL, lambda s, t: s.remember(person_id=_pid(t), content="Likes tea")),
    "remember_many": (
        CONTROL,
        lambda s, t: s.remember_many(person_id=_pid(t), items=[MemoryItem(content="Likes tea")]),
    ),
    "list_memories": (READ, lambda s, t: s.list_memories(person_id=_pid(t))),
    "search_memories": (READ, lambda s, t: s.search_memories(person_id=_pid(t), query="Lisbon")),
    "memory_detail": (READ, lambda s, t: s.memory_detail(t.memory.id)),
    "edit_memory": (CONTROL, lambda s, t: s.edit_memory(t.memory.id, content="Lives in Porto")),
    "delete_memory": (CONTROL, lambda s, t: s.delete_memory(t.memory.id)),
    "archive_memory": (CONTROL, lambda s, t: s.archive_memory(t.memory.id)),
    "restore_memory": (CONTROL, lambda s, t: s.restore_memory(t.memory.id)),
    "promote_memory": (CONTROL, lambda s, t: s.promote_memory(t.memory.id)),
    "restore_memory_version": (CONTROL, lambda s, t: s.restore_memory_version(t.memory.id, 1)),
    "forget_source": (
        CONTROL,
        lambda s, t: s.forget_source(f"task:{t.task.id}", person_id=_pid(t)),
    ),
    "forget_conversation": (CONTROL, lambda s, t: s.forget_conversation(t.task.id)),
    "list_tombstones": (READ, lambda s, t: s.list_tombstones(person_id=_pid(t))),
    "export_memories": (READ, lambda s, t: s.export_memories(person_id=_pid(t))),
    "import_memories": (
        CONTROL,
        lambda s, t: s.import_memories("## Notes\n- Likes tea\n", person_id=_pid(t)),
    ),
    "list_memory_passes": (READ, lambda s, t: s.list_memory_passes(person_id=_pid(t))),
    "decide_memory_pass": (
        CONTROL,
        lambda s, t: s.decide_memory_pass(t.memory_pass.id, approve=False),
    ),
    "list_skills": (READ, lambda s, t: s.list_skills(person_id=_pid(t))),
    "get_skill": (READ, lambda s, t: s.get_skill(t.skill.id)),
    "skill_history": (READ, lambda s, t: s.skill_history(t.skill.id)),
    "skill_diff": (READ, lambda s, t: s.skill_diff(t.skill.id, from_version=1, to_version=2)),
    "restore_skill": (CONTROL, lambda s, t: s.restore_skill(t.skill.id, 1)),
    "archive_skill": (CONTROL, lambda s, t: s.archive_skill(t.skill.id)),
    "decide_skill_proposal": (
        CONTROL,
        lambda s, t: s.decide_skill_proposal(t.skill.id, approve=True),
    ),
    "add_watch": (
        CONTROL,
        lambda s, t: s.add_watch(
            person_id=_pid(t),
            url="https://shop.example/phone",
            extract=Extract(how=Extractor.CSS, expr=".price"),
        ),
    ),
    "list_watches": (READ, lambda s, t: s.list_watches(person_id=_pid(t))),
    "workspace_files": (READ, lambda s, t: s.workspace_files(person_id=_pid(t))),
    "workspace_file": (READ, lambda s, t: s.workspace_file(t.file, person_id=_pid(t))),
    "browser_views": (READ, lambda s, t: s.browser_views(person_id=_pid(t))),
    "browser_picture": (READ, lambda s, t: _browser_picture(s, t)),
    "clear_browser": (CONTROL, lambda s, t: s.clear_browser(person_id=_pid(t))),
    "get_watch": (READ, lambda s, t: s.get_watch(t.watch.id)),
    "find_watch": (READ, lambda s, t: s.find_watch(t.watch.id)),
    "watch_history": (READ, lambda s, t: s.watch_history(t.watch.id)),
    "set_watch_enabled": (CONTROL, lambda s, t: s.set_watch_enabled(t.watch.id, False)),
    "remove_watch": (CONTROL, lambda s, t: s.remove_watch(t.watch.id)),
    "add_apprise_channel": (
        CONTROL,
        lambda s, t: s.add_apprise_channel("desk", "ntfy://a-topic", person_id=_pid(t)),
    ),
    "push_public_key": (OWN, lambda s, t: s.push_public_key()),
    "subscribe_push": (CONTROL, lambda s, t: s.subscribe_push("laptop", PUSH, person_id=_pid(t))),
    "list_channels": (READ, lambda s, t: s.list_channels(person_id=_pid(t))),
    "test_channel": (CONTROL, lambda s, t: s.test_channel(t.channel.id)),
    "set_channel_enabled": (CONTROL, lambda s, t: s.set_channel_enabled(t.channel.id, False)),
    "remove_channel": (CONTROL, lambda s, t: s.remove_channel(t.channel.id)),
    "add_email_channel": (
        CONTROL,
        lambda s, t: s.add_email_channel(
            person_id=_pid(t), name="email", connection=t.connection.name, address="me@x.io"
        ),
    ),
    "take_person_mail": (CONTROL, lambda s, t: _person_mail(s, t)),
    "mail_answers": (READ, lambda s, t: s.mail_answers(person_id=_pid(t))),
    "add_matrix_channel": (
        CONTROL,
        lambda s, t: s.add_matrix_channel(
            person_id=_pid(t),
            name="matrix",
            homeserver="http://127.0.0.1:9",  # nothing listens: refused on its merits
            user="@bot:x.io",
            person="@me:x.io",
            token="syt_x",
        ),
    ),
    "take_matrix_message": (CONTROL, lambda s, t: _matrix_message(s, t)),
    "matrix_answers": (CONTROL, lambda s, t: _matrix_answers(s, t)),
}


async def _picture(s: Service, t: Tenant) -> Any:
    """The picture shown with the tenant's approval, once its tool has taken it."""
    assert s.data_dir is not None
    take_picture(s.data_dir, t)
    return await s.approval_picture(t.approval.id)


async def _person_mail(s: Service, t: Tenant) -> str:
    """A message from the address of the tenant's mail channel."""
    channel = await s.store.channels.get(f"chn_{t.person.id}")
    letter = PersonLetter(
        channel=channel,
        message_id=f"<{new_id('m')}@x.io>",
        sender="me@x.io",
        subject="Hello",
        text="What is on today?",
        thread=(),
        tokens=(),
    )
    return await s.take_person_mail(letter)


async def _browser_picture(s: Service, t: Tenant) -> bytes:
    """The tenant's task's screenshot, once its browser took one."""
    assert s.data_dir is not None
    record_look(s.data_dir, t.person.id, t.task.id, at=s.clock.now(), picture=png())
    return await s.browser_picture(t.task.id, person_id=_pid(t))


async def _matrix_channel(s: Service, t: Tenant) -> Channel:
    """The tenant's Matrix channel."""
    return await s.store.channels.get(f"chn_mx_{t.person.id}")


async def _matrix_message(s: Service, t: Tenant) -> str:
    """A message the person wrote in a room (a new conversation: no homeserver is asked)."""
    channel = await _matrix_channel(s, t)
    message = RoomMessage(
        channel_id=channel.id,
        room_id="!dm:x.io",
        event_id=f"${new_id('e')}",
        sender="@me:x.io",
        text="What is on today?",
        members=frozenset({"@bot:x.io", "@me:x.io"}),
    )
    return await s.take_matrix_message(message)


async def _matrix_answers(s: Service, t: Tenant) -> int:
    return await s.matrix_answers(channel_id=(await _matrix_channel(s, t)).id)


NOT_A_CASE = {
    "authenticate": "how a token becomes a bound service; tested below",
    "receive_webhook": "its credential is the delivery's signature: tests/api/test_webhooks.py",
    "receive_codehost": "its credential is the provider's proof: tests/api/test_codehost.py",
}


def test_every_public_method_is_covered() -> None:
    public = {
        name
        for name, member in inspect.getmembers(Service, inspect.iscoroutinefunction)
        if not name.startswith("_")
    }
    assert public - set(NOT_A_CASE) == set(CASES), "add a tenancy case for each new method"


@pytest.fixture
async def tenants(
    store: Store, clock: SimulatedClock, tmp_path: Path
) -> tuple[Tenant, Tenant, Service, Service, Service]:
    a = await make_tenant(store, clock, "ann", tmp_path)
    b = await make_tenant(store, clock, "bob", tmp_path)
    owner = Service(store, clock, data_dir=tmp_path)
    return a, b, owner, await owner.authenticate(a.control), await owner.authenticate(a.read)


@pytest.mark.parametrize("method", sorted(CASES))
async def test_a_token_cannot_reach_another_persons_data(
    method: str,
    store: Store,
    clock: SimulatedClock,
    tenants: tuple[Tenant, Tenant, Service, Service, Service],
) -> None:
    a, b, _, as_a, as_a_reading = tenants
    scope, call = CASES[method]
    before = await state_of(store, clock, b)
    if scope == OWNER:
        with pytest.raises(Forbidden, match="owner"):
            await call(as_a, b)
        with pytest.raises(Forbidden, match="owner"):
            await call(as_a, a)
        assert await state_of(store, clock, b) == before
        return

    # on B's objects, or naming B: not found, and nothing of B's changed
    if scope != OWN:
        with pytest.raises(NotFound) as refused:
            await call(as_a, b)
        assert any(i in str(refused.value) for i in ids_of(b)), refused.value
        assert await state_of(store, clock, b) == before

    # with a read token, a method that changes things is forbidden before anything else
    if scope == CONTROL:
        with pytest.raises(Forbidden, match="control"):
            await call(as_a_reading, a)

    # the same call on A's own objects passes the check (it may still be refused on its
    # merits, e.g. answering a task that asked nothing)
    try:
        answer = await call(as_a if scope == CONTROL else as_a_reading, a)
    except (NotFound, Forbidden):
        raise
    except StewardError:
        answer = None
    leaked = ids_of(b) & set(_strings(to_jsonable(answer)))
    assert not leaked, f"{method} answered with {leaked}"
    assert await state_of(store, clock, b) == before


async def test_listings_without_a_person_are_the_tokens_own(
    tenants: tuple[Tenant, Tenant, Service, Service, Service],
) -> None:
    a, b, owner, as_a, _ = tenants
    assert (await as_a.ensure_person()).id == a.person.id
    assert (await as_a.person(None)).id == a.person.id
    assert {t.person_id for t in await as_a.list_tasks()} == {a.person.id}
    assert [t.id for t in await as_a.list_tasks(kind="noop")] == [a.task.id]
    assert await as_a.feed_head(person_id="") == (await as_a.feed(person_id=""))[-1].seq
    assert {e.person_id for e in await as_a.recent_audit(person_id="")} == {a.person.id}
    assert [e.id for e in await as_a.list_effects()] == [a.effect.id]
    assert [e.id for e in await as_a.in_doubt_effects()] == [a.effect.id]
    assert await as_a.count_tasks() == {"running": 1}
    assert await owner.count_tasks() == {"running": 2}
    assert (await as_a.status()).tasks == {"running": 1}
    assert (await as_a.status()).in_doubt_effects == 1
    assert (await owner.status()).in_doubt_effects == 2
    blob = json.dumps(to_jsonable(await as_a.list_effects()))
    assert b.effect.id not in blob


async def test_the_audit_filters_read_only_the_tokens_own_entries(
    tenants: tuple[Tenant, Tenant, Service, Service, Service],
) -> None:
    a, b, _, as_a, _ = tenants
    # another person's goal is not found, exactly as a goal that does not exist
    with pytest.raises(NotFound):
        await as_a.recent_audit(person_id="", goal_id=b.goal.id)
    with pytest.raises(NotFound):
        await as_a.recent_audit(person_id="", goal_id="gol_missing")
    # a kind or a tool both persons have: only the token's own entries
    for only in ({"kind": "rule"}, {"kind": "grant"}, {"tool": "send_email"}):
        found = await as_a.recent_audit(person_id="", **only)
        assert {e.person_id for e in found} <= {a.person.id}, only
    ruled = await as_a.recent_audit(person_id="", kind="rule")
    assert ruled
    assert {e.kind for e in ruled} == {"rule"}


async def test_decisions_through_a_token_are_recorded_as_the_token(
    tenants: tuple[Tenant, Tenant, Service, Service, Service],
) -> None:
    a, _, _, as_a, _ = tenants
    decided = await as_a.decide_approval(a.approval.id, approve=False, decided_by="someone else")
    assert decided.decided_by == f"token:{a.token.id}"
    grant = await as_a.add_grant(person_id=a.person.id, scopes=["email.send"], issued_by="me")
    assert grant.issued_by == f"token:{a.token.id}"


async def test_bad_and_revoked_tokens_are_refused(
    tenants: tuple[Tenant, Tenant, Service, Service, Service],
) -> None:
    a, _, owner, _, _ = tenants
    for bad in ("", "stw_nope", a.control + "x"):
        with pytest.raises(Unauthorized):
            await owner.authenticate(bad)
    await owner.revoke_token(a.token.id, person_id=a.person.id)
    with pytest.raises(Unauthorized):
        await owner.authenticate(a.control)


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (*_strings(k), *_strings(v))]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []
