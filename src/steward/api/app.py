"""The HTTP API: versioned REST resources over the service facade, bearer-token auth on every
route, errors as problem details (RFC 9457), declared as such in the OpenAPI document
(:mod:`steward.api.openapi`).

Every route acts through ``Service.authenticate(token)``: a service bound to the token's person
and scopes, so tenancy and scopes are decided in one place, the facade, for every interface.
"""

from __future__ import annotations

import time
from importlib.metadata import version
from typing import Any

import structlog
from fastapi import APIRouter, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from steward import web
from steward.api import mcp, openapi
from steward.api.common import problem
from steward.api.routes import call, memory, security, skills, stream, webhooks, work
from steward.errors import StewardError, UsageError
from steward.service import Service

log = structlog.get_logger(__name__)

API_PREFIX = "/api/v1"


def create_app(service: Service) -> FastAPI:
    """The API, MCP at ``/mcp`` and the dashboard at ``/``, for ``service``, an owner's
    facade: each request acts through the facade bound to its token (or session)."""
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
    api = APIRouter(prefix=API_PREFIX)
    for module in (work, security, memory, skills, stream, webhooks, call):
        api.include_router(module.router)
    app.include_router(api)
    mcp.mount(app)
    web.mount(app)
    _handle_errors(app)
    openapi.install(app, prefix=API_PREFIX)

    @app.middleware("http")
    async def server_timing(request: Request, call_next: Any) -> Any:
        # how long the server spent, for the person's browser tools and for bench/
        started = time.perf_counter()
        response = await call_next(request)
        spent = (time.perf_counter() - started) * 1000
        response.headers["Server-Timing"] = f"app;dur={spent:.1f}"
        return response

    return app


def _handle_errors(app: FastAPI) -> None:
    @app.exception_handler(StewardError)
    async def steward_error(_request: Request, exc: StewardError) -> JSONResponse:
        if isinstance(exc, UsageError):
            return problem(exc.status_code, type(exc).__name__, str(exc))
        log.error("request failed", error=repr(exc))
        return problem(500, "Internal error", "Steward failed to do this; see its log")

    @app.exception_handler(RequestValidationError)
    async def bad_request(_request: Request, exc: RequestValidationError) -> JSONResponse:
        problems = [_where(e) for e in exc.errors()]
        return problem(422, "Invalid request", "; ".join(problems), errors=problems)

    @app.exception_handler(HTTPException)
    async def http_error(_request: Request, exc: HTTPException) -> JSONResponse:
        return problem(exc.status_code, "HTTP error", str(exc.detail))

    @app.exception_handler(Exception)
    async def crash(_request: Request, exc: Exception) -> JSONResponse:
        log.exception("request crashed", error=repr(exc))
        return problem(500, "Internal error", "Steward failed to do this; see its log")


def _where(error: dict[str, Any]) -> str:
    """One validation error in words: where it is and what is wrong."""
    place = ".".join(str(p) for p in error.get("loc", ()) if p != "body") or "request"
    return f"{place}: {error.get('msg', 'invalid')}"
