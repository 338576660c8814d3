"""Properties of :func:`steward.sentinel.policy.evaluate` over generated rules, grants and
actions: a hard limit dominates any rule or grant; adding a grant never takes an allow away; a
tainted controlling argument (a value only others' text supplied) is never allowed without a
grant naming that exact value, nor the person's sensitive data without a grant naming its kind.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

from hypothesis import given, settings
from hypothesis import strategies as st

from steward.domain.actions import ActionRequest, EffectClass, Verdict
from steward.domain.authority import Connection, Grant, Lifetime, Rule, RuleMode
from steward.domain.roles import DataClass, Role
from steward.sentinel.grants import covers
from steward.sentinel.index import PolicySnapshot
from steward.sentinel.policy import evaluate

PERSON = "p1"
TASK = "t1"
NOW = datetime(2026, 1, 1, tzinfo=UTC)
SCOPES = ("email.send", "payment.send", "account.password", "files.delete")
RECIPIENTS = ("ann@corp.example", "bob@corp.example", "mallory@evil.example")
ROLES = {"to": Role.RECIPIENT, "amount": Role.AMOUNT, "body": Role.CONTENT}

action_scopes = st.sampled_from(
    [("email.send",), ("payment.send",), ("email.send", "payment.send"), ("account.password",)]
)
grant_scopes = st.sampled_from(
    [("email.send", "payment.send"), ("email.send",), ("payment.send",), SCOPES]
)
recipients = st.sampled_from(RECIPIENTS)
kinds = st.one_of(
    st.just(()), st.lists(st.sampled_from(list(DataClass)), max_size=2, unique=True).map(tuple)
)


@st.composite
def constraints(draw: st.DrawFn) -> dict[str, object]:
    out: dict[str, object] = {}
    sometimes = st.integers(0, 2).map(lambda n: n == 0)
    if draw(sometimes):
        out["recipients"] = sorted(draw(st.sets(recipients, min_size=1)))
    if draw(sometimes):
        out["max_amount"] = draw(st.sampled_from([10.0, 100.0, 1000.0]))
    if draw(st.booleans()):
        out["data"] = sorted(str(k) for k in draw(st.sets(st.sampled_from(list(DataClass)))))
    return out


@st.composite
def grants(draw: st.DrawFn) -> Grant:
    lifetime = draw(st.sampled_from([Lifetime.STANDING, Lifetime.TASK, Lifetime.ONCE]))
    return Grant(
        id=f"g{draw(st.integers(0, 10**6))}",
        person_id=PERSON,
        scopes=draw(grant_scopes),
        lifetime=lifetime,
        constraints=draw(constraints()),
        task_id=TASK if lifetime is not Lifetime.STANDING else None,
        issued_by="person",
        created_at=NOW,
    )


@st.composite
def rules(draw: st.DrawFn) -> Rule:
    return Rule(
        id=f"r{draw(st.integers(0, 10**6))}",
        person_id=PERSON,
        pattern=draw(st.sampled_from(["*", "send_email", "pay", *SCOPES])),
        mode=draw(st.sampled_from([RuleMode.DO, RuleMode.DO_IF_PREAPPROVED, *RuleMode])),
        priority=draw(st.integers(-5, 1000)),
        created_at=NOW,
    )


@st.composite
def requests(draw: st.DrawFn) -> ActionRequest:
    to = draw(recipients)
    tainted = draw(st.booleans())
    return ActionRequest(
        person_id=PERSON,
        task_id=TASK,
        goal_id=None,
        tool=draw(st.sampled_from(["send_email", "pay"])),
        args={"to": to, "amount": draw(st.sampled_from([1, 50, 400, 5000])), "body": "hi"},
        effect=draw(st.sampled_from([EffectClass.EXTERNAL, EffectClass.UNKNOWN])),
        scopes=draw(action_scopes),
        source="python",
        wake_reason="start",
        roles=ROLES,
        untrusted_args={"to": f"{to!r} only in untrusted content"} if tainted else {},
        tainted={"to": to} if tainted else {},
        data_classes=draw(kinds),
    )


def snapshot(grants_: list[Grant], rules_: list[Rule]) -> PolicySnapshot:
    connection = Connection(
        id="c1", person_id=PERSON, kind="k", name="k", scopes=SCOPES, created_at=NOW
    )
    return PolicySnapshot(
        person_id=PERSON,
        taken_at=NOW,
        connections=(connection,),
        grants=tuple(grants_),
        rules=tuple(rules_),
    )


def decide(request: ActionRequest, grants_: list[Grant], rules_: list[Rule]) -> Verdict:
    return evaluate(request, snapshot(grants_, rules_), now=NOW, session_id=None).verdict


many_grants = st.lists(grants(), min_size=1, max_size=4, unique_by=lambda g: g.id)
many_rules = st.lists(rules(), max_size=2, unique_by=lambda r: r.id)


@settings(max_examples=300, deadline=None)
@given(requests(), many_grants, many_rules)
def test_a_hard_limit_dominates_any_rule_or_grant(
    request: ActionRequest, grants_: list[Grant], rules_: list[Rule]
) -> None:
    limited = "account.password" in request.scopes or (
        "payment.send" in request.scopes and request.args["amount"] > 500
    )
    if limited:
        assert decide(request, grants_, rules_) is Verdict.HANDOFF


@settings(max_examples=300, deadline=None)
@given(requests(), many_grants, many_rules, grants())
def test_adding_a_grant_never_takes_an_allow_away(
    request: ActionRequest, grants_: list[Grant], rules_: list[Rule], extra: Grant
) -> None:
    before = decide(request, grants_, rules_)
    after = decide(
        request, [*grants_, extra] if extra.id not in {g.id for g in grants_} else grants_, rules_
    )
    if before is Verdict.ALLOW:
        assert after is Verdict.ALLOW
    assert not (before is not Verdict.DENY and after is Verdict.DENY)


@settings(max_examples=500, deadline=None)
@given(requests(), many_grants, many_rules)
def test_tainted_values_and_sensitive_data_need_a_grant_naming_them(
    request: ActionRequest, grants_: list[Grant], rules_: list[Rule]
) -> None:
    if decide(request, grants_, rules_) is not Verdict.ALLOW:
        return
    covering = [g for g in grants_ if covers(g, request, now=NOW, session_id=None)]
    for value in request.tainted.values():
        assert any(value in g.constraints.get("recipients", ()) for g in covering)
    for kind in request.data_classes:
        assert any(str(kind) in g.constraints.get("data", ()) for g in covering)


def test_the_payment_ceiling_and_allowances_read_the_amount_role() -> None:
    """A tool whose amount argument is not called ``amount`` is still held to the ceiling and
    to a grant's ``max_amount``."""
    pay = ActionRequest(
        person_id=PERSON,
        task_id=TASK,
        goal_id=None,
        tool="transfer",
        args={"total": "5000", "amount": 1},
        effect=EffectClass.EXTERNAL,
        scopes=("payment.send",),
        source="python",
        wake_reason="start",
        roles={"total": Role.AMOUNT},
    )
    assert decide(pay, [], []) is Verdict.HANDOFF
    small = replace(pay, args={"total": 40, "amount": 1})
    capped = Grant(
        id="g1",
        person_id=PERSON,
        scopes=("payment.send",),
        lifetime=Lifetime.STANDING,
        constraints={"max_amount": 10.0},
        issued_by="person",
        created_at=NOW,
    )
    assert decide(small, [capped], []) is Verdict.ASK  # 40 is over the grant's 10
    assert decide(replace(small, args={"total": 9}), [capped], []) is Verdict.ALLOW
