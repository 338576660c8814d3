"""Webhook deliveries, and the secret that signs them."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Header, Request
from fastapi.responses import JSONResponse

from steward.api.common import Caller, json
from steward.service import Service

router = APIRouter(tags=["webhooks"])


@router.post(
    "/triggers/{trigger_id}/webhook-secret",
    status_code=201,
    summary="Create or replace the secret that signs this event trigger's deliveries",
)
async def webhook_secret(svc: Caller, request: Request, trigger_id: str) -> JSONResponse:
    secret = await svc.webhook_secret(trigger_id)
    url = str(request.url_for("deliver", trigger_id=trigger_id))
    return json(
        {
            "url": url,
            "secret": secret,
            "signature_header": "X-Steward-Signature: sha256=<hex HMAC-SHA256 of the body>",
            "delivery_header": "X-Steward-Delivery: <unique id per delivery>",
        },
        201,
    )


@router.post(
    "/hooks/{trigger_id}",
    name="deliver",
    status_code=202,
    summary="Deliver an event to a trigger (signed; no bearer token)",
    openapi_extra={"security": []},
)
async def deliver(
    request: Request,
    trigger_id: str,
    # optional here: a delivery without a signature is refused as unauthorized, not invalid
    x_steward_signature: Annotated[str, Header(max_length=200)] = "",
    x_steward_delivery: Annotated[str, Header(max_length=200)] = "",
) -> JSONResponse:
    service: Service = request.app.state.service
    body = await request.body()
    event, created = await service.receive_webhook(
        trigger_id, body, signature=x_steward_signature, delivery_id=x_steward_delivery
    )
    return json({"event_id": event.id, "duplicate": not created}, 202)
