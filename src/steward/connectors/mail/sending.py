"""Writing mail: ``mail_draft`` (a draft in the Drafts folder, ``mail.draft``) and ``mail_send``
(``mail.send``: new, reply, reply-all, forward). Recipients are always explicit arguments, so
the approval shows them; a reply must go to the address the message asks replies to go to, and
a reply-all to exactly its people (less the person), or the call is refused.

Sending is an external effect no SMTP server makes idempotent, so it is made reconcilable:

1. the effect's key becomes the message's ``Message-ID`` (:func:`message_id_for`);
2. before anything goes out, the copy is stored in Sent with the keyword ``$StewardSending``;
3. the message is handed to the SMTP server;
4. once it was accepted, the keyword is taken off (refused for certain: the copy is deleted).

After a crash, the reconcile looks in Sent for that Message-ID: not there — never sent, send
it; there without the keyword — sent; there with the keyword — the crash fell between steps 2
and 4 and nobody can tell whether the server took it. Steward then does not send again on its
own: the effect stays in doubt and the person decides (they can see whether it arrived). When
they decide it did not go out, the next attempt deletes that copy and sends.
"""

from __future__ import annotations

import json
from email.message import EmailMessage
from typing import Annotated, Any, Literal

from pydantic import Field

from steward import sendby
from steward.connectors.base import ConnectionFailed, ConnectorEnv
from steward.connectors.mail import access
from steward.connectors.mail.access import KIND
from steward.connectors.mail.failures import MailError
from steward.connectors.mail.imap import IMAPAccount
from steward.connectors.mail.message import compose, message_id_for, parse
from steward.connectors.mail.model import FolderRole, Header
from steward.connectors.mail.settings import plain_address
from steward.connectors.mail.tools import DRAFT, SEND, Account, checked, refs_of
from steward.connectors.mail.wording import describe_draft, describe_send, subject_for
from steward.domain.actions import EffectClass
from steward.domain.roles import Role
from steward.errors import EffectFailed, NotSent, StewardRuntimeError
from steward.harness.tools import Tool, ToolContext, ToolError, tool

SENDING = "$StewardSending"
"""The keyword on the Sent copy of a message being handed to the SMTP server."""
Mode = Literal["new", "reply", "reply_all", "forward"]

To = Annotated[
    list[str],
    Role.RECIPIENT,
    Field(min_length=1, description="each recipient's plain address (dana@example.com)"),
]
Cc = Annotated[
    list[str] | None, Role.RECIPIENT, Field(description="plain addresses to send a copy to")
]
Subject = Annotated[
    str, Role.FREE_TEXT, Field(description="the subject (Re:/Fwd: is added for a reply/forward)")
]
Body = Annotated[str, Role.CONTENT, Field(description="the text of the message")]
Answering = Annotated[
    str | None,
    Role.IDENTIFIER,
    Field(description="for a reply or forward: the message, as mail_search gave it"),
]


class SendInDoubt(StewardRuntimeError):
    """An earlier attempt of this send may have reached the SMTP server: it is not sent again
    without the person."""


def _addresses(values: list[str]) -> list[str]:
    out = []
    for value in values:
        bare = plain_address(value)
        if bare is None:
            raise ToolError(f'"{value}" is not one plain address (dana@example.com)')
        out.append(bare)
    return out


def _expected(mode: Mode, header: Header, me: str) -> set[str]:
    """Whom a reply (all) to ``header`` goes to."""
    people = set(header.reply_to)
    if mode == "reply_all":
        people |= set(header.to) | set(header.cc)
    return (people - {me}) or set(header.reply_to)


def _same(subject: str) -> str:
    return " ".join(subject.split()).casefold()


def _result(message: EmailMessage) -> dict[str, Any]:
    return {
        "message_id": str(message["Message-ID"]),
        "to": str(message["To"]),
        **({"cc": str(message["Cc"])} if message["Cc"] else {}),
        "subject": str(message["Subject"]),
    }


async def _checked_letter(
    acct: IMAPAccount, args: dict[str, Any], message_id: str, ctx: ToolContext
) -> tuple[EmailMessage, list[str]]:
    """The message the call describes and its recipients, checked against the message it
    answers or forwards."""
    mode: Mode = args["mode"]
    to, cc = _addresses(args["to"]), _addresses(args.get("cc") or [])
    original: EmailMessage | None = None
    if mode != "new":
        if not args.get("message"):
            raise ToolError(f"a {mode.replace('_', '-')} names the message it answers")
        refs = refs_of([args["message"]])
        [header] = await checked(acct, refs, None)
        original = parse(await acct.raw(refs[0]))
        if _same(subject_for(mode, args["subject"])) != _same(subject_for(mode, header.subject)):
            # the approval names the message answered or forwarded by its subject: it must be
            # that message's
            raise ToolError(
                f"a {mode.replace('_', '-')} keeps the subject of the message it answers or "
                "forwards: give its subject as mail_search gave it"
            )
        if mode in ("reply", "reply_all"):
            expected = _expected(mode, header, acct.settings.sender)
            if set(to) | set(cc) != expected:
                # the addresses are the sender's words: the model reads them in the message
                # (reply_to, to, cc), not in an error
                whom = "its reply_to (else its from)"
                if mode == "reply_all":
                    whom += ", its to and its cc, less you"
                raise ToolError(
                    f"a {mode.replace('_', '-')} to that message goes to exactly {whom}: "
                    "name them in to and cc"
                )
    message = compose(
        sender=acct.settings.from_header,
        to=to,
        cc=cc,
        subject=subject_for(mode, args["subject"]),
        body=args["body"],
        message_id=message_id,
        date=ctx.now,
        answering=original if mode in ("reply", "reply_all") else None,
        forwarding=original if mode == "forward" else None,
    )
    return message, to + cc


def sending_tools(env: ConnectorEnv) -> list[Tool]:
    """``mail_draft`` and ``mail_send``, bound to ``env``."""

    async def reconcile_send(
        key: str, args: dict[str, Any], ctx: ToolContext
    ) -> tuple[bool, Any] | None:
        try:
            _, acct = await access.mailbox_for(env, ctx.person_id, args.get("account"))
        except EffectFailed:
            return None  # the connection is gone: the person decides
        async with acct:
            try:
                sent = await acct.folder(FolderRole.SENT)
                found = await acct.find(sent, message_id_for(key, acct.settings.sender))
            except MailError:
                return None
            if not found:
                return False, None
            if any(SENDING in flags for _, flags in found):
                return None  # stored, then the crash: whether the server took it is unknown
            raw = await acct.raw(found[0][0])
        return True, _result(parse(raw))

    @tool(
        connector=KIND,
        effect=EffectClass.EXTERNAL,
        scopes=[SEND],
        reconcile=reconcile_send,
        summarize=describe_send,
    )
    async def mail_send(
        ctx: ToolContext,
        to: To,
        subject: Subject,
        body: Body,
        cc: Cc = None,
        mode: Mode = "new",
        message: Answering = None,
        account: Account = None,
    ) -> dict[str, Any]:
        """Send an email: a new one, a reply, a reply to all, or a forward (the message named
        is attached). A copy is kept in Sent."""
        args = {"to": to, "cc": cc, "subject": subject, "body": body}
        args |= {"mode": mode, "message": message}
        connection, acct = await access.mailbox_for(env, ctx.person_id, account)
        async with acct:
            sent = await acct.folder(FolderRole.SENT)
            message_id = message_id_for(ctx.idempotency_key, acct.settings.sender)
            earlier = await acct.find(sent, message_id)
            done = [ref for ref, flags in earlier if SENDING not in flags]
            if done:
                return _result(parse(await acct.raw(done[0])))
            if earlier:
                # The runtime reconciles an attempt before calling again, and leaves a copy
                # still marked as being sent in doubt: reaching here with one means the person
                # decided it did not go out (or the server refused it for certain and the copy
                # could not be deleted). It goes, this once.
                await acct.delete([ref for ref, _ in earlier])
            letter, recipients = await _checked_letter(acct, args, message_id, ctx)
            sendby.check()  # stored only when it may still be sent in time
            await acct.append(sent, letter.as_bytes(), [SENDING, "\\Seen"], ctx.now)
            try:
                refused = await access.send(env, connection, letter, recipients)
            except (MailError, ConnectionFailed, NotSent) as exc:
                # nothing went out for certain (the server refused it, the vault or the send
                # deadline stopped it first): no copy is kept
                await acct.delete([ref for ref, _ in await acct.find(sent, message_id)])
                if isinstance(exc, NotSent):
                    raise
                raise ToolError(str(exc)) from None
            copies = await acct.find(sent, message_id)
            await acct.flag([ref for ref, _ in copies], [SENDING], add=False)
            result = _result(letter)
            return result | ({"refused": list(refused)} if refused else {})

    @tool(connector=KIND, effect=EffectClass.LOCAL, scopes=[DRAFT], summarize=describe_draft)
    async def mail_draft(
        ctx: ToolContext,
        to: To,
        subject: Subject,
        body: Body,
        cc: Cc = None,
        mode: Mode = "new",
        message: Answering = None,
        account: Account = None,
    ) -> dict[str, Any]:
        """Write a draft into the Drafts folder for the person to finish and send (a new
        message, a reply, a reply to all, or a forward). Nothing is sent."""
        args = {"to": to, "cc": cc, "subject": subject, "body": body}
        args |= {"mode": mode, "message": message}
        _, acct = await access.mailbox_for(env, ctx.person_id, account)
        async with acct:
            drafts = await acct.folder(FolderRole.DRAFTS)
            # the same draft asked twice by one task (a retried step) is stored once
            key = f"draft:{ctx.task_id}:{json.dumps(args, sort_keys=True)}"
            message_id = message_id_for(key, acct.settings.sender)
            letter, _ = await _checked_letter(acct, args, message_id, ctx)
            if not await acct.find(drafts, message_id):
                await acct.append(drafts, letter.as_bytes(), ["\\Draft", "\\Seen"], ctx.now)
            return _result(letter) | {"folder": drafts}

    return [mail_draft, mail_send]
