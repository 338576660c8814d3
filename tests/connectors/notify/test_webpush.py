"""Web Push to a local push service that verifies the VAPID signature and decrypts the
payload with the subscription's private key, as a browser would."""

from __future__ import annotations

import json
import stat
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from steward.connectors.notify import SECRET
from steward.connectors.notify.webpush import Subscription, VapidKey, WebPushSender
from steward.domain.channel import Channel, ChannelKind, OutboundMessage
from steward.domain.clock import SimulatedClock
from steward.errors import (
    ChannelGone,
    ChannelRefused,
    ChannelUnavailable,
    ConfigError,
    UsageError,
)
from support.pushservice import push_service

from .test_apprise import Secrets

START = datetime(2026, 12, 4, 9, 30, tzinfo=UTC)


def device(secrets: Secrets, subscription: dict[str, object], name: str = "sub-1") -> Channel:
    secrets.values["per_1", name] = json.dumps(subscription)
    return Channel(
        id=f"chn_{name}",
        person_id="per_1",
        kind=ChannelKind.WEBPUSH,
        name="phone",
        config={SECRET: name},
        created_at=START,
    )


def message(importance: str = "actionable") -> OutboundMessage:
    return OutboundMessage(
        key="apr_7:chn_1",
        person_id="per_1",
        kind="approval",
        title="May I send the reply to Dana?",
        body="Tap to see the reply and decide.",
        importance=importance,  # type: ignore[arg-type]
        link="/inbox/apr_7",
    )


async def test_a_push_arrives_signed_and_decrypts_as_sent(tmp_path: Path) -> None:
    clock = SimulatedClock(START)
    key = VapidKey.load(tmp_path)
    secrets = Secrets()
    sender = WebPushSender(secrets, key, clock=clock, private_endpoints=True)
    with push_service(expected_key=key.public_key, now=clock.now) as push:
        receipt = await sender.send(device(secrets, push.subscribe()), message("urgent"))
        assert push.rejected == []
        [payload] = push.delivered
        [headers] = push.headers
    assert receipt.accepted
    assert payload == {
        "title": "May I send the reply to Dana?",
        "body": "Tap to see the reply and decide.",
        "url": "/inbox/apr_7",
        "tag": "apr_7:chn_1",
        "importance": "urgent",
    }
    assert headers["urgency"] == "high"
    assert headers["ttl"] == str(24 * 3600)


async def test_a_push_signed_by_another_installation_is_refused(tmp_path: Path) -> None:
    clock = SimulatedClock(START)
    ours, theirs = VapidKey.load(tmp_path / "a"), VapidKey.load(tmp_path / "b")
    secrets = Secrets()
    with push_service(expected_key=ours.public_key, now=clock.now) as push:
        chan = device(secrets, push.subscribe())
        impostor = WebPushSender(secrets, theirs, clock=clock, private_endpoints=True)
        with pytest.raises(ChannelRefused, match="answered 403"):
            await impostor.send(chan, message())
        # a signature whose claims expired by the service's clock fails too
        late = SimulatedClock(START - timedelta(days=1))
        stale = WebPushSender(secrets, ours, clock=late, private_endpoints=True)
        with pytest.raises(ChannelRefused, match="answered 403"):
            await stale.send(chan, message())
        assert push.rejected == ["signed with another key", "expired"]
        assert push.delivered == []


async def test_a_gone_subscription_is_refused_and_a_busy_service_may_pass(tmp_path: Path) -> None:
    clock = SimulatedClock(START)
    key = VapidKey.load(tmp_path)
    secrets = Secrets()
    sender = WebPushSender(secrets, key, clock=clock, private_endpoints=True)
    with push_service(expected_key=key.public_key, now=clock.now) as push:
        chan = device(secrets, push.subscribe())
        push.browsers.clear()  # the person removed the app: the service answers 410
        with pytest.raises(ChannelGone, match="enable push again"):
            await sender.send(chan, message())
        for status in (429, 503):
            push.receiver.check = lambda hit, status=status: status  # type: ignore[misc]
            with pytest.raises(ChannelUnavailable, match=f"answered {status}"):
                await sender.send(chan, message())
    with pytest.raises(ChannelUnavailable, match="could not be reached"):
        await sender.send(chan, message())


async def test_a_private_endpoint_is_refused_by_default(tmp_path: Path) -> None:
    clock = SimulatedClock(START)
    key = VapidKey.load(tmp_path)
    secrets = Secrets()
    with push_service(expected_key=key.public_key, now=clock.now) as push:
        chan = device(secrets, push.subscribe())
        with pytest.raises(ChannelRefused, match="private network"):
            await WebPushSender(secrets, key, clock=clock).send(chan, message())
        assert push.receiver.hits == []


def test_the_installation_key_is_made_once_and_kept_private(tmp_path: Path) -> None:
    first = VapidKey.load(tmp_path)
    path = tmp_path / "vapid.pem"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert VapidKey.load(tmp_path).public_key == first.public_key
    assert len(first.public_key) == 87  # 65 bytes, base64url without padding
    path.chmod(0o644)
    with pytest.raises(ConfigError, match="chmod 600"):
        VapidKey.load(tmp_path)


def test_a_malformed_subscription_is_refused_at_the_door() -> None:
    good = {
        "endpoint": "https://fcm.googleapis.com/fcm/send/abc",
        "keys": {
            "p256dh": "BNcRdreALRFXTkOOUHK1EtK2wtaz5Ry4YfYCA_0QTpQtUbVlUls0VJXg7A8u-"
            "Ts1XbjhazAkj7I99e8QcYP7DkM",
            "auth": "tBHItJI5svbpez7KI4CCXg",
        },
    }
    assert Subscription.parse(good).host == "fcm.googleapis.com"
    bad_cases: list[dict[str, object]] = [
        {},
        {"endpoint": "https://x.example/a"},
        {**good, "endpoint": "ftp://push.example/a"},
        {**good, "endpoint": "http://push.example/a"},
        {**good, "keys": {"p256dh": "AAAA", "auth": "tBHItJI5svbpez7KI4CCXg"}},
        {**good, "keys": {**good["keys"], "auth": "c2hvcnQ"}},  # type: ignore[dict-item]
    ]
    for bad in bad_cases:
        with pytest.raises(UsageError):
            Subscription.parse(bad)
