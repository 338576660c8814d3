"""One statement of a bulk import (a chat history, a mailbox, notes kept elsewhere), before it is
remembered: what :meth:`~steward.memory.book.MemoryBook.write_many` takes, item by item."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from steward.domain.audience import PRIVATE, Audience
from steward.domain.memory import MemoryKind


@dataclass(kw_only=True, frozen=True)
class MemoryItem:
    """A statement to remember, with when it was said and where it came from in its import."""

    content: str
    """The statement, in words."""
    kind: MemoryKind = MemoryKind.NOTE
    """Preference, fact, relationship, decision, episode or note."""
    subjects: tuple[str, ...] = ()
    """The people, places and things it is about."""
    slot: str | None = None
    """What it is the value of (``home_city``): a later value supersedes an earlier one."""
    audience: Audience = PRIVATE
    """Who it may be disclosed to."""
    importance: float = 0.5
    """0 to 1: how much it matters when relevant."""
    valid_from: datetime | None = None
    """From when it is true (None: always was, as far as known)."""
    valid_to: datetime | None = None
    """Until when it was true (None: still is)."""
    observed_at: datetime | None = None
    """When it was said or seen (a message's date); None: now. Never in the future."""
    ref: str | None = None
    """Its id within the import (a message id): cited as ``import:<import>/<ref>``, so that it
    can be forgotten alone. None: the statement's own text names it, so a repeat of the same
    import is recognised."""
    trusted: bool = True
    """False when the text came from others (a mail they sent): it is kept as a candidate."""
