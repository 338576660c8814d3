"""The security plane as the person sees it: grants, connections, rules, tokens, the audit
log. Secrets never travel back out of the API (the vault is managed on the machine; a
password given to connect an account (:mod:`~steward.api.routes.accounts`) goes into it)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query
from fastapi.responses import JSONResponse
from pydantic import Field

from steward.api.common import MOST_PER_PAGE, Caller, json, page, seq_page
from steward.api.routes.work import Body, Limit, Offset
from steward.domain.limits import MAX_SEQ

router = APIRouter()


class GrantIn(Body):
    scopes: list[Annotated[str, Field(min_length=1, max_length=200)]] = Field(
        min_length=1, max_length=20
    )
    constraints: dict[str, Any] | None = None
    hours: float | None = Field(None, gt=0, le=24 * 365)
    reason: str = Field("", max_length=2000)


class RuleIn(Body):
    pattern: str = Field(min_length=1, max_length=200)
    mode: str = Field(min_length=1, max_length=16)
    priority: int = Field(0, ge=-1000, le=1000)
    reason: str = Field("", max_length=2000)


class TokenIn(Body):
    name: str = Field(min_length=1, max_length=200)
    scopes: list[str] = Field(min_length=1, max_length=2)


@router.get("/grants", tags=["security"], summary="Grants (live ones by default)")
async def list_grants(
    svc: Caller, live: bool = True, limit: Limit = 100, offset: Offset = 0
) -> JSONResponse:
    grants = await svc.list_grants(person_id="", live=live)
    return JSONResponse(page(grants, limit=limit, offset=offset))


@router.post("/grants", tags=["security"], status_code=201, summary="Give a grant")
async def add_grant(svc: Caller, body: GrantIn) -> JSONResponse:
    grant = await svc.add_grant(
        person_id="",
        scopes=body.scopes,
        constraints=body.constraints,
        hours=body.hours,
        reason=body.reason,
    )
    return json(grant, 201)


@router.delete("/grants/{grant_id}", tags=["security"], summary="Revoke a grant at once")
async def revoke_grant(svc: Caller, grant_id: str) -> JSONResponse:
    return json(await svc.revoke_grant(grant_id, person_id=""))


@router.get("/connections", tags=["security"], summary="Connected accounts")
async def list_connections(svc: Caller) -> JSONResponse:
    return json({"items": await svc.list_connections(person_id="")})


@router.delete("/connections/{connection_id}", tags=["security"], summary="Disconnect")
async def disconnect(
    svc: Caller,
    connection_id: str,
    forget: Annotated[bool, Query(description="Also forget what was learned through it.")] = False,
) -> JSONResponse:
    done = await svc.disconnect(connection_id, person_id="")
    forgotten = None
    if forget:
        forgotten = await svc.forget_source(f"connector:{done.connection.id}", person_id="")
    return json({"disconnected": done, "forgotten": forgotten})


@router.get("/rules", tags=["security"], summary="The person's rules")
async def list_rules(svc: Caller) -> JSONResponse:
    return json({"items": await svc.list_rules(person_id="")})


@router.post("/rules", tags=["security"], status_code=201, summary="Add a rule")
async def add_rule(svc: Caller, body: RuleIn) -> JSONResponse:
    rule = await svc.add_rule(
        person_id="",
        pattern=body.pattern,
        mode=body.mode,
        priority=body.priority,
        reason=body.reason,
    )
    return json(rule, 201)


@router.delete("/rules/{rule_id}", tags=["security"], status_code=204, summary="Delete a rule")
async def delete_rule(svc: Caller, rule_id: str) -> None:
    await svc.delete_rule(rule_id, person_id="")


@router.get("/tokens", tags=["security"], summary="API tokens (never their secret)")
async def list_tokens(svc: Caller) -> JSONResponse:
    return json({"items": await svc.list_tokens(person_id="")})


@router.post("/tokens", tags=["security"], status_code=201, summary="Issue a token")
async def create_token(svc: Caller, body: TokenIn) -> JSONResponse:
    token, secret = await svc.create_token(person_id="", name=body.name, scopes=body.scopes)
    return json({"token": token, "secret": secret}, 201)


@router.delete("/tokens/{token_id}", tags=["security"], summary="Revoke a token")
async def revoke_token(svc: Caller, token_id: str) -> JSONResponse:
    return json(await svc.revoke_token(token_id, person_id=""))


@router.get("/audit", tags=["security"], summary="The audit log, oldest first")
async def audit_log(
    svc: Caller,
    after_seq: Annotated[
        int, Query(ge=0, le=MAX_SEQ, description="Entries after this sequence number.")
    ] = 0,
    limit: Annotated[int, Query(ge=1, le=MOST_PER_PAGE)] = 100,
) -> JSONResponse:
    entries = await svc.audit_log(person_id="", after_seq=after_seq, limit=limit + 1)
    return seq_page(entries, limit=limit, cursor="next_after_seq")
