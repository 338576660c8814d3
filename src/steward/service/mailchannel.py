"""The facade's mail channel part: the person talks to the agent by e-mail.

A mail channel (:mod:`steward.connectors.mail.channel`) names a connected mail account — the
agent's mailbox —, the person's own address, and how a message from that address proves it is
theirs (:mod:`steward.connectors.mail.authenticity`: a DKIM signature of their domain by
default, the receiving server's Authentication-Results, or — chosen explicitly — nothing). The
mail watch of that account hands every message from that address that proves it to
:meth:`MailChannelService.take_person_mail` (and nothing else: other senders, and mail that
only claims the person's address, stay untrusted ``mail.received`` events). A message there
is, in order:

- a reply to an approval mail, when it carries a reply token: the token is checked (its
  signature, expiry, single use, the approval still waiting with the same arguments, the
  channel it was mailed through) and the first line decides — "approve" or "deny" — through
  :meth:`~steward.service.approvals.ApprovalService.decide_approval`, exactly as the dashboard
  decides, the token spent in the decision's transaction; any failed check changes nothing and
  is answered in a plain sentence;
- a reply in a conversation with the agent: the agent's question or chat turn is answered;
- else a new conversation (a chat task).

:meth:`MailChannelService.mail_answers` mails the agent's answers back, each in its thread.
Each of the person's messages is taken once (its Message-ID is recorded first: a crash right
after loses that one turn rather than taking it twice — the person sees no answer and writes
again).
"""

from __future__ import annotations

import asyncio
import contextlib
from datetime import datetime
from typing import TYPE_CHECKING

import structlog

from steward.connectors.mail.authenticity import DKIM
from steward.domain import Approval, ApprovalStatus, Task, TaskStatus
from steward.domain.channel import Channel, ChannelKind
from steward.domain.ids import new_id
from steward.domain.replytoken import Refusal
from steward.domain.tokens import CONTROL, READ
from steward.errors import ChannelRefused, ChannelUnavailable, NotFound, UsageError
from steward.service.approvals import ApprovalService
from steward.service.connections import ConnectionService
from steward.service.work import WorkService

if TYPE_CHECKING:
    from steward.connectors.mail.person import PersonLetter
    from steward.store.mailchannel import MailConversation

log = structlog.get_logger(__name__)

DECIDED_BY = "e-mail"
"""How decisions made by a reply are recorded."""
REFUSED: dict[Refusal, str] = {
    "unknown": "I do not recognise this approval link; open the dashboard to decide.",
    "forged": "I do not recognise this approval link; open the dashboard to decide.",
    "expired": "This approval link has expired; open the dashboard to decide.",
    "used": "This approval link was used already; open the dashboard to see the decision.",
    "decided": "This approval is no longer waiting for you; open the dashboard to see it.",
    "changed": (
        "What this approval asks has changed since this mail was sent; open the dashboard "
        "to decide."
    ),
    "stranger": "This approval link is not yours to use.",
}
UNCLEAR = (
    'Please reply with "approve" or "deny" on the first line (nothing was decided). '
    "You can also decide in the dashboard."
)
BUSY = (
    "I am still working on your last message in this conversation; I will answer it first. "
    "Write again after my answer."
)


class MailChannelService(WorkService, ApprovalService, ConnectionService):
    """The person's mail channel: adding one, taking their mail, mailing the agent's
    answers."""

    async def add_email_channel(
        self,
        *,
        person_id: str,
        name: str,
        connection: str,
        address: str,
        verify: str = DKIM.text,
    ) -> Channel:
        """A mail channel: the agent writes to ``address`` from the connected mail account
        ``connection`` (its name or id), and takes mail from ``address`` to that account as
        the person's when it proves it by ``verify`` (``dkim``, ``authserv:<id>`` or ``none``:
        see :mod:`steward.connectors.mail.authenticity`). Refused, with nothing stored, when
        the account is not a connected mail account, the address is not one plain address or
        ``verify`` names no check."""
        from steward.connectors.mail.access import KIND
        from steward.connectors.mail.authenticity import sender_check
        from steward.connectors.mail.settings import plain_address

        person_id = self._for(person_id, CONTROL)
        label = name.strip()
        if not label:
            raise UsageError("give the channel a name (for example: email)")
        bare = plain_address(address.strip())
        if bare is None:
            raise UsageError(f'"{address}" is not one plain e-mail address (ana@example.com)')
        check = sender_check(verify)
        account = await self._named(person_id, connection)
        if account.kind != KIND:
            raise UsageError(
                f"{account.name} is not a mail account: name the connected mail account "
                "(IMAP and SMTP) the agent writes from"
            )
        ours = {
            a.casefold()
            for a in (account.settings.get("address"), account.settings.get("username"))
            if isinstance(a, str)
        }
        if bare.casefold() in ours:
            raise UsageError(
                f"{bare} is the agent's own mailbox: give your own address, where the agent "
                "writes to you"
            )
        return await self.store.channels.add(
            Channel(
                id=new_id("chn"),
                person_id=person_id,
                kind=ChannelKind.EMAIL,
                name=label,
                config={"connection": account.id, "address": bare, "verify": check.text},
                created_at=self.clock.now(),
            )
        )

    async def take_person_mail(self, letter: PersonLetter) -> str:
        """Take one message the person wrote to the agent's mailbox (see the module): an
        approval decided by reply, an answer in a conversation, or a new conversation. What
        was done, in words. The mail watch hands over only messages that proved to be from
        the channel's address; the channel is read again and the sender checked against its
        address: a message from anyone else is refused and changes nothing."""
        channel = await self.store.channels.get(letter.channel.id)
        self._for(channel.person_id, CONTROL)
        address = str(channel.config.get("address", "")).casefold()
        if channel.kind is not ChannelKind.EMAIL or not channel.enabled:
            return "not an enabled mail channel: nothing taken"
        if not address or letter.sender.casefold() != address:
            return "not from the channel's address: nothing taken"
        now = self.clock.now()
        if not await self.store.mailchannel.claim_message(
            channel.person_id, letter.message_id, now=now
        ):
            return "taken before"
        await self.store.channels.touch_last_used(channel.id, now)
        try:
            if len(letter.tokens) > 1:
                await self._say(channel, letter, REFUSED["forged"])
                return "several approval links in one reply: nothing decided"
            if letter.tokens:
                return await self._reply_to_approval(channel, letter, now)
            conversation = await self.store.mailchannel.conversation_of(
                channel.person_id, letter.thread
            )
            if conversation is not None:
                return await self._continue(channel, conversation, letter, now)
            return await self._start(channel, letter, now)
        except UsageError as exc:  # too long, say: the person hears why (it is not retried)
            await self._say(channel, letter, f"I could not take this message: {exc}.")
            return f"refused: {exc}"

    async def mail_answers(self, *, person_id: str | None = None) -> int:
        """Mail the agent's new answers in conversations held by mail (a chat reply, a
        question, the result or failure of the request), each as a reply in its thread, once;
        how many were sent. A channel that cannot take one now is tried again next time."""
        from steward.connectors.base import ConnectorEnv
        from steward.connectors.mail.channel import reply_in_thread

        mine = self._mine(READ, person_id)
        env: ConnectorEnv | None = None
        sent = 0
        for conversation in await self.store.mailchannel.conversations(mine):
            try:
                task = await self.store.tasks.get_task(conversation.task_id)
            except NotFound:
                continue
            if task.step_seq <= conversation.mailed_seq:
                continue
            text = _answer_of(task)
            if text is None:
                continue
            env = env or await self._connector_env()
            try:
                channel = await self.store.channels.get(conversation.channel_id)
                message_id = await reply_in_thread(
                    env,
                    channel,
                    key=f"answer:{task.id}:{task.step_seq}",
                    subject=conversation.subject,
                    body=text,
                    answering=conversation.last_message_id,
                    references=conversation.references,
                )
            except (ChannelUnavailable, ChannelRefused, NotFound) as exc:
                log.warning("answer not mailed", task=task.id, error=str(exc))
                continue
            await self.store.mailchannel.mark_mailed(
                task.id, seq=task.step_seq, message_id=message_id, now=self.clock.now()
            )
            sent += 1
        return sent

    # --- the parts ----------------------------------------------------------------------

    async def _reply_to_approval(
        self, channel: Channel, letter: PersonLetter, now: datetime
    ) -> str:
        from steward.connectors.mail.person import decision_in
        from steward.sentinel.replytoken import ReplyTokens, refusal

        [(token_id, given)] = letter.tokens
        tokens = ReplyTokens(store=self.store, vault=await self._vault(), clock=self.clock)
        token = await self.store.mailchannel.get_token(token_id)
        approval: Approval | None = None
        why: Refusal | None
        if token is None:
            why = "unknown"
        elif token.person_id != channel.person_id or token.channel_id != channel.id:
            why = "stranger"  # another person's, or mailed through another of their channels
        else:
            try:
                approval = await self.store.inbox.get_approval(token.approval_id)
            except NotFound:
                approval = None
            why = refusal(
                await tokens.key(token.person_id),
                token,
                given,
                now=now,
                approval_args_hash=approval.args_hash if approval else "",
                approval_pending=approval is not None and approval.status is ApprovalStatus.PENDING,
            )
        decision = decision_in(letter.text)
        if why is None and decision is None:
            await self._say(channel, letter, UNCLEAR)
            return "approval reply unclear: nothing decided"
        if why is not None or approval is None or decision is None:
            await self._say(channel, letter, REFUSED[why or "unknown"])
            return f"approval reply refused ({why})"
        verdict, scope = decision
        try:
            decided = await self.decide_approval(
                approval.id,
                approve=verdict == "approve",
                decided_by=DECIDED_BY,
                scope=scope,
                spend_token=token_id,
            )
        except UsageError as exc:  # spent meanwhile, decided meanwhile, a scope refused
            await self._say(channel, letter, f"Nothing was decided: {exc}.")
            return f"approval reply refused ({exc})"
        said = "Approved" if decided.status is ApprovalStatus.APPROVED else "Denied"
        await self._say(channel, letter, f"{said}: {decided.headline}.")
        return f"approval {decided.id} {decided.status.value} by reply"

    async def _continue(
        self,
        channel: Channel,
        conversation: MailConversation,
        letter: PersonLetter,
        now: datetime,
    ) -> str:
        task = await self.store.tasks.get_task(conversation.task_id)
        if task.status.terminal:  # that request ended: this message starts another
            return await self._start(channel, letter, now)
        await self.store.mailchannel.continue_conversation(
            task.id, message_id=letter.message_id, now=now
        )
        if task.status is not TaskStatus.WAITING or task.wait is None or task.wait.kind != "input":
            await self._say(channel, letter, BUSY)
            return "conversation busy: asked to write again"
        await self.answer_task(task.id, _said(letter))
        return f"answered {task.id} by mail"

    async def _start(self, channel: Channel, letter: PersonLetter, now: datetime) -> str:
        task = await self.ask_agent(
            person_id=channel.person_id, instructions=_said(letter), chat=True
        )
        await self.store.mailchannel.start_conversation(
            task_id=task.id,
            person_id=channel.person_id,
            channel_id=channel.id,
            subject=letter.subject,
            message_id=letter.message_id,
            references=tuple(reversed(letter.thread)),
            now=now,
        )
        return f"conversation {task.id} started by mail"

    async def _say(self, channel: Channel, letter: PersonLetter, text: str) -> None:
        """A short reply to the person's message, in its thread (a failure is logged: the
        decision, if any, stands)."""
        from steward.connectors.mail.channel import reply_in_thread

        try:
            await reply_in_thread(
                await self._connector_env(),
                channel,
                key=f"reply:{letter.message_id}",
                subject=letter.subject,
                body=text,
                answering=letter.message_id,
                references=tuple(reversed(letter.thread)),
            )
        except (ChannelUnavailable, ChannelRefused) as exc:
            log.warning("reply not mailed", channel=channel.id, error=str(exc))


def _said(letter: PersonLetter) -> str:
    """What the person said: their words, else the subject."""
    return letter.text.strip() or letter.subject.strip() or "(an empty message)"


def _answer_of(task: Task) -> str | None:
    """What the agent has to say in a conversation now, if anything."""
    status = task.status
    if status is TaskStatus.WAITING and task.wait is not None and task.wait.kind == "input":
        if (task.wait.ref or "").startswith("q."):
            return None  # a question: delivered as one (the dispatcher), in this thread
        return task.wait.prompt or None
    if status is TaskStatus.SUCCEEDED:
        result = task.result
        text = result.get("text") if isinstance(result, dict) else result
        return str(text) if text else "Done."
    if status.terminal:
        return f"I could not finish this: {task.error or status.value}."
    return None


async def answer_by_mail(svc: MailChannelService, stop: asyncio.Event, every: float = 5.0) -> None:
    """Mail the agent's answers (:meth:`MailChannelService.mail_answers`) every ``every``
    seconds until ``stop`` is set."""
    while not stop.is_set():
        try:
            await svc.mail_answers()
        except Exception as exc:  # the database, most likely: try again next time
            log.warning("mailing answers failed", error=str(exc))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), every)
