"""Probes for a supervisor or a load balancer, without a token: ``/healthz`` (the process
serves) and ``/readyz`` (and its database answers, at the schema this code needs)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import PlainTextResponse

# outside the versioned API and its document: probes take no token and answer plain text
router = APIRouter(include_in_schema=False)


@router.get("/healthz", response_class=PlainTextResponse)
async def healthz() -> str:
    """200 while the process serves requests."""
    return "ok\n"


@router.get("/readyz", response_class=PlainTextResponse)
async def readyz(request: Request) -> PlainTextResponse:
    """200 when the database answers at the schema this version needs; 503 with the reason
    otherwise."""
    reason = await request.app.state.service.readiness()
    if reason is None:
        return PlainTextResponse("ready\n")
    return PlainTextResponse(f"not ready: {reason}\n", status_code=503)
