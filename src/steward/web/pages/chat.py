"""``/chat``: ask the agent, and follow a conversation (any agent task) as it happens —
its steps appear live, and a task waiting for the person takes their answer here."""

from __future__ import annotations

from fastapi import Request, Response

from steward.web.forms import done, posted
from steward.web.render import page
from steward.web.routing import pages
from steward.web.session import Viewer
from steward.web.steps import shown

router = pages()


@router.get("/chat")
async def chats(request: Request, svc: Viewer) -> Response:
    recent = await svc.list_tasks(kind="agent", limit=30)
    return page(request, "chats.html", title="Chat", tasks=recent)


@router.post("/chat")
async def ask(request: Request, svc: Viewer) -> Response:
    form = await posted(request)
    task = await svc.ask_agent(person_id="", instructions=form.text("message"), chat=True)
    return done(request, f"/chat/{task.id}", "Sent: the agent is working on it.")


@router.get("/chat/{task_id}")
async def conversation(request: Request, svc: Viewer, task_id: str) -> Response:
    after = await svc.feed_head(person_id="")  # read first: no change falls between
    task = await svc.get_task(task_id)
    asking = task.wait is not None and task.wait.kind == "input"
    views = [v for v in await svc.browser_views() if v.task_id == task.id]
    return page(
        request,
        "chat.html",
        title=task.title or "Conversation",
        task=task,
        steps=[shown(s) for s in await svc.steps(task_id)],
        asking=asking,
        view=views[0] if views else None,
        after=after,
    )


@router.post("/chat/{task_id}")
async def answer(request: Request, svc: Viewer, task_id: str) -> Response:
    form = await posted(request)
    await svc.answer_task(task_id, form.text("message"))
    return done(request, f"/chat/{task_id}", "Sent.")
