"""The mail channel's state: the reply tokens of approval mails (issued, spent once — in the
decision's own transaction, :func:`spend_token_in`), and conversations held with the agent by
mail (which task a thread belongs to, which message the next answer replies to, how far its
answers were mailed)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Row, insert, select, update

from steward.domain.replytoken import ReplyToken
from steward.errors import Conflict
from steward.store import rows
from steward.store.backend import Backend
from steward.store.schema import channel_tokens, mail_conversations, mail_thread_messages


@dataclass(kw_only=True, frozen=True)
class MailConversation:
    """A conversation with the agent held by mail."""

    task_id: str
    """The chat task the conversation is."""
    person_id: str
    """Who holds it."""
    channel_id: str
    """The mail channel it runs on."""
    subject: str
    """The subject of the person's first message (answers are ``Re:`` it)."""
    last_message_id: str
    """The person's latest message in it: the next answer replies to it."""
    references: tuple[str, ...]
    """The Message-IDs of the thread so far, oldest first (an answer's References)."""
    mailed_seq: int
    """The step whose answer was last mailed (0: none yet)."""


class MailChannelRepository:
    """Reply tokens and mail conversations."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend

    # --- reply tokens ---------------------------------------------------------------------

    async def issue_token(self, token: ReplyToken) -> ReplyToken:
        values = {
            "id": token.id,
            "person_id": token.person_id,
            "channel_id": token.channel_id,
            "approval_id": token.approval_id,
            "args_hash": token.args_hash,
            "expires_at": rows.ts(token.expires_at),
            "created_at": rows.ts(token.created_at),
            "used_at": None,
        }

        def op(conn: Connection) -> ReplyToken:
            conn.execute(insert(channel_tokens).values(values))
            return token

        return await self.backend.write(op)

    async def get_token(self, token_id: str) -> ReplyToken | None:
        query = select(channel_tokens).where(channel_tokens.c.id == token_id)
        return await self.backend.read(lambda conn: _token_opt(conn.execute(query).first()))

    # --- conversations --------------------------------------------------------------------

    async def claim_message(self, person_id: str, message_id: str, *, now: datetime) -> bool:
        """Record that the person's message ``message_id`` is being taken; False when it was
        taken before (the same message seen twice is handled once)."""
        values = {
            "person_id": person_id,
            "message_id": message_id,
            "task_id": None,
            "created_at": rows.ts(now),
        }

        def op(conn: Connection) -> bool:
            stmt = self.backend.insert_ignore(mail_thread_messages, values).returning(
                mail_thread_messages.c.message_id
            )
            return conn.execute(stmt).first() is not None

        return await self.backend.write(op)

    async def conversation_of(
        self, person_id: str, message_ids: tuple[str, ...]
    ) -> MailConversation | None:
        """The conversation one of ``message_ids`` (a reply's In-Reply-To and References)
        belongs to, if any."""
        if not message_ids:
            return None

        def op(conn: Connection) -> MailConversation | None:
            found = conn.execute(
                select(mail_thread_messages.c.task_id).where(
                    mail_thread_messages.c.person_id == person_id,
                    mail_thread_messages.c.message_id.in_(message_ids),
                    mail_thread_messages.c.task_id.is_not(None),
                )
            ).first()
            return None if found is None else _conversation_in(conn, str(found[0]))

        return await self.backend.read(op)

    async def start_conversation(
        self,
        *,
        task_id: str,
        person_id: str,
        channel_id: str,
        subject: str,
        message_id: str,
        references: tuple[str, ...],
        now: datetime,
        mailed_seq: int = 0,
    ) -> MailConversation:
        """A conversation begun by the message ``message_id``: the person's (claimed already),
        or the agent's question mailed to them (``mailed_seq``: the step it asked at)."""
        now_f = rows.ts(now)

        def op(conn: Connection) -> MailConversation:
            conn.execute(
                insert(mail_conversations).values(
                    task_id=task_id,
                    person_id=person_id,
                    channel_id=channel_id,
                    subject=subject,
                    last_message_id=message_id,
                    thread_refs=json.dumps([*references, message_id]),
                    mailed_seq=mailed_seq,
                    created_at=now_f,
                    updated_at=now_f,
                )
            )
            row = {"person_id": person_id, "message_id": message_id, "created_at": now_f}
            conn.execute(self.backend.insert_ignore(mail_thread_messages, row | {"task_id": None}))
            _link(conn, person_id, message_id, task_id)
            return _conversation_in(conn, task_id)

        return await self.backend.write(op)

    async def continue_conversation(
        self, task_id: str, *, message_id: str, now: datetime
    ) -> MailConversation:
        """The person wrote ``message_id`` (claimed already) in the conversation."""

        def op(conn: Connection) -> MailConversation:
            current = _conversation_in(conn, task_id)
            refs = [*current.references, message_id]
            conn.execute(
                update(mail_conversations)
                .where(mail_conversations.c.task_id == task_id)
                .values(
                    last_message_id=message_id,
                    thread_refs=json.dumps(refs),
                    updated_at=rows.ts(now),
                )
            )
            _link(conn, current.person_id, message_id, task_id)
            return _conversation_in(conn, task_id)

        return await self.backend.write(op)

    async def mark_mailed(
        self, task_id: str, *, seq: int, message_id: str, now: datetime
    ) -> MailConversation:
        """The answer of step ``seq`` went out as ``message_id`` (replies to it find the
        conversation)."""

        def op(conn: Connection) -> MailConversation:
            current = _conversation_in(conn, task_id)
            conn.execute(
                update(mail_conversations)
                .where(mail_conversations.c.task_id == task_id)
                .values(
                    mailed_seq=max(seq, current.mailed_seq),
                    thread_refs=json.dumps([*current.references, message_id]),
                    updated_at=rows.ts(now),
                )
            )
            stmt = self.backend.insert_ignore(
                mail_thread_messages,
                {
                    "person_id": current.person_id,
                    "message_id": message_id,
                    "task_id": task_id,
                    "created_at": rows.ts(now),
                },
            )
            conn.execute(stmt)
            return _conversation_in(conn, task_id)

        return await self.backend.write(op)

    async def conversation_for(self, task_id: str) -> MailConversation | None:
        """The conversation held by mail that is task ``task_id``, if any."""

        def op(conn: Connection) -> MailConversation | None:
            row = conn.execute(
                select(mail_conversations).where(mail_conversations.c.task_id == task_id)
            ).first()
            return None if row is None else _conversation(row)

        return await self.backend.read(op)

    async def conversations(
        self, person_id: str | None, *, limit: int = 100
    ) -> list[MailConversation]:
        """The most recently active conversations (everyone's when ``person_id`` is None)."""
        query = select(mail_conversations).order_by(mail_conversations.c.updated_at.desc())
        if person_id is not None:
            query = query.where(mail_conversations.c.person_id == person_id)
        query = query.limit(limit)
        return await self.backend.read(lambda conn: [_conversation(r) for r in conn.execute(query)])


def spend_token_in(conn: Connection, token_id: str, now: datetime) -> None:
    """Spend a reply token in the caller's transaction (the decision's): a token spent
    already is a :class:`Conflict`, and the decision does not happen."""
    spent = conn.execute(
        update(channel_tokens)
        .where(channel_tokens.c.id == token_id, channel_tokens.c.used_at.is_(None))
        .values(used_at=rows.ts(now))
    ).rowcount
    if not spent:
        raise Conflict("this approval link was used already")


def _link(conn: Connection, person_id: str, message_id: str, task_id: str) -> None:
    conn.execute(
        update(mail_thread_messages)
        .where(
            mail_thread_messages.c.person_id == person_id,
            mail_thread_messages.c.message_id == message_id,
        )
        .values(task_id=task_id)
    )


def _conversation_in(conn: Connection, task_id: str) -> MailConversation:
    row = conn.execute(
        select(mail_conversations).where(mail_conversations.c.task_id == task_id)
    ).first()
    if row is None:
        raise Conflict(f"no mail conversation for {task_id}")
    return _conversation(row)


def _conversation(row: Row[Any]) -> MailConversation:
    m = row._mapping
    return MailConversation(
        task_id=m["task_id"],
        person_id=m["person_id"],
        channel_id=m["channel_id"],
        subject=m["subject"],
        last_message_id=m["last_message_id"],
        references=tuple(json.loads(m["thread_refs"])),
        mailed_seq=int(m["mailed_seq"]),
    )


def _token_opt(row: Row[Any] | None) -> ReplyToken | None:
    if row is None:
        return None
    m = row._mapping
    return ReplyToken(
        id=m["id"],
        person_id=m["person_id"],
        channel_id=m["channel_id"],
        approval_id=m["approval_id"],
        args_hash=m["args_hash"],
        expires_at=rows.dt(m["expires_at"]),
        created_at=rows.dt(m["created_at"]),
        used_at=rows.dt_opt(m["used_at"]),
    )
