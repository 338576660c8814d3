"""What the Matrix channel decides without a server: who hears a room, what a reply to an
approval decides, how a message to the person looks, what a room event says."""

from __future__ import annotations

import hashlib
import html
import re
from dataclasses import dataclass
from typing import Any, Literal

from steward.domain.audience import PRIVATE, Audience, AudienceKind
from steward.domain.channel import OutboundMessage, dashboard_link

REF_FIELD = "org.steward.ref"
"""The field of a message Steward sent naming what it is about (an approval's id, or the id of
the task that asks a question)."""
ARGS_FIELD = "org.steward.args_hash"
"""The field naming the arguments an approval message asked about (their hash)."""

_ROOM_ID = re.compile(r"^!([A-Za-z0-9._-]{1,80}):([A-Za-z0-9.-]{1,40})$")

APPROVE = {"approve", "approved", "yes", "y", "ok", "okay", "go", "go ahead", "allow", "accept"}
DENY = {"deny", "denied", "no", "n", "reject", "refuse", "don't", "do not", "stop", "decline"}
SCOPES = {"for this task": "task", "for the task": "task", "always": "always", "once": "once"}

Decision = Literal["approve", "deny"]


def room_group(room_id: str) -> str:
    """The audience group of a Matrix room (``!abc:example.org`` → ``abc@example.org``); a
    room id that cannot be spelled as a group name gets a name derived from its hash."""
    match = _ROOM_ID.match(room_id)
    if match:
        return f"{match.group(1)}@{match.group(2)}"
    return "matrix-" + hashlib.sha256(room_id.encode()).hexdigest()[:32]


def audience_of(room_id: str, *, members: set[str], bot: str, person: str) -> Audience:
    """Who hears a room: the person alone when its members (joined or invited) are only the
    bot and the person; else everyone in it, the group ``group:<room>``."""
    if members <= {bot, person}:
        return PRIVATE
    return Audience(kind=AudienceKind.GROUP, group=room_group(room_id))


@dataclass(kw_only=True, frozen=True)
class RoomMessage:
    """A text message the person wrote in a room the bot is in."""

    channel_id: str
    """The Matrix channel it came through."""
    room_id: str
    """The room."""
    event_id: str
    """Its event id."""
    sender: str
    """Who wrote it (the person's user id, else it is never handed over)."""
    text: str
    """Their words, without the quoted message a reply carries."""
    reply_to: str | None = None
    """The event it answers, if it is a reply."""
    members: frozenset[str] = frozenset()
    """The room's members (joined or invited) when it was read."""


def own_words(body: str) -> str:
    """A message's own words: without a reply's quoted fallback (``>`` lines)."""
    kept = [line for line in body.splitlines() if not line.startswith(">")]
    return "\n".join(kept).strip()


def reply_target(content: dict[str, Any]) -> str | None:
    """The event a message's content answers (``m.relates_to`` → ``m.in_reply_to``)."""
    relates = content.get("m.relates_to")
    if not isinstance(relates, dict):
        return None
    reply = relates.get("m.in_reply_to")
    if not isinstance(reply, dict):
        return None
    target = reply.get("event_id")
    return target if isinstance(target, str) and target else None


def decision_in(text: str) -> tuple[Decision, str] | None:
    """What a reply to an approval decides, from its first line: ``approve``/``yes``… or
    ``deny``/``no``… (any case, trailing punctuation), and for an approval the scope
    ("approve for this task", "approve always"; once by default). None when it is neither."""
    first = next((line for line in own_words(text).splitlines() if line.strip()), "")
    phrase = " ".join(re.sub(r"[^\w' ]+", " ", first.casefold()).split())
    for words, decision in ((APPROVE, "approve"), (DENY, "deny")):
        for word in sorted(words, key=len, reverse=True):
            if phrase == word or phrase.startswith(word + " "):
                if decision == "deny":
                    return "deny", "once"
                rest = phrase[len(word) :].strip()
                if not rest or rest in ("please", "thanks", "thank you"):
                    return "approve", "once"
                scope = SCOPES.get(rest.removesuffix(" please").strip())
                return ("approve", scope) if scope else None
    return None


def plain_text(message: OutboundMessage, dashboard_url: str | None = None) -> str:
    """A notification as plain text: its title, its body, how to answer an approval, and the
    dashboard page with the details (:func:`~steward.domain.channel.dashboard_link`)."""
    lines = [message.title.strip()]
    if message.body.strip():
        lines += ["", message.body.strip()]
    if message.kind == "approval":
        lines += ["", 'Reply to this message with "approve" or "deny" to decide.']
    elif message.kind == "question" and message.ref:
        lines += ["", "Reply to this message to answer."]
    link = dashboard_link(dashboard_url, message.link)
    if link:
        lines += ["", f"Details in the dashboard: {link}"]
    return "\n".join(lines)


def formatted(text: str, *, title: bool = True) -> str:
    """A plain text as simple HTML: its first line in bold (when ``title``), line breaks kept,
    everything else escaped."""
    lines = [html.escape(line) for line in text.splitlines()]
    if title and lines:
        lines[0] = f"<b>{lines[0]}</b>"
    return "<br>".join(lines)


def text_content(text: str, *, title: bool = False, **extra: str) -> dict[str, Any]:
    """The content of an ``m.text`` message: the plain body, the simple formatted body, and
    Steward's own fields (``extra``, e.g. :data:`REF_FIELD`)."""
    return {
        "msgtype": "m.text",
        "body": text,
        "format": "org.matrix.custom.html",
        "formatted_body": formatted(text, title=title),
        **extra,
    }
