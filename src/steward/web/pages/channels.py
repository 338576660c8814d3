"""``/channels``: the ways Steward reaches the person away from the dashboard. Add a service
Apprise reaches (its URL goes to the vault and is shown masked afterwards), enable
notifications on this device (Web Push: ``static/channels.js`` subscribes with the
installation's key and posts the subscription here), send a test message, turn a channel off
or on, remove it. Also the service worker (``/sw.js``, served from the site's root so it may
control every page) that shows a push as a notification and opens its page when tapped."""

from __future__ import annotations

import json
from pathlib import Path
from zoneinfo import ZoneInfo

from fastapi import Request, Response

from steward.errors import UsageError
from steward.web.forms import done, posted
from steward.web.render import page
from steward.web.routing import pages
from steward.web.session import Viewer

router = pages()

_WORKER = Path(__file__).parent.parent / "static" / "sw.js"


@router.get("/channels")
async def channels(request: Request, svc: Viewer) -> Response:
    person = await svc.person(None)
    zone = ZoneInfo(person.timezone)
    shown = [
        {"channel": c, "added": c.created_at.astimezone(zone).strftime("%-d %b %Y")}
        for c in await svc.list_channels(person_id=person.id)
    ]
    return page(
        request,
        "channels.html",
        title="Channels",
        channels=shown,
        push_key=await svc.push_public_key(),
    )


@router.post("/channels/apprise")
async def add_apprise(request: Request, svc: Viewer) -> Response:
    form = await posted(request)
    added = await svc.add_apprise_channel(
        form.text("name", ""),
        form.text("url", ""),
        private_network=form.text("private_network", "") == "yes",
        person_id="",
    )
    return done(request, "/channels", f"Added '{added.name}': {added.summary}.")


@router.post("/channels/push")
async def subscribe_push(request: Request, svc: Viewer) -> Response:
    form = await posted(request)
    try:
        subscription = json.loads(form.text("subscription", ""))
    except ValueError:
        raise UsageError("the browser's push subscription did not arrive whole") from None
    if not isinstance(subscription, dict):
        raise UsageError("the browser's push subscription did not arrive whole")
    added = await svc.subscribe_push(
        form.text("name", "") or "this device", subscription, person_id=""
    )
    return done(request, "/channels", f"Notifications on: '{added.name}' will get them.")


@router.post("/channels/{channel_id}")
async def change(request: Request, svc: Viewer, channel_id: str) -> Response:
    form = await posted(request)
    actions = {"test": "test", "disable": "disable", "enable": "enable", "remove": "remove"}
    action = form.choice("action", actions)
    if action == "test":
        tested = await svc.test_channel(channel_id, person_id="")
        return done(request, "/channels", f"'{tested.channel.name}': {tested.said}")
    if action == "remove":
        removed = await svc.remove_channel(channel_id, person_id="")
        return done(request, "/channels", f"Removed '{removed.name}'.")
    changed = await svc.set_channel_enabled(channel_id, action == "enable", person_id="")
    state = "on" if changed.enabled else "off: nothing is sent through it"
    return done(request, "/channels", f"'{changed.name}' is {state}.")


@router.get("/sw.js")
async def service_worker() -> Response:
    # from the root, so the worker's scope is the whole dashboard
    return Response(
        _WORKER.read_bytes(),
        media_type="text/javascript",
        headers={"Cache-Control": "no-cache", "Service-Worker-Allowed": "/"},
    )
