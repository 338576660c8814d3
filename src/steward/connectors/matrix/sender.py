"""The Matrix channel outbound: notifications as ``m.text`` messages in the person's direct
room with the bot (:class:`~steward.domain.channel.ChannelSender`).

A message carries a plain body and a simple formatted one (its title in bold); one about an
approval also names the approval and the arguments it asks about (:data:`.room.REF_FIELD`,
:data:`.room.ARGS_FIELD`), so a reply to it can decide exactly that approval; one with a
question names it (``q.<task>.<step>``), so a reply answers it. Its transaction id
is derived from the delivery's key: a retried delivery is one message in the room.

What is sent is for the person alone (a report may tell what they keep private): the room's
members are read before each message, and a room anyone else has joined or been invited to is
refused (:class:`~steward.errors.ChannelRefused`), nothing sent.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from steward.connectors.base import ConnectorEnv
from steward.connectors.matrix.client import bot_account, connected, room_members, send_text
from steward.connectors.matrix.room import ARGS_FIELD, REF_FIELD, plain_text, text_content
from steward.domain.channel import Channel, ChannelKind, DeliveryReceipt, OutboundMessage
from steward.errors import ChannelRefused, NotFound


@dataclass(kw_only=True)
class MatrixSender:
    """Sends through Matrix channels."""

    env: ConnectorEnv
    """The store (approvals, channels) and the broker opening the bot's token."""
    dashboard_url: str | None = None
    """The dashboard's address the links in messages start with (None: the bare path)."""
    kind: ChannelKind = ChannelKind.MATRIX

    async def send(self, channel: Channel, message: OutboundMessage) -> DeliveryReceipt:
        room = str(channel.config.get("room", ""))
        if not room:
            raise ChannelRefused(f"the Matrix channel {channel.name} has no room to write to")
        extra: dict[str, str] = {}
        if message.kind == "approval" and message.ref:
            try:
                approval = await self.env.store.inbox.get_approval(message.ref)
            except NotFound as exc:
                raise ChannelRefused("the approval this message is about is gone") from exc
            extra = {REF_FIELD: approval.id, ARGS_FIELD: approval.args_hash}
        elif message.kind == "question" and message.ref:
            extra = {REF_FIELD: message.ref}  # the question (q.<task>.<step>): a reply answers it
        content = text_content(plain_text(message, self.dashboard_url), title=True, **extra)
        txn = hashlib.sha256(f"steward:{message.key}".encode()).hexdigest()[:32]
        alone = {str(channel.config.get("user", "")), str(channel.config.get("person", ""))}
        async with connected(await bot_account(self.env, channel)) as client:
            if not await room_members(client, room) <= alone:
                raise ChannelRefused(
                    f"someone else is in the room of the Matrix channel {channel.name} now, "
                    "and what Steward tells you there is for you alone: nothing was sent. "
                    "Remove them from the room, or add the channel again with a room of your own"
                )
            event_id = await send_text(client, room, content, txn=txn)
        return DeliveryReceipt(accepted=True, detail=event_id)
