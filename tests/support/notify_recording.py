"""A real :class:`~steward.domain.channel.ChannelSender` for tests: it records what it is given
(with the clock's time) and can be told to be unavailable or to refuse."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from steward.domain.channel import Channel, ChannelKind, DeliveryReceipt, OutboundMessage
from steward.domain.clock import Clock
from steward.errors import ChannelRefused, ChannelUnavailable


@dataclass(kw_only=True, frozen=True)
class Sent:
    at: datetime
    channel: Channel
    message: OutboundMessage


@dataclass(kw_only=True)
class RecordingSender:
    clock: Clock
    kind: ChannelKind = ChannelKind.APPRISE
    sent: list[Sent] = field(default_factory=list)
    unavailable: int = 0
    """Calls still to answer "unavailable"."""
    refuse: str | None = None
    """Refuse every message with this reason."""
    calls: int = 0

    async def send(self, channel: Channel, message: OutboundMessage) -> DeliveryReceipt:
        self.calls += 1
        if self.refuse is not None:
            raise ChannelRefused(self.refuse)
        if self.unavailable > 0:
            self.unavailable -= 1
            raise ChannelUnavailable("the service is down")
        self.sent.append(Sent(at=self.clock.now(), channel=channel, message=message))
        return DeliveryReceipt(accepted=True, detail=f"#{len(self.sent)}")
