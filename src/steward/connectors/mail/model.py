"""Mail as the connector sees it: a message's headers as listed (bodies are fetched on demand),
the folders of a mailbox, and how a message is named to the model."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum


class FolderRole(StrEnum):
    """What a folder is for (its SPECIAL-USE flag, RFC 6154)."""

    INBOX = "inbox"
    SENT = "sent"
    DRAFTS = "drafts"
    ARCHIVE = "archive"
    TRASH = "trash"
    JUNK = "junk"
    ALL = "all"
    """Gmail's All Mail."""


@dataclass(kw_only=True, frozen=True)
class Folder:
    """One folder of the mailbox."""

    name: str
    """Its name on the server (``INBOX``, ``[Gmail]/Sent Mail``)."""
    role: FolderRole | None = None
    """What it is for, when the server says (or the settings name it)."""


@dataclass(kw_only=True, frozen=True)
class MessageRef:
    """Where one message is: its folder, the folder's UIDVALIDITY and its UID. Written for the
    model as ``<folder>/<uidvalidity>/<uid>`` (:meth:`text`)."""

    folder: str
    """The folder it is in."""
    uidvalidity: int
    """The folder's UIDVALIDITY when it was listed: a UID means nothing under another."""
    uid: int
    """Its UID in the folder."""

    def text(self) -> str:
        return f"{self.folder}/{self.uidvalidity}/{self.uid}"

    @classmethod
    def parse(cls, text: str) -> MessageRef:
        """Read :meth:`text` back; ValueError in plain words when it is not one."""
        folder, _, rest = text.strip().rpartition("/")
        folder, _, validity = folder.rpartition("/")
        if not folder or not validity.isdigit() or not rest.isdigit():
            raise ValueError(
                f'"{text}" is not a message as mail_search gives it (INBOX/1234/56)'
            ) from None
        return cls(folder=folder, uidvalidity=int(validity), uid=int(rest))


@dataclass(kw_only=True, frozen=True)
class Header:
    """A message as listed: its headers, flags and whether it has attachments; no body."""

    ref: MessageRef
    """Where it is."""
    message_id: str
    """Its Message-ID (``<…@…>``); empty when it has none."""
    sender: str
    """The address it is from (lower-cased domain); empty when unreadable."""
    sender_name: str
    """The name shown beside that address."""
    reply_to: tuple[str, ...]
    """Where replies go (its Reply-To, else its From)."""
    to: tuple[str, ...]
    """Its To addresses."""
    cc: tuple[str, ...]
    """Its Cc addresses."""
    subject: str
    """Its subject."""
    date: datetime | None
    """When it was sent (its Date), else when the server received it."""
    unread: bool
    """Not yet seen."""
    flagged: bool
    """Flagged (starred)."""
    keywords: tuple[str, ...]
    """Its other keywords (and Gmail labels)."""
    has_attachment: bool
    """One of its parts is an attachment."""
    size: int
    """Its size in bytes, as the server counts it (RFC822.SIZE)."""
    in_reply_to: str
    """The Message-ID it answers, if any."""
    references: tuple[str, ...]
    """The Message-IDs of the thread before it."""
