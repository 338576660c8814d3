"""GitHub and GitLab as sources of events: connecting one (its webhook secret is shown once,
with the address to paste into the provider), replacing the secret, and taking deliveries —
proved by the provider's own scheme, not a bearer token (:mod:`steward.service.codehost`)."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Path, Request
from fastapi.responses import JSONResponse
from pydantic import Field

from steward.api.common import Caller, json
from steward.api.routes.work import Body
from steward.service import Service
from steward.service.codehost import CodeHostSetup

router = APIRouter(tags=["code hosting"])

Kind = Literal["github", "gitlab"]
DELIVERY_ROUTE = "/hooks/{kind}/{connection_id}"
"""Where a code host posts its deliveries, under the API prefix."""


class CodeHostIn(Body):
    name: str = Field(min_length=1, max_length=80, description="What the person calls it")
    repositories: list[Annotated[str, Field(min_length=1, max_length=300)]] = Field(
        min_length=1,
        max_length=100,
        description="Repositories whose deliveries are taken: owner/name (GitLab: group/"
        "project), or owner/* for all of an owner's",
    )


@router.post(
    "/codehost/{kind}",
    status_code=201,
    summary="Connect GitHub or GitLab as a source of events (the webhook secret is shown once)",
)
async def connect_codehost(
    svc: Caller, request: Request, kind: Kind, body: CodeHostIn
) -> JSONResponse:
    done = await svc.connect_codehost(
        person_id="", kind=kind, name=body.name, repositories=body.repositories
    )
    return json(_shown(request, done), 201)


@router.post(
    "/codehost/{account}/secret",
    status_code=201,
    summary="Replace a code-hosting connection's webhook secret (the old one stops working)",
)
async def rotate_codehost_secret(
    svc: Caller,
    request: Request,
    account: Annotated[
        str, Path(min_length=1, max_length=80, description="The connection's id or name.")
    ],
) -> JSONResponse:
    done = await svc.rotate_codehost_secret(account, person_id="")
    return json(_shown(request, done), 201)


@router.post(
    DELIVERY_ROUTE,
    name="deliver_codehost",
    status_code=202,
    summary="A GitHub or GitLab webhook delivery (proved by the provider's scheme; no token)",
    openapi_extra={"security": []},
)
async def deliver_codehost(
    request: Request,
    kind: Annotated[str, Path(max_length=32)],
    connection_id: Annotated[str, Path(max_length=80)],
) -> JSONResponse:
    service: Service = request.app.state.service
    received = await service.receive_codehost(
        kind, connection_id, await request.body(), dict(request.headers)
    )
    return json(
        {
            "event_id": received.event.id if received.event else None,
            "type": received.event.type if received.event else None,
            "duplicate": received.duplicate,
            "note": received.note,
        },
        202,
    )


def _shown(request: Request, done: CodeHostSetup) -> dict[str, object]:
    """What the person pastes into the provider's webhook settings."""
    url = request.url_for(
        "deliver_codehost", kind=done.connection.kind, connection_id=done.connection.id
    )
    return {
        "connection": done.connection,
        "check": done.check,
        "url": str(url),
        "secret": done.secret,
        "content_type": done.content_type,
        "events": list(done.events),
    }
