"""The dashboard's Channels page and what makes it an installable app: an Apprise service
added from the form (shown masked, its URL nowhere on the page), a test message that arrives
at a real local webhook, a device subscribed the way channels.js posts it, turn off/on and
remove; the manifest, the icons and the service worker at the site's root."""

from __future__ import annotations

import html
import json

import pytest

from steward.connectors.notify import PRIVATE_PUSH_ENV
from support.notifyservers import receiving
from support.pushservice import push_service
from support.web import Site


async def test_add_test_turn_off_and_remove_an_apprise_channel(site: Site) -> None:
    me = await site.session(site.a.control)
    page = html.unescape((await me.get("/channels")).text)
    assert site.a.channel.id in page
    assert site.b.channel.id not in page
    with receiving() as rx:
        url = f"json://127.0.0.1:{rx.port}/hook-t0ken"
        refused = await me.post("/channels/apprise", name="desk", url=url)
        assert refused.status_code == 400
        assert "confirm it is on your own network" in html.unescape(refused.text)
        added = await me.post("/channels/apprise", name="desk", url=url, private_network="yes")
        assert added.status_code == 303
        page = html.unescape((await me.get("/channels")).text)
        assert "Added 'desk': JSON (json://127.0.0.1/…), on your own network." in page
        assert "t0ken" not in page
        channels = await site.owner.list_channels(person_id=site.a.person.id)
        [desk] = [c for c in channels if c.name == "desk"]

        await me.post(f"/channels/{desk.id}", action="test")
        page = html.unescape((await me.get("/channels")).text)
        assert "'desk': Sent (taken by JSON)." in page
        assert rx.hits[0].json()["title"] == "Test from Steward"

    await me.post(f"/channels/{desk.id}", action="disable")
    page = html.unescape((await me.get("/channels")).text)
    assert "'desk' is off: nothing is sent through it." in page
    await me.post(f"/channels/{desk.id}", action="remove")
    page = html.unescape((await me.get("/channels")).text)
    assert "Removed 'desk'." in page
    # bob's channel cannot be touched from ann's session
    other = await me.post(f"/channels/{site.b.channel.id}", action="remove")
    assert other.status_code == 404


async def test_this_device_subscribes_as_channels_js_posts_it(
    site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(PRIVATE_PUSH_ENV, "1")
    me = await site.session(site.a.control)
    page = (await me.get("/channels")).text
    key = await site.owner.push_public_key()
    assert f'data-key="{key}"' in page
    with push_service(expected_key=key, now=site.clock.now) as push:
        answer = await me.post(
            "/channels/push", name="ann's phone", subscription=json.dumps(push.subscribe())
        )
        assert answer.status_code == 303
        page = html.unescape((await me.get("/channels")).text)
        assert "Notifications on: 'ann's phone' will get them." in page
        assert "Notifications on a device, through 127.0.0.1" in page
        channels = await site.owner.list_channels(person_id=site.a.person.id)
        [phone] = [c for c in channels if c.name == "ann's phone"]
        await me.post(f"/channels/{phone.id}", action="test")
        [payload] = push.delivered
        assert payload["title"] == "Test from Steward"
    broken = await me.post("/channels/push", name="x", subscription="{not json")
    assert broken.status_code == 400


async def test_the_dashboard_installs_as_an_app(site: Site) -> None:
    client = site.client()
    me = await site.session(site.a.control)
    assert '<link rel="manifest" href="/static/manifest.webmanifest">' in (await me.get("/")).text
    manifest = await client.get("/static/manifest.webmanifest")
    assert manifest.headers["content-type"].startswith("application/manifest+json")
    described = manifest.json()
    assert described["display"] == "standalone"
    assert described["start_url"] == "/"
    for icon in described["icons"]:
        got = await client.get(icon["src"])
        assert got.status_code == 200
        if icon["type"] == "image/png":
            assert got.content.startswith(b"\x89PNG\r\n\x1a\n")
            side = int(icon["sizes"].split("x")[0])
            assert int.from_bytes(got.content[16:20], "big") == side
    worker = await client.get("/sw.js")
    assert worker.status_code == 200
    assert worker.headers["content-type"].startswith("text/javascript")
    assert worker.headers["service-worker-allowed"] == "/"
    assert "showNotification" in worker.text
    assert "openWindow" in worker.text
