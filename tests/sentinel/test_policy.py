"""The pure policy evaluation: precedence, hard limits, read-only research, connection bounds,
rule tie-breaks and grant constraints, decided on hand-built snapshots."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from steward.domain.actions import ActionRequest, EffectClass, Verdict
from steward.domain.agent_input import AgentTaskInput
from steward.domain.authority import Connection, Grant, Lifetime, Rule, RuleMode
from steward.sentinel.arguments import number
from steward.sentinel.index import PolicySnapshot
from steward.sentinel.policy import (
    HARD_PAYMENT_CEILING,
    PolicyDecision,
    evaluate,
    session_of,
)

NOW = datetime(2026, 1, 5, 8, 0, tzinfo=UTC)
ME = "per_me"
TASK = "tsk_1"

ALL_SCOPES = (
    "email.read",
    "email.send",
    "http.get",
    "http.post",
    "payment.send",
    "account.password",
    "calendar.write",
    "browser.drive",
)


def request(
    tool: str = "send_email",
    *,
    effect: EffectClass = EffectClass.EXTERNAL,
    scopes: tuple[str, ...] = ("email.send",),
    args: dict[str, Any] | None = None,
    task_input: dict[str, Any] | None = None,
    task_id: str = TASK,
    person_id: str = ME,
) -> ActionRequest:
    return ActionRequest(
        person_id=person_id,
        task_id=task_id,
        goal_id=None,
        tool=tool,
        args={"to": "ann@example.com"} if args is None else args,
        effect=effect,
        scopes=scopes,
        source="python",
        wake_reason="start",
        task_input=AgentTaskInput.from_json(task_input or {}),
    )


def connection(*scopes: str, active: bool = True) -> Connection:
    return Connection(
        id=f"con_{len(scopes)}",
        person_id=ME,
        kind="test",
        name="test",
        scopes=scopes or ALL_SCOPES,
        active=active,
        created_at=NOW,
    )


def grant(
    *scopes: str,
    lifetime: Lifetime = Lifetime.STANDING,
    gid: str = "grt_1",
    **fields: Any,
) -> Grant:
    return Grant(
        id=gid,
        person_id=ME,
        scopes=scopes,
        lifetime=lifetime,
        issued_by="person",
        created_at=NOW,
        **fields,
    )


def rule(pattern: str, mode: RuleMode, priority: int = 0, rid: str = "rul_1") -> Rule:
    return Rule(id=rid, person_id=ME, pattern=pattern, mode=mode, priority=priority, created_at=NOW)


def snap(
    *,
    connections: tuple[Connection, ...] | None = None,
    grants: tuple[Grant, ...] = (),
    rules: tuple[Rule, ...] = (),
) -> PolicySnapshot:
    return PolicySnapshot(
        person_id=ME,
        taken_at=NOW,
        connections=(connection(),) if connections is None else connections,
        grants=grants,
        rules=rules,
    )


def decide(
    req: ActionRequest, snapshot: PolicySnapshot, *, session_id: str | None = None
) -> PolicyDecision:
    return evaluate(req, snapshot, now=NOW, session_id=session_id)


# --- precedence -----------------------------------------------------------------------------

STANDING_SEND = grant("email.send")
DO_ALL = rule("*", RuleMode.DO, priority=100)

PRECEDENCE = [
    # (case, request, snapshot, verdict, basis)
    (
        "hard limit beats a do rule and a standing grant",
        request("change_password", scopes=("account.password",), args={}),
        snap(grants=(grant("account.password"),), rules=(DO_ALL,)),
        Verdict.HANDOFF,
        "hard-limit:account.password",
    ),
    (
        "hard limit by tool name for a tool without scopes",
        request("mcp__bank__reset_2FA", scopes=(), args={}, effect=EffectClass.UNKNOWN),
        snap(rules=(DO_ALL,)),
        Verdict.HANDOFF,
        "hard-limit:account.2fa",
    ),
    (
        "hard limit beats research mode",
        request("delete_account", scopes=("account.delete",), task_input={"mode": "research"}),
        snap(),
        Verdict.HANDOFF,
        "hard-limit:account.delete",
    ),
    (
        "research mode beats a grant and a do rule",
        request(task_input={"mode": "research"}),
        snap(grants=(STANDING_SEND,), rules=(DO_ALL,)),
        Verdict.DENY,
        "mode:research",
    ),
    (
        "research mode refuses a read-classified tool that needs a send scope",
        request("peek", effect=EffectClass.READ, task_input={"mode": "research"}),
        snap(),
        Verdict.DENY,
        "mode:research",
    ),
    (
        "research mode refuses a browser",
        request(
            "browse",
            effect=EffectClass.READ,
            scopes=("browser.drive",),
            task_input={"mode": "research"},
        ),
        snap(),
        Verdict.DENY,
        "mode:research",
    ),
    (
        "research mode reads",
        request(
            "read_email",
            effect=EffectClass.READ,
            scopes=("email.read",),
            task_input={"mode": "research"},
        ),
        snap(),
        Verdict.ALLOW,
        "default:local",
    ),
    (
        "research mode writes private notes",
        request("note", effect=EffectClass.LOCAL, scopes=(), task_input={"mode": "research"}),
        snap(),
        Verdict.ALLOW,
        "default:local",
    ),
    (
        "reading is not sending: a grant cannot pass the connection bound",
        request(),
        snap(connections=(connection("email.read"),), grants=(STANDING_SEND,), rules=(DO_ALL,)),
        Verdict.DENY,
        "connection",
    ),
    (
        "an inactive connection offers nothing",
        request("read_email", effect=EffectClass.READ, scopes=("email.read",)),
        snap(connections=(connection("email.read", active=False),)),
        Verdict.DENY,
        "connection",
    ),
    (
        "a deny rule beats a standing grant",
        request(),
        snap(grants=(STANDING_SEND,), rules=(rule("email.*", RuleMode.DENY),)),
        Verdict.DENY,
        "rule:rul_1",
    ),
    (
        "an ask rule on a read tool",
        request("read_email", effect=EffectClass.READ, scopes=("email.read",)),
        snap(rules=(rule("read_*", RuleMode.ASK),)),
        Verdict.ASK,
        "rule:rul_1",
    ),
    (
        "a handoff rule",
        request(),
        snap(rules=(rule("send_email", RuleMode.HANDOFF),)),
        Verdict.HANDOFF,
        "rule:rul_1",
    ),
    (
        "a do rule allows an external tool without a grant",
        request(),
        snap(rules=(rule("email.send", RuleMode.DO),)),
        Verdict.ALLOW,
        "rule:rul_1",
    ),
    (
        "do-if-preapproved with a grant",
        request(),
        snap(grants=(STANDING_SEND,), rules=(rule("email.send", RuleMode.DO_IF_PREAPPROVED),)),
        Verdict.ALLOW,
        "grant:grt_1",
    ),
    (
        "do-if-preapproved without a grant asks",
        request(),
        snap(rules=(rule("email.send", RuleMode.DO_IF_PREAPPROVED),)),
        Verdict.ASK,
        "rule:rul_1",
    ),
    (
        "a rule matches whole names only",
        request(),
        snap(rules=(rule("email", RuleMode.DENY), rule("send", RuleMode.DENY, rid="rul_2"))),
        Verdict.ASK,
        "default:external-asks",
    ),
    (
        "default: a read tool runs",
        request("read_email", effect=EffectClass.READ, scopes=("email.read",)),
        snap(),
        Verdict.ALLOW,
        "default:local",
    ),
    (
        "default: an external tool with a grant runs",
        request(),
        snap(grants=(STANDING_SEND,)),
        Verdict.ALLOW,
        "grant:grt_1",
    ),
    (
        "default: an external tool without a grant asks",
        request(),
        snap(),
        Verdict.ASK,
        "default:external-asks",
    ),
    (
        "default: an unknown tool without scopes asks",
        request("mystery", effect=EffectClass.UNKNOWN, scopes=(), args={}),
        snap(grants=(STANDING_SEND,)),
        Verdict.ASK,
        "default:external-asks",
    ),
    (
        "a tool without scopes is covered only by a grant pinned to it",
        request("mystery", effect=EffectClass.UNKNOWN, scopes=(), args={}),
        snap(grants=(grant(constraints={"tool": "mystery"}),)),
        Verdict.ALLOW,
        "grant:grt_1",
    ),
]


@pytest.mark.parametrize(
    ("req", "snapshot", "verdict", "basis"),
    [case[1:] for case in PRECEDENCE],
    ids=[case[0] for case in PRECEDENCE],
)
def test_precedence(
    req: ActionRequest, snapshot: PolicySnapshot, verdict: Verdict, basis: str
) -> None:
    decided = decide(req, snapshot)
    assert (decided.verdict, decided.basis) == (verdict, basis), decided.reason
    assert decided.decision().rule == basis


@pytest.mark.parametrize(
    "tool",
    ["change_password", "rotate_totp_seed", "mcp__acme__close_account", "share_credential"],
)
def test_hard_limits_cannot_be_lifted(tool: str) -> None:
    """Neither a top-priority do rule naming the tool nor a standing grant pinned to it helps."""
    req = request(tool, scopes=(), args={}, effect=EffectClass.EXTERNAL)
    snapshot = snap(
        grants=(grant(constraints={"tool": tool}),),
        rules=(rule(tool, RuleMode.DO, priority=10**6), DO_ALL),
    )
    decided = decide(req, snapshot)
    assert decided.verdict is Verdict.HANDOFF
    assert decided.basis.startswith("hard-limit:")
    assert (decided.grant_id, decided.spend) == (None, None)


@pytest.mark.parametrize(
    ("amount", "verdict"),
    [
        (HARD_PAYMENT_CEILING, Verdict.ALLOW),
        (HARD_PAYMENT_CEILING + 0.01, Verdict.HANDOFF),
        ("10000", Verdict.HANDOFF),
        ("12", Verdict.ALLOW),
        ("lots", Verdict.HANDOFF),
        (float("nan"), Verdict.HANDOFF),
        (float("inf"), Verdict.HANDOFF),
        (True, Verdict.HANDOFF),
        ([1], Verdict.HANDOFF),
    ],
)
def test_payment_ceiling_is_a_hard_limit(amount: Any, verdict: Verdict) -> None:
    req = request("pay", scopes=("payment.send",), args={"amount": amount, "payee": "shop"})
    snapshot = snap(grants=(grant("payment.send"),), rules=(DO_ALL,))
    decided = decide(req, snapshot)
    assert decided.verdict is verdict
    if verdict is Verdict.HANDOFF:
        assert decided.basis == "hard-limit:payment-ceiling"


def test_payment_ceiling_is_configurable() -> None:
    req = request("pay", scopes=("payment.send",), args={"amount": 50})
    snapshot = snap(rules=(DO_ALL,))
    assert evaluate(req, snapshot, now=NOW, session_id=None).verdict is Verdict.ALLOW
    lowered = evaluate(req, snapshot, now=NOW, session_id=None, payment_ceiling=20)
    assert lowered.verdict is Verdict.HANDOFF


def test_a_snapshot_of_someone_else_decides_nothing() -> None:
    req = request("read_email", effect=EffectClass.READ, scopes=("email.read",))
    assert decide(req, replace(snap(), person_id="per_other")).verdict is Verdict.DENY


def test_another_persons_grants_and_rules_are_ignored() -> None:
    theirs = replace(STANDING_SEND, person_id="per_other")
    their_rule = replace(rule("*", RuleMode.DO), person_id="per_other")
    decided = decide(request(), snap(grants=(theirs,), rules=(their_rule,)))
    assert decided.verdict is Verdict.ASK


# --- rules ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("rules", "winner", "verdict"),
    [
        # higher priority wins even when laxer
        (
            (rule("email.*", RuleMode.DENY, 1, "rul_a"), rule("send_*", RuleMode.DO, 2, "rul_b")),
            "rul_b",
            Verdict.ALLOW,
        ),
        # equal priority: the stricter mode wins, whatever the order
        (
            (rule("send_*", RuleMode.DO, 5, "rul_a"), rule("email.*", RuleMode.ASK, 5, "rul_b")),
            "rul_b",
            Verdict.ASK,
        ),
        (
            (
                rule("email.send", RuleMode.HANDOFF, 0, "rul_a"),
                rule("*", RuleMode.DENY, 0, "rul_b"),
                rule("send_email", RuleMode.ASK, 0, "rul_c"),
            ),
            "rul_b",
            Verdict.DENY,
        ),
        (
            (
                rule("send_email", RuleMode.DO, 0, "rul_a"),
                rule("email.send", RuleMode.DO_IF_PREAPPROVED, 0, "rul_b"),
            ),
            "rul_b",
            Verdict.ASK,
        ),
        # same priority and mode: the smaller id, so the audit log names one rule stably
        (
            (rule("*", RuleMode.ASK, 0, "rul_z"), rule("email.*", RuleMode.ASK, 0, "rul_c")),
            "rul_c",
            Verdict.ASK,
        ),
    ],
)
def test_rule_tie_break(rules: tuple[Rule, ...], winner: str, verdict: Verdict) -> None:
    for ordering in (rules, tuple(reversed(rules))):
        decided = decide(request(), snap(rules=ordering))
        assert (decided.rule_id, decided.verdict) == (winner, verdict)


# --- grant lifetimes and constraints --------------------------------------------------------


@pytest.mark.parametrize(
    ("the_grant", "session_id", "covered"),
    [
        (grant("email.send", lifetime=Lifetime.ONCE), None, True),
        (grant("email.send", lifetime=Lifetime.ONCE, task_id=TASK), None, True),
        (grant("email.send", lifetime=Lifetime.ONCE, task_id="tsk_other"), None, False),
        (grant("email.send", lifetime=Lifetime.ONCE, used_at=NOW), None, False),
        (grant("email.send", lifetime=Lifetime.TASK, task_id=TASK), None, True),
        (grant("email.send", lifetime=Lifetime.TASK, task_id="tsk_other"), None, False),
        (grant("email.send", lifetime=Lifetime.SESSION, session_id="ses_1"), "ses_1", True),
        (grant("email.send", lifetime=Lifetime.SESSION, session_id="ses_1"), "ses_2", False),
        (grant("email.send", lifetime=Lifetime.SESSION, session_id="ses_1"), None, False),
        (
            grant("email.send", lifetime=Lifetime.UNTIL, expires_at=NOW + timedelta(seconds=1)),
            None,
            True,
        ),
        (grant("email.send", lifetime=Lifetime.UNTIL, expires_at=NOW), None, False),
        (grant("email.send", revoked_at=NOW), None, False),
        (grant("email.read"), None, False),
        (grant("email.send", "email.read"), None, True),
    ],
)
def test_grant_liveness(the_grant: Grant, session_id: str | None, covered: bool) -> None:
    decided = decide(request(), snap(grants=(the_grant,)), session_id=session_id)
    assert (decided.verdict is Verdict.ALLOW) is covered


def test_a_tool_needs_every_scope_from_one_grant() -> None:
    req = request("forward", scopes=("email.read", "email.send"))
    split = (grant("email.read", gid="grt_a"), grant("email.send", gid="grt_b"))
    assert decide(req, snap(grants=split)).verdict is Verdict.ASK
    assert decide(req, snap(grants=(grant("email.read", "email.send"),))).verdict is Verdict.ALLOW


def test_a_standing_grant_is_preferred_to_spending_a_once_grant() -> None:
    once = grant("email.send", lifetime=Lifetime.ONCE, gid="grt_a")
    standing = grant("email.send", gid="grt_b")
    decided = decide(request(), snap(grants=(once, standing)))
    assert (decided.grant_id, decided.spend) == ("grt_b", None)
    decided = decide(request(), snap(grants=(once,)))
    assert (decided.grant_id, decided.spend) == ("grt_a", "grt_a")


RECIPIENTS = {"recipients": ["ann@example.com", "bob@example.com"]}
URL_HOSTS = {"hosts": ["api.example.com"]}


@pytest.mark.parametrize(
    ("constraints", "tool", "scopes", "args", "covered"),
    [
        ({"tool": "send_email"}, "send_email", ("email.send",), {"to": "a@b.io"}, True),
        ({"tool": "send_email"}, "send_fax", ("email.send",), {"to": "a@b.io"}, False),
        (RECIPIENTS, "send_email", ("email.send",), {"to": "ANN@example.com "}, True),
        (
            RECIPIENTS,
            "send_email",
            ("email.send",),
            {"to": ["ann@example.com"], "cc": "bob@example.com"},
            True,
        ),
        (
            RECIPIENTS,
            "send_email",
            ("email.send",),
            {"to": "ann@example.com", "bcc": "eve@evil.io"},
            False,
        ),
        (RECIPIENTS, "send_email", ("email.send",), {"to": "ann@example.com, eve@x.io"}, False),
        (RECIPIENTS, "send_email", ("email.send",), {"subject": "no recipient"}, False),
        (RECIPIENTS, "send_email", ("email.send",), {"to": {"a": "ann@example.com"}}, False),
        (
            {"domains": ["example.com"]},
            "send_email",
            ("email.send",),
            {"to": "x@example.com"},
            True,
        ),
        (
            {"domains": ["example.com"]},
            "send_email",
            ("email.send",),
            {"to": "x@mail.example.com"},
            True,
        ),
        (
            {"domains": ["example.com"]},
            "send_email",
            ("email.send",),
            {"to": "x@badexample.com"},
            False,
        ),
        ({"domains": ["example.com"]}, "send_email", ("email.send",), {"to": "example.com"}, False),
        (
            {"domains": ["example.com"]},
            "post",
            ("http.post",),
            {"url": "https://www.example.com/x"},
            True,
        ),
        (URL_HOSTS, "post", ("http.post",), {"url": "https://api.example.com/v1"}, True),
        (URL_HOSTS, "post", ("http.post",), {"endpoint": "https://API.example.com:8443/"}, True),
        (URL_HOSTS, "post", ("http.post",), {"url": "https://api.example.com@evil.io/"}, False),
        (URL_HOSTS, "post", ("http.post",), {"url": "https://evil.io/api.example.com"}, False),
        (URL_HOSTS, "post", ("http.post",), {"url": "api.example.com/v1"}, False),
        (URL_HOSTS, "post", ("http.post",), {"body": "no url"}, False),
        ({"path_prefix": "/v1/"}, "post", ("http.post",), {"url": "https://h.io/v1/x"}, True),
        ({"path_prefix": "/v1"}, "post", ("http.post",), {"url": "https://h.io/v1"}, True),
        ({"path_prefix": "/v1"}, "post", ("http.post",), {"url": "https://h.io/v10"}, False),
        ({"path_prefix": "/v1"}, "post", ("http.post",), {"url": "https://h.io/v1/../a"}, False),
        (
            {"path_prefix": "/v1"},
            "post",
            ("http.post",),
            {"url": "https://h.io/v1/%2e%2e/a"},
            False,
        ),
        ({"max_amount": 20}, "pay", ("payment.send",), {"amount": 20}, True),
        ({"max_amount": 20}, "pay", ("payment.send",), {"amount": "20.5"}, False),
        ({"max_amount": 20}, "pay", ("payment.send",), {}, False),
        ({"period_amount": 20}, "pay", ("payment.send",), {"amount": 1}, False),
        ({"period_seconds": 60}, "pay", ("payment.send",), {"amount": 1}, False),
        (
            {"period_amount": 20, "period_seconds": 60},
            "pay",
            ("payment.send",),
            {"amount": 1},
            True,
        ),
        (
            {"period_amount": 20, "period_seconds": 60},
            "pay",
            ("payment.send",),
            {"amount": 21},
            False,
        ),
    ],
)
def test_constraints(
    constraints: dict[str, Any],
    tool: str,
    scopes: tuple[str, ...],
    args: dict[str, Any],
    covered: bool,
) -> None:
    req = request(tool, scopes=scopes, args=args)
    decided = decide(req, snap(grants=(grant(*scopes, constraints=constraints),)))
    assert (decided.verdict is Verdict.ALLOW) is covered, decided.reason


def test_reading_numbers_and_sessions() -> None:
    assert [number(v) for v in (3, " 2.5 ", None, False, "1e999")] == [3.0, 2.5, None, None, None]
    assert session_of(request(task_input={"session_id": "ses_9"})) == "ses_9"
    assert session_of(request(task_input={"mode": "chat"})) == TASK
    assert session_of(request()) is None


def test_the_trigger_that_woke_a_task_adds_nothing() -> None:
    """The same request from a timer-started activation is decided exactly the same way."""
    snapshot = snap(grants=(grant("email.send", lifetime=Lifetime.TASK, task_id="tsk_x"),))
    for reason in ("start", "timer", "event", "trigger:daily"):
        decided = decide(replace(request(), wake_reason=reason), snapshot)
        assert decided.verdict is Verdict.ASK
