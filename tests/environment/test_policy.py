"""How the sentinel decides the workspace tools, from their own declarations: no connection is
needed for the person's own workspace, they run without asking, a rule of the person's can make
every command ask, and a read-only task may read the workspace but not write it or run in it."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from steward.domain.actions import ActionRequest, Verdict
from steward.domain.agent_input import AgentTaskInput
from steward.domain.authority import Rule, RuleMode
from steward.environment.sandbox import Sandbox
from steward.environment.tools import workspace_tools
from steward.harness.tools import Tool
from steward.sentinel.index import PolicySnapshot
from steward.sentinel.policy import PolicyDecision, evaluate

NOW = datetime(2026, 12, 4, 9, 0, tzinfo=UTC)
ME = "per_me"
CALLS: dict[str, dict[str, Any]] = {
    "workspace_list": {"path": ""},
    "workspace_read": {"path": "notes.txt"},
    "workspace_write": {"path": "notes.txt", "content": "x"},
    "workspace_shell": {"command": "python3 sum.py"},
}


def declared() -> dict[str, Tool]:
    # the declarations do not depend on bubblewrap being here: the sandbox is only run later
    return {t.name: t for t in workspace_tools(Sandbox())}


def decide(name: str, *, rules: tuple[Rule, ...] = (), mode: str | None = None) -> PolicyDecision:
    found = declared()[name]
    request = ActionRequest(
        person_id=ME,
        task_id="tsk_1",
        goal_id=None,
        tool=name,
        args=CALLS[name],
        effect=found.effect,
        scopes=found.scopes,
        source=found.source,
        wake_reason="start",
        task_input=AgentTaskInput.from_json({"mode": mode} if mode else {}),
        roles=dict(found.roles or {}),
    )
    snapshot = PolicySnapshot(person_id=ME, taken_at=NOW, connections=(), grants=(), rules=rules)
    return evaluate(request, snapshot, now=NOW, session_id=None)


def test_the_workspace_needs_no_connection_and_no_approval() -> None:
    for name in CALLS:
        decided = decide(name)
        assert (decided.verdict, decided.basis) == (Verdict.ALLOW, "default:local"), name


def test_a_rule_can_make_every_command_ask() -> None:
    ask = Rule(id="rul_1", person_id=ME, pattern="workspace.run", mode=RuleMode.ASK, created_at=NOW)
    assert decide("workspace_shell", rules=(ask,)).verdict is Verdict.ASK
    assert decide("workspace_write", rules=(ask,)).verdict is Verdict.ALLOW


def test_research_reads_the_workspace_and_changes_nothing() -> None:
    assert decide("workspace_read", mode="research").verdict is Verdict.ALLOW
    assert decide("workspace_list", mode="research").verdict is Verdict.ALLOW
    for name in ("workspace_write", "workspace_shell"):
        decided = decide(name, mode="research")
        assert (decided.verdict, decided.basis) == (Verdict.DENY, "mode:research"), name


def test_other_scopes_still_need_their_connection() -> None:
    """The exemption is the workspace's alone: a scope merely starting with the word is not."""
    found = declared()["workspace_shell"]
    request = ActionRequest(
        person_id=ME,
        task_id="tsk_1",
        goal_id=None,
        tool="lookalike",
        args={},
        effect=found.effect,
        scopes=("workspaces.admin",),
        source="python",
        wake_reason="start",
    )
    snapshot = PolicySnapshot(person_id=ME, taken_at=NOW, connections=(), grants=(), rules=())
    decided = evaluate(request, snapshot, now=NOW, session_id=None)
    assert (decided.verdict, decided.basis) == (Verdict.DENY, "connection")
