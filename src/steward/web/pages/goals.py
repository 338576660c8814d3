"""``/goals`` and ``/goals/{id}``: goals with what they cost, and one goal's timeline and task
panel (cancel, pause, resume; what a waiting task asks the person to approve) with what the
browser last showed each task, updated live."""

from __future__ import annotations

from fastapi import Request, Response

from steward.web.forms import back, done, posted
from steward.web.render import page
from steward.web.routing import pages
from steward.web.session import Viewer
from steward.web.steps import shown

router = pages()

STEPS_SHOWN = 20
"""The newest steps shown per task (the chat view of a task shows all)."""
ACTIONS = {
    # what each action is called, and the statuses it makes sense in
    "pause": ("Pause", frozenset({"pending", "running", "waiting"})),
    "resume": ("Resume", frozenset({"paused"})),
    "cancel": ("Cancel", frozenset({"pending", "running", "waiting", "paused"})),
}


@router.get("/goals")
async def goals(request: Request, svc: Viewer) -> Response:
    listed = await svc.list_goals(person_id="")
    return page(
        request,
        "goals.html",
        title="Goals",
        goals=[await svc.goal_detail(g.id) for g in listed],
    )


@router.get("/goals/{goal_id}")
async def goal(request: Request, svc: Viewer, goal_id: str) -> Response:
    after = await svc.feed_head(person_id="")  # read first: no change falls between
    detail = await svc.goal_detail(goal_id)
    tasks = await svc.list_tasks(goal_id=goal_id, limit=100)
    steps = {}
    for task in tasks:
        newest = await svc.steps(task.id, after=max(0, task.step_seq - STEPS_SHOWN))
        steps[task.id] = [shown(s) for s in newest]
    asked = {a.task_id: a for a in await svc.list_approvals(person_id="") if a.goal_id == goal_id}
    views = {v.task_id: v for v in await svc.browser_views()}
    return page(
        request,
        "goal.html",
        title=detail["goal"].title,
        goal=detail["goal"],
        usage=detail["usage"],
        tasks=tasks,
        steps=steps,
        asked=asked,
        views=views,
        actions=ACTIONS,
        timeline=list(reversed(await svc.timeline(goal_id, limit=200))),
        after=after,
    )


@router.post("/tasks/{task_id}/control")
async def control(request: Request, svc: Viewer, task_id: str) -> Response:
    form = await posted(request)
    action = form.text("action")
    task = await svc.control_task(task_id, action)
    target = back(form, f"/goals/{task.goal_id}" if task.goal_id else f"/chat/{task.id}")
    return done(request, target, f"{ACTIONS[action][0]} requested for “{task.title}”.")
