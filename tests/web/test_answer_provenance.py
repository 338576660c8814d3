"""An answer written after reading others' text says so where the person reads it: in the
dashboard's step list and in the CLI's final line."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from steward.cli.agent import _final
from steward.domain import Step, Task, TaskStatus
from steward.web.steps import shown

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def step(output: object, kind: str = "finish") -> Step:
    return Step(task_id="t1", seq=5, activation_id="a1", kind=kind, output=output, created_at=NOW)


def test_the_dashboard_shows_where_an_answer_came_from() -> None:
    read = ["read_inbox (step 2)", "http_fetch (step 4)"]
    answer = shown(step({"result": {"text": "Book the Riverside"}, "untrusted_sources": read}))
    assert answer.text == (
        "Book the Riverside [after reading others' text: read_inbox (step 2), http_fetch (step 4)]"
    )
    reply = {"response": {"content": "Sure.", "tool_calls": []}, "untrusted_sources": read[:1]}
    assert (
        shown(step(reply, "model")).text
        == "Sure. [after reading others' text: read_inbox (step 2)]"
    )
    assert shown(step({"result": {"text": "42"}})).text == "42"


def test_the_cli_says_an_answer_came_after_others_text(capsys: pytest.CaptureFixture[str]) -> None:
    task = Task(
        id="t1",
        person_id="p1",
        goal_id=None,
        parent_id=None,
        kind="agent",
        title="t",
        input={},
        status=TaskStatus.SUCCEEDED,
        priority=0,
        attempts=1,
        max_attempts=3,
        run_at=NOW,
        wait=None,
        state={},
        step_seq=5,
        epoch=1,
        lease_owner=None,
        lease_expires_at=None,
        result={"text": "Booked.", "untrusted_sources": ["read_page (step 2)"]},
        error=None,
        trigger_id=None,
        created_at=NOW,
        updated_at=NOW,
        finished_at=NOW,
    )
    _final(task)
    out = capsys.readouterr().out
    assert "done: Booked." in out
    assert "written after reading others' text: read_page (step 2)" in out
