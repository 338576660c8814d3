"""Channels out: the time from a sender's ``send`` to the message's arrival at a local endpoint,
over real sockets on 127.0.0.1 (the test suite's receivers, ``tests/support/notifyservers.py``
and ``tests/support/pushservice.py``): ``.venv/bin/python bench/bench_delivery.py``.

- **Apprise → JSON webhook**, **Apprise → ntfy**, **Apprise → SMTP** (aiosmtpd): the Apprise
  sender (``AppriseSender``) with its URL opened from a real vault, until the receiver has the
  request (HTTP) or has accepted the message (SMTP).
- **Web Push**: ``WebPushSender`` (VAPID signature, aes128gcm encryption) until the local push
  service has verified the signature and decrypted the payload.

Messages are sent one at a time (``--messages`` each); p50/p99/max in milliseconds, wall clock.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO / "tests"), str(Path(__file__).resolve().parent)]

from bench_support import percentile, quiet_logs  # noqa: E402
from steward.connectors.notify import PRIVATE_NETWORK, SECRET  # noqa: E402
from steward.connectors.notify.apprise import AppriseSender  # noqa: E402
from steward.connectors.notify.webpush import VapidKey, WebPushSender  # noqa: E402
from steward.domain.channel import Channel, ChannelKind, OutboundMessage  # noqa: E402
from steward.domain.clock import Clock  # noqa: E402
from support.notifyservers import mail_sink, receiving  # noqa: E402
from support.pushservice import push_service  # noqa: E402


class Secrets:
    """Plaintext by name, as the vault hands it to a sender."""

    def __init__(self) -> None:
        self.values: dict[str, str] = {}

    async def open(self, person_id: str, name: str) -> str:
        return self.values[name]


def channel(kind: ChannelKind, secrets: Secrets, value: str) -> Channel:
    name = f"bench-{len(secrets.values)}"
    secrets.values[name] = value
    return Channel(
        id=f"chn_{name}",
        person_id="per_bench",
        kind=kind,
        name=name,
        config={SECRET: name, PRIVATE_NETWORK: True},
        created_at=datetime.now(UTC),
    )


def message(i: int) -> OutboundMessage:
    return OutboundMessage(
        key=f"bench:{i}",
        person_id="per_bench",
        kind="report",
        title=f"Report {i}: the invoice from Acme is due Friday",
        body="€1,200 to Acme Ltd. Pay it before Friday noon.",
        importance="actionable",
        link="/away",
    )


async def measure(
    n: int, send: Callable[[int], Awaitable[object]], arrived: Callable[[], list[float]]
) -> list[float]:
    """Milliseconds from each send to its arrival, after one send not counted (the first
    loads Apprise's plugin and opens the first connection). Every receiver records a message
    before it answers, so it has arrived when ``send`` returns."""
    await send(-1)
    took: list[float] = []
    for i in range(n):
        began = time.monotonic()
        await send(i)
        took.append((arrived()[i + 1] - began) * 1000)
    return took


async def bench(n: int) -> dict[str, list[float]]:
    secrets = Secrets()
    apprise = AppriseSender(secrets)
    results: dict[str, list[float]] = {}
    with receiving() as rx:
        chan = channel(ChannelKind.APPRISE, secrets, f"json://127.0.0.1:{rx.port}/hook")
        results["Apprise → JSON webhook"] = await measure(
            n, lambda i: apprise.send(chan, message(i)), lambda: [h.at for h in rx.hits]
        )
    with receiving() as rx:
        chan = channel(ChannelKind.APPRISE, secrets, f"ntfy://127.0.0.1:{rx.port}/bench")
        results["Apprise → ntfy"] = await measure(
            n, lambda i: apprise.send(chan, message(i)), lambda: [h.at for h in rx.hits]
        )
    with mail_sink() as sink:
        url = f"mailto://127.0.0.1:{sink.port}?to=me@example.test&from=steward@example.test"
        chan = channel(ChannelKind.APPRISE, secrets, url)
        results["Apprise → SMTP"] = await measure(
            n, lambda i: apprise.send(chan, message(i)), lambda: sink.arrived
        )
    with tempfile.TemporaryDirectory() as tmp:
        clock = Clock()
        key = VapidKey.load(Path(tmp))
        push = WebPushSender(secrets, key, clock=clock, private_endpoints=True)
        with push_service(expected_key=key.public_key, now=clock.now) as service:
            chan = channel(ChannelKind.WEBPUSH, secrets, json.dumps(service.subscribe()))
            results["Web Push (VAPID + aes128gcm)"] = await measure(
                n,
                lambda i: push.send(chan, message(i)),
                lambda: [h.at for h in service.receiver.hits],
            )
            assert len(service.delivered) == n + 1, service.rejected
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=200, help="messages per channel")
    args = parser.parse_args()
    quiet_logs()
    results = asyncio.run(bench(args.messages))
    print(f"send → arrival, {args.messages} messages each, one at a time (ms)")
    print(f"{'channel':32} {'p50':>8} {'p99':>8} {'max':>8}")
    for name, took in results.items():
        p50, p99 = percentile(took, 50), percentile(took, 99)
        print(f"{name:32} {p50:8.1f} {p99:8.1f} {max(took):8.1f}")


if __name__ == "__main__":
    main()
