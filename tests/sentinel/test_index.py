"""The sentinel's in-memory policy: kept current across processes by the policy version,
changes applied incrementally equal to a fresh read, and the index never dropping a grant or
rule that could decide an action."""

from __future__ import annotations

import itertools
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from steward.domain.actions import ActionRequest, EffectClass, Verdict
from steward.domain.agent_input import AgentTaskInput
from steward.domain.authority import Connection, Grant, Lifetime, Rule, RuleMode
from steward.domain.ids import new_id
from steward.sentinel.index import PersonPolicy, PolicyCache
from steward.sentinel.policy import PolicySentinel, action_keys, evaluate, session_of
from steward.store import Store
from steward.store.authority import PolicyRead
from support.sentinel import World

NOW = datetime(2026, 1, 5, 8, 0, tzinfo=UTC)
ME = "per_me"


async def test_another_process_revoking_a_grant_bites_at_the_next_decision(
    w: World, db_url: str
) -> None:
    g = await w.store.authority.add_grant(w.grant("email.send"))
    assert await w.check() == (Verdict.ALLOW, f"grant:{g.id}")
    other = await Store.open(db_url)  # a second process: its own pools, no shared memory
    try:
        await other.authority.revoke_grant(g.id, person_id=w.me.id, now=w.clock.now())
        assert await w.check() == (Verdict.ASK, "default:external-asks")
        deny = await other.authority.add_rule(
            Rule(
                id=new_id("rul"),
                person_id=w.me.id,
                pattern="send_*",
                mode=RuleMode.DENY,
                created_at=w.clock.now(),
            )
        )
        assert await w.check() == (Verdict.DENY, f"rule:{deny.id}")
        await other.authority.delete_rule(deny.id, person_id=w.me.id, now=w.clock.now())
        assert await w.check() == (Verdict.ASK, "default:external-asks")
        await other.authority.disconnect(w.mail.id, person_id=w.me.id, now=w.clock.now())
        assert await w.check() == (Verdict.DENY, "connection")
    finally:
        await other.close()


async def test_a_grant_spent_here_and_revoked_elsewhere_stays_dead(w: World, db_url: str) -> None:
    """The spend is applied in memory only when it is the sole change since the version held;
    a write by another process in between is read back, never skipped."""
    once = await w.store.authority.add_grant(w.grant("email.send", lifetime=Lifetime.ONCE))
    standing = await w.store.authority.add_grant(w.grant("email.send"))
    assert await w.check() == (Verdict.ALLOW, f"grant:{standing.id}")  # prefers the standing one
    other = await Store.open(db_url)
    try:
        await other.authority.revoke_grant(standing.id, person_id=w.me.id, now=w.clock.now())
        assert await w.check() == (Verdict.ALLOW, f"grant:{once.id}")  # read the revoke, spend
        assert await w.check() == (Verdict.ASK, "default:external-asks")
        policy = w.sentinel.policies
        held = await policy.current(w.me.id, now=w.clock.now())
        fresh = await PolicyCache(w.store).current(w.me.id, now=w.clock.now())
        assert held.version == fresh.version
        assert held.whole(NOW).grants == fresh.whole(NOW).grants == ()
    finally:
        await other.close()


async def test_the_first_read_skips_expired_grants_and_the_evaluator_expires_held_ones(
    w: World,
) -> None:
    soon = await w.store.authority.add_grant(
        w.grant(
            "email.send", lifetime=Lifetime.UNTIL, expires_at=w.clock.now() + timedelta(hours=1)
        )
    )
    assert await w.check() == (Verdict.ALLOW, f"grant:{soon.id}")
    w.clock.advance(timedelta(hours=1))
    assert await w.check() == (Verdict.ASK, "default:external-asks")  # held, judged expired
    fresh = await PolicyCache(w.store).current(w.me.id, now=w.clock.now())
    assert fresh.whole(w.clock.now()).grants == ()


# --- incremental == fresh, and the index never drops what could decide ----------------------


def _grant(
    i: int, lifetime: Lifetime, scopes: tuple[str, ...], constraints: dict[str, Any]
) -> Grant:
    return Grant(
        id=f"grt_{i:04d}",
        person_id=ME,
        scopes=scopes,
        lifetime=lifetime,
        constraints=constraints,
        task_id="tsk_a"
        if lifetime in (Lifetime.TASK, Lifetime.ONCE) and i % 2
        else ("tsk_b" if lifetime is Lifetime.TASK else None),
        session_id=f"ses_{i % 2}" if lifetime is Lifetime.SESSION else None,
        expires_at=NOW + timedelta(hours=1 - i % 3) if lifetime is Lifetime.UNTIL else None,
        issued_by="test",
        created_at=NOW,
    )


_CONSTRAINTS = st.sampled_from(
    [
        {},
        {"recipients": ["ann@x.io"]},
        {"recipients": ["bob@y.io", "ann@x.io"]},
        {"domains": ["x.io"]},
        {"domains": ["mail.x.io", "y.io"]},
        {"hosts": ["api.x.io"], "path_prefix": "/v1"},
        {"hosts": ["api.y.io"]},
        {"tool": "send_email"},
        {"max_amount": 10},
    ]
)
_SCOPES = st.sampled_from([("email.send",), ("http.post",), ("email.send", "http.post"), ()])
_GRANTS = st.builds(
    lambda lifetime, scopes, constraints: (lifetime, scopes, constraints),
    st.sampled_from(list(Lifetime)),
    _SCOPES,
    _CONSTRAINTS,
)
_RULES = st.tuples(
    st.sampled_from(["send_*", "send_email", "*", "email.*", "http.post", "*post", "mcp__*"]),
    st.sampled_from(list(RuleMode)),
    st.integers(0, 2),
)
_ARGS = [
    {"to": "ann@x.io"},
    {"to": "bob@y.io", "amount": 5},
    {"to": "c@mail.x.io"},
    {"url": "https://api.x.io/v1/a"},
    {"url": "https://api.y.io/v2", "to": "ann@x.io"},
    {},
]
_TOOLS = [("send_email", ("email.send",)), ("post", ("http.post",)), ("send_email", ())]
_CONTEXTS = [("tsk_a", {}), ("tsk_b", {"session_id": "ses_1"}), ("tsk_c", {"mode": "chat"})]


def _request(
    tool: str, scopes: tuple[str, ...], args: dict[str, Any], task: str, ctx: Any
) -> ActionRequest:
    return ActionRequest(
        person_id=ME,
        task_id=task,
        goal_id=None,
        tool=tool,
        args=args,
        effect=EffectClass.EXTERNAL,
        scopes=scopes,
        source="python",
        wake_reason="start",
        task_input=AgentTaskInput.from_json(ctx),
    )


@settings(max_examples=60, deadline=None)
@given(
    grants=st.lists(_GRANTS, max_size=14),
    rules=st.lists(_RULES, max_size=5),
    changes=st.lists(
        st.tuples(st.sampled_from(["revoke", "spend", "add"]), st.integers(0, 20)), max_size=8
    ),
)
def test_incremental_changes_equal_a_fresh_read_and_narrowing_never_changes_a_verdict(
    grants: list[tuple[Lifetime, tuple[str, ...], dict[str, Any]]],
    rules: list[tuple[str, RuleMode, int]],
    changes: list[tuple[str, int]],
) -> None:
    connection = Connection(
        id="con_1",
        person_id=ME,
        kind="x",
        name="x",
        scopes=("email.send", "http.post"),
        created_at=NOW,
    )
    made = [_grant(i, *g) for i, g in enumerate(grants)]
    made = [g for g in made if g.scopes or "tool" in g.constraints]
    ruled = [
        Rule(id=f"rul_{i}", person_id=ME, pattern=p, mode=m, priority=pr, created_at=NOW)
        for i, (p, m, pr) in enumerate(rules)
    ]
    state = {g.id: g for g in made}
    held = PersonPolicy(ME)
    held.apply(
        PolicyRead(
            person_id=ME,
            version=1,
            complete=True,
            connections=(connection,),
            grants=tuple(made),
            rules=tuple(ruled),
        )
    )
    version = 1
    for kind, n in changes:
        version += 1
        if kind == "add":
            g = _grant(100 + version, Lifetime.STANDING, ("email.send",), {"domains": ["x.io"]})
        elif state:
            g = list(state.values())[n % len(state)]
            g = replace(g, revoked_at=NOW) if kind == "revoke" else replace(g, used_at=NOW)
        else:
            continue
        state[g.id] = g
        held.apply(PolicyRead(person_id=ME, version=version, complete=False, grants=(g,)))
    live = tuple(g for g in state.values() if g.revoked_at is None and g.used_at is None)
    fresh = PersonPolicy(ME)
    fresh.apply(
        PolicyRead(
            person_id=ME,
            version=version,
            complete=True,
            connections=(connection,),
            grants=live,
            rules=tuple(ruled),
        )
    )
    assert sorted(g.id for g in held.whole(NOW).grants) == sorted(g.id for g in live)
    whole = fresh.whole(NOW)
    for (tool, scopes), args, (task, ctx) in itertools.product(_TOOLS, _ARGS, _CONTEXTS):
        req = _request(tool, scopes, args, task, ctx)
        session = session_of(req)
        narrow = held.snapshot_for(action_keys(req, session), (tool, *scopes), NOW)
        expected = evaluate(req, whole, now=NOW, session_id=session)
        assert evaluate(req, narrow, now=NOW, session_id=session) == expected, (tool, args, ctx)


def test_a_read_for_another_person_is_refused() -> None:
    with pytest.raises(ValueError, match="per_other"):
        PersonPolicy(ME).apply(PolicyRead(person_id="per_other", version=1, complete=True))


async def test_the_sentinel_reads_one_row_when_nothing_changed(w: World) -> None:
    """Nothing written since the last decision: the store returns no rows, only the version."""
    await w.store.authority.add_grant(w.grant("email.send"))
    await w.check()
    policy = await w.sentinel.policies.current(w.me.id, now=w.clock.now())
    read = await w.store.authority.policy_read(w.me.id, known=policy.version, now=w.clock.now())
    assert read.version == policy.version
    assert (read.connections, read.grants, read.rules) == ((), (), ())
    assert not read.complete
    g = await w.store.authority.add_grant(w.grant("email.send", constraints={"domains": ["x.io"]}))
    changed = await w.store.authority.policy_read(w.me.id, known=policy.version, now=w.clock.now())
    assert changed.version == policy.version + 1
    assert [x.id for x in changed.grants] == [g.id]
    assert isinstance(w.sentinel, PolicySentinel)
