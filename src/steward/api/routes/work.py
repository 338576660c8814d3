"""Goals, tasks and their steps, triggers, events, approvals, notifications and effects."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ConfigDict, Field

from steward.api.common import MOST_PER_PAGE, Caller, json, page, seq_page
from steward.domain import Budget, GoalStatus, TaskSpec, TriggerKind
from steward.domain.approval import Approval, ApprovalStatus
from steward.domain.limits import MAX_SEQ
from steward.domain.trigger import MissedPolicy, TriggerBudget
from steward.service.encode import to_jsonable
from steward.web.attachment import picture

router = APIRouter()

Limit = Annotated[int, Query(ge=1, le=MOST_PER_PAGE, description="Items per page.")]
Offset = Annotated[int, Query(ge=0, le=1_000_000, description="Items to skip.")]


class Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class BudgetIn(Body):
    max_activations: int | None = Field(None, ge=1)
    max_steps: int | None = Field(None, ge=1)
    max_cost_usd: float | None = Field(None, gt=0)
    max_tokens: int | None = Field(None, ge=1)
    max_seconds: float | None = Field(None, gt=0)

    def budget(self) -> Budget:
        return Budget(**self.model_dump())


class GoalIn(Body):
    title: str = Field(min_length=1, max_length=500)
    instructions: str = Field("", max_length=20_000)
    constraints: list[str] = Field(default_factory=list, max_length=50)
    deadline: datetime | None = None
    stop_condition: str = Field("", max_length=2000)
    report_policy: Literal["all", "actionable", "none"] = "actionable"
    budget: BudgetIn | None = None


class GoalChange(Body):
    status: GoalStatus | None = None
    budget: BudgetIn | None = None


class AskIn(Body):
    instructions: str = Field(min_length=1, max_length=20_000)
    goal_id: str | None = Field(None, max_length=160)
    chat: bool = False
    audience: str = Field("private", max_length=140)
    skill: str | None = Field(None, max_length=200)
    inputs: dict[str, Any] | None = None


class ControlIn(Body):
    action: Literal["cancel", "pause", "resume"]


class AnswerIn(Body):
    answer: str = Field(min_length=1, max_length=20_000)


class TaskTemplate(Body):
    kind: str = Field(min_length=1, max_length=200)
    input: dict[str, Any] = Field(default_factory=dict)
    title: str = Field("", max_length=500)


class TriggerBudgetIn(Body):
    runs: int | None = Field(None, ge=0)
    tokens: int | None = Field(None, ge=0)
    cost_usd: float | None = Field(None, ge=0)

    def domain(self) -> TriggerBudget:
        return TriggerBudget(runs=self.runs, tokens=self.tokens, cost_usd=self.cost_usd)


class TriggerIn(Body):
    kind: TriggerKind
    spec: str = Field(min_length=1, max_length=500)
    task: TaskTemplate
    name: str = Field("", max_length=200)
    goal_id: str | None = Field(None, max_length=160)
    timezone: str | None = Field(None, max_length=64)
    match: dict[str, Any] | None = None
    missed_policy: MissedPolicy = MissedPolicy.RUN_ONCE
    watch: list[Annotated[str, Field(min_length=1, max_length=200)]] = Field(
        default_factory=list, max_length=50
    )
    active_hours: str | None = Field(None, max_length=20)
    days: str | None = Field(None, max_length=40)
    budget: TriggerBudgetIn | None = None


class TriggerChange(Body):
    enabled: bool


class EventIn(Body):
    type: str = Field(min_length=1, max_length=200)
    payload: dict[str, Any] = Field(default_factory=dict)
    dedupe_key: str | None = Field(None, min_length=1, max_length=200)


class DecisionIn(Body):
    approve: bool
    scope: Literal["once", "task", "hours", "always"] = "once"
    hours: float | None = Field(None, gt=0, le=24 * 365)
    note: str | None = Field(None, max_length=2000)


# --- goals ---------------------------------------------------------------------------------


@router.get("/goals", tags=["goals"], summary="List goals")
async def list_goals(
    svc: Caller, status: GoalStatus | None = None, limit: Limit = 100, offset: Offset = 0
) -> JSONResponse:
    goals = await svc.list_goals(person_id="", status=status, limit=offset + limit + 1)
    return JSONResponse(page(goals, limit=limit, offset=offset))


@router.post("/goals", tags=["goals"], status_code=201, summary="Create a goal")
async def create_goal(svc: Caller, body: GoalIn) -> JSONResponse:
    goal = await svc.create_goal(
        person_id="",
        title=body.title,
        instructions=body.instructions,
        constraints=body.constraints,
        deadline=body.deadline,
        stop_condition=body.stop_condition,
        report_policy=body.report_policy,
        budget=body.budget.budget() if body.budget else None,
    )
    return json(goal, 201)


@router.get("/goals/{goal_id}", tags=["goals"], summary="A goal, with what it has spent")
async def get_goal(svc: Caller, goal_id: str) -> JSONResponse:
    return json(await svc.goal_detail(goal_id))


@router.patch("/goals/{goal_id}", tags=["goals"], summary="Pause, resume or close a goal")
async def change_goal(svc: Caller, goal_id: str, body: GoalChange) -> JSONResponse:
    # the status first: a transition the goal cannot make is refused before anything changed
    # (the budget was validated here already)
    if body.status is not None:
        await svc.set_goal_status(goal_id, body.status)
    if body.budget is not None:
        await svc.set_goal_budget(goal_id, body.budget.budget())
    return json(await svc.goal_detail(goal_id))


@router.get(
    "/goals/{goal_id}/timeline",
    tags=["goals"],
    summary="What happened under a goal, oldest first (tasks, steps, approvals, decisions)",
)
async def goal_timeline(
    svc: Caller,
    goal_id: str,
    after: Annotated[int, Query(ge=0, le=MAX_SEQ, description="Entries after this seq.")] = 0,
    limit: Limit = 100,
) -> JSONResponse:
    entries = await svc.feed(person_id="", goal_id=goal_id, after_seq=after, limit=limit + 1)
    return seq_page(entries, limit=limit)


# --- tasks ---------------------------------------------------------------------------------


@router.get("/tasks", tags=["tasks"], summary="List tasks")
async def list_tasks(
    svc: Caller,
    status: str | None = Query(None, max_length=32),
    goal_id: str | None = Query(None, max_length=160),
    limit: Limit = 100,
    offset: Offset = 0,
) -> JSONResponse:
    filters: dict[str, Any] = {"limit": offset + limit + 1}
    if status:
        filters["status"] = status
    if goal_id:
        filters["goal_id"] = goal_id
    return JSONResponse(page(await svc.list_tasks(**filters), limit=limit, offset=offset))


@router.post("/tasks", tags=["tasks"], status_code=201, summary="Ask the agent to do something")
async def ask(svc: Caller, body: AskIn) -> JSONResponse:
    task = await svc.ask_agent(
        person_id="",
        instructions=body.instructions,
        goal_id=body.goal_id,
        chat=body.chat,
        audience=body.audience,  # type: ignore[arg-type]  # the facade parses and checks it
        skill=body.skill,
        inputs=body.inputs,
    )
    return json(task, 201)


@router.get("/tasks/{task_id}", tags=["tasks"], summary="A task, its activations and effects")
async def get_task(svc: Caller, task_id: str) -> JSONResponse:
    return json(await svc.task_detail(task_id))


@router.post("/tasks/{task_id}/control", tags=["tasks"], summary="Cancel, pause or resume")
async def control_task(svc: Caller, task_id: str, body: ControlIn) -> JSONResponse:
    return json(await svc.control_task(task_id, body.action))


@router.post("/tasks/{task_id}/answer", tags=["tasks"], summary="Answer a task's question")
async def answer_task(svc: Caller, task_id: str, body: AnswerIn) -> JSONResponse:
    await svc.answer_task(task_id, body.answer)
    return json(await svc.get_task(task_id))


@router.get("/tasks/{task_id}/steps", tags=["tasks"], summary="A task's steps, in order")
async def task_steps(
    svc: Caller,
    task_id: str,
    after: Annotated[int, Query(ge=0, le=MAX_SEQ, description="Steps after this number.")] = 0,
    limit: Limit = 100,
) -> JSONResponse:
    steps = await svc.steps(task_id, after=after, limit=limit + 1)
    return seq_page(steps, limit=limit)


# --- triggers and events ---------------------------------------------------------------------


@router.get("/triggers", tags=["triggers"], summary="List triggers, with their next fire time")
async def list_triggers(
    svc: Caller, goal_id: str | None = Query(None, max_length=160)
) -> JSONResponse:
    return json({"items": await svc.list_triggers(person_id="", goal_id=goal_id)})


@router.post("/triggers", tags=["triggers"], status_code=201, summary="Add a trigger")
async def add_trigger(svc: Caller, body: TriggerIn) -> JSONResponse:
    trigger = await svc.add_trigger(
        person_id="",
        kind=body.kind,
        spec=body.spec,
        task=TaskSpec(kind=body.task.kind, input=body.task.input, title=body.task.title),
        name=body.name,
        goal_id=body.goal_id,
        timezone=body.timezone,
        match=body.match,
        missed_policy=body.missed_policy,
        watch=body.watch,
        active_hours=body.active_hours,
        days=body.days,
        budget=body.budget.domain() if body.budget is not None else None,
    )
    return json(trigger, 201)


@router.patch("/triggers/{trigger_id}", tags=["triggers"], summary="Enable or disable")
async def change_trigger(svc: Caller, trigger_id: str, body: TriggerChange) -> JSONResponse:
    return json(await svc.set_trigger_enabled(trigger_id, body.enabled))


@router.put(
    "/triggers/{trigger_id}/budget",
    tags=["triggers"],
    summary="Set a trigger's daily budget (lifts today's pause)",
)
async def set_trigger_budget(svc: Caller, trigger_id: str, body: TriggerBudgetIn) -> JSONResponse:
    return json(await svc.set_trigger_budget(trigger_id, body.domain()))


@router.get(
    "/triggers/report", tags=["triggers"], summary="Triggers in plain words, with today's use"
)
async def trigger_reports(
    svc: Caller, goal_id: str | None = Query(None, max_length=160)
) -> JSONResponse:
    return json({"items": await svc.trigger_reports(person_id="", goal_id=goal_id)})


@router.get("/goals/{goal_id}/follow-ups", tags=["goals"], summary="A goal's follow-ups")
async def follow_ups(svc: Caller, goal_id: str, pending: bool = False) -> JSONResponse:
    return json({"items": await svc.follow_ups(goal_id, pending=pending)})


@router.post("/events", tags=["events"], status_code=202, summary="Send an event to the inbox")
async def send_event(svc: Caller, body: EventIn) -> JSONResponse:
    event, created = await svc.send_event(
        person_id="",
        type=body.type,
        payload=body.payload,
        source="api",
        dedupe_key=body.dedupe_key,
    )
    return json({"event": event, "duplicate": not created}, 202)


@router.get("/events", tags=["events"], summary="Recent events")
async def list_events(svc: Caller, limit: Limit = 100, offset: Offset = 0) -> JSONResponse:
    events = await svc.list_events(person_id="", limit=offset + limit + 1)
    return JSONResponse(page(events, limit=limit, offset=offset))


# --- approvals, notifications, effects ------------------------------------------------------


PICTURE_ROUTE = "api_approval_picture"
"""The name of the route serving an approval's picture."""


def approval_json(request: Request, approval: Approval) -> dict[str, Any]:
    """An approval as the API shows it: its preview's facts as labelled lines, and its picture
    as the path it is served at (never its place in the workspace)."""
    shown: dict[str, Any] = to_jsonable(approval)
    preview = approval.preview
    if preview is not None:
        url = None
        if preview.picture is not None:
            url = str(request.app.url_path_for(PICTURE_ROUTE, approval_id=approval.id))
        shown["preview"] = {
            "facts": [{"label": label, "value": value} for label, value in preview.facts],
            "picture_url": url,
        }
    return shown


@router.get("/approvals", tags=["approvals"], summary="Approvals (pending by default)")
async def list_approvals(
    request: Request,
    svc: Caller,
    status: ApprovalStatus | Literal["all"] = ApprovalStatus.PENDING,
    limit: Limit = 100,
    offset: Offset = 0,
) -> JSONResponse:
    chosen = None if status == "all" else ApprovalStatus(status)
    approvals = await svc.list_approvals(person_id="", status=chosen)
    shown = [approval_json(request, a) for a in approvals[: offset + limit + 1]]
    return JSONResponse(page(shown, limit=limit, offset=offset))


@router.get("/approvals/{approval_id}", tags=["approvals"], summary="One approval")
async def get_approval(request: Request, svc: Caller, approval_id: str) -> JSONResponse:
    return JSONResponse(approval_json(request, await svc.get_approval(approval_id)))


@router.get(
    "/approvals/{approval_id}/picture",
    tags=["approvals"],
    summary="The picture shown with an approval (a PNG), while it is the one taken",
    response_class=Response,
    responses={200: {"content": {"image/png": {}}}},
    name=PICTURE_ROUTE,
)
async def approval_picture(svc: Caller, approval_id: str) -> Response:
    return picture(await svc.approval_picture(approval_id))


@router.post("/approvals/{approval_id}/decision", tags=["approvals"], summary="Approve or deny")
async def decide_approval(
    request: Request, svc: Caller, approval_id: str, body: DecisionIn
) -> JSONResponse:
    decided = await svc.decide_approval(
        approval_id, approve=body.approve, note=body.note, scope=body.scope, hours=body.hours
    )
    return JSONResponse(approval_json(request, decided))


@router.get("/notifications", tags=["notifications"], summary="Notifications, newest first")
async def list_notifications(
    svc: Caller, unread: bool = False, limit: Limit = 100, offset: Offset = 0
) -> JSONResponse:
    found = await svc.list_notifications(person_id="", unread=unread, limit=offset + limit + 1)
    return JSONResponse(page(found, limit=limit, offset=offset))


@router.post("/notifications/{notification_id}/read", tags=["notifications"], status_code=204)
async def mark_read(svc: Caller, notification_id: str) -> None:
    await svc.mark_read(notification_id)


@router.get("/effects", tags=["effects"], summary="Effects of a task, or those in doubt")
async def list_effects(
    svc: Caller, task_id: str | None = Query(None, max_length=160)
) -> JSONResponse:
    if task_id is None:
        return json({"items": await svc.in_doubt_effects()})
    return json({"items": await svc.list_effects(task_id=task_id)})
