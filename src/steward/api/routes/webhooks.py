"""Webhook deliveries, and the secret that signs them (the Standard Webhooks scheme, see
:mod:`steward.service.hooks`)."""

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
            "scheme": "Standard Webhooks (https://www.standardwebhooks.com)",
            "headers": {
                "webhook-id": "<unique id per delivery>",
                "webhook-timestamp": "<Unix seconds when sent; refused 5 minutes either side>",
                "webhook-signature": 'v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>" '
                "under the base64-decoded secret after whsec_>",
            },
        },
        201,
    )


@router.post(
    "/hooks/{trigger_id}",
    name="deliver",
    status_code=202,
    summary="Deliver an event to a trigger (signed as Standard Webhooks; no bearer token)",
    openapi_extra={"security": []},
)
async def deliver(
    request: Request,
    trigger_id: str,
    # optional here: a delivery without a signature is refused as unauthorized, not invalid
    webhook_id: Annotated[str, Header(max_length=200)] = "",
    webhook_timestamp: Annotated[str, Header(max_length=20)] = "",
    webhook_signature: Annotated[str, Header(max_length=1000)] = "",
) -> JSONResponse:
    service: Service = request.app.state.service
    body = await request.body()
    event, created = await service.receive_webhook(
        trigger_id,
        body,
        delivery_id=webhook_id,
        timestamp=webhook_timestamp,
        signature=webhook_signature,
    )
    return json({"event_id": event.id, "duplicate": not created}, 202)
