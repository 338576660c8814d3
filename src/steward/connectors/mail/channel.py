"""The e-mail channel outbound: what Steward sends the person from the agent's mailbox (a
connected mail account) to their own address, over the account's SMTP server.

A channel's settings (:attr:`Channel.config`): ``connection`` — the id of the connected mail
account that is the agent's mailbox — and ``address`` — the person's own address, where mail
goes and the only sender whose mail is taken as the person's.

An approval's mail carries a reply token (``[st:…]``, :mod:`steward.sentinel.replytoken`) in
its subject, in its body and in a header; the person answers "approve" or "deny" on the first
line of a reply. Every message has a Message-ID derived from the delivery's key (the same for
every retry of one delivery, so the person's client shows a retried one once), and an answer
in a conversation carries In-Reply-To and References, so it lands in the thread.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from email.message import EmailMessage

from steward.connectors.base import ConnectionFailed, ConnectorEnv
from steward.connectors.mail import access
from steward.connectors.mail.access import KIND
from steward.connectors.mail.failures import MailError, MailUnreachable
from steward.connectors.mail.message import compose, message_id_for, reply_subject
from steward.connectors.mail.person import TOKEN_HEADER
from steward.connectors.mail.settings import plain_address
from steward.domain.authority import Connection
from steward.domain.channel import (
    Channel,
    ChannelKind,
    DeliveryReceipt,
    OutboundMessage,
    dashboard_link,
)
from steward.errors import ChannelRefused, ChannelUnavailable, NotSent
from steward.sentinel.replytoken import ReplyTokens

QUESTION = re.compile(r"q\.(tsk_[0-9a-f]+)\.\d+")
"""The reference of an agent's question (``q.<task>.<step>``): the task waits for the answer."""
REFUSED_WORDS = ("refused the recipient", "refused the message", "cannot take this message")
"""A refusal of the message itself (not of the sign-in or the connection): retrying will not
help."""


def channel_address(channel: Channel) -> str:
    """The person's own address a mail channel writes to."""
    address = plain_address(str(channel.config.get("address", "")))
    if address is None:
        raise ChannelRefused(f"the mail channel {channel.name} has no valid address")
    return address


async def agent_account(env: ConnectorEnv, channel: Channel) -> Connection:
    """The connected mail account a mail channel sends from."""
    wanted = str(channel.config.get("connection", ""))
    for connection in await env.store.authority.list_connections(channel.person_id):
        if connection.id == wanted and connection.active and connection.kind == KIND:
            return connection
    raise ChannelRefused(
        f"the mail account of the channel {channel.name} is no longer connected: "
        "connect it again or remove the channel"
    )


def approval_body(message: OutboundMessage, token: str, dashboard_url: str | None = None) -> str:
    """An approval mail's text: what is asked, how to answer by reply, and the dashboard page
    with the details (:func:`~steward.domain.channel.dashboard_link`)."""
    lines = [message.body.strip(), ""]
    lines += [
        'Reply with "approve" or "deny" on the first line to decide.',
        '("approve for this task" or "approve always" give lasting permission.)',
    ]
    link = dashboard_link(dashboard_url, message.link)
    if link:
        lines += ["", f"Details in the dashboard: {link}"]
    lines += ["", f"Reference: {token}"]
    return "\n".join(lines)


def plain_body(message: OutboundMessage, dashboard_url: str | None = None) -> str:
    """A mail's text: the message's body and the dashboard page with the details."""
    lines = [message.body.strip()]
    link = dashboard_link(dashboard_url, message.link)
    if link:
        lines += ["", f"Details in the dashboard: {link}"]
    return "\n".join(lines)


@dataclass(kw_only=True)
class EmailSender:
    """Sends through mail channels (:class:`~steward.domain.channel.ChannelSender`)."""

    env: ConnectorEnv
    """The mail connector's environment (the account's credentials, by the egress broker)."""
    tokens: ReplyTokens
    """Issues the reply token of an approval's mail."""
    dashboard_url: str | None = None
    """The dashboard's address the links in mails start with (None: the bare path)."""
    kind: ChannelKind = ChannelKind.EMAIL

    async def send(self, channel: Channel, message: OutboundMessage) -> DeliveryReceipt:
        connection = await agent_account(self.env, channel)
        to = channel_address(channel)
        subject, body, headers = (
            message.title.strip() or "Steward",
            plain_body(message, self.dashboard_url),
            {},
        )
        if message.kind == "approval" and message.ref:
            approval = await self.env.store.inbox.get_approval(message.ref)
            token = await self.tokens.issue(channel_id=channel.id, approval=approval)
            subject = f"{subject} {token}"
            body = approval_body(message, token, self.dashboard_url)
            headers[TOKEN_HEADER] = token
        question = QUESTION.fullmatch(message.ref or "") if message.kind == "question" else None
        if question is not None:
            return await self._question(channel, message, question.group(1), body)
        letter = await self._letter(connection, message.key, to, subject, body, headers)
        await deliver(self.env, connection, letter, [to])
        return DeliveryReceipt(accepted=True, detail=str(letter["Message-ID"]))

    async def _question(
        self, channel: Channel, message: OutboundMessage, task_id: str, body: str
    ) -> DeliveryReceipt:
        """A question of the agent's: in the thread of the conversation held by mail it arose
        in, else a new mail that begins one — either way the person's reply answers it."""
        store, now = self.env.store, self.env.clock.now()
        task = await store.tasks.get_task(task_id)
        held = await store.mailchannel.conversation_for(task_id)
        text = f"{body}\n\nReply to this mail to answer."
        if held is not None:
            message_id = await reply_in_thread(
                self.env,
                channel,
                key=message.key,
                subject=held.subject,
                body=text,
                answering=held.last_message_id,
                references=held.references,
            )
            await store.mailchannel.mark_mailed(
                task_id, seq=task.step_seq, message_id=message_id, now=now
            )
            return DeliveryReceipt(accepted=True, detail=message_id)
        connection = await agent_account(self.env, channel)
        subject = message.title.strip() or "A question from Steward"
        letter = await self._letter(
            connection, message.key, channel_address(channel), subject, text, {}
        )
        await deliver(self.env, connection, letter, [channel_address(channel)])
        message_id = str(letter["Message-ID"])
        await store.mailchannel.start_conversation(
            task_id=task_id,
            person_id=channel.person_id,
            channel_id=channel.id,
            subject=subject,
            message_id=message_id,
            references=(),
            now=now,
            mailed_seq=task.step_seq,
        )
        return DeliveryReceipt(accepted=True, detail=message_id)

    async def _letter(
        self,
        connection: Connection,
        key: str,
        to: str,
        subject: str,
        body: str,
        headers: dict[str, str],
    ) -> EmailMessage:
        settings = access.settings_of(connection)
        letter = compose(
            sender=settings.from_header,
            to=[to],
            cc=[],
            subject=subject,
            body=body,
            message_id=message_id_for(f"channel:{key}", settings.sender),
            date=self.env.clock.now(),
        )
        for name, value in headers.items():
            letter[name] = value
        return letter


async def reply_in_thread(
    env: ConnectorEnv,
    channel: Channel,
    *,
    key: str,
    subject: str,
    body: str,
    answering: str,
    references: Sequence[str],
) -> str:
    """Send ``body`` to the person as a reply in their thread (``Re:`` ``subject``, after
    ``answering`` and ``references``); its Message-ID (derived from ``key``)."""
    connection = await agent_account(env, channel)
    to = channel_address(channel)
    settings = access.settings_of(connection)
    letter = compose(
        sender=settings.from_header,
        to=[to],
        cc=[],
        subject=reply_subject(subject),
        body=body,
        message_id=message_id_for(f"channel:{key}", settings.sender),
        date=env.clock.now(),
    )
    letter["In-Reply-To"] = answering
    letter["References"] = " ".join(dict.fromkeys([*references, answering]))
    await deliver(env, connection, letter, [to])
    return str(letter["Message-ID"])


async def deliver(
    env: ConnectorEnv, connection: Connection, letter: EmailMessage, to: Sequence[str]
) -> None:
    """Hand ``letter`` to the account's SMTP server; a failure as the channel's errors."""
    try:
        refused = await access.send(env, connection, letter, to)
    except MailError as exc:
        words = str(exc)
        if any(w in words for w in REFUSED_WORDS):
            raise ChannelRefused(words) from None
        raise ChannelUnavailable(words) from None
    except (MailUnreachable, ConnectionFailed, NotSent) as exc:
        raise ChannelUnavailable(str(exc)) from None
    if refused:
        raise ChannelRefused(f"the mail server refused {', '.join(refused)}")
