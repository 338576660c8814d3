"""Store conformance: the mail channel — reply tokens spent once, in the decision's own
transaction; the person's messages taken once; conversations found by their thread."""

from __future__ import annotations

from datetime import timedelta

import pytest

from steward.domain import Approval, ApprovalStatus, Notification, args_hash
from steward.domain.channel import Channel, ChannelKind
from steward.domain.clock import SimulatedClock
from steward.domain.ids import new_id
from steward.domain.replytoken import ReplyToken
from steward.errors import Conflict
from steward.store import Fence, Store
from steward.testing.store_conformance.helpers import claim, new_person, new_task


async def _approval(store: Store, clock: SimulatedClock, fence: Fence, person_id: str) -> Approval:
    approval_id = new_id("apr")
    args = {"to": "dana@example.test"}
    return await store.inbox.request_approval(
        fence,
        Approval(
            id=approval_id,
            person_id=person_id,
            task_id=fence.task_id,
            goal_id=None,
            step_seq=1,
            tool="send_email",
            args=args,
            args_hash=args_hash("send_email", args),
            reason="external action",
            scopes=("email.send",),
            status=ApprovalStatus.PENDING,
            created_at=clock.now(),
        ),
        Notification(
            id=new_id("ntf"),
            person_id=person_id,
            kind="approval",
            title="Send it?",
            body="",
            task_id=fence.task_id,
            ref=approval_id,
            created_at=clock.now(),
        ),
        lease_now=clock.lease_now(),
    )


async def _mail_channel(store: Store, clock: SimulatedClock, person_id: str) -> Channel:
    return await store.channels.add(
        Channel(
            id=new_id("chn"),
            person_id=person_id,
            kind=ChannelKind.EMAIL,
            name="email",
            config={"connection": "con_x", "address": "ada@example.test"},
            created_at=clock.now(),
        )
    )


async def test_a_reply_token_is_spent_once_with_its_decision(
    store: Store, clock: SimulatedClock
) -> None:
    ada = (await new_person(store, clock)).id
    for _ in range(2):
        await new_task(store, clock, ada)
    claims = await claim(store, clock, limit=2)
    first, second = [await _approval(store, clock, Fence.of(c), ada) for c in claims]
    channel = await _mail_channel(store, clock, ada)
    token = ReplyToken(
        id="abcdefghijklmno",
        person_id=ada,
        channel_id=channel.id,
        approval_id=first.id,
        args_hash=first.args_hash,
        expires_at=clock.now() + timedelta(days=1),
        created_at=clock.now(),
    )
    assert await store.mailchannel.issue_token(token) == token
    assert await store.mailchannel.get_token(token.id) == token
    assert await store.mailchannel.get_token("nothing") is None
    decided = await store.inbox.decide_approval(
        first.id, approve=True, decided_by="e-mail", now=clock.now(), spend_token=token.id
    )
    assert decided.status is ApprovalStatus.APPROVED
    spent = await store.mailchannel.get_token(token.id)
    assert spent is not None
    assert spent.used_at == clock.now()
    # spent: the decision it would carry does not happen (one transaction)
    with pytest.raises(Conflict, match="used already"):
        await store.inbox.decide_approval(
            second.id, approve=True, decided_by="e-mail", now=clock.now(), spend_token=token.id
        )
    assert (await store.inbox.get_approval(second.id)).status is ApprovalStatus.PENDING


async def test_messages_are_taken_once_and_find_their_conversation(
    store: Store, clock: SimulatedClock
) -> None:
    ada = (await new_person(store, clock)).id
    bob = (await new_person(store, clock)).id
    task = await new_task(store, clock, ada)
    channel = await _mail_channel(store, clock, ada)
    assert await store.mailchannel.claim_message(ada, "<m1@x>", now=clock.now())
    assert not await store.mailchannel.claim_message(ada, "<m1@x>", now=clock.now())
    assert await store.mailchannel.claim_message(bob, "<m1@x>", now=clock.now())  # per person
    started = await store.mailchannel.start_conversation(
        task_id=task.id,
        person_id=ada,
        channel_id=channel.id,
        subject="Dentist",
        message_id="<m1@x>",
        references=(),
        now=clock.now(),
    )
    assert (started.last_message_id, started.references, started.mailed_seq) == (
        "<m1@x>",
        ("<m1@x>",),
        0,
    )
    assert await store.mailchannel.conversation_of(ada, ("<other@x>", "<m1@x>")) == started
    assert await store.mailchannel.conversation_of(bob, ("<m1@x>",)) is None
    assert await store.mailchannel.conversation_of(ada, ()) is None
    clock.advance(timedelta(seconds=1))
    now = clock.now()
    mailed = await store.mailchannel.mark_mailed(task.id, seq=3, message_id="<a1@x>", now=now)
    assert (mailed.mailed_seq, mailed.references) == (3, ("<m1@x>", "<a1@x>"))
    assert await store.mailchannel.conversation_of(ada, ("<a1@x>",)) == mailed
    assert await store.mailchannel.claim_message(ada, "<m2@x>", now=clock.now())
    held = await store.mailchannel.continue_conversation(task.id, message_id="<m2@x>", now=now)
    assert held.last_message_id == "<m2@x>"
    assert held.references == ("<m1@x>", "<a1@x>", "<m2@x>")
    assert await store.mailchannel.conversation_for(task.id) == held
    assert await store.mailchannel.conversations(ada) == [held]
    assert await store.mailchannel.conversations(bob) == []
