"""The HTTP API: versioned REST resources over the service facade, bearer-token auth on every
route, errors as problem details (RFC 9457), declared as such in the OpenAPI document
(:mod:`steward.api.openapi`).

Every route acts through ``Service.authenticate(token)``: a service bound to the token's person
and scopes, so tenancy and scopes are decided in one place, the facade, for every interface.
"""

from __future__ import annotations

from importlib.metadata import version
from typing import Any

from fastapi import APIRouter, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from steward import web
from steward.api import mcp, openapi
from steward.api.common import problem
from steward.api.guard import CRASHED, BodyTooLarge, Guard, log_crash, too_large
from steward.api.routes import (
    accounts,
    browser,
    call,
    channels,
    codehost,
    files,
    health,
    memory,
    metrics,
    reports,
    security,
    skills,
    stream,
    watches,
    webhooks,
    work,
)
from steward.api.routes.memory import MOST_IMPORT_BYTES
from steward.errors import StewardError, UsageError
from steward.service import Service
from steward.service.hooks import MAX_BODY as MAX_DELIVERY

API_PREFIX = "/api/v1"
MAX_BODY = 2_000_000
"""Bytes in one request body (a webhook delivery's: :data:`MAX_DELIVERY`): a larger one is a
413, refused before it is read or parsed."""


def create_app(service: Service, *, streams_per_person: int = stream.STREAMS_PER_PERSON) -> FastAPI:
    """The API, MCP at ``/mcp`` and the dashboard at ``/``, for ``service``, an owner's
    facade: each request acts through the facade bound to its token (or session); a person has
    at most ``streams_per_person`` live streams open at once."""
    app = FastAPI(
        title="Steward",
        version=version("steward"),
        description=(
            "A self-hosted personal agent runtime. Every route needs a bearer token (but the "
            "webhook delivery, which is signed). Every error is a problem detail (RFC 9457, "
            "`application/problem+json`)."
        ),
        openapi_url=f"{API_PREFIX}/openapi.json",
        docs_url=f"{API_PREFIX}/docs",
        redoc_url=None,
    )
    app.state.service = service
    app.state.streams = stream.Streams(streams_per_person)
    api = APIRouter(prefix=API_PREFIX)
    routers = [work, security, accounts, watches, reports, memory, skills, channels, files, browser]
    routers += [stream, webhooks, codehost, call]
    for module in routers:
        api.include_router(module.router)
    app.include_router(api)
    app.include_router(metrics.router)  # where Prometheus looks by default
    app.include_router(health.router)
    mcp.mount(app)
    web.mount(app)
    _handle_errors(app)
    openapi.install(app, prefix=API_PREFIX)

    hooks = f"{API_PREFIX}/hooks/"
    app.add_middleware(
        Guard,
        api_prefix=API_PREFIX,
        unsigned=(hooks,),
        max_body=MAX_BODY,
        max_bodies={hooks: MAX_DELIVERY, f"{API_PREFIX}/memories/bulk": MOST_IMPORT_BYTES},
    )
    return app


def _handle_errors(app: FastAPI) -> None:
    @app.exception_handler(StewardError)
    async def steward_error(request: Request, exc: StewardError) -> JSONResponse:
        if isinstance(exc, UsageError):
            return problem(exc.status_code, type(exc).__name__, str(exc))
        await log_crash(request.scope, exc)
        return problem(500, "Internal error", CRASHED)

    @app.exception_handler(RequestValidationError)
    async def bad_request(_request: Request, exc: RequestValidationError) -> JSONResponse:
        problems = [_where(e) for e in exc.errors()]
        return problem(422, "Invalid request", "; ".join(problems), errors=problems)

    @app.exception_handler(HTTPException)
    async def http_error(_request: Request, exc: HTTPException) -> JSONResponse:
        if isinstance(exc, BodyTooLarge):
            return too_large(exc.most)
        return problem(exc.status_code, "HTTP error", str(exc.detail))


def _where(error: dict[str, Any]) -> str:
    """One validation error in words: where it is and what is wrong."""
    place = ".".join(str(p) for p in error.get("loc", ()) if p != "body") or "request"
    return f"{place}: {error.get('msg', 'invalid')}"
