"""Any facade method by name, for the CLI's remote mode (:mod:`steward.service.wire`).

The REST resources are for people and other programs; this route lets ``steward`` itself run
every command against a server exactly as it would locally, through the same facade bound to
the same token, so the CLI needs no second implementation of each command.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any

from fastapi import APIRouter, Body
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from steward.api.common import Caller
from steward.service.wire import BadArguments, remote_methods, wire_method

router = APIRouter(tags=["call"])

Method = StrEnum("Method", {name: name for name in remote_methods()})  # type: ignore[misc]
"""The methods a call may name (an enum, so the OpenAPI document lists them)."""


@router.post(
    "/call/{method}",
    summary="Call a facade method by name (the CLI's remote mode)",
    description="The body holds the method's arguments by name, as JSON; the response is its "
    "result. Every call acts for the token's person, within its scopes.",
)
async def call(
    svc: Caller,
    method: Method,
    arguments: Annotated[dict[str, Any], Body(default_factory=dict)],
) -> JSONResponse:
    wire = wire_method(method.value)
    try:
        kwargs = wire.decode_call(arguments)
    except BadArguments as exc:  # answered like any other bad body: 422, naming each field
        raise RequestValidationError(exc.errors) from None
    result = await getattr(svc, wire.name)(**kwargs)
    return JSONResponse(wire.encode_result(result))
