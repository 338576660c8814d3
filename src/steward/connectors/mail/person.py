"""Mail from the person to the agent's mailbox (the account a mail channel names): what it
says, and whom it is handed to.

Such a message is the person speaking only when all hold: it arrived on the agent's account
the channel names, its From is the channel's address, and it proves it is theirs by the
channel's check (:mod:`steward.connectors.mail.authenticity`: a DKIM signature of their
domain, or the receiving server's Authentication-Results — or nothing, when the person chose
that for a mailbox only they can write to). A message that fails the check stays an untrusted
``mail.received`` event and the person is told of it. On top of that, a reply to an approval
also needs that approval's signed, unexpired, unused token, which only the mail sent to the
person carries. Everything else that arrives stays an untrusted ``mail.received`` event."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal, Protocol

from steward.connectors.mail.message import addresses, body_text, message_ids, parse
from steward.domain.channel import Channel
from steward.sentinel.replytoken import found_in

TOKEN_HEADER = "X-Steward-Reply-Token"
"""The header an approval mail carries its token in (clients do not copy it into a reply:
the subject and the quoted body carry it back)."""
TEXT_CHARS = 20_000
"""The most of a message's text handed to the agent."""

Decision = Literal["approve", "deny"]
APPROVE = {"approve", "approved", "yes", "y", "ok", "okay", "go", "go ahead", "allow", "accept"}
DENY = {"deny", "denied", "no", "n", "reject", "refuse", "don't", "do not", "stop", "decline"}
SCOPES = {
    "for this task": "task",
    "for the task": "task",
    "always": "always",
    "once": "once",
}


@dataclass(kw_only=True, frozen=True)
class PersonLetter:
    """A message the person wrote to the agent's mailbox."""

    channel: Channel
    """The mail channel it came through."""
    message_id: str
    """Its Message-ID (``<…>``); a made-up one when it had none."""
    sender: str
    """Its From address (the channel's, proven by the channel's check)."""
    subject: str
    """Its subject."""
    text: str
    """Its text without the quoted lines of earlier messages."""
    thread: tuple[str, ...]
    """The Message-IDs it answers (its In-Reply-To, then its References), nearest first."""
    tokens: tuple[tuple[str, str], ...]
    """The reply tokens written in its subject and body (id, signature), each once: a reply
    to an approval mail has one (its quote may repeat it); several different ones decide
    nothing."""


class PersonMail(Protocol):
    """What takes the person's mail (the service's mail channel part)."""

    async def take_person_mail(self, letter: PersonLetter) -> str:
        """Handle one message; what was done, in words (for the log)."""
        ...


def letter_of(channel: Channel, raw: bytes, *, fallback_id: str) -> PersonLetter:
    """The person's message from its bytes."""
    message = parse(raw)
    full = body_text(message)
    subject = " ".join(str(message.get("Subject", "")).split())
    parent = message_ids(message.get("In-Reply-To"))
    refs = tuple(reversed(message_ids(message.get("References"))))
    tokens = tuple(dict.fromkeys([*found_in(subject), *found_in(full)]))
    own = next(iter(message_ids(message.get("Message-ID"))), "") or fallback_id
    sender = next(iter(addresses(message, "From")), "")
    return PersonLetter(
        channel=channel,
        message_id=own,
        sender=sender,
        subject=subject,
        text=unquoted(full)[:TEXT_CHARS],
        thread=tuple(dict.fromkeys([*parent, *refs])),
        tokens=tokens,
    )


QUOTE_INTRO = re.compile(
    r"^(on .+ wrote:|le .+ a écrit\s*:|-----\s*original message\s*-----)$", re.IGNORECASE
)


def unquoted(text: str) -> str:
    """The person's own words: up to the quoted earlier message (``>`` lines, the "On … wrote:"
    line before them) or the signature separator."""
    kept: list[str] = []
    for line in text.splitlines():
        bare = line.strip()
        if bare.startswith(">") or QUOTE_INTRO.match(bare) or line.rstrip() == "--":
            break
        kept.append(line.rstrip())
    return "\n".join(kept).strip()


def decision_in(text: str) -> tuple[Decision, str] | None:
    """What a reply to an approval mail decides, from its first line of its own words:
    ``approve``/``yes``… or ``deny``/``no``… (any case, with trailing punctuation), and for
    an approval the scope ("approve for this task", "approve always"; once by default).
    None when the first line is neither."""
    first = next((line for line in unquoted(text).splitlines() if line.strip()), "")
    words = re.sub(r"[^\w' ]+", " ", first.casefold()).split()
    phrase = " ".join(words)
    for word_set, decision in ((APPROVE, "approve"), (DENY, "deny")):
        for word in sorted(word_set, key=len, reverse=True):
            if phrase == word or phrase.startswith(word + " "):
                rest = phrase[len(word) :].strip()
                if decision == "deny":
                    return "deny", "once"
                if not rest or rest in ("please", "thanks", "thank you"):
                    return "approve", "once"
                scope = SCOPES.get(rest.removesuffix(" please").strip())
                return ("approve", scope) if scope else None
    return None
