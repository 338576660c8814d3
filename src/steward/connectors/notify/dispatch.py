"""The dispatcher: sends planned deliveries through the channels' senders, on the Clock.

Each round gathers the digests that fell due, then claims due deliveries in a batch under a
lease. A delivery is marked ``sent`` durably immediately before its sender is called, and
``delivered`` or ``failed`` after: a dispatcher that dies between the two leaves it ``sent``,
and the next claim marks it ``in_doubt`` instead of sending it again — the person never gets
the same message twice. One that dies before marking it ``sent`` never called the sender: the
delivery's lease lapses and it is sent by the next claim.

A channel that is unavailable is tried again with a growing backoff, up to
:data:`~steward.domain.delivery.MAX_ATTEMPTS` tries; then, or at once when the channel refuses
the message, the delivery fails and the person finds a notice on the dashboard.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta

import structlog

from steward.domain import Notification
from steward.domain.channel import ChannelKind, ChannelSender, OutboundMessage
from steward.domain.clock import Clock
from steward.domain.delivery import MAX_ATTEMPTS, shorten
from steward.errors import ChannelRefused, ChannelUnavailable
from steward.store import Store
from steward.store.deliveries import Claimed

log = structlog.get_logger(__name__)


@dataclass(kw_only=True)
class Dispatcher:
    """Delivers what is planned for every person's channels."""

    store: Store
    """Where the deliveries, reports and channels are."""
    senders: Mapping[ChannelKind, ChannelSender]
    """The sender of each channel kind this process can reach."""
    clock: Clock
    """Every time read and every wait."""
    holder: str
    """This process's name in the deliveries' leases."""
    batch: int = 32
    """Most deliveries claimed (and sent at once) per round."""
    lease_seconds: float = 120.0
    """How long a claim holds: longer than a send."""
    backoff_seconds: float = 30.0
    """First wait after an unavailable channel; doubled each time."""
    max_backoff_seconds: float = 3600.0
    """Longest wait between tries."""
    max_attempts: int = MAX_ATTEMPTS
    """Tries of an unavailable channel before the delivery fails."""
    refresh_seconds: float = 60.0
    """Longest sleep before looking again (another process may have planned something)."""
    _wake: asyncio.Event = field(default_factory=asyncio.Event)

    def notify(self) -> None:
        """Something was planned: look now."""
        self._wake.set()

    async def run(self, stop: asyncio.Event) -> None:
        """Deliver until ``stop`` is set."""
        stopping = asyncio.create_task(stop.wait())
        stopping.add_done_callback(lambda _: self._wake.set())
        # what this process plans (the agent's report, a runtime report, an approval) goes
        # out at once; other processes' plans are found at the next look
        self.clock.register()
        unlisten: Callable[[], None] | None = None
        try:
            unlisten = self.store.on_deliveries_planned(self.notify)
            while not stop.is_set():
                # cleared before the round: a nudge during the round (a report stored while
                # the last one was being sent) starts the next round at once, not after a pause
                self._wake.clear()
                if await self.run_once() == self.batch:
                    continue  # more may be due
                await self._sleep()
        finally:
            if unlisten is not None:
                unlisten()
            self.clock.unregister()
            stopping.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await stopping

    async def run_once(self) -> int:
        """One round: gather due digests, claim a batch, send it; returns how many were
        claimed."""
        now = self.clock.now()
        try:
            await self.store.reports.release_digests(now=now)
            claimed = await self.store.deliveries.claim_due(
                holder=self.holder,
                now=now,
                limit=self.batch,
                lease_seconds=self.lease_seconds,
                lease_now=self.clock.lease_now(),
            )
        except Exception as exc:  # the database, most likely: try again after a sleep
            log.warning("cannot claim deliveries", error=str(exc))
            return 0
        await asyncio.gather(*(self.deliver(c) for c in claimed))
        return len(claimed)

    async def deliver(self, claimed: Claimed) -> None:
        """Send one claimed delivery and record what came of it."""
        delivery, channel = claimed.delivery, claimed.channel
        sender = self.senders.get(channel.kind)
        if sender is None:
            await self._give_up(claimed, f"Steward cannot send through {channel.kind} here")
            return
        message = OutboundMessage(
            key=delivery.key, person_id=delivery.person_id, **asdict(delivery.message)
        )
        if not await self.store.deliveries.mark_sent(
            delivery.id, holder=self.holder, now=self.clock.now()
        ):
            return  # the claim was lost: another dispatcher has it
        try:
            receipt = await sender.send(channel, message)
        except ChannelUnavailable as exc:
            if delivery.attempts >= self.max_attempts:
                await self._give_up(claimed, f"it could not be reached: {exc}")
                return
            wait = min(
                self.backoff_seconds * 2 ** (delivery.attempts - 1), self.max_backoff_seconds
            )
            now = self.clock.now()
            await self.store.deliveries.retry(
                delivery.id,
                holder=self.holder,
                error=str(exc),
                at=now + timedelta(seconds=wait),
                now=now,
            )
            return
        except ChannelRefused as exc:
            await self._give_up(claimed, f"it refused a message: {exc}")
            return
        except Exception as exc:
            # not the senders' contract: it may or may not have gone, so it is not sent again
            log.warning("a channel sender failed unexpectedly", kind=channel.kind, error=str(exc))
            await self.store.deliveries.mark_in_doubt(
                delivery.id, holder=self.holder, error=str(exc), now=self.clock.now()
            )
            return
        now = self.clock.now()
        if receipt.accepted:
            await self.store.deliveries.mark_delivered(
                delivery.id, holder=self.holder, detail=receipt.detail, now=now
            )
        else:
            await self._give_up(claimed, f"it refused a message: {receipt.detail}")

    async def _give_up(self, claimed: Claimed, why: str) -> None:
        delivery, channel = claimed.delivery, claimed.channel
        now = self.clock.now()
        notice = Notification(
            id=f"ntf_{delivery.id}",
            person_id=delivery.person_id,
            kind="channel",
            title=shorten(f"Your channel '{channel.name}': {why}"),
            body=f"The message was: {delivery.message.title}. It is still on your dashboard.",
            goal_id=delivery.message.goal_id,
            ref=delivery.ref,
            created_at=now,
        )
        await self.store.deliveries.fail(
            delivery.id, holder=self.holder, error=why, notice=notice, now=now
        )

    async def _sleep(self) -> None:
        """Until the earliest delivery or digest is due, a nudge, or stop; the plan is read
        again every :attr:`refresh_seconds`."""
        now = self.clock.now()
        due: datetime | None = None
        with contextlib.suppress(Exception):  # the database: look again after a while
            times = [
                await self.store.deliveries.next_due(),
                await self.store.reports.next_digest_at(),
            ]
            due = min((t for t in times if t is not None), default=None)
        if due is not None and due <= now:
            # due but not claimable (leased elsewhere, or its channel is off): a short pause
            due = now + timedelta(seconds=1)
        deadline = now + timedelta(seconds=self.refresh_seconds)
        await self.clock.sleep_until(deadline if due is None else min(due, deadline), self._wake)
