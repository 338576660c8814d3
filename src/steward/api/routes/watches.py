"""Watched web pages and prices: set one up, list them with their values and history in plain
words, pause, resume and remove them. Checking costs no model: only a change that matters
becomes a ``web.changed`` event (and wakes the goal named)."""

from __future__ import annotations

from decimal import Decimal
from typing import Annotated, Literal

from fastapi import APIRouter, Path, Query
from fastapi.responses import JSONResponse
from pydantic import Field, model_validator

from steward.api.common import Caller, json
from steward.api.routes.work import Body
from steward.domain.webwatch import (
    Condition,
    ConditionKind,
    Extract,
    Extractor,
    Reading,
    WebWatch,
)
from steward.service.encode import to_jsonable

router = APIRouter(tags=["watches"])

WatchId = Annotated[str, Path(min_length=1, max_length=80, description="The watch's id.")]


class ConditionIn(Body):
    kind: ConditionKind
    text: str | None = Field(None, min_length=1, max_length=500, description="contains, lacks")
    threshold: Decimal | None = Field(None, description="below, above", allow_inf_nan=False)


class WatchIn(Body):
    url: str = Field(min_length=1, max_length=2000, description="The page to watch")
    how: Literal["css", "xpath", "json", "text"] = Field(
        description="How the value is read: a CSS selector, an XPath, a JSON path, or the "
        "page's readable text"
    )
    select: str | None = Field(None, max_length=1000, description="The selector or path")
    conditions: list[ConditionIn] = Field(
        default_factory=list, max_length=8, description="All must hold (none: any change)"
    )
    every_seconds: float = Field(3600.0, description="How often it is checked (at least 60)")
    name: str = Field("", max_length=128, description="What the person calls it")
    goal_id: str | None = Field(None, max_length=80, description="The goal to wake")

    @model_validator(mode="after")
    def _selector_given(self) -> WatchIn:
        if (self.how == "text") != (self.select is None):
            raise ValueError("give select for css, xpath and json, and none for text")
        return self


def _shown(watch: WebWatch) -> dict[str, object]:
    return {**to_jsonable(watch), "summary": watch.describe()}


@router.get("/watches", summary="Watched pages, with their last values in words")
async def list_watches(svc: Caller) -> JSONResponse:
    return json({"items": [_shown(w) for w in await svc.list_watches()]})


@router.post("/watches", status_code=201, summary="Watch a page (checked without a model)")
async def add_watch(svc: Caller, body: WatchIn) -> JSONResponse:
    watch = await svc.add_watch(
        person_id="",
        url=body.url,
        extract=Extract(how=Extractor(body.how), expr=body.select),
        conditions=[
            Condition(kind=c.kind, text=c.text, threshold=c.threshold) for c in body.conditions
        ],
        every_seconds=body.every_seconds,
        name=body.name,
        goal_id=body.goal_id,
    )
    return json(_shown(watch), 201)


@router.get("/watches/{watch_id}", summary="A watch and its values over time")
async def get_watch(
    svc: Caller,
    watch_id: WatchId,
    limit: Annotated[int, Query(ge=1, le=1000)] = 1000,
) -> JSONResponse:
    watch = await svc.get_watch(watch_id)
    readings: list[Reading] = await svc.watch_history(watch_id, limit=limit)
    return json({"watch": _shown(watch), "readings": readings})


@router.post("/watches/{watch_id}/pause", summary="Stop checking a watch")
async def pause_watch(svc: Caller, watch_id: WatchId) -> JSONResponse:
    return json(_shown(await svc.set_watch_enabled(watch_id, False)))


@router.post("/watches/{watch_id}/resume", summary="Check a paused watch again, at once")
async def resume_watch(svc: Caller, watch_id: WatchId) -> JSONResponse:
    return json(_shown(await svc.set_watch_enabled(watch_id, True)))


@router.delete("/watches/{watch_id}", summary="Remove a watch and its history")
async def remove_watch(svc: Caller, watch_id: WatchId) -> JSONResponse:
    return json(_shown(await svc.remove_watch(watch_id)))
