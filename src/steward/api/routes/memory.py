"""What Steward remembers about the person: listing, recall as a conversation would see it,
provenance and history, edits, forgetting by source, MEMORY.md export and import, and the
consolidation passes that wait for review."""

from __future__ import annotations

from collections import Counter
from datetime import datetime
from typing import Annotated, Literal

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse, PlainTextResponse
from pydantic import Field

from steward.api.common import Caller, json
from steward.api.routes.work import Body, Limit, Offset
from steward.domain.memory_pass import PassStatus
from steward.errors import UsageError
from steward.service.encode import to_jsonable
from steward.service.memory_items import parse_memory_items

router = APIRouter(tags=["memory"])

Text = Annotated[str, Field(min_length=1, max_length=2000)]


class MemoryIn(Body):
    content: Text
    kind: str = Field("note", max_length=32)
    subjects: list[Annotated[str, Field(max_length=200)]] = Field(
        default_factory=list, max_length=50
    )
    slot: str | None = Field(None, max_length=200)
    audience: str = Field("private", max_length=140)
    importance: float = Field(0.5, ge=0, le=1)
    valid_from: datetime | None = None
    valid_to: datetime | None = None


class MemoryChange(Body):
    expected_version: int | None = Field(
        None, ge=1, description="Refused (409) if the memory changed since this version."
    )
    content: Text | None = None
    kind: str | None = Field(None, max_length=32)
    subjects: list[Annotated[str, Field(max_length=200)]] | None = Field(None, max_length=50)
    slot: str | None = Field(None, max_length=200)
    audience: str | None = Field(None, max_length=140)
    importance: float | None = Field(None, ge=0, le=1)
    confidence: float | None = Field(None, ge=0, le=1)
    valid_from: datetime | None = None
    valid_to: datetime | None = None


class ForgetIn(Body):
    source: str = Field(
        min_length=1,
        max_length=400,
        description="task:<id>, connector:<connection>/<item>, connector:<connection>, ...",
    )


class ImportIn(Body):
    markdown: str = Field(min_length=1, max_length=2_000_000)
    archive_missing: bool = False


class PassDecision(Body):
    approve: bool


@router.get("/memories", summary="Memories, newest first")
async def list_memories(
    svc: Caller,
    status: str | None = Query(None, max_length=32),
    kind: str | None = Query(None, max_length=32),
    limit: Limit = 100,
    offset: Offset = 0,
) -> JSONResponse:
    found = await svc.list_memories(
        person_id="", status=status, kind=kind, limit=limit + 1, offset=offset
    )
    more = len(found) > limit
    return JSONResponse(
        {"items": to_jsonable(found[:limit]), "next_offset": offset + limit if more else None}
    )


@router.get("/memories/search", summary="What recall would find, for a conversation's audience")
async def search_memories(
    svc: Caller,
    q: str = Query(min_length=1, max_length=2000),
    audience: str = Query("private", max_length=140),
    mode: Literal["lexical", "semantic", "hybrid"] | None = None,
    limit: Annotated[int, Query(ge=1, le=100)] = 10,
) -> JSONResponse:
    hits = await svc.search_memories(
        person_id="", query=q, audience=audience, mode=mode, limit=limit
    )
    return json({"items": hits})


@router.post("/memories", status_code=201, summary="Remember something (the person's own word)")
async def remember(svc: Caller, body: MemoryIn) -> JSONResponse:
    written = await svc.remember(
        person_id="",
        content=body.content,
        kind=body.kind,
        subjects=body.subjects,
        slot=body.slot,
        audience=body.audience,
        importance=body.importance,
        valid_from=body.valid_from,
        valid_to=body.valid_to,
    )
    return json(written, 201)


MOST_IMPORT_BYTES = 20_000_000
"""Bytes in one bulk import's body (:data:`~steward.service.memory.MOST_IMPORTED` statements of
up to 2,000 characters fit)."""


@router.post(
    "/memories/bulk",
    summary="Remember many statements at once (an imported history)",
    openapi_extra={
        "requestBody": {
            "required": True,
            "description": "A JSON array of statements, or JSON lines (one statement a line): "
            "each an object with content and optionally kind, subjects, slot, audience, "
            "importance, valid_from, valid_to, observed_at (when it was said), ref (its id in "
            "the import) and trusted (false for text written by others).",
            "content": {
                "application/json": {"schema": {"type": "array", "items": {"type": "object"}}},
                "application/x-ndjson": {"schema": {"type": "string"}},
            },
        }
    },
)
async def remember_many(
    svc: Caller,
    request: Request,
    import_name: str = Query(
        "bulk",
        min_length=1,
        max_length=100,
        description="Its memories cite import:<name>/<ref>; forgetting import:<name> forgets "
        "them all. The same import sent again writes nothing new.",
    ),
) -> JSONResponse:
    body = await request.body()
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise UsageError("the body is not UTF-8 text") from None
    written = await svc.remember_many(
        person_id="", items=parse_memory_items(text), import_name=import_name
    )
    counts = Counter(str(w.outcome) for w in written)
    return json(
        {
            "created": counts["created"],
            "duplicate": counts["duplicate"],
            "forgotten": counts["forgotten"],
            "items": written,
        }
    )


class MarkdownResponse(PlainTextResponse):
    media_type = "text/markdown"


@router.get(
    "/memories/export",
    summary="Every current memory as an editable MEMORY.md",
    response_class=MarkdownResponse,
)
async def export_memories(svc: Caller) -> MarkdownResponse:
    return MarkdownResponse(await svc.export_memories(person_id=""))


@router.post("/memories/import", summary="Read back an edited MEMORY.md; conflicts reported")
async def import_memories(svc: Caller, body: ImportIn) -> JSONResponse:
    report = await svc.import_memories(
        body.markdown, person_id="", archive_missing=body.archive_missing
    )
    return json(report)


@router.post("/memories/forget", summary="Forget everything derived from a source, for good")
async def forget_source(svc: Caller, body: ForgetIn) -> JSONResponse:
    return json(await svc.forget_source(body.source, person_id=""))


@router.post("/conversations/{task_id}/forget", summary="Forget a conversation and its subtasks")
async def forget_conversation(svc: Caller, task_id: str) -> JSONResponse:
    return json(await svc.forget_conversation(task_id))


@router.get("/memories/{memory_id}", summary="A memory with its provenance and history")
async def memory_detail(svc: Caller, memory_id: str) -> JSONResponse:
    return json(await svc.memory_detail(memory_id))


@router.patch("/memories/{memory_id}", summary="Edit a memory (a new version)")
async def edit_memory(svc: Caller, memory_id: str, body: MemoryChange) -> JSONResponse:
    changes = body.model_dump(exclude_unset=True)
    return json(await svc.edit_memory(memory_id, **changes))


@router.post("/memories/{memory_id}/{action}", summary="Archive, delete, restore or promote")
async def set_memory_status(
    svc: Caller, memory_id: str, action: Literal["archive", "delete", "restore", "promote"]
) -> JSONResponse:
    act = {
        "archive": svc.archive_memory,
        "delete": svc.delete_memory,
        "restore": svc.restore_memory,
        "promote": svc.promote_memory,
    }[action]
    return json(await act(memory_id))


@router.post("/memories/{memory_id}/versions/{version}/restore", summary="Restore a version")
async def restore_memory_version(
    svc: Caller, memory_id: str, version: Annotated[int, Field(ge=1)]
) -> JSONResponse:
    return json(await svc.restore_memory_version(memory_id, version))


@router.get("/memory-passes", summary="Consolidation passes, newest first")
async def list_memory_passes(
    svc: Caller, status: PassStatus | None = None, limit: Limit = 50
) -> JSONResponse:
    return json({"items": await svc.list_memory_passes(person_id="", status=status, limit=limit)})


@router.post("/memory-passes/{pass_id}/decision", summary="Apply or reject a held pass")
async def decide_memory_pass(svc: Caller, pass_id: str, body: PassDecision) -> JSONResponse:
    return json(await svc.decide_memory_pass(pass_id, approve=body.approve))
