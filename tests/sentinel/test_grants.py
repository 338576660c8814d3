"""The store-backed sentinel: grant lifetimes on a simulated clock, revocation and disconnection
biting at the very next check, grants bounded by connections, and every query scoped to one
person."""

from __future__ import annotations

import asyncio
import itertools
from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest

from steward.domain import TaskSpec
from steward.domain.actions import EffectClass, Verdict
from steward.domain.authority import Connection, Lifetime, Rule, RuleMode
from steward.domain.clock import SimulatedClock
from steward.domain.ids import new_id
from steward.errors import NotFound, UsageError
from steward.sentinel.index import PolicyCache
from steward.sentinel.policy import action_keys, evaluate, session_of
from support.sentinel import World, request


async def test_once_allows_exactly_one_action_then_asks(w: World) -> None:
    g = await w.store.authority.add_grant(w.grant("email.send", lifetime=Lifetime.ONCE))
    assert await w.check() == (Verdict.ALLOW, f"grant:{g.id}")
    assert await w.check() == (Verdict.ASK, "default:external-asks")
    spent = await w.store.authority.get_grant(g.id, person_id=w.me.id)
    assert spent.used_at == w.clock.now()
    assert await w.store.authority.list_grants(w.me.id, live_at=w.clock.now()) == []


async def test_a_once_grant_is_spent_by_exactly_one_of_two_racing_actions(w: World) -> None:
    g = await w.store.authority.add_grant(w.grant("email.send", lifetime=Lifetime.ONCE))
    verdicts = await asyncio.gather(*(w.check() for _ in range(6)))
    assert sorted(v for v, _ in verdicts) == sorted([Verdict.ALLOW] + [Verdict.ASK] * 5)
    assert await w.store.authority.spend_grant(g.id, now=w.clock.now()) is None


async def test_once_for_a_task_is_only_for_that_task(w: World) -> None:
    await w.store.authority.add_grant(w.grant("email.send", lifetime=Lifetime.ONCE, task_id=w.task))
    assert (await w.check(task_id=w.other_task))[0] is Verdict.ASK
    assert (await w.check())[0] is Verdict.ALLOW


async def test_task_grant_is_only_for_its_task(w: World) -> None:
    g = await w.store.authority.add_grant(
        w.grant("email.send", lifetime=Lifetime.TASK, task_id=w.task)
    )
    assert await w.check() == (Verdict.ALLOW, f"grant:{g.id}")
    assert await w.check() == (Verdict.ALLOW, f"grant:{g.id}")  # not spent by use
    assert (await w.check(task_id=w.other_task))[0] is Verdict.ASK


async def test_session_grant_is_only_for_its_session(w: World) -> None:
    g = await w.store.authority.add_grant(
        w.grant("email.send", lifetime=Lifetime.SESSION, session_id="ses_1")
    )
    assert await w.check(task_input={"session_id": "ses_1"}) == (Verdict.ALLOW, f"grant:{g.id}")
    assert await w.check(task_input={"session_id": "ses_1"}, task_id=w.other_task) == (
        Verdict.ALLOW,
        f"grant:{g.id}",
    )
    assert (await w.check(task_input={"session_id": "ses_2"}))[0] is Verdict.ASK
    assert (await w.check())[0] is Verdict.ASK
    # a chat task is its own session
    chat = await w.store.authority.add_grant(
        w.grant("email.send", lifetime=Lifetime.SESSION, session_id=w.other_task)
    )
    assert await w.check(task_id=w.other_task, task_input={"mode": "chat"}) == (
        Verdict.ALLOW,
        f"grant:{chat.id}",
    )
    assert (await w.check(task_input={"mode": "chat"}))[0] is Verdict.ASK


async def test_until_grant_stops_at_its_expiry(w: World) -> None:
    expires = w.clock.now() + timedelta(hours=2)
    g = await w.store.authority.add_grant(
        w.grant("email.send", lifetime=Lifetime.UNTIL, expires_at=expires)
    )
    assert await w.check() == (Verdict.ALLOW, f"grant:{g.id}")
    w.clock.advance(timedelta(hours=2) - timedelta(seconds=1))
    assert (await w.check())[0] is Verdict.ALLOW
    w.clock.advance(timedelta(seconds=1))
    assert (await w.check())[0] is Verdict.ASK
    assert await w.store.authority.list_grants(w.me.id, live_at=w.clock.now()) == []
    assert [x.id for x in await w.store.authority.list_grants(w.me.id)] == [g.id]


async def test_standing_grant_lasts_until_revoked_and_revocation_bites_next(w: World) -> None:
    g = await w.store.authority.add_grant(w.grant("email.send"))
    for _ in range(3):
        assert await w.check() == (Verdict.ALLOW, f"grant:{g.id}")
        w.clock.advance(timedelta(days=400))
    revoked = await w.store.authority.revoke_grant(g.id, person_id=w.me.id, now=w.clock.now())
    assert revoked.revoked_at == w.clock.now()
    assert await w.check() == (Verdict.ASK, "default:external-asks")
    w.clock.advance(timedelta(minutes=1))
    again = await w.store.authority.revoke_grant(g.id, person_id=w.me.id, now=w.clock.now())
    assert again.revoked_at == revoked.revoked_at


async def test_a_revoked_once_grant_cannot_be_spent(w: World) -> None:
    g = await w.store.authority.add_grant(w.grant("email.send", lifetime=Lifetime.ONCE))
    await w.store.authority.revoke_grant(g.id, person_id=w.me.id, now=w.clock.now())
    assert await w.store.authority.spend_grant(g.id, now=w.clock.now()) is None
    assert (await w.check())[0] is Verdict.ASK


async def test_disconnecting_bites_next_and_revokes_what_it_backed(w: World) -> None:
    g = await w.store.authority.add_grant(w.grant("email.send"))
    assert (await w.check())[0] is Verdict.ALLOW
    done = await w.store.authority.disconnect(w.mail.id, person_id=w.me.id, now=w.clock.now())
    assert done.connection.active is False
    assert [x.id for x in done.revoked] == [g.id]
    assert await w.check() == (Verdict.DENY, "connection")
    # reconnecting does not bring the old authority back
    await w.store.authority.add_connection(
        replace(w.mail, id=new_id("con"), created_at=w.clock.now())
    )
    assert (await w.check())[0] is Verdict.ASK


async def test_reading_is_not_sending(w: World, clock: SimulatedClock) -> None:
    await w.store.authority.disconnect(w.mail.id, person_id=w.me.id, now=clock.now())
    await w.store.authority.add_connection(
        Connection(
            id=new_id("con"),
            person_id=w.me.id,
            kind="email",
            name="read-only mail",
            scopes=("email.read",),
            created_at=clock.now(),
        )
    )
    await w.store.authority.add_rule(_rule(w, "*", RuleMode.DO, priority=99))
    assert await w.check() == (Verdict.DENY, "connection")
    verdict, _ = await w.check(tool="read_email", scopes=("email.read",), effect=EffectClass.READ)
    assert verdict is Verdict.ALLOW


INVALID_GRANTS: list[tuple[tuple[str, ...], dict[str, Any], dict[str, Any], str]] = [
    (("email.delete",), {}, {}, "no active connection allows email.delete"),
    (("email.send", "payment.send"), {}, {}, "no active connection allows payment.send"),
    (("email.*",), {}, {}, "bad scope"),
    ((), {}, {}, "name the scopes"),
    (("email.send",), {"period_amount": 10}, {}, "go together"),
    (("email.send",), {"period_amount": -1, "period_seconds": 60}, {}, "period_amount"),
    (("email.send",), {"period_amount": 10, "period_seconds": 0}, {}, "period_seconds"),
    (("email.send",), {"cc_only": True}, {}, "unknown constraints"),
    (("email.send",), {"recipients": "ann@example.com"}, {}, "non-empty list"),
    (("email.send",), {"max_amount": float("nan")}, {}, "max_amount"),
    (("email.send",), {"path_prefix": "v1"}, {}, "path_prefix"),
    (("email.send",), {}, {"lifetime": Lifetime.TASK}, "needs task_id"),
    (("email.send",), {}, {"lifetime": Lifetime.UNTIL}, "expires_at"),
    (("email.send",), {}, {"session_id": "ses_1"}, "session_id"),
]


async def test_grants_are_validated(w: World) -> None:
    for scopes, constraints, fields, message in INVALID_GRANTS:
        with pytest.raises(UsageError, match=message):
            await w.store.authority.add_grant(w.grant(*scopes, constraints=constraints, **fields))
    assert await w.store.authority.list_grants(w.me.id) == []


async def _connect_bank(w: World) -> None:
    await w.store.authority.add_connection(
        Connection(
            id=new_id("con"),
            person_id=w.me.id,
            kind="bank",
            name="bank",
            scopes=("payment.send",),
            created_at=w.clock.now(),
        )
    )


async def test_a_per_period_ceiling_counts_what_the_grant_allowed_in_a_trailing_window(
    w: World,
) -> None:
    await _connect_bank(w)
    day = 86_400
    g = await w.store.authority.add_grant(
        w.grant("payment.send", constraints={"period_amount": 100, "period_seconds": day})
    )

    async def pay(amount: Any) -> tuple[Verdict, str | None]:
        return await w.check(tool="pay", scopes=("payment.send",), args={"amount": amount})

    assert await pay(40) == (Verdict.ALLOW, f"grant:{g.id}")
    w.clock.advance(timedelta(hours=10))
    assert await pay("40") == (Verdict.ALLOW, f"grant:{g.id}")
    assert await pay(30) == (Verdict.ASK, f"grant:{g.id}")  # 110 in the last 24 hours
    assert await pay(20) == (Verdict.ALLOW, f"grant:{g.id}")  # exactly 100
    assert await pay(101) == (Verdict.ASK, "default:external-asks")  # never fits a period
    assert await pay("lots") == (Verdict.HANDOFF, "hard-limit:payment-ceiling")
    w.clock.advance(timedelta(hours=14, seconds=1))  # the first 40 left the window
    assert await pay(40) == (Verdict.ALLOW, f"grant:{g.id}")
    assert await pay(1) == (Verdict.ASK, f"grant:{g.id}")
    decisions = [
        e.data
        for e in await w.store.audit.list_audit(person_id=w.me.id)
        if e.kind == "decision" and e.data["verdict"] == "allow"
    ]
    assert [d.get("charged") for d in decisions] == [40, 40, 20, 40]


async def test_racing_actions_cannot_both_use_the_last_of_an_allowance(w: World) -> None:
    await _connect_bank(w)
    await w.store.authority.add_grant(
        w.grant("payment.send", constraints={"period_amount": 100, "period_seconds": 3600})
    )
    verdicts = await asyncio.gather(
        *(w.check(tool="pay", scopes=("payment.send",), args={"amount": 30}) for _ in range(6))
    )
    assert sorted(v for v, _ in verdicts) == sorted([Verdict.ALLOW] * 3 + [Verdict.ASK] * 3)


async def test_a_grant_for_another_persons_task_or_nobody_is_refused(w: World) -> None:
    spec = TaskSpec(kind="agent", title="theirs", input={})
    theirs = await w.store.tasks.create_task(spec, person_id=w.other.id, now=w.clock.now())
    with pytest.raises(NotFound):
        await w.store.authority.add_grant(
            w.grant("email.send", lifetime=Lifetime.TASK, task_id=theirs.id)
        )
    with pytest.raises(NotFound):
        await w.store.authority.add_grant(replace(w.grant("email.send"), person_id="per_nobody"))
    # the other person has no connection: my connection's scopes are not theirs to grant
    with pytest.raises(UsageError, match="no active connection"):
        await w.store.authority.add_grant(replace(w.grant("email.send"), person_id=w.other.id))


async def test_every_query_is_scoped_to_one_person(w: World) -> None:
    g = await w.store.authority.add_grant(w.grant("email.send"))
    r = await w.store.authority.add_rule(_rule(w, "email.*", RuleMode.DO))
    now = w.clock.now()
    with pytest.raises(NotFound):
        await w.store.authority.revoke_grant(g.id, person_id=w.other.id, now=now)
    with pytest.raises(NotFound):
        await w.store.authority.get_grant(g.id, person_id=w.other.id)
    with pytest.raises(NotFound):
        await w.store.authority.delete_rule(r.id, person_id=w.other.id, now=w.clock.now())
    with pytest.raises(NotFound):
        await w.store.authority.disconnect(w.mail.id, person_id=w.other.id, now=now)
    assert await w.store.authority.list_grants(w.other.id) == []
    assert await w.store.authority.list_rules(w.other.id) == []
    assert await w.store.authority.list_connections(w.other.id) == []
    # and the other person's sentinel sees none of it
    verdict, rule = await w.check(person_id=w.other.id)
    assert (verdict, rule) == (Verdict.DENY, "connection")
    # mine are untouched
    assert (await w.store.authority.get_grant(g.id, person_id=w.me.id)).revoked_at is None
    assert [x.id for x in await w.store.authority.list_rules(w.me.id)] == [r.id]
    assert (await w.store.authority.list_connections(w.me.id))[0].active


async def test_rules_decide_through_the_store(w: World) -> None:
    g = await w.store.authority.add_grant(
        w.grant("email.send", constraints={"recipients": ["Ann@Example.com"]})
    )
    assert g.constraints == {"recipients": ["ann@example.com"]}
    ask = await w.store.authority.add_rule(_rule(w, "email.send", RuleMode.DO_IF_PREAPPROVED))
    assert await w.check() == (Verdict.ALLOW, f"grant:{g.id}")
    assert await w.check(args={"to": "eve@evil.io"}) == (Verdict.ASK, f"rule:{ask.id}")
    deny = await w.store.authority.add_rule(_rule(w, "send_*", RuleMode.DENY))
    assert await w.check() == (Verdict.DENY, f"rule:{deny.id}")
    await w.store.authority.delete_rule(deny.id, person_id=w.me.id, now=w.clock.now())
    assert await w.check() == (Verdict.ALLOW, f"grant:{g.id}")
    with pytest.raises(UsageError, match="bad pattern"):
        await w.store.authority.add_rule(_rule(w, "send_%", RuleMode.DO))


async def test_the_policy_index_never_drops_what_could_decide(w: World) -> None:
    """Decisions on the narrowed snapshot equal those on the whole one, over a grid of
    requests against grants and rules whose text is full of wildcard characters."""
    await w.store.authority.add_connection(
        Connection(
            id=new_id("con"),
            person_id=w.me.id,
            kind="mcp",
            name="gh",
            scopes=("mcp:gh_issues.write", "http.post"),
            created_at=w.clock.now(),
        )
    )
    grants = [
        w.grant("email.send", constraints={"recipients": ["a_b@x.io", "100%@x.io"]}),
        w.grant("email.send", lifetime=Lifetime.ONCE, constraints={"domains": ["x.io"]}),
        w.grant("mcp:gh_issues.write", lifetime=Lifetime.TASK, task_id=w.other_task),
        w.grant("http.post", constraints={"hosts": ["api.x.io"], "path_prefix": "/v1"}),
        w.grant(constraints={"tool": "mcp__gh__list_prs"}),
        w.grant("email.send", lifetime=Lifetime.SESSION, session_id="ses_1"),
        w.grant("email.send", constraints={"tool": "send_email", "max_amount": 5}),
    ]
    for g in grants:
        await w.store.authority.add_grant(g)
    for pattern, mode, priority in [
        ("mcp__gh__*", RuleMode.ASK, 0),
        ("mcp:gh_*", RuleMode.DO_IF_PREAPPROVED, 1),
        ("email.send", RuleMode.DO_IF_PREAPPROVED, 1),
        ("send_*", RuleMode.HANDOFF, 0),
        ("mcp__gh__list_prs", RuleMode.DO, 1),
    ]:
        await w.store.authority.add_rule(_rule(w, pattern, mode, priority))
    tools = [
        ("send_email", ("email.send",)),
        ("mcp__gh__comment", ("mcp:gh_issues.write",)),
        ("mcp__gh__list_prs", ()),
        ("post", ("http.post",)),
        ("mcp__ghx", ()),
        ("send_fax", ()),
    ]
    argsets: list[dict[str, Any]] = [
        {"to": "a_b@x.io"},
        {"to": ["100%@x.io", "a_b@x.io"], "amount": 5},
        {"to": "axb@x.io"},
        {"to": "b@mail.x.io", "cc": "c@y.io"},
        {"bcc": "b@mail.x.io"},
        {"url": "https://api.x.io/v1/a"},
        {"url": "https://api.x.io/v2"},
        {},
    ]
    contexts = [{}, {"session_id": "ses_1"}, {"mode": "chat"}]
    policy = await PolicyCache(w.store).current(w.me.id, now=w.clock.now())
    full = policy.whole(w.clock.now())
    assert len(full.grants) == len(grants)
    seen: set[Verdict] = set()
    narrowest = len(full.grants) + len(full.rules)
    for (tool, scopes), args, ctx, task in itertools.product(
        tools, argsets, contexts, [w.task, w.other_task]
    ):
        req = request(w, tool=tool, scopes=scopes, args=args, task_input=ctx, task_id=task)
        session = session_of(req)
        now = w.clock.now()
        narrow = policy.snapshot_for(action_keys(req, session), (tool, *scopes), now)
        assert len(narrow.grants) <= len(full.grants)
        narrowest = min(narrowest, len(narrow.grants) + len(narrow.rules))
        expected = evaluate(req, full, now=now, session_id=session)
        assert evaluate(req, narrow, now=now, session_id=session) == expected, (tool, args, ctx)
        seen.add(expected.verdict)
    # DENY: a URL outside the hosts of the mail connection (smtp.example.com)
    assert seen == {Verdict.ALLOW, Verdict.ASK, Verdict.HANDOFF, Verdict.DENY}
    assert narrowest == 0  # the filter does narrow


def _rule(w: World, pattern: str, mode: RuleMode, priority: int = 0) -> Rule:
    return Rule(
        id=new_id("rul"),
        person_id=w.me.id,
        pattern=pattern,
        mode=mode,
        priority=priority,
        created_at=w.clock.now(),
    )


async def test_every_change_of_authority_is_audited(w: World) -> None:
    """Connecting, granting, revoking, rules and disconnecting each leave an audit entry
    committed with the change; a second revocation changes nothing and logs nothing."""
    grant = await w.store.authority.add_grant(
        w.grant("email.send", constraints={"recipients": ["a@x.io"]})
    )
    await w.store.authority.revoke_grant(grant.id, person_id=w.me.id, now=w.clock.now())
    await w.store.authority.revoke_grant(grant.id, person_id=w.me.id, now=w.clock.now())
    rule = await w.store.authority.add_rule(
        Rule(
            id=new_id("rul"),
            person_id=w.me.id,
            pattern="email.send",
            mode=RuleMode.ASK,
            created_at=w.clock.now(),
        )
    )
    await w.store.authority.delete_rule(rule.id, person_id=w.me.id, now=w.clock.now())
    await w.store.authority.disconnect(w.mail.id, person_id=w.me.id, now=w.clock.now())
    entries = await w.store.audit.list_audit(person_id=w.me.id)
    assert [e.kind for e in entries] == [
        "connection",
        "grant",
        "revocation",
        "rule",
        "rule",
        "revocation",
    ]
    assert entries[1].data["grant"] == grant.id
    assert entries[1].data["constraints"] == {"recipients": ["a@x.io"]}
    assert entries[2].data == {"grant": grant.id}
    assert entries[5].data["connection"] == w.mail.id
    assert (await w.store.audit.verify_audit()).ok
