"""Tasks: units of execution, their explicit status machine and their wait conditions."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Literal

from steward.errors import InvalidTransition


class TaskStatus(StrEnum):
    PENDING = "pending"
    RUNNING = "running"
    WAITING = "waiting"
    PAUSED = "paused"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"
    DEAD_LETTERED = "dead_lettered"

    @property
    def terminal(self) -> bool:
        return self in TERMINAL_TASK_STATUSES


TERMINAL_TASK_STATUSES = frozenset(
    {TaskStatus.SUCCEEDED, TaskStatus.FAILED, TaskStatus.CANCELLED, TaskStatus.DEAD_LETTERED}
)

S = TaskStatus
TASK_TRANSITIONS: dict[TaskStatus, frozenset[TaskStatus]] = {
    # claim, pause before start, cancel before start
    S.PENDING: frozenset({S.RUNNING, S.PAUSED, S.CANCELLED}),
    # finish, fail, wait, retry/requeue, pause or cancel at a step boundary, give up
    S.RUNNING: frozenset(
        {S.SUCCEEDED, S.FAILED, S.WAITING, S.PENDING, S.PAUSED, S.CANCELLED, S.DEAD_LETTERED}
    ),
    # woken by its condition (or its timeout), paused or cancelled while asleep
    S.WAITING: frozenset({S.PENDING, S.PAUSED, S.CANCELLED}),
    # resumed (back to sleep if it was waiting) or cancelled
    S.PAUSED: frozenset({S.PENDING, S.WAITING, S.CANCELLED}),
}
del S


def can_transition(current: TaskStatus, new: TaskStatus) -> bool:
    return new in TASK_TRANSITIONS.get(current, frozenset())


def check_task_transition(current: TaskStatus, new: TaskStatus) -> None:
    """Raise :class:`InvalidTransition` unless ``current → new`` is allowed."""
    if not can_transition(current, new):
        raise InvalidTransition(f"task cannot go from {current} to {new}")


MATCH_OPERATORS = frozenset({"contains", "in", "endswith"})
"""What a filter field may test besides equality: ``{"contains": "invoice"}`` (text, case-
insensitive), ``{"in": ["a@x", "b@x"]}`` (one of), ``{"endswith": "@example.com"}`` (text,
case-insensitive)."""


def payload_matches(match: Mapping[str, Any], payload: Mapping[str, Any]) -> bool:
    """Whether every field of ``match`` holds in an event's ``payload`` (an event wait's and an
    event trigger's filter): equal, or the test its operator names (:data:`MATCH_OPERATORS`);
    a list in the payload (a mail's recipients) holds when one of its items does."""
    return all(_holds(want, payload.get(key)) for key, want in match.items())


def _holds(want: Any, got: Any) -> bool:
    if isinstance(got, list) and not isinstance(want, list):
        return any(_holds(want, item) for item in got) or _equal_or_op(want, got)
    return _equal_or_op(want, got)


def _equal_or_op(want: Any, got: Any) -> bool:
    if not (isinstance(want, dict) and len(want) == 1 and set(want) <= MATCH_OPERATORS):
        return bool(got == want)
    ((op, arg),) = want.items()
    if op == "in":
        return isinstance(arg, list) and got in arg
    if not isinstance(got, str) or not isinstance(arg, str):
        return False
    if op == "contains":
        return arg.casefold() in got.casefold()
    return got.casefold().endswith(arg.casefold())


WaitKind = Literal["until", "event", "approval", "input", "children", "effect"]


@dataclass(kw_only=True, frozen=True)
class WaitCondition:
    """Why a waiting task sleeps and what wakes it. A waiting task is a row, not a process."""

    kind: WaitKind
    """``until`` a time; an ``event`` matching :attr:`match`; an ``approval``; the person's
    ``input``; its ``children`` finishing; a person resolving an in-doubt ``effect``."""
    until: datetime | None = None
    """For ``until``: the wake time. For other kinds: an optional timeout."""
    event_type: str | None = None
    """For ``event``: the event type to wait for."""
    match: dict[str, Any] = field(default_factory=dict)
    """For ``event``: payload fields that must be equal for the event to match."""
    ref: str | None = None
    """For ``approval``/``input``/``effect``: the id of the thing awaited."""
    prompt: str | None = None
    """For ``input``: the question put to the person."""
    since: datetime | None = None
    """For ``event``: also accept a matching event that arrived since this time (before the
    wait was registered), so a fast reply is not missed."""
    seen: list[str] = field(default_factory=list)
    """For ``event``: ids of events already delivered to the task; they never match again."""

    def matches_event(self, event_type: str, payload: Mapping[str, Any]) -> bool:
        """Whether an event of ``event_type`` with ``payload`` is what this wait is for."""
        return (
            self.kind == "event"
            and self.event_type == event_type
            and payload_matches(self.match, payload)
        )

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"kind": self.kind}
        if self.until is not None:
            data["until"] = self.until.timestamp()
        if self.since is not None:
            data["since"] = self.since.timestamp()
        for name in ("event_type", "ref", "prompt"):
            if (value := getattr(self, name)) is not None:
                data[name] = value
        if self.match:
            data["match"] = self.match
        if self.seen:
            data["seen"] = self.seen
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> WaitCondition:
        until = data.get("until")
        since = data.get("since")
        return cls(
            kind=data["kind"],
            until=datetime.fromtimestamp(until, UTC) if until is not None else None,
            since=datetime.fromtimestamp(since, UTC) if since is not None else None,
            event_type=data.get("event_type"),
            match=data.get("match", {}),
            ref=data.get("ref"),
            prompt=data.get("prompt"),
            seen=list(data.get("seen", [])),
        )


@dataclass(kw_only=True, frozen=True)
class TaskSpec:
    """What to run: enough to create a task (used directly and as a trigger's template)."""

    kind: str
    """Name of the handler the harness runs (a step function, or ``agent`` for the model)."""
    input: dict[str, Any] = field(default_factory=dict)
    """Handler input."""
    priority: int = 0
    """Higher runs first among due tasks."""
    max_attempts: int = 5
    """Retries before the task is dead-lettered."""
    title: str = ""
    """Human label."""

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "input": self.input,
            "priority": self.priority,
            "max_attempts": self.max_attempts,
            "title": self.title,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TaskSpec:
        return cls(**data)


@dataclass(kw_only=True, frozen=True)
class TaskRequest:
    """One task of a batch to create: what to run, for which goal, from when."""

    spec: TaskSpec
    """What to run."""
    goal_id: str | None = None
    """The goal it works for (None: none)."""
    run_at: datetime | None = None
    """Its earliest start (None: at once)."""


@dataclass(kw_only=True, frozen=True)
class Task:
    id: str
    """Stable id, ``tsk_…``."""
    person_id: str
    """Owner."""
    goal_id: str | None
    """The goal this task serves, or None for a stand-alone task."""
    parent_id: str | None
    """The task that spawned this one as a subtask."""
    kind: str
    """Handler name."""
    title: str
    """Human label."""
    input: dict[str, Any]
    """Handler input."""
    status: TaskStatus
    """Where the task is in its status machine."""
    priority: int
    """Higher runs first."""
    attempts: int
    """Failed attempts so far (step errors and lost leases)."""
    max_attempts: int
    """Attempts before dead letter."""
    run_at: datetime
    """Earliest time a pending task may be claimed (backoff and timers set it)."""
    wait: WaitCondition | None
    """Why a waiting task sleeps."""
    state: dict[str, Any]
    """Checkpointed handler state after the last committed step."""
    step_seq: int
    """Number of steps committed so far."""
    epoch: int
    """Fencing token: bumped at every claim; writes carry it and fail if it moved on."""
    lease_owner: str | None
    """Worker holding the lease while running."""
    lease_expires_at: datetime | None
    """Database time at which the lease lapses unless renewed."""
    result: Any
    """Final result when succeeded."""
    error: str | None
    """Last error, or why it failed / was dead-lettered."""
    trigger_id: str | None
    """The trigger whose firing created the task."""
    created_at: datetime
    """When it was created."""
    updated_at: datetime
    """Last change."""
    finished_at: datetime | None
    """When it reached a terminal status."""
