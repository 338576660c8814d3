"""What a tool's arguments mean, and which of the person's data may not leave unasked.

A tool declares a :class:`Role` for each argument that matters to the security plane. The policy
and provenance read these roles; they never guess an argument's meaning from its name or from
what its value looks like (only tools that declare no roles at all, such as an MCP server's
that nobody described, fall back to guessing, and say so).
"""

from __future__ import annotations

from enum import StrEnum


class Role(StrEnum):
    """What an argument of a tool is for."""

    RECIPIENT = "recipient"
    """Who receives something: an address, a phone number, a user or channel name."""
    HOST = "host"
    """Where a request goes: a URL or a host name."""
    PAYEE = "payee"
    """Who is paid, or the account money goes to."""
    AMOUNT = "amount"
    """How much is paid, bought or transferred."""
    ACCOUNT = "account"
    """Which of the person's connections the action goes through (``work mail``): the
    connection's scopes and bounds then decide it."""
    CALENDAR = "calendar"
    """Which calendar an event is written to or read from."""
    IDENTIFIER = "identifier"
    """Which object the action changes or deletes (a file id, a booking, a hotel's name)."""
    TIME = "time"
    """A time that selects an object or when the action happens (cancel the 10:00 meeting).
    A time that is only part of new content (a note's text) is :attr:`CONTENT`."""
    FREE_TEXT = "free_text"
    """Text that describes or names something (a title, a subject, a query)."""
    CONTENT = "content"
    """What is sent or written to others (a mail body, a request body, a post)."""

    @property
    def controlling(self) -> bool:
        """It decides *what* the action does or *to whom*: a value in it that only others'
        text supplied must not steer the action without the person."""
        return self not in (Role.FREE_TEXT, Role.CONTENT)

    @property
    def outbound(self) -> bool:
        """Its value leaves to the recipient or host (a URL too: its query carries data): the
        person's sensitive data in it needs their grant."""
        return self in (Role.FREE_TEXT, Role.CONTENT, Role.HOST)


class DataClass(StrEnum):
    """Kinds of the person's own data that never leave without a grant naming the kind
    (a grant constraint ``data: [card]``), whoever named the recipient."""

    CARD = "card"
    """Payment card numbers (those that pass the Luhn check)."""
    IDENTITY = "identity"
    """Identity numbers: passport, national id, social security, tax numbers."""
    HEALTH = "health"
    """Health: diagnoses, medication, treatment."""
    PRIVATE = "private"
    """What the person's memory keeps for them alone (the private audience)."""
