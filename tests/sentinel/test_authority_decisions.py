"""Authority decided in the sentinel for callers outside the harness: the grant an approval
gives (:func:`~steward.sentinel.grants.approval_grant`) and whether a learned skill applies
(:meth:`~steward.sentinel.policy.PolicySentinel.judge`, audited like any decision)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from steward.domain import Approval, ApprovalStatus, Rule, RuleMode
from steward.domain.authority import Lifetime
from steward.domain.ids import new_id
from steward.domain.skill import SkillContent
from steward.errors import UsageError
from steward.memory.skills import APPLY_ACTION, Disposition, SkillLibrary
from steward.sentinel.grants import approval_grant

from .conftest import World


def approval(w: World, **args: object) -> Approval:
    return Approval(
        id="apr_1",
        person_id=w.me.id,
        task_id=w.task,
        goal_id=None,
        step_seq=3,
        tool="send_email",
        args=dict(args),
        args_hash="h",
        reason="asks",
        scopes=("email.send",),
        status=ApprovalStatus.PENDING,
        created_at=w.clock.now(),
    )


def test_a_denial_or_a_once_approval_grants_nothing_and_an_unknown_scope_is_refused(
    w: World,
) -> None:
    asked = approval(w, to="ann@example.com")
    now = w.clock.now()
    for approve, scope in ((False, "always"), (True, "once"), (False, "hours")):
        given = approval_grant(
            asked, approve=approve, scope=scope, hours=None, issued_by="person", now=now
        )
        assert given is None
    for approve in (True, False):
        with pytest.raises(UsageError, match="unknown approval scope 'forever'"):
            approval_grant(
                asked, approve=approve, scope="forever", hours=None, issued_by="person", now=now
            )


def test_a_lasting_approval_grants_exactly_the_approved_action(w: World) -> None:
    asked = approval(w, to="Ann@Example.com", subject="hi")
    now = w.clock.now()
    for_task = approval_grant(
        asked, approve=True, scope="task", hours=None, issued_by="person", now=now
    )
    assert for_task is not None
    assert (for_task.lifetime, for_task.task_id, for_task.scopes) == (
        Lifetime.TASK,
        w.task,
        ("email.send",),
    )
    assert for_task.constraints == {"tool": "send_email", "recipients": ["ann@example.com"]}
    assert for_task.reason == "approved apr_1 (task)"
    for_hours = approval_grant(
        asked, approve=True, scope="hours", hours=2, issued_by="token:t", now=now
    )
    assert for_hours is not None
    assert (for_hours.lifetime, for_hours.task_id, for_hours.expires_at, for_hours.issued_by) == (
        Lifetime.UNTIL,
        None,
        now + timedelta(hours=2),
        "token:t",
    )
    with pytest.raises(UsageError, match="needs hours > 0"):
        approval_grant(asked, approve=True, scope="hours", hours=None, issued_by="p", now=now)
    with pytest.raises(UsageError, match="approve it once instead"):
        approval_grant(
            approval(w, subject="hi"),
            approve=True,
            scope="always",
            hours=None,
            issued_by="p",
            now=now,
        )


async def test_a_skill_applies_as_the_sentinel_decides_and_each_decision_is_audited(
    w: World,
) -> None:
    library = SkillLibrary(w.store, w.clock, sentinel=w.sentinel)

    async def rule(mode: RuleMode, priority: int) -> Rule:
        return await w.store.authority.add_rule(
            Rule(
                id=new_id("rul"),
                person_id=w.me.id,
                pattern=APPLY_ACTION,
                mode=mode,
                priority=priority,
                created_at=w.clock.now(),
            )
        )

    async def propose(name: str) -> tuple[Disposition, str]:
        proposed = await library.propose(
            person_id=w.me.id,
            name=name,
            content=SkillContent(description=f"do {name}", procedure="1. it"),
            actor="agent:t1",
        )
        return proposed.disposition, proposed.why

    # nothing can pre-approve it (no grant covers an action without scopes but by tool name)
    preapproved = await rule(RuleMode.DO_IF_PREAPPROVED, 0)
    assert await propose("first") == (
        Disposition.HELD,
        f"the person's rule for {APPLY_ACTION} is ask",
    )
    do = await rule(RuleMode.DO, 1)
    assert await propose("second") == (Disposition.CREATED, "")
    decisions = [
        (e.actor, e.data["tool"], e.data["verdict"], e.data["basis"])
        for e in await w.store.audit.list_audit(person_id=w.me.id)
        if e.kind == "decision"
    ]
    assert decisions == [
        ("agent:t1", APPLY_ACTION, "ask", f"rule:{preapproved.id}"),
        ("agent:t1", APPLY_ACTION, "allow", f"rule:{do.id}"),
    ]
