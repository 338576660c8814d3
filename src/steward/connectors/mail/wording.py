"""Mail in plain words, for the model and for the person: a message as plain fields (times in
the person's zone), and a proposed call as one sentence ("Send an email to dana@example.test —
"Re: Thursday?" — Hi Dana, Thursday at 10:00 works")."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, tzinfo
from typing import Any

from steward.connectors.mail.message import forward_subject, reply_subject
from steward.connectors.mail.model import Header

DASH = "\N{EM DASH}"
BODY_CHARS = 80
"""How much of a body a summary shows."""
SUBJECT_CHARS = 80
"""How much of a subject a summary shows."""
KINDS = {
    "new": "an email",
    "reply": "a reply",
    "reply_all": "a reply to all:",
    "forward": "a forward",
}
"""What a message of each mode is called in a summary."""


def when(moment: datetime | None, zone: tzinfo) -> str:
    """``Thu 10 Dec 2026, 10:00`` in ``zone``."""
    if moment is None:
        return ""
    local = moment.astimezone(zone)
    return f"{local:%a} {local.day} {local:%b} {local.year}, {local:%H:%M}"


def header_fields(header: Header, zone: tzinfo) -> dict[str, Any]:
    """A listed message as the model reads it; empty fields left out."""
    sender = f"{header.sender_name} <{header.sender}>" if header.sender_name else header.sender
    fields: dict[str, Any] = {
        "message": header.ref.text(),
        "from": sender,
        # where a reply goes is the sender's choice: shown, with the rest of their words
        "reply_to": list(header.reply_to) if header.reply_to != (header.sender,) else [],
        "to": list(header.to),
        "cc": list(header.cc),
        "subject": header.subject,
        "date": when(header.date, zone),
        "unread": header.unread,
        "flagged": header.flagged,
        "has_attachment": header.has_attachment,
        "labels": list(header.keywords),
    }
    return {k: v for k, v in fields.items() if v not in ("", [], False)}


def subject_for(mode: str, subject: str) -> str:
    """The subject a message of ``mode`` (new, reply, reply_all, forward) goes out with."""
    if mode in ("reply", "reply_all"):
        return reply_subject(subject)
    if mode == "forward":
        return forward_subject(subject)
    return subject


def _start_of(text: str, chars: int = BODY_CHARS) -> str:
    line = " ".join(str(text).split())
    if len(line) <= chars:
        return line
    return line[: chars - 1].rsplit(" ", 1)[0] + "…"


def _to(args: Mapping[str, Any]) -> str:
    text = ", ".join(args.get("to") or ()) or "nobody"
    if args.get("cc"):
        text += f" (copy to {', '.join(args['cc'])})"
    return text


def _letter(args: Mapping[str, Any]) -> str:
    subject = _start_of(subject_for(args.get("mode", "new"), args["subject"]), SUBJECT_CHARS)
    text = f'to {_to(args)} {DASH} "{subject}"'
    body = _start_of(args.get("body", ""))
    return f"{text} {DASH} {body}" if body else text


def describe_send(args: Mapping[str, Any]) -> str:
    mode = args.get("mode", "new")
    verb = "Forward an email" if mode == "forward" else f"Send {KINDS[mode]}"
    return f"{verb} {_letter(args)}"


def describe_draft(args: Mapping[str, Any]) -> str:
    return f"Draft {KINDS[args.get('mode', 'new')]} {_letter(args)} (not sent)"


def _emails(args: Mapping[str, Any]) -> str:
    messages: Sequence[str] = args.get("messages") or ()
    count = f"{len(messages)} email{'' if len(messages) == 1 else 's'}"
    return f"{count} from {args['sender']}" if args.get("sender") else count


def describe_archive(args: Mapping[str, Any]) -> str:
    return f"Archive {_emails(args)}"


def describe_move(args: Mapping[str, Any]) -> str:
    return f"Move {_emails(args)} to {args['folder']}"


def describe_mark(args: Mapping[str, Any]) -> str:
    state = {"read": "as read", "unread": "as unread", "flagged": "with a flag"}.get(
        args["mark"], "without a flag"
    )
    return f"Mark {_emails(args)} {state}"


def describe_label(args: Mapping[str, Any]) -> str:
    labels = ", ".join(f'"{label}"' for label in args.get("labels") or ())
    if args.get("remove"):
        return f"Take the label {labels} off {_emails(args)}"
    return f"Label {_emails(args)} {labels}"


def describe_search(args: Mapping[str, Any]) -> str:
    parts = [f"Search {args.get('folder') or 'INBOX'}"]
    if args.get("sender"):
        parts.append(f"for mail from {args['sender']}")
    if args.get("subject"):
        parts.append(f'about "{args["subject"]}"')
    if args.get("text"):
        parts.append(f'mentioning "{args["text"]}"')
    if args.get("unread"):
        parts.append("(unread only)")
    return " ".join(parts)
