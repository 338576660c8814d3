"""A grant made from an approval ("approve → task / hours / always") is at most as wide as the
action approved (DESIGN invariant 11): read by the tool's own argument roles, bound to the exact
URL (origin, path, query) and every argument the tool did not declare harmless, and made in the
same transaction as the decision."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

import pytest

from steward.domain.actions import ActionRequest, EffectClass, Verdict
from steward.domain.authority import Connection, Grant, Lifetime
from steward.domain.clock import SimulatedClock
from steward.domain.roles import Role
from steward.harness.agent import AgentHarness
from steward.harness.tools import tool
from steward.harness.workspace import Workspace
from steward.models import ScriptedModel
from steward.models.scripted import call_tool
from steward.runtime.worker import Worker
from steward.sentinel.arguments import pinned_constraints
from steward.sentinel.grants import constraints_hold
from steward.sentinel.index import PolicySnapshot
from steward.sentinel.policy import PolicySentinel, evaluate
from steward.store import Store
from support.agents import person_with_api

NOW = datetime(2026, 1, 5, 8, 0, tzinfo=UTC)
ME = "per_me"
HTTP_ROLES = {"url": Role.HOST, "headers": Role.CONTENT, "body": Role.CONTENT}
"""``http_fetch``'s roles (steward.connectors.http): ``method`` declares none."""
BALANCE = "https://api.bank.example/balance"


# --- through the service and a running agent ------------------------------------------------


def rig(
    store: Store, clock: SimulatedClock, tmp_path: Path, calls: list[dict[str, Any]]
) -> tuple[Worker, list[dict[str, Any]]]:
    """An agent calling ``settle``, an MCP-like tool whose arguments are not named the
    conventional way but declare their roles."""
    sent: list[dict[str, Any]] = []

    @tool(effect=EffectClass.EXTERNAL, scopes=["api.call"])
    async def settle(
        to: Annotated[str, Role.RECIPIENT],
        total: Annotated[float, Role.AMOUNT],
        target: Annotated[str, Role.HOST],
    ) -> str:
        """Settle a bill."""
        sent.append({"to": to, "total": total, "target": target})
        return "ok"

    harness = AgentHarness(
        model=ScriptedModel([call_tool("settle", **args) for args in calls]),
        workspace=Workspace(tmp_path),
        tools=[settle],
        sentinel=PolicySentinel(store, clock),
    )
    return Worker(store, harness, clock, poll_seconds=None), sent


APPROVED = {"to": "bob@x.com", "total": 5, "target": "https://ok.example/a"}


async def test_a_grant_reads_the_approved_tools_roles(
    store: Store, clock: SimulatedClock, tmp_path: Path
) -> None:
    """Regression: the grant was built reading arguments by their conventional names (the
    approval kept no roles), so approving ``settle(to=bob, total=5, target=ok.example)``
    "always" gave ``{tool, recipients: [bob]}``, which then let the agent settle 499 to a
    private address."""
    wider = {"to": "bob@x.com", "total": 499, "target": "http://127.0.0.1:9/x"}
    worker, sent = rig(store, clock, tmp_path, [APPROVED, wider])
    svc, person = await person_with_api(store, clock)
    await svc.ask_agent(person_id=person, instructions="settle the bill")
    await worker.run_until_idle()
    [asked] = await svc.list_approvals(person_id=person)
    await svc.decide_approval(asked.id, approve=True, scope="always")
    await worker.run_until_idle()

    assert sent == [APPROVED]  # the wider settlement did not run...
    [pending] = await svc.list_approvals(person_id=person)
    assert pending.args == wider  # ...it waits for the person
    assert pending.roles == {"to": Role.RECIPIENT, "total": Role.AMOUNT, "target": Role.HOST}
    [made] = await svc.list_grants(person_id=person)
    assert made.constraints["max_amount"] == 5
    assert made.constraints["urls"] == ["https://ok.example:443/a"]


async def test_a_grant_is_never_left_behind_by_a_decision_that_failed(
    store: Store, clock: SimulatedClock, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Regression: the grant was recorded before the decision and revoked only when deciding
    failed with a StewardError; any other failure left a standing grant for an action that
    was never approved."""
    worker, _ = rig(store, clock, tmp_path, [APPROVED])
    svc, person = await person_with_api(store, clock)
    await svc.ask_agent(person_id=person, instructions="settle the bill")
    await worker.run_until_idle()
    [asked] = await svc.list_approvals(person_id=person)

    def broken(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("the database went away")

    monkeypatch.setattr("steward.store.inbox._wake_waiter", broken)
    with pytest.raises(RuntimeError):
        await svc.decide_approval(asked.id, approve=True, scope="always")
    assert await svc.list_grants(person_id=person) == []
    [still] = await svc.list_approvals(person_id=person)
    assert still.id == asked.id  # still pending: nothing was decided either


# --- what a grant admits -----------------------------------------------------------------------


def request(args: dict[str, Any], *, tainted: tuple[str, ...] = ()) -> ActionRequest:
    return ActionRequest(
        person_id=ME,
        task_id="tsk_1",
        goal_id=None,
        tool="http_fetch",
        args=args,
        effect=EffectClass.EXTERNAL,
        scopes=("api.call",),
        source="python",
        wake_reason="start",
        roles=HTTP_ROLES,
        untrusted_args={k: "the web page read" for k in tainted},
        tainted={k: str(args[k]) for k in tainted},
    )


def standing(constraints: dict[str, Any]) -> PolicySnapshot:
    made = Grant(
        id="grt_1",
        person_id=ME,
        scopes=("api.call",),
        lifetime=Lifetime.STANDING,
        constraints={"tool": "http_fetch", **constraints},
        issued_by="person",
        created_at=NOW,
    )
    api = Connection(
        id="con_1",
        person_id=ME,
        kind="http",
        name="api",
        scopes=("api.call",),
        hosts=(),
        created_at=NOW,
    )
    return PolicySnapshot(person_id=ME, taken_at=NOW, connections=(api,), grants=(made,), rules=())


def test_always_for_a_fetch_does_not_vouch_for_another_method_or_path_on_its_host() -> None:
    """Regression: a standing http_fetch grant pinned the host only, and provenance then
    vouched for an injected ``DELETE /accounts/13`` on it because a URL was compared by its
    host."""
    snap = standing(pinned_constraints({"url": BALANCE, "method": "GET"}, HTTP_ROLES))
    injected = request(
        {"url": "https://api.bank.example/accounts/13", "method": "DELETE"}, tainted=("url",)
    )
    decided = evaluate(injected, snap, now=NOW, session_id=None)
    assert decided.verdict is Verdict.ASK
    assert not decided.vouched
    # the approved request itself, from the same page, is still vouched for
    again = evaluate(
        request({"url": BALANCE, "method": "GET"}, tainted=("url",)), snap, now=NOW, session_id=None
    )
    assert (again.verdict, again.vouched) == (Verdict.ALLOW, True)


@pytest.mark.parametrize(
    "args",
    [
        {"url": BALANCE, "method": "DELETE"},  # another method (no role: pinned)
        {"url": BALANCE},  # the method left to its default is not the one approved either
        {"url": BALANCE + "/x", "method": "GET"},  # a sub-path
        {"url": BALANCE + "?to=mallory", "method": "GET"},  # another query
        {"url": "http://api.bank.example:6379/balance", "method": "GET"},  # another port
        {"url": "http://api.bank.example/balance", "method": "GET"},  # another scheme
        {"url": BALANCE, "method": "GET", "extra": "x"},  # an argument with no role
    ],
)
def test_always_for_a_fetch_covers_that_request_only(args: dict[str, Any]) -> None:
    pinned = pinned_constraints({"url": BALANCE, "method": "GET"}, HTTP_ROLES)
    constraints = {"tool": "http_fetch", **pinned}
    assert constraints_hold(
        constraints, "http_fetch", {"url": BALANCE, "method": "GET"}, HTTP_ROLES
    )
    # a body is content: it stays free
    assert constraints_hold(
        constraints, "http_fetch", {"url": BALANCE, "method": "GET", "body": "{}"}, HTTP_ROLES
    )
    assert not constraints_hold(constraints, "http_fetch", args, HTTP_ROLES)


def test_a_grant_for_the_sites_root_does_not_cover_another_port() -> None:
    pinned = pinned_constraints({"url": "https://h.example/"}, HTTP_ROLES)
    for other in ("http://h.example:6379/", "https://h.example:8443/"):
        assert not constraints_hold(pinned, "http_fetch", {"url": other}, HTTP_ROLES)
    assert constraints_hold(pinned, "http_fetch", {"url": "https://H.example:443/"}, HTTP_ROLES)


def test_identifiers_and_undeclared_arguments_are_pinned_content_stays_free() -> None:
    roles = {"to": Role.RECIPIENT, "booking": Role.IDENTIFIER, "note": Role.CONTENT}
    approved = {"to": "ada@x.io", "booking": "B-1", "mode": "cancel", "note": "thanks"}
    pinned = pinned_constraints(approved, roles)
    assert pinned["same"] == {"booking": "B-1", "mode": "cancel"}
    assert constraints_hold(pinned, "t", {**approved, "note": "other words"}, roles)
    for changed in ({"booking": "B-2"}, {"mode": "delete"}, {"mode": None}):
        assert not constraints_hold(pinned, "t", {**approved, **changed}, roles)
    # values compare as JSON: 1 is not true, and not "1"
    only_to = {"to": Role.RECIPIENT}
    numbered = pinned_constraints({"to": "ada@x.io", "n": 1}, only_to)
    assert constraints_hold(numbered, "t", {"to": "ada@x.io", "n": 1}, only_to)
    for other in (True, "1", 2):
        assert not constraints_hold(numbered, "t", {"to": "ada@x.io", "n": other}, only_to)


def test_a_tool_without_roles_is_still_read_by_names() -> None:
    pinned = pinned_constraints({"to": "Ada@X.io", "amount": "20"})
    assert pinned == {"recipients": ["ada@x.io"], "max_amount": 20.0}  # nothing by value
