"""A dispatcher in its own OS process, for kill tests: it sends every delivery by POSTing the
message (JSON) to a local receiver. Usage: ``python notify_child.py DB_URL ENDPOINT HOLDER``."""

from __future__ import annotations

import asyncio
import json
import sys
import urllib.request

from steward.connectors.notify.dispatch import Dispatcher
from steward.domain.channel import Channel, ChannelKind, DeliveryReceipt, OutboundMessage
from steward.domain.clock import Clock
from steward.store import Store


class PostingSender:
    kind = ChannelKind.APPRISE

    def __init__(self, endpoint: str) -> None:
        self.endpoint = endpoint

    async def send(self, channel: Channel, message: OutboundMessage) -> DeliveryReceipt:
        body = json.dumps({"key": message.key, "title": message.title}).encode()

        def post() -> int:
            request = urllib.request.Request(self.endpoint, data=body, method="POST")
            with urllib.request.urlopen(request, timeout=600) as response:
                return int(response.status)

        status = await asyncio.to_thread(post)
        return DeliveryReceipt(accepted=status == 200, detail=str(status))


async def main(url: str, endpoint: str, holder: str) -> None:
    store = await Store.open(url)
    try:
        dispatcher = Dispatcher(
            store=store,
            senders={ChannelKind.APPRISE: PostingSender(endpoint)},
            clock=Clock(),
            holder=holder,
            batch=1,
            lease_seconds=2.0,
            refresh_seconds=0.5,
        )
        await dispatcher.run(asyncio.Event())
    finally:
        await store.close()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:4]))
