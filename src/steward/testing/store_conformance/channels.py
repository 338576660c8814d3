"""Store conformance: channels — add, list, rename, enable, configure, last used, remove."""

from __future__ import annotations

from datetime import timedelta

import pytest

from steward.domain.channel import Channel, ChannelKind
from steward.domain.clock import SimulatedClock
from steward.domain.ids import new_id
from steward.errors import Conflict, NotFound
from steward.store import Store
from steward.testing.store_conformance.helpers import new_person


def _channel(person_id: str, clock: SimulatedClock, name: str = "phone") -> Channel:
    return Channel(
        id=new_id("chn"),
        person_id=person_id,
        kind=ChannelKind.APPRISE,
        name=name,
        config={"service": "ntfy"},
        created_at=clock.now(),
    )


async def test_channels_are_added_listed_per_person_and_read_back(
    store: Store, clock: SimulatedClock
) -> None:
    ada = (await new_person(store, clock)).id
    bob = (await new_person(store, clock)).id
    phone = await store.channels.add(_channel(ada, clock))
    assert (phone.person_id, phone.name, phone.kind) == (ada, "phone", ChannelKind.APPRISE)
    assert phone.config == {"service": "ntfy"}
    assert phone.enabled
    assert phone.last_used_at is None
    clock.advance(timedelta(seconds=1))
    mail = await store.channels.add(_channel(ada, clock, "mail"))
    await store.channels.add(_channel(bob, clock))  # another person may use the same name
    assert [c.id for c in await store.channels.list_for(ada)] == [phone.id, mail.id]
    assert await store.channels.get(phone.id) == phone
    with pytest.raises(NotFound):
        await store.channels.get("chn_missing")
    with pytest.raises(NotFound):
        await store.channels.add(_channel("per_missing", clock))


async def test_a_name_taken_is_refused_and_nothing_changes(
    store: Store, clock: SimulatedClock
) -> None:
    ada = (await new_person(store, clock)).id
    phone = await store.channels.add(_channel(ada, clock))
    mail = await store.channels.add(_channel(ada, clock, "mail"))
    with pytest.raises(Conflict, match="already a channel named 'phone'"):
        await store.channels.add(_channel(ada, clock))
    with pytest.raises(Conflict):
        await store.channels.rename(mail.id, "phone")
    assert [c.name for c in await store.channels.list_for(ada)] == ["phone", "mail"]
    renamed = await store.channels.rename(phone.id, "old phone")
    assert renamed.name == "old phone"
    assert (await store.channels.rename(phone.id, "old phone")).name == "old phone"


async def test_enable_configure_touch_and_remove(store: Store, clock: SimulatedClock) -> None:
    ada = (await new_person(store, clock)).id
    phone = await store.channels.add(_channel(ada, clock))
    off = await store.channels.set_enabled(phone.id, enabled=False)
    assert not off.enabled
    assert (await store.channels.set_enabled(phone.id, enabled=True)).enabled
    changed = await store.channels.update_config(phone.id, {"topic": "ada", "n": 2})
    assert changed.config == {"topic": "ada", "n": 2}
    later = clock.now() + timedelta(minutes=5)
    assert (await store.channels.touch_last_used(phone.id, later)).last_used_at == later
    # an older use does not move it back
    assert (await store.channels.touch_last_used(phone.id, clock.now())).last_used_at == later
    removed = await store.channels.remove(phone.id)
    assert removed.id == phone.id
    assert await store.channels.list_for(ada) == []
    with pytest.raises(NotFound):
        await store.channels.remove(phone.id)
    with pytest.raises(NotFound):
        await store.channels.set_enabled(phone.id, enabled=False)
