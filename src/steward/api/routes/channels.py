"""Channels: the ways Steward reaches the person away from the dashboard — an Apprise URL
(ntfy, Telegram, Slack, e-mail…) or Web Push to a device where the dashboard is installed.
An Apprise URL goes to the vault and is never shown again (only its service and server)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path
from fastapi.responses import JSONResponse
from pydantic import Field

from steward.api.common import Caller, json
from steward.api.routes.work import Body

router = APIRouter(tags=["channels"])

ChannelId = Annotated[
    str, Path(min_length=1, max_length=80, description="The channel's id or name.")
]


class AppriseIn(Body):
    name: str = Field(min_length=1, max_length=60, description="Your label: 'phone', 'work Slack'")
    url: str = Field(
        min_length=1,
        max_length=4000,
        description="The Apprise URL (https://github.com/caronc/apprise/wiki); kept in the vault",
    )
    private_network: bool = Field(
        False,
        description="Confirm the service is on your own network (a self-hosted ntfy at home)",
    )


class PushKeys(Body):
    p256dh: str = Field(min_length=1, max_length=200)
    auth: str = Field(min_length=1, max_length=100)


class PushSubscriptionIn(Body):
    endpoint: str = Field(min_length=1, max_length=2000)
    expirationTime: float | None = None
    keys: PushKeys


class PushIn(Body):
    name: str = Field(min_length=1, max_length=60, description="This device's label")
    subscription: PushSubscriptionIn = Field(description="PushSubscription.toJSON()")


class EnabledIn(Body):
    enabled: bool


@router.get("/channels", summary="Your channels (nothing secret)")
async def list_channels(svc: Caller) -> JSONResponse:
    return json({"items": await svc.list_channels(person_id="")})


@router.get("/channels/push-key", summary="The key a browser subscribes to Web Push with")
async def push_key(svc: Caller) -> JSONResponse:
    return json({"public_key": await svc.push_public_key()})


@router.post("/channels/apprise", status_code=201, summary="Add a channel through Apprise")
async def add_apprise(svc: Caller, body: AppriseIn) -> JSONResponse:
    added = await svc.add_apprise_channel(
        body.name, body.url, private_network=body.private_network, person_id=""
    )
    return json(added, status=201)


@router.post("/channels/push", status_code=201, summary="Send notifications to this device")
async def subscribe_push(svc: Caller, body: PushIn) -> JSONResponse:
    subscription = body.subscription.model_dump(exclude={"expirationTime"})
    return json(await svc.subscribe_push(body.name, subscription, person_id=""), status=201)


@router.post("/channels/{channel_id}/test", summary="Send a test message now")
async def test_channel(svc: Caller, channel_id: ChannelId) -> JSONResponse:
    return json(await svc.test_channel(channel_id, person_id=""))


@router.patch("/channels/{channel_id}", summary="Turn a channel off or on")
async def set_enabled(svc: Caller, channel_id: ChannelId, body: EnabledIn) -> JSONResponse:
    return json(await svc.set_channel_enabled(channel_id, body.enabled, person_id=""))


@router.delete("/channels/{channel_id}", summary="Remove a channel and its secret")
async def remove_channel(svc: Caller, channel_id: ChannelId) -> JSONResponse:
    return json(await svc.remove_channel(channel_id, person_id=""))
