"""Tasks a script creates in one go (``steward task create --from-file``), as they arrive: a
JSON array or JSON lines, each object the flags of ``steward task create``."""

from __future__ import annotations

from typing import Any

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field

from steward.domain import TaskSpec
from steward.domain.task import TaskRequest
from steward.service.json_items import checked, json_values


class TaskItemIn(BaseModel):
    """One task to create, as JSON."""

    model_config = ConfigDict(extra="forbid")

    kind: str = Field(min_length=1, max_length=100)
    input: dict[str, Any] = Field(default_factory=dict)
    goal: str | None = Field(None, min_length=1, max_length=100, description="A goal's id.")
    title: str = Field("", max_length=200)
    priority: int = 0
    max_attempts: int = Field(5, ge=1, le=100)
    run_at: AwareDatetime | None = None

    def request(self) -> TaskRequest:
        spec = TaskSpec(
            kind=self.kind,
            input=self.input,
            priority=self.priority,
            max_attempts=self.max_attempts,
            title=self.title,
        )
        return TaskRequest(spec=spec, goal_id=self.goal, run_at=self.run_at)


SAID = {"kind": "a task needs a kind (noop, note, wait_event, http_post, agent…)"}
"""The words for these fields when missing or empty."""


def parse_task_items(text: str) -> list[TaskRequest]:
    """Every task of ``text``; :class:`~steward.errors.UsageError` naming the first bad one
    (``line <n>`` or ``item <n>``) and why."""
    return [
        checked(where, value, TaskItemIn, what="a task", said=SAID).request()
        for where, value in json_values(text)
    ]
