"""The ``mail.received`` trigger source: new mail in the watched folders (the inbox, unless the
settings name others) becomes one event per message, without a model.

The cursor holds, per folder, its UIDVALIDITY and the highest UID reported. The first poll of a
folder takes stock (nothing old is reported); later polls report the messages above that UID,
oldest first, a bounded number at a time. When a folder's UIDVALIDITY changes (the server
rebuilt it), its UIDs mean nothing any more: the messages that arrived since the last poll
are reported again by date, and the dedupe key — the Message-ID, or a hash of the headers for
mail without one — keeps those already reported from being stored twice.

Between polls it waits with IMAP IDLE on the first watched folder where the server has it (a
new message ends the wait at once), else sleeps on the clock.

Payload fields, each usable in a trigger's or a wait's filter (``payload_matches``): ``from``
(the sender's plain address, lower-case domain: ``{"endswith": "@shop.test"}``), ``to`` (every
To and Cc address: a filter on one address holds when one of them is it), ``subject``
(``{"contains": "invoice"}``), ``folder``, ``has_attachment`` (true or false), and, to read
on, ``message`` (for ``mail_read``), ``date``, ``sender_name``, ``snippet`` and ``account``.
All of it is others' text: ``untrusted`` is true.

Except the person's own: on the agent's mailbox of a mail channel, a message from the
channel's address that proves it is theirs (:mod:`steward.connectors.mail.authenticity`, by
the channel's check) is handed to the mail channel (:mod:`steward.connectors.mail.person`) — an
approval decided by reply, a turn in a conversation with the agent — and is no event. One that
names them as its sender without proof is an event like any stranger's mail, and the person is
told of it once (a runtime report): nothing is done or answered for it.
"""

from __future__ import annotations

import contextlib
import hashlib
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import structlog

from steward.connectors.base import ConnectorEnv, Poll
from steward.connectors.mail.access import open_mailbox, settings_of
from steward.connectors.mail.authenticity import check_of, verdict
from steward.connectors.mail.failures import MailError
from steward.connectors.mail.imap import IMAPAccount
from steward.connectors.mail.message import parse, snippet
from steward.connectors.mail.model import Header
from steward.connectors.mail.person import letter_of
from steward.domain.authority import Connection
from steward.domain.channel import Channel, ChannelKind
from steward.domain.runtime_reports import unverified_mail
from steward.domain.watch import Found

log = structlog.get_logger(__name__)

RECEIVED = "mail.received"
PER_POLL = 200
"""The most messages one poll reports per folder (the rest come with the next poll)."""
SNIPPET_BYTES = 64 * 1024
"""Messages larger than this are reported without a snippet (the body is not fetched)."""
PERSON_BYTES = 10 * 1024 * 1024
"""The person's messages larger than this are not taken (logged and left in the mailbox)."""
IDLE_LIMIT = 24 * 60.0
"""Longest IDLE (seconds): servers end one after 30 minutes (RFC 2177), so it is re-issued."""
REBUILT_MARGIN = timedelta(days=1)
"""After a UIDVALIDITY change, mail dated this long before the last poll is looked at again."""


def dedupe_key(connection: Connection, header: Header) -> str:
    """The same for the same message wherever and however often it is seen."""
    ident = (
        header.message_id
        or hashlib.sha256(
            "\x00".join(
                [header.sender, header.subject, header.date.isoformat() if header.date else ""]
            ).encode()
        ).hexdigest()[:32]
    )
    return f"mail:{connection.id}:{ident}"


@dataclass
class ReceivedSource:
    """New messages in the connection's watched folders."""

    env: ConnectorEnv
    name: str = RECEIVED
    _next: dict[str, int] = field(default_factory=dict)
    """Per connection: the first watched folder's UIDNEXT at the last poll (an IDLE started
    later returns at once when mail came in between)."""
    _behind: set[str] = field(default_factory=set)
    """The connections whose last poll left new mail for the next one (more than
    :data:`PER_POLL`): their wait ends at once, so a backlog drains poll after poll."""

    async def poll(self, connection: Connection, cursor: dict[str, Any] | None) -> Poll:
        stored: dict[str, Any] = (cursor or {}).get("folders", {})
        checked_before = (cursor or {}).get("checked_at")
        now = self.env.clock.now()
        after: dict[str, Any] = {}
        found: list[Found] = []
        self._behind.discard(connection.id)
        person = await self._person(connection)
        async with await open_mailbox(self.env, connection) as acct:
            for index, folder in enumerate(settings_of(connection).watch_folders):
                before = stored.get(folder)
                last = int(before["last_uid"]) if before else 0
                validity, uidnext, headers = await acct.since(folder, last, limit=PER_POLL)
                if index == 0:
                    self._next[connection.id] = uidnext
                if before is None:  # first look: start from now
                    after[folder] = {"uidvalidity": validity, "last_uid": uidnext - 1}
                    continue
                if int(before["uidvalidity"]) != validity:
                    since = datetime.fromisoformat(checked_before) if checked_before else now
                    headers = await self._rebuilt(acct, folder, since - REBUILT_MARGIN)
                    after[folder] = {"uidvalidity": validity, "last_uid": uidnext - 1}
                else:
                    if len(headers) >= PER_POLL:
                        self._behind.add(connection.id)
                    top = headers[-1].ref.uid if headers else last
                    after[folder] = {"uidvalidity": validity, "last_uid": top}
                for header in headers:
                    channel = person.get(header.sender.casefold())
                    if channel is not None and self.env.person_mail is not None:
                        doubted = await self._hand_over(connection, channel, acct, header)
                        if doubted is not None:
                            found.append(doubted)
                    else:
                        found.append(await self._found(connection, acct, header))
        return Poll(found=found, cursor={"folders": after, "checked_at": now.isoformat()})

    async def _person(self, connection: Connection) -> dict[str, Channel]:
        """The person's mail channels whose agent mailbox is ``connection``, by the person's
        address (lower-case): mail from there is theirs."""
        if self.env.person_mail is None:
            return {}
        found: dict[str, Channel] = {}
        for channel in await self.env.store.channels.list_for(connection.person_id):
            address = str(channel.config.get("address", "")).casefold()
            if (
                channel.kind is ChannelKind.EMAIL
                and channel.enabled
                and channel.config.get("connection") == connection.id
                and address
            ):
                found.setdefault(address, channel)
        return found

    async def _hand_over(
        self, connection: Connection, channel: Channel, acct: IMAPAccount, header: Header
    ) -> Found | None:
        """Hand the person's message to the mail channel when it proves to be theirs; else
        it is an ordinary event (returned), and the person is told. A failure to take it (the
        database, say) fails the poll: the cursor stays and it is taken on the next one."""
        assert self.env.person_mail is not None
        if header.size > PERSON_BYTES:
            log.warning("person's mail too large to take", channel=channel.id, size=header.size)
            return None
        try:
            raw = await acct.raw(header.ref)
        except MailError:
            return None  # gone meanwhile
        key = dedupe_key(connection, header)
        proof = await verdict(
            raw,
            address=str(channel.config.get("address", "")),
            check=check_of(channel),
            dns=self.env.dkim_keys,
        )
        if not proof.trusted:
            log.warning(
                "mail from the person's address unverified", channel=channel.id, why=proof.why
            )
            await self.env.store.reports.add(
                unverified_mail(
                    person_id=channel.person_id,
                    message_key=key,
                    subject=header.subject,
                    now=self.env.clock.now(),
                )
            )
            return await self._found(connection, acct, header, raw)
        letter = letter_of(channel, raw, fallback_id=f"<{key}>")
        said = await self.env.person_mail.take_person_mail(letter)
        log.info("person's mail taken", channel=channel.id, outcome=said, proof=proof.why)
        return None

    async def _rebuilt(self, acct: IMAPAccount, folder: str, since: datetime) -> list[Header]:
        listed, _ = await acct.search(folder, ["SINCE", since.date()], limit=PER_POLL)
        return sorted(
            (h for h in listed if h.date is None or h.date >= since), key=lambda h: h.ref.uid
        )

    async def _found(
        self, connection: Connection, acct: IMAPAccount, header: Header, raw: bytes | None = None
    ) -> Found:
        """The message's event (``raw``: its bytes, when fetched already)."""
        text = ""
        if header.size <= SNIPPET_BYTES:  # a large message is not fetched for a snippet
            with contextlib.suppress(MailError):  # gone meanwhile: without a snippet
                text = snippet(parse(raw if raw is not None else await acct.raw(header.ref)))
        zone = acct.settings.zone
        return Found(
            type=RECEIVED,
            dedupe_key=dedupe_key(connection, header),
            payload={
                "account": connection.name,
                "folder": header.ref.folder,
                "message": header.ref.text(),
                "from": header.sender,
                "sender_name": header.sender_name,
                "to": list(dict.fromkeys([*header.to, *header.cc])),
                "subject": header.subject,
                "date": header.date.astimezone(zone).isoformat() if header.date else None,
                "has_attachment": header.has_attachment,
                "snippet": text,
                "untrusted": True,
            },
        )

    async def wait(self, connection: Connection, seconds: float) -> None:
        if connection.id in self._behind:
            return  # mail is waiting: poll again now
        folders = settings_of(connection).watch_folders
        async with await open_mailbox(self.env, connection) as acct:
            limit = min(seconds, IDLE_LIMIT)
            if await acct.idle(folders[0], limit, newer_than=self._next.get(connection.id)):
                return
            if acct.has_idle():
                return  # the IDLE ran its time: poll, then IDLE again
        await self.env.clock.sleep_until(self.env.clock.now() + timedelta(seconds=seconds))
