"""Who hears a conversation, and so what may be disclosed in it.

Every conversation (a chat, an ask, a channel thread) has an audience: the person alone, a named
group, or the public. Everything the agent knows about the person carries an audience too (the
memory layer stores one per memory); :meth:`Audience.may_hear` is the one rule deciding whether
something kept for one audience may be shown to another.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from steward.errors import UsageError


class AudienceKind(StrEnum):
    PRIVATE = "private"
    """The person alone."""
    GROUP = "group"
    """A named group of people (a family chat, a team channel)."""
    PUBLIC = "public"
    """Anyone."""


_GROUP_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@-]{0,127}$")


@dataclass(kw_only=True, frozen=True)
class Audience:
    """Who hears a conversation (or who a piece of knowledge may be shown to)."""

    kind: AudienceKind
    """Private, group or public."""
    group: str | None = None
    """The group's name; set exactly when ``kind`` is ``group``."""

    def __post_init__(self) -> None:
        if (self.kind is AudienceKind.GROUP) != (self.group is not None):
            raise UsageError("a group audience needs a group name, and only a group has one")
        if self.group is not None and not _GROUP_NAME.match(self.group):
            raise UsageError(
                f"bad group name {self.group!r}: letters, digits and _ . @ - only, "
                "starting with a letter or digit, at most 128 characters"
            )

    @classmethod
    def parse(cls, text: str) -> Audience:
        """``private``, ``public`` or ``group:<name>``."""
        value = text.strip()
        if value == AudienceKind.PRIVATE:
            return PRIVATE
        if value == AudienceKind.PUBLIC:
            return PUBLIC
        prefix = f"{AudienceKind.GROUP}:"
        if value.startswith(prefix):
            return cls(kind=AudienceKind.GROUP, group=value[len(prefix) :])
        raise UsageError(f"bad audience {text!r}: use private, public or group:<name>")

    @classmethod
    def of_task(cls, task_input: dict[str, Any]) -> Audience:
        """The audience a task's input names; private when it names none.

        An unreadable value (the input was written around the facade) counts as public, the
        audience that is shown the least, so a mistake can only withhold, never disclose.
        """
        raw = task_input.get("audience")
        if raw is None:
            return PRIVATE
        try:
            return cls.parse(str(raw))
        except UsageError:
            return PUBLIC

    def may_hear(self, kept_for: Audience) -> bool:
        """Whether something kept for ``kept_for`` may be disclosed to this audience.

        The person alone may hear everything; a group hears what was kept for that group or for
        the public; the public hears only what is public.
        """
        if self.kind is AudienceKind.PRIVATE or kept_for.kind is AudienceKind.PUBLIC:
            return True
        return self == kept_for

    def heard(self) -> tuple[str, ...] | None:
        """The stored audiences this audience may hear, spelled as stored, for a query filter;
        None when it may hear everything. Agrees with :meth:`may_hear`."""
        if self.kind is AudienceKind.PRIVATE:
            return None
        if self.kind is AudienceKind.GROUP:
            return (str(self), str(PUBLIC))
        return (str(PUBLIC),)

    def __str__(self) -> str:
        return f"{self.kind}:{self.group}" if self.group is not None else str(self.kind)


PRIVATE = Audience(kind=AudienceKind.PRIVATE)
PUBLIC = Audience(kind=AudienceKind.PUBLIC)
