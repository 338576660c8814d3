"""Channels through the facade, on both store backends, against real local endpoints: an
Apprise URL kept only in the vault, a private service only when confirmed, a test message that
arrives, push subscriptions renewed per device, a gone subscription said in words."""

from __future__ import annotations

from pathlib import Path

import pytest

from steward.connectors.notify import PRIVATE_PUSH_ENV
from steward.domain.channel import ChannelKind
from steward.domain.clock import SimulatedClock
from steward.errors import Conflict, NotFound, UsageError
from steward.service import Service
from steward.store import Store
from support.notifyservers import receiving
from support.pushservice import push_service


@pytest.fixture
async def svc(store: Store, clock: SimulatedClock, tmp_path: Path) -> Service:
    return Service(store, clock, data_dir=tmp_path)


@pytest.fixture
async def me(svc: Service) -> str:
    return (await svc.ensure_person()).id


async def nothing_stored(svc: Service, me: str) -> None:
    assert await svc.list_channels(person_id=me) == []
    assert await svc.list_secrets(person_id=me) == []


async def test_an_apprise_url_lives_only_in_the_vault_and_a_test_arrives(
    svc: Service, store: Store, me: str
) -> None:
    with receiving() as rx:
        url = f"json://127.0.0.1:{rx.port}/hook-t0ken-xyz"
        with pytest.raises(UsageError, match="confirm it is on your own network"):
            await svc.add_apprise_channel("home", url, person_id=me)
        await nothing_stored(svc, me)

        added = await svc.add_apprise_channel("home", url, private_network=True, person_id=me)
        assert added.kind is ChannelKind.APPRISE
        assert added.summary == "JSON (json://127.0.0.1/…), on your own network"
        [stored] = await store.channels.list_for(me)
        assert "t0ken" not in repr(stored)
        [secret] = await svc.list_secrets(person_id=me)
        assert secret.hosts == ("channel.invalid",)

        tested = await svc.test_channel("Home", person_id=me)
        assert tested.ok, tested.said
        [hit] = rx.hits
        assert hit.json()["title"] == "Test from Steward"
        assert "'home'" in hit.json()["message"]

        rx.status = 404
        refused = await svc.test_channel(added.id)
        assert not refused.ok
        assert refused.said.startswith("Refused: JSON refused the message")
        assert "t0ken" not in refused.said


async def test_bad_input_is_refused_at_the_door(svc: Service, me: str) -> None:
    with pytest.raises(UsageError, match="Apprise does not understand"):
        await svc.add_apprise_channel("x", "https//typo.example", person_id=me)
    with pytest.raises(UsageError, match="give the channel a name"):
        await svc.add_apprise_channel("  ", "ntfy://my-topic", person_id=me)
    with pytest.raises(UsageError, match="not a push subscription"):
        await svc.subscribe_push("phone", {"endpoint": 3}, person_id=me)
    await nothing_stored(svc, me)
    await svc.add_apprise_channel("phone", "ntfy://my-topic", person_id=me)
    with pytest.raises(Conflict, match="already a channel named 'phone'"):
        await svc.add_apprise_channel("phone", "tgram://123456789:AAHsecret/987", person_id=me)
    assert len(await svc.list_secrets(person_id=me)) == 1  # the refused one's is gone


async def test_turning_off_and_removing(svc: Service, me: str) -> None:
    added = await svc.add_apprise_channel("phone", "ntfy://my-topic", person_id=me)
    assert added.summary == "ntfy (ntfy://…)"
    off = await svc.set_channel_enabled("phone", False, person_id=me)
    assert not off.enabled
    assert (await svc.set_channel_enabled(added.id, True)).enabled
    removed = await svc.remove_channel("phone", person_id=me)
    assert removed.id == added.id
    await nothing_stored(svc, me)
    with pytest.raises(NotFound):
        await svc.test_channel(added.id)


async def test_a_device_subscribes_once_and_a_gone_one_is_told(
    svc: Service, clock: SimulatedClock, me: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = await svc.push_public_key()
    with push_service(expected_key=key, now=clock.now) as push:
        subscription = push.subscribe()
        with pytest.raises(UsageError, match="private network"):
            await svc.subscribe_push("phone", subscription, person_id=me)
        await nothing_stored(svc, me)

        monkeypatch.setenv(PRIVATE_PUSH_ENV, "1")
        phone = await svc.subscribe_push("phone", subscription, person_id=me)
        assert phone.summary == "notifications on a device, through 127.0.0.1"
        again = await svc.subscribe_push("my phone", subscription, person_id=me)
        assert again.id == phone.id
        assert len(await svc.list_channels(person_id=me)) == 1

        tested = await svc.test_channel("phone", person_id=me)
        assert tested.ok, tested.said
        [payload] = push.delivered
        assert payload["title"] == "Test from Steward"
        assert payload["url"] == "/channels"

        push.browsers.clear()
        gone = await svc.test_channel("phone", person_id=me)
        assert not gone.ok
        assert "enable push again" in gone.said
        assert gone.said.endswith("It is turned off.")
        assert not gone.channel.enabled
        [off] = await svc.list_channels(person_id=me)
        assert not off.enabled
