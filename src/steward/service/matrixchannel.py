"""The facade's Matrix part: the person talks to the agent in Matrix rooms.

A Matrix channel (:mod:`steward.connectors.matrix`) names the agent's bot account (its
homeserver, its user id, its access token kept in the vault), the person's own user id and the
direct room of the two, where notifications go. The listener
(:class:`~steward.connectors.matrix.listen.MatrixListener`) hands every message the person writes
in a room the bot is in to :meth:`MatrixChannelService.take_matrix_message`, which takes it as:

- a reply to a question Steward sent (it names the task that asks): its answer;
- a reply to an approval message Steward sent (it names the approval): "approve" or "deny"
  decides it through :meth:`~steward.service.approvals.ApprovalService.decide_approval`, with
  the same scopes as the dashboard, when the approval is the person's, still waiting and asks
  the same as when it was sent; otherwise a plain sentence says why nothing was decided;
- else a turn of the room's conversation with the agent (a chat task), whose audience is the
  room's: the person alone in the direct room, ``group:<room>`` in a room with anyone else,
  so what the agent keeps private is not disclosed there. A room whose audience changed (someone
  joined) starts a new conversation.

:meth:`MatrixChannelService.matrix_answers` posts the agent's answers in their rooms, once each;
an answer of a private conversation is not posted in a room someone else has joined since (a
sentence says where to read it).
What others write in a room is never handed over: it is not the person's word.
"""

from __future__ import annotations

import hashlib
import re
from typing import TYPE_CHECKING, Any

import structlog

from steward.domain import Approval, ApprovalStatus, Task, TaskStatus
from steward.domain.audience import PRIVATE, Audience
from steward.domain.channel import Channel, ChannelKind
from steward.domain.ids import new_id
from steward.domain.tokens import CONTROL
from steward.errors import ChannelRefused, ChannelUnavailable, NotFound, UsageError
from steward.service.approvals import ApprovalService
from steward.service.connections import ConnectionService
from steward.service.work import WorkService

if TYPE_CHECKING:
    from steward.connectors.matrix.client import BotAccount
    from steward.connectors.matrix.room import RoomMessage

log = structlog.get_logger(__name__)

DECIDED_BY = "Matrix"
"""How decisions made by a reply in a room are recorded."""
USER_ID = re.compile(r"^@[A-Za-z0-9._=/+-]{1,200}:[A-Za-z0-9.-]{1,200}(:\d{1,5})?$")
UNCLEAR = (
    'Please reply to the approval with "approve" or "deny" (nothing was decided). '
    "You can also decide in the dashboard."
)
BUSY = "I am still working on your last message here; I will answer it first."
UNKNOWN = "I do not recognise this approval; open the dashboard to decide."
CHANGED = "What this approval asks has changed since I wrote; open the dashboard to decide."
NOT_ALONE = (
    "I have an answer to your private question, but someone else is in this room now, so I "
    "will not post it here; read it in the dashboard."
)


class MatrixChannelService(WorkService, ApprovalService, ConnectionService):
    """The person's Matrix channel: adding one, taking their messages, posting the agent's
    answers."""

    async def add_matrix_channel(
        self,
        *,
        person_id: str,
        name: str,
        homeserver: str,
        user: str,
        person: str,
        token: str,
        room: str | None = None,
    ) -> Channel:
        """A Matrix channel: the bot ``user`` on ``homeserver`` (signed in with its access
        ``token``, kept in the vault) talks with ``person`` (their user id) in ``room`` — a
        room both are in — or, when none is given, in a new direct room it invites them to.
        The token is checked with the homeserver first; anything wrong is refused with nothing
        stored."""
        from steward.connectors.matrix.client import BotAccount, homeserver_host

        person_id = self._for(person_id, CONTROL)
        label = name.strip()
        if not label:
            raise UsageError("give the channel a name (for example: matrix)")
        for who, what in ((user, "--user (the bot)"), (person, "--person (you)")):
            if not USER_ID.match(who.strip()):
                raise UsageError(f'{what} "{who}" is not a Matrix user id (@name:example.org)')
        user, person = user.strip(), person.strip()
        if user == person:
            raise UsageError("the bot and you need two different Matrix accounts")
        if not token.strip():
            raise UsageError("give the bot's access token (on standard input)")
        try:
            host, _ = homeserver_host(homeserver.strip())
        except ChannelRefused as exc:
            raise UsageError(str(exc)) from exc
        account = BotAccount(homeserver=homeserver.strip(), user_id=user, token=token.strip())
        try:
            room_id = await _checked_room(account, person, room.strip() if room else None)
        except (ChannelRefused, ChannelUnavailable) as exc:
            raise UsageError(f"Nothing was added: {exc}") from exc
        channel_id = new_id("chn")
        secret = f"matrix-{channel_id}"
        await self.store.secrets.put_secret(
            person_id=person_id,
            name=secret,
            ciphertext=(await self._vault()).encrypt(account.token),
            hosts=[host],
            now=self.clock.now(),
            actor=self._decider("person"),
        )
        config = {
            "homeserver": account.homeserver,
            "user": user,
            "person": person,
            "room": room_id,
            "secret": secret,
        }
        try:
            return await self.store.channels.add(
                Channel(
                    id=channel_id,
                    person_id=person_id,
                    kind=ChannelKind.MATRIX,
                    name=label,
                    config=config,
                    created_at=self.clock.now(),
                )
            )
        except BaseException:
            await self.store.secrets.delete_secret(person_id, secret, now=self.clock.now())
            raise

    async def take_matrix_message(self, message: RoomMessage) -> str:
        """Take one message the person wrote in a room (see the module): an approval decided
        by reply, or a turn of the room's conversation. What was done, in words. The channel
        is read again and the sender checked against the person's user id: a message from
        anyone else changes nothing."""
        from steward.connectors.matrix.room import REF_FIELD, audience_of

        channel = await self.store.channels.get(message.channel_id)
        self._for(channel.person_id, CONTROL)
        if channel.kind is not ChannelKind.MATRIX or not channel.enabled:
            return "not an enabled Matrix channel: nothing taken"
        bot, person = str(channel.config.get("user")), str(channel.config.get("person"))
        if message.sender != person:
            return "not the person's message: nothing taken"
        now = self.clock.now()
        await self.store.channels.touch_last_used(channel.id, now)
        if message.reply_to is not None:
            try:
                target = await self._event(channel, message.room_id, message.reply_to)
            except (ChannelUnavailable, ChannelRefused) as exc:  # not a turn: it may be a decision
                log.warning("replied-to message not read", channel=channel.id, error=str(exc))
                return "the message it answers could not be read: nothing taken"
            if target is not None and target[0] == bot and REF_FIELD in target[1]:
                ref = str(target[1][REF_FIELD])
                if ref.startswith(("q.", "tsk_")):
                    return await self._answer_question(channel, message, ref)
                return await self._decide(channel, message, target[1])
        audience = audience_of(
            message.room_id, members=set(message.members), bot=bot, person=person
        )
        return await self._converse(channel, message, audience)

    async def matrix_answers(self, *, channel_id: str) -> int:
        """Post the agent's new answers in the channel's conversations (a chat reply, a
        question, the result or failure of the request), each in its room, once; how many.
        A homeserver that cannot take one now is tried again next time."""
        channel = await self.store.channels.get(channel_id)
        self._for(channel.person_id, CONTROL)
        if channel.kind is not ChannelKind.MATRIX or not channel.enabled:
            return 0
        posted = 0
        for room_id, held in _rooms(channel).items():
            try:
                task = await self.store.tasks.get_task(str(held.get("task")))
            except NotFound:
                continue
            if task.step_seq <= int(held.get("seq", 0)):
                continue
            text = _answer_of(task)
            if text is None:
                continue
            key = f"answer:{task.id}:{task.step_seq}"
            try:
                if held.get("audience") == str(PRIVATE) and not await self._alone(channel, room_id):
                    text = NOT_ALONE  # the answer may tell what is private
                await self._post(channel, room_id, text, key=key)
            except (ChannelUnavailable, ChannelRefused) as exc:
                log.warning("answer not posted", task=task.id, error=str(exc))
                continue
            await self._keep(channel.id, room_id, {**held, "seq": task.step_seq})
            posted += 1
        return posted

    # --- the parts ----------------------------------------------------------------------

    async def _decide(self, channel: Channel, message: RoomMessage, sent: dict[str, Any]) -> str:
        from steward.connectors.matrix.room import ARGS_FIELD, REF_FIELD, decision_in

        decision = decision_in(message.text)
        approval: Approval | None
        try:
            approval = await self.store.inbox.get_approval(str(sent.get(REF_FIELD)))
        except NotFound:
            approval = None
        if approval is None or approval.person_id != channel.person_id:
            await self._reply(channel, message, UNKNOWN)
            return "approval reply refused (unknown)"
        if approval.status is not ApprovalStatus.PENDING:
            said = "approved" if approval.status is ApprovalStatus.APPROVED else "not approved"
            await self._reply(
                channel, message, f"This was already decided ({said}): {approval.headline}."
            )
            return "approval reply refused (already decided)"
        if sent.get(ARGS_FIELD) != approval.args_hash:
            await self._reply(channel, message, CHANGED)
            return "approval reply refused (changed)"
        if decision is None:
            await self._reply(channel, message, UNCLEAR)
            return "approval reply unclear: nothing decided"
        verdict, scope = decision
        try:
            decided = await self.decide_approval(
                approval.id, approve=verdict == "approve", decided_by=DECIDED_BY, scope=scope
            )
        except UsageError as exc:  # decided meanwhile, a scope refused
            await self._reply(channel, message, f"Nothing was decided: {exc}.")
            return f"approval reply refused ({exc})"
        said = "Approved" if decided.status is ApprovalStatus.APPROVED else "Denied"
        await self._reply(channel, message, f"{said}: {decided.headline}.")
        return f"approval {decided.id} {decided.status.value} in Matrix"

    async def _answer_question(self, channel: Channel, message: RoomMessage, ref: str) -> str:
        """The person's reply to a question a task asked (``q.<task>.<step>``, the question's
        own reference, or the task's id): its answer, when the task still waits for it. The
        task's later answers are posted in this room (it becomes the room's conversation)."""
        asked = ref.split(".")[1] if ref.startswith("q.") and ref.count(".") == 2 else None
        task_id = asked or ref
        try:
            task = await self.store.tasks.get_task(task_id)
        except NotFound:
            task = None
        if task is None or task.person_id != channel.person_id:
            await self._reply(channel, message, "I do not recognise this question.")
            return "question reply refused (unknown)"
        wait = task.wait
        if (
            task.status is not TaskStatus.WAITING
            or wait is None
            or wait.kind != "input"
            or (asked is not None and wait.ref != ref)  # it asks something else now
        ):
            await self._reply(channel, message, "This question is no longer waiting for an answer.")
            return "question reply refused (not waiting)"
        await self.answer_task(task.id, message.text or "(an empty message)")
        await self._keep(
            channel.id,
            message.room_id,
            {"task": task.id, "seq": task.step_seq, "audience": str(Audience.of_task(task.input))},
        )
        return f"question of {task.id} answered in Matrix"

    async def _converse(self, channel: Channel, message: RoomMessage, audience: Audience) -> str:
        held = _rooms(channel).get(message.room_id)
        said = message.text or "(an empty message)"
        if held is not None and held.get("audience") == str(audience):
            try:
                task: Task | None = await self.store.tasks.get_task(str(held.get("task")))
            except NotFound:
                task = None
            if task is not None and not task.status.terminal:
                waiting = task.status is TaskStatus.WAITING and task.wait is not None
                if not waiting or task.wait is None or task.wait.kind != "input":
                    await self._reply(channel, message, BUSY)
                    return "conversation busy: asked to wait"
                await self.answer_task(task.id, said)
                return f"answered {task.id} in Matrix"
        task = await self.ask_agent(
            person_id=channel.person_id, instructions=said, chat=True, audience=audience
        )
        await self._keep(
            channel.id, message.room_id, {"task": task.id, "seq": 0, "audience": str(audience)}
        )
        return f"conversation {task.id} started in Matrix ({audience})"

    async def _keep(self, channel_id: str, room_id: str, held: dict[str, Any]) -> None:
        """Record a room's conversation in the channel (read again: the sync position is
        kept there too)."""
        current = await self.store.channels.get(channel_id)
        rooms = {**_rooms(current), room_id: held}
        await self.store.channels.update_config(channel_id, {**current.config, "rooms": rooms})

    async def _event(
        self, channel: Channel, room_id: str, event_id: str
    ) -> tuple[str, dict[str, Any]] | None:
        from steward.connectors.matrix.client import bot_account, connected, room_event

        account = await bot_account(await self._connector_env(), channel)
        async with connected(account) as client:
            return await room_event(client, room_id, event_id)

    async def _alone(self, channel: Channel, room_id: str) -> bool:
        """Whether only the bot and the person are in the room now (joined or invited)."""
        from steward.connectors.matrix.client import bot_account, connected, room_members

        alone = {str(channel.config.get("user")), str(channel.config.get("person"))}
        account = await bot_account(await self._connector_env(), channel)
        async with connected(account) as client:
            return await room_members(client, room_id) <= alone

    async def _post(
        self, channel: Channel, room_id: str, text: str, *, key: str, reply_to: str = ""
    ) -> str:
        from steward.connectors.matrix.client import bot_account, connected, send_text
        from steward.connectors.matrix.room import text_content

        content = text_content(text)
        if reply_to:
            content["m.relates_to"] = {"m.in_reply_to": {"event_id": reply_to}}
        account = await bot_account(await self._connector_env(), channel)
        async with connected(account) as client:
            return await send_text(client, room_id, content, txn=_txn(key))

    async def _reply(self, channel: Channel, message: RoomMessage, text: str) -> None:
        """A short answer to the person's message, in its room (a failure is logged: the
        decision, if any, stands)."""
        try:
            await self._post(
                channel,
                message.room_id,
                text,
                key=f"reply:{message.event_id}",
                reply_to=message.event_id,
            )
        except (ChannelUnavailable, ChannelRefused) as exc:
            log.warning("reply not posted", channel=channel.id, error=str(exc))


async def _checked_room(account: BotAccount, person: str, room: str | None) -> str:
    """The room the channel talks in: ``room`` (joined; the person must be in it, and no one
    else), else a new direct room with the person invited. The token must be the bot's."""
    from steward.connectors.matrix.client import checked, connected, reaching, room_members

    async with connected(account) as client:
        async with reaching("check the bot's account"):
            whoami = checked(await client.whoami(), "accept the bot's access token")
        if whoami.user_id != account.user_id:
            raise ChannelRefused(f"the access token is {whoami.user_id}'s, not {account.user_id}'s")
        if room is None:
            import nio  # only here: importing it costs every command ~150 ms

            async with reaching("create a room"):
                made = checked(
                    await client.room_create(
                        is_direct=True,
                        preset=nio.RoomPreset.trusted_private_chat,
                        invite=[person],
                        name="Steward",
                    ),
                    "create a direct room",
                )
            return str(made.room_id)
        async with reaching("join the room"):
            checked(await client.join(room), f"let the bot join {room}")
        members = await room_members(client, room)
        if person not in members:
            raise ChannelRefused(f"{person} is not in the room {room}: invite them first")
        if not members <= {account.user_id, person}:
            raise ChannelRefused(
                f"someone else is in the room {room}, and what Steward tells you there is for "
                "you alone: give a room of just you and the bot, or no room (a new one is made)"
            )
        return room


def _rooms(channel: Channel) -> dict[str, dict[str, Any]]:
    rooms = channel.config.get("rooms")
    return dict(rooms) if isinstance(rooms, dict) else {}


def _txn(key: str) -> str:
    """A transaction id for a message (the same for every try of it)."""
    return hashlib.sha256(f"steward:{key}".encode()).hexdigest()[:32]


def _answer_of(task: Task) -> str | None:
    """What the agent has to say in a conversation now, if anything."""
    status = task.status
    if status is TaskStatus.WAITING and task.wait is not None and task.wait.kind == "input":
        return task.wait.prompt or None
    if status is TaskStatus.SUCCEEDED:
        result = task.result
        text = result.get("text") if isinstance(result, dict) else result
        return str(text) if text else "Done."
    if status.terminal:
        return f"I could not finish this: {task.error or status.value}."
    return None
