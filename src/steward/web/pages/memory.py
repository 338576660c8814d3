"""``/memory``: what Steward remembers about the person — search (as recall would find it for a
private conversation), list, and one memory's provenance, audience and versions; edit (guarded
by the version shown), delete, archive, restore, promote, restore a version, forget a source."""

from __future__ import annotations

from fastapi import Request, Response

from steward.domain.memory import Memory
from steward.errors import UsageError
from steward.web.forms import done, posted
from steward.web.render import page
from steward.web.routing import pages
from steward.web.session import Viewer

router = pages()

STATUSES = ("active", "candidate", "archived", "deleted")
DONE = {"delete": "Deleted", "archive": "Archived", "restore": "Restored", "promote": "Promoted"}


@router.get("/memory")
async def memories(
    request: Request, svc: Viewer, q: str = "", status: str = "", kind: str = ""
) -> Response:
    query = q.strip()
    if query:
        hits = await svc.search_memories(person_id="", query=query, limit=50)
        found: list[tuple[Memory, float | None]] = [(h.memory, h.score) for h in hits]
    else:
        listed = await svc.list_memories(
            person_id="", status=status or None, kind=kind or None, limit=200
        )
        found = [(m, None) for m in listed]
    return page(
        request,
        "memory.html",
        title="Memory",
        found=found,
        q=query,
        status=status,
        statuses=STATUSES,
        tombstones=await svc.list_tombstones(person_id=""),
    )


@router.get("/memory/{memory_id}")
async def memory(request: Request, svc: Viewer, memory_id: str) -> Response:
    detail = await svc.memory_detail(memory_id)
    return page(
        request,
        "memory_detail.html",
        title="A memory",
        detail=detail,
        m=detail.memory,
        versions=list(reversed(detail.history)),
    )


@router.post("/memory/{memory_id}/edit")
async def edit(request: Request, svc: Viewer, memory_id: str) -> Response:
    form = await posted(request)
    changed = await svc.edit_memory(
        memory_id,
        expected_version=form.integer("version"),
        content=form.text("content").strip(),
        audience=form.text("audience").strip(),
    )
    return done(request, f"/memory/{memory_id}", f"Saved as version {changed.version}.")


@router.post("/memory/{memory_id}/status")
async def set_status(request: Request, svc: Viewer, memory_id: str) -> Response:
    form = await posted(request)
    action = form.text("action")
    change = {
        "delete": svc.delete_memory,
        "archive": svc.archive_memory,
        "restore": svc.restore_memory,
        "promote": svc.promote_memory,
    }.get(action)
    if change is None:
        raise UsageError(f"unknown action {action!r}: use one of {', '.join(DONE)}")
    await change(memory_id)
    return done(request, f"/memory/{memory_id}", f"{DONE[action]}.")


@router.post("/memory/{memory_id}/versions/{version}")
async def restore_version(request: Request, svc: Viewer, memory_id: str, version: int) -> Response:
    await posted(request)
    restored = await svc.restore_memory_version(memory_id, version)
    message = f"Version {version} restored (as version {restored.version})."
    return done(request, f"/memory/{memory_id}", message)


@router.post("/memory/forget")
async def forget(request: Request, svc: Viewer) -> Response:
    form = await posted(request)
    source = form.text("source").strip()
    forgotten = await svc.forget_source(source, person_id="")
    message = f"Forgot {source}: {forgotten.purged} memories purged"
    return done(request, "/memory", f"{message}, {forgotten.skills} skills deleted.")
