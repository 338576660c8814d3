"""Messages read and written with the standard library's ``email`` package: a fetched message
parsed (its text, HTML reduced to readable text by ``html2text``, its attachments), and a new
message composed with the threading headers a reply or a forward needs.

A message Steward sends has a deterministic Message-ID derived from the effect's key, so the
copy in Sent tells a reconcile whether that send happened.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
import uuid
from collections.abc import Sequence
from datetime import datetime
from email import policy
from email.errors import HeaderParseError
from email.header import decode_header, make_header
from email.message import EmailMessage, Message
from email.parser import BytesHeaderParser, BytesParser
from email.utils import format_datetime, getaddresses, parsedate_to_datetime

SNIPPET_CHARS = 200
NAME_BYTES = 200
"""The longest attachment file name saved (bytes: most file systems allow 255)."""
RE_PREFIX = re.compile(r"^\s*(re|aw|sv|antw)\s*:\s*", re.IGNORECASE)
FWD_PREFIX = re.compile(r"^\s*(fwd?|wg|tr)\s*:\s*", re.IGNORECASE)


def parse(raw: bytes) -> EmailMessage:
    """A fetched message (RFC 5322 bytes) as an :class:`EmailMessage`."""
    parsed = BytesParser(policy=policy.default).parsebytes(raw)
    assert isinstance(parsed, EmailMessage)
    return parsed


_HEADERS = BytesHeaderParser(policy=policy.compat32)


def headers_only(raw: bytes) -> Message:
    """A message's header section, parsed lazily (as text: many times faster than the
    default policy's header objects, for listing thousands)."""
    return _HEADERS.parsebytes(raw)


def decoded(value: object) -> str:
    """A header's text with its encoded words (RFC 2047) decoded."""
    text = str(value or "")
    try:
        return str(make_header(decode_header(text)))
    except (HeaderParseError, LookupError, UnicodeError):
        return text


def sent_at(message: Message) -> datetime | None:
    """Its Date, when it has a readable one with an offset."""
    try:
        moment = parsedate_to_datetime(str(message.get("Date", "")))
    except (TypeError, ValueError, IndexError):
        return None
    return moment if moment.tzinfo is not None else None


def addresses(message: Message, *names: str) -> tuple[str, ...]:
    """The plain addresses in the headers ``names`` (lower-cased domains), in order, once."""
    found: list[str] = []
    for name in names:
        for value in message.get_all(name, []):
            for _, address in getaddresses([str(value)]):
                local, at, domain = address.rpartition("@")
                if at and local:
                    found.append(f"{local}@{domain.lower()}")
    return tuple(dict.fromkeys(found))


def sender_name(message: Message) -> str:
    pairs = getaddresses([str(message.get("From", ""))])
    return decoded(pairs[0][0]) if pairs else ""


def message_ids(value: object) -> tuple[str, ...]:
    """The Message-IDs (``<…>``) in a References or In-Reply-To header's text."""
    return tuple(re.findall(r"<[^<>\s]+>", str(value or "")))


def html_text(html: str) -> str:
    """HTML as readable text (links kept as text, images dropped, no line wrapping)."""
    import html2text  # here: every command imports this module through the facade

    converter = html2text.HTML2Text()
    converter.body_width = 0
    converter.ignore_images = True
    return converter.handle(html).strip()


def body_text(message: EmailMessage) -> str:
    """The message's text: its plain part, else its HTML part as text."""
    part = message.get_body(preferencelist=("plain", "html"))
    if part is None:
        return ""
    content = part.get_content()
    text = content if isinstance(content, str) else content.decode(errors="replace")
    return html_text(text) if part.get_content_subtype() == "html" else text.strip()


def snippet(message: EmailMessage) -> str:
    """The start of its text on one line."""
    line = " ".join(body_text(message).split())
    return line if len(line) <= SNIPPET_CHARS else line[: SNIPPET_CHARS - 1] + "…"


def attachments(message: EmailMessage) -> list[tuple[str, str, bytes]]:
    """Its attachments: (file name as given, content type, bytes)."""
    found = []
    for index, part in enumerate(message.iter_attachments(), start=1):
        payload = part.get_payload(decode=True)
        if not isinstance(payload, bytes):  # an attached message: keep it as .eml
            payload = part.as_bytes() if part.is_multipart() else b""
        name = part.get_filename() or f"attachment-{index}"
        found.append((name, part.get_content_type(), payload))
    return found


def safe_name(name: str) -> str:
    """A file name others chose, made safe to write: its last path component, no control or
    invisible characters, no leading dots, at most :data:`NAME_BYTES` bytes as UTF-8 (file
    systems count bytes: 120 CJK characters are too long for most)."""
    base = unicodedata.normalize("NFKC", name).replace("\\", "/").rpartition("/")[2]
    kept = "".join(c for c in base if unicodedata.category(c)[0] != "C").strip().lstrip(".")
    kept = re.sub(r"\s+", " ", kept)
    if not kept:
        return "attachment"
    stem, dot, ext = kept.rpartition(".")
    if len(kept.encode()) > NAME_BYTES:
        if not (dot and len(ext.encode()) <= 10):
            stem, dot, ext = kept, "", ""
        room = NAME_BYTES - len((dot + ext).encode())
        # cut at a character boundary: drop the bytes of a character cut in half
        stem = stem.encode()[:room].decode(errors="ignore").rstrip()
        kept = stem + dot + ext
    return kept


def message_id_for(key: str | None, sender: str) -> str:
    """The Message-ID of a message an effect sends: the same for every attempt of that effect,
    at the sender's domain."""
    domain = sender.rpartition("@")[2] or "steward.invalid"
    token = uuid.uuid4().hex if key is None else hashlib.sha256(key.encode()).hexdigest()[:32]
    return f"<{token}.steward@{domain}>"


def reply_subject(subject: str) -> str:
    """``Re: <subject>``, once."""
    return subject if RE_PREFIX.match(subject) else f"Re: {subject}".strip()


def forward_subject(subject: str) -> str:
    """``Fwd: <subject>``, once."""
    return subject if FWD_PREFIX.match(subject) else f"Fwd: {subject}".strip()


def compose(
    *,
    sender: object,
    to: Sequence[str],
    cc: Sequence[str],
    subject: str,
    body: str,
    message_id: str,
    date: datetime,
    answering: EmailMessage | None = None,
    forwarding: EmailMessage | None = None,
) -> EmailMessage:
    """A new message. ``answering``: the message it replies to (In-Reply-To and References
    follow it); ``forwarding``: a message attached whole (``message/rfc822``)."""
    message = EmailMessage(policy=policy.SMTP)
    message["From"] = sender
    message["To"] = ", ".join(to)
    if cc:
        message["Cc"] = ", ".join(cc)
    message["Subject"] = subject
    message["Date"] = format_datetime(date)
    message["Message-ID"] = message_id
    if answering is not None:
        # its Message-ID as for References: the header may be encoded words that decode to
        # a line break and more headers
        parent = next(iter(message_ids(answering.get("Message-ID"))), "")
        chain = list(message_ids(answering.get("References")))
        if not chain:
            chain = list(message_ids(answering.get("In-Reply-To")))
        if parent:
            message["In-Reply-To"] = parent
            message["References"] = " ".join([*chain, parent])
    message.set_content(body)
    if forwarding is not None:
        message.add_attachment(forwarding)
    return message
