"""The person's connected accounts (mail, calendars): connect one with a password, test it,
disconnect it (and forget what came through it), and how each one is doing. An OAuth account
is connected from the machine (``steward connect --provider``): its authorization needs the
person's browser and a loopback redirect."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Query
from fastapi.responses import JSONResponse
from pydantic import Field

from steward.api.common import Caller, json
from steward.api.routes.work import Body

router = APIRouter()

AccountId = Annotated[
    str,
    Path(min_length=1, max_length=80, description="The connection's id (or the account's name)."),
]
Names = list[Annotated[str, Field(min_length=1, max_length=320)]]


class BoundsIn(Body):
    recipients: Names = Field(default_factory=list, max_length=100)
    domains: Names = Field(default_factory=list, max_length=100)
    calendars: Names = Field(default_factory=list, max_length=100)


class AccountIn(Body):
    kind: str = Field(min_length=1, max_length=32, description="mail or calendar")
    name: str = Field(min_length=1, max_length=80, description="What the person calls it")
    settings: dict[str, Any] = Field(
        description="The connector's settings (servers, user name; never the password)"
    )
    password: str | None = Field(
        None,
        min_length=1,
        max_length=4096,
        description="Its password or app password: sealed in the vault, never shown again",
    )
    read_only: bool = False
    scopes: list[Annotated[str, Field(min_length=1, max_length=200)]] | None = Field(
        None, max_length=20, description="Offer only these (default: all, or the read ones)"
    )
    bounds: BoundsIn = Field(default_factory=BoundsIn)


@router.get("/accounts", tags=["accounts"], summary="Connected accounts and how they are doing")
async def list_accounts(svc: Caller) -> JSONResponse:
    return json({"items": await svc.connection_status(person_id="")})


@router.post(
    "/accounts",
    tags=["accounts"],
    status_code=201,
    summary="Connect an account with a password (signs in once to check it)",
)
async def connect_account(svc: Caller, body: AccountIn) -> JSONResponse:
    bounds = {k: v for k, v in body.bounds.model_dump().items() if v}
    done = await svc.connect(
        person_id="",
        kind=body.kind,
        name=body.name,
        settings=body.settings,
        credential=body.password,
        read_only=body.read_only,
        scopes=body.scopes,
        bounds=bounds,
    )
    return json(done, 201)


@router.post(
    "/accounts/{connection_id}/test", tags=["accounts"], summary="Sign in to an account again"
)
async def test_account(svc: Caller, connection_id: AccountId) -> JSONResponse:
    return json(await svc.test_connection(connection_id, person_id=""))


@router.delete("/accounts/{connection_id}", tags=["accounts"], summary="Disconnect an account")
async def disconnect_account(
    svc: Caller,
    connection_id: AccountId,
    forget: Annotated[bool, Query(description="Also forget what was learned through it.")] = False,
) -> JSONResponse:
    return json(await svc.disconnect_account(connection_id, person_id="", forget=forget))
