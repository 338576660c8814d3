"""Control tools: how the model steers its own task. Each validates its arguments and returns a
:class:`Directive`; the agent loop carries it out with the task's fenced handle (finish, fail,
suspend on a wait, spawn a subtask, write into the goal, save progress, propose a memory,
load or propose a skill, set a follow-up, report to the person)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Annotated, Any, Literal

from pydantic import Field

from steward.domain import WaitCondition
from steward.domain.actions import EffectClass
from steward.domain.roles import Role
from steward.harness.followup import FollowUpLater, follow_up_tool
from steward.harness.report import ReportToPerson, report_tool
from steward.harness.tools import Tool, ToolArgumentError, ToolContext, tool


@dataclass(kw_only=True, frozen=True)
class Finish:
    result: str
    """The answer, for the person."""
    data: dict[str, Any]
    """Structured result (checked against a subtask's acceptance keys)."""


@dataclass(kw_only=True, frozen=True)
class Abort:
    reason: str
    """Why the task cannot be done."""


@dataclass(kw_only=True, frozen=True)
class Suspend:
    kind: Literal["until", "event", "input"]
    """What the task waits for."""
    condition: WaitCondition
    """The wait (its ``ref`` is filled in by the loop for questions)."""
    question: str | None = None
    """For ``input``: what the person is asked."""


@dataclass(kw_only=True, frozen=True)
class Spawn:
    title: str
    """Label of the subtask."""
    instructions: str
    """What it must do."""
    tools: list[str] | None
    """Tools it may use (None: the same as the parent)."""
    acceptance: dict[str, Any]
    """``criterion`` (words) and ``required_keys`` its finish data must have."""


@dataclass(kw_only=True, frozen=True)
class GoalWrite:
    kind: Literal["note", "result", "evidence"]
    """Record kind."""
    content: str
    """The text."""
    data: dict[str, Any]
    """Structured details of the record."""
    state: dict[str, Any]
    """Goal-state keys to set."""


@dataclass(kw_only=True, frozen=True)
class Progress:
    updates: dict[str, Any]
    """Keys to set in the task's explicit progress (null deletes a key)."""


@dataclass(kw_only=True, frozen=True)
class Remember:
    content: str
    """The memory."""
    kind: str
    """Its kind."""
    subjects: list[str] = field(default_factory=list)
    """What it is about."""
    slot: str | None = None
    """What it is the value of (``home_city``): a newer one replaces the older."""
    valid_from: str | None = None
    """From when it is true (ISO date), if not from now."""
    importance: float = 0.5
    """0 to 1."""


@dataclass(kw_only=True, frozen=True)
class ReadArtifact:
    artifact_id: str
    """Which artifact."""
    offset: int
    """First character."""
    length: int
    """How many characters."""


@dataclass(kw_only=True, frozen=True)
class LoadSkill:
    name: str
    """Which skill, by its name in the index."""


@dataclass(kw_only=True, frozen=True)
class ProposeSkill:
    name: str
    """A new name, or an indexed skill's to change it."""
    description: str
    """One line: what it does."""
    procedure: str
    """How to do it, in Markdown."""
    when_to_use: str = ""
    """The situations it is for."""
    when_not: str = ""
    """Situations it is not for."""
    inputs: list[str] = field(default_factory=list)
    """What it needs to be told."""
    checks: list[str] = field(default_factory=list)
    """How to verify it worked."""
    workflow: list[dict[str, Any]] = field(default_factory=list)
    """Tool calls that do it, if it is mechanical."""


Directive = (
    Finish
    | Abort
    | Suspend
    | Spawn
    | GoalWrite
    | Progress
    | Remember
    | ReadArtifact
    | LoadSkill
    | ProposeSkill
    | FollowUpLater
    | ReportToPerson
)

_Json = dict[str, Any]


@tool(name="finish")
async def finish_tool(
    result: Annotated[
        str, Role.FREE_TEXT, Field(description="The final answer or outcome, for the person.")
    ],
    data: Annotated[
        _Json | None, Role.FREE_TEXT, Field(description="Structured result, if any.")
    ] = None,
) -> Finish:
    """Finish this task successfully with a result. Use when the task is done."""
    return Finish(result=result, data=data or {})


@tool(name="fail")
async def fail_tool(
    reason: Annotated[str, Role.FREE_TEXT, Field(description="Why the task cannot be completed.")],
) -> Abort:
    """Give up on this task for good, with the reason. Not for temporary trouble."""
    return Abort(reason=reason)


@tool(name="wait_until")
async def wait_until_tool(
    ctx: ToolContext,
    at: Annotated[str | None, Role.TIME, Field(description="ISO-8601 time with offset.")] = None,
    delay_seconds: Annotated[float | None, Field(description="Or: seconds from now.", gt=0)] = None,
) -> Suspend:
    """Pause this task until a time; it resumes then, using no resources meanwhile."""
    if (at is None) == (delay_seconds is None):
        raise ToolArgumentError("give exactly one of 'at' or 'delay_seconds'")
    if at is not None:
        try:
            until = datetime.fromisoformat(at)
        except ValueError as exc:
            raise ToolArgumentError(f"'at' is not an ISO-8601 time: {at!r}") from exc
        if until.tzinfo is None:
            raise ToolArgumentError("'at' needs a UTC offset, e.g. 2026-01-05T09:00:00+00:00")
    else:
        assert delay_seconds is not None
        until = ctx.now + timedelta(seconds=delay_seconds)
    return Suspend(kind="until", condition=WaitCondition(kind="until", until=until))


@tool(name="wait_for_event")
async def wait_for_event_tool(
    ctx: ToolContext,
    event_type: Annotated[
        str, Role.IDENTIFIER, Field(description="Event type, e.g. 'email.received'.")
    ],
    match: Annotated[
        _Json | None, Role.IDENTIFIER, Field(description="Payload fields that must be equal.")
    ] = None,
    timeout_seconds: Annotated[float | None, Field(description="Give up after this.", gt=0)] = None,
) -> Suspend:
    """Pause this task until an event of this type (matching the filter) arrives."""
    if not event_type.strip():
        raise ToolArgumentError("event_type must not be empty")
    until = ctx.now + timedelta(seconds=timeout_seconds) if timeout_seconds else None
    condition = WaitCondition(
        kind="event", event_type=event_type, match=match or {}, until=until, since=ctx.now
    )
    return Suspend(kind="event", condition=condition)


@tool(name="ask_person")
async def ask_person_tool(
    ctx: ToolContext,
    question: Annotated[str, Role.CONTENT, Field(description="The question, self-contained.")],
    timeout_hours: Annotated[
        float | None, Field(description="Stop waiting after this.", gt=0)
    ] = None,
) -> Suspend:
    """Ask the person a question; the task waits for the answer (possibly for days)."""
    if not question.strip():
        raise ToolArgumentError("question must not be empty")
    until = ctx.now + timedelta(hours=timeout_hours) if timeout_hours else None
    condition = WaitCondition(kind="input", prompt=question, until=until)
    return Suspend(kind="input", condition=condition, question=question)


@tool(name="spawn_subtask", effect=EffectClass.LOCAL)
async def spawn_subtask_tool(
    title: Annotated[str, Role.FREE_TEXT, Field(description="Short label.")],
    instructions: Annotated[
        str, Role.FREE_TEXT, Field(description="Everything the subtask needs to know.")
    ],
    tools: Annotated[
        list[str] | None, Role.IDENTIFIER, Field(description="Tools it may use.")
    ] = None,
    acceptance: Annotated[
        str, Role.FREE_TEXT, Field(description="When its result is acceptable.")
    ] = "",
    required_keys: Annotated[
        list[str] | None, Role.FREE_TEXT, Field(description="Keys its finish data must contain.")
    ] = None,
) -> Spawn:
    """Start a subtask with its own instructions and tools, and wait for its result."""
    if not instructions.strip():
        raise ToolArgumentError("instructions must not be empty")
    return Spawn(
        title=title,
        instructions=instructions,
        tools=tools,
        acceptance={"criterion": acceptance, "required_keys": required_keys or []},
    )


@tool(name="write_goal", effect=EffectClass.LOCAL)
async def write_goal_tool(
    kind: Annotated[Literal["note", "result", "evidence"], Field(description="Record kind.")],
    content: Annotated[str, Role.CONTENT, Field(description="What to record.")],
    data: Annotated[_Json | None, Role.CONTENT, Field(description="Structured details.")] = None,
    state: Annotated[
        _Json | None, Role.CONTENT, Field(description="Goal-state keys to set.")
    ] = None,
) -> GoalWrite:
    """Write a note, result or evidence into the goal, and optionally update its state."""
    return GoalWrite(kind=kind, content=content, data=data or {}, state=state or {})


@tool(name="update_progress", effect=EffectClass.LOCAL)
async def update_progress_tool(
    updates: Annotated[
        _Json, Role.FREE_TEXT, Field(description="Keys to set; null removes a key.")
    ],
) -> Progress:
    """Save this task's progress (plan, done items, open questions). Progress survives
    restarts and compaction, unlike the conversation: keep what matters here."""
    return Progress(updates=updates)


@tool(name="propose_memory", effect=EffectClass.LOCAL)
async def propose_memory_tool(
    content: Annotated[str, Role.CONTENT, Field(description="One self-contained statement.")],
    kind: Annotated[
        Literal["preference", "fact", "relationship", "decision", "episode", "note"],
        Field(description="What sort of memory."),
    ] = "note",
    subjects: Annotated[
        list[str] | None, Role.FREE_TEXT, Field(description="Who/what it is about.")
    ] = None,
    slot: Annotated[
        str | None,
        Role.IDENTIFIER,
        Field(
            description="For a standing fact or preference: what it is the value of "
            "(home_city, seat_preference); a newer one replaces the older. Not for one-off "
            "exceptions: record those as kind 'episode'."
        ),
    ] = None,
    valid_from: Annotated[
        str | None, Role.TIME, Field(description="ISO date from which it is true, if not today.")
    ] = None,
    importance: Annotated[float, Field(ge=0, le=1, description="0 to 1.")] = 0.5,
) -> Remember:
    """Propose something to remember about the person beyond this task."""
    if not content.strip():
        raise ToolArgumentError("content must not be empty")
    return Remember(
        content=content,
        kind=kind,
        subjects=subjects or [],
        slot=slot,
        valid_from=valid_from,
        importance=importance,
    )


@tool(name="load_skill")
async def load_skill_tool(
    name: Annotated[
        str, Role.IDENTIFIER, Field(description="The skill's name, as in the skill index.")
    ],
) -> LoadSkill:
    """Read a skill from the index in full (procedure, inputs, checks) before following it."""
    if not name.strip():
        raise ToolArgumentError("name must not be empty")
    return LoadSkill(name=name)


@tool(name="propose_skill", effect=EffectClass.LOCAL)
async def propose_skill_tool(
    name: Annotated[
        str,
        Role.IDENTIFIER,
        Field(description="Short name (fetch-invoice-total); an indexed one to change it."),
    ],
    description: Annotated[str, Role.FREE_TEXT, Field(description="One line: what it does.")],
    procedure: Annotated[
        str,
        Role.FREE_TEXT,
        Field(description="The steps that worked, in Markdown, shortest path first."),
    ],
    when_to_use: Annotated[
        str, Role.FREE_TEXT, Field(description="The situations it is for.")
    ] = "",
    when_not: Annotated[
        str, Role.FREE_TEXT, Field(description="Look-alike situations it is not for.")
    ] = "",
    inputs: Annotated[
        list[str] | None, Role.FREE_TEXT, Field(description="What it needs to be told.")
    ] = None,
    checks: Annotated[
        list[str] | None, Role.FREE_TEXT, Field(description="How to verify it worked.")
    ] = None,
    workflow: Annotated[
        list[_Json] | None,
        Role.CONTENT,
        Field(description='Tool calls that do it, if mechanical: [{"tool": ..., "arguments": {}}]'),
    ] = None,
) -> ProposeSkill:
    """Before finishing a task that took exploring, propose how to do it next time (or a
    better version of a skill you used). Only for procedures worth repeating."""
    if not description.strip() or not procedure.strip():
        raise ToolArgumentError("a skill needs a description and a procedure")
    return ProposeSkill(
        name=name,
        description=description,
        procedure=procedure,
        when_to_use=when_to_use,
        when_not=when_not,
        inputs=inputs or [],
        checks=checks or [],
        workflow=workflow or [],
    )


@tool(name="read_artifact")
async def read_artifact_tool(
    artifact_id: Annotated[
        str, Role.IDENTIFIER, Field(description="The artifact id from an excerpt.")
    ],
    offset: Annotated[int, Field(ge=0)] = 0,
    length: Annotated[int, Field(gt=0, le=20000)] = 4000,
) -> ReadArtifact:
    """Read part of a stored artifact (a large earlier tool output)."""
    return ReadArtifact(artifact_id=artifact_id, offset=offset, length=length)


def control_tools() -> list[Tool]:
    tools: list[Tool] = [
        finish_tool,
        fail_tool,
        wait_until_tool,
        wait_for_event_tool,
        ask_person_tool,
        spawn_subtask_tool,
        write_goal_tool,
        update_progress_tool,
        propose_memory_tool,
        read_artifact_tool,
        load_skill_tool,
        propose_skill_tool,
        follow_up_tool,
        report_tool,
    ]
    return [replace(t, source="control") for t in tools]
