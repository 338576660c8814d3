"""A task's provenance trail: which untrusted sources it read (as packed word filters), whether
it read any, and the trusted text the person gave it along the way.

Plain data kept in the task's checkpointed state (its keys at the top level of the state, as the
harness has always written them) and handed to a subtask in its input; the sentinel's
``provenance`` module reads and extends it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

READ_UNTRUSTED = "read_untrusted"
"""State key: the task has read others' text."""
SEEN = "untrusted_seen"
"""State key: the untrusted sources read, oldest first."""
TRUSTED = "trusted"
"""State key: the person's answers met during the task."""
ITEMS = "connector_items"
"""State key: the items of the person's connections the task read (``<connection>/<item>``)."""
MAX_ITEMS = 200
"""Items kept (the latest): what a memory derived from the task cites, so it is forgotten with
the connection."""


@dataclass(kw_only=True, frozen=True)
class Seen:
    """One untrusted source the task read."""

    source: str
    """The tool (or ``event:<type>``) that delivered the text."""
    step: int
    """The step that read it."""
    filter: str
    """Its word sequences: a zlib-packed, base64 Bloom filter."""

    def to_json(self) -> dict[str, Any]:
        return {"source": self.source, "step": self.step, "filter": self.filter}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Seen:
        return cls(source=str(data["source"]), step=int(data["step"]), filter=str(data["filter"]))


@dataclass(kw_only=True)
class Trail:
    """What a task read from others and what the person told it; mutated as the task reads."""

    read_untrusted: bool = False
    """The task has read others' text (or inherited that): what it learns may be theirs."""
    seen: list[Seen] = field(default_factory=list)
    """The untrusted sources read, oldest first (older ones merged, see ``provenance``)."""
    trusted: list[str] = field(default_factory=list)
    """The person's answers met during the task (the latest 50, 2,000 characters each)."""
    items: list[str] = field(default_factory=list)
    """Items of the person's connections read (``<connection id>/<item id>``), oldest first:
    the latest :data:`MAX_ITEMS`, older ones by their connection as a whole."""

    def read_items(self, refs: list[str]) -> None:
        """Note connection items the task read (each once). Past :data:`MAX_ITEMS`, the
        oldest items give way to their connection as a whole (``<connection>``), so what the
        task learned still goes when the connection is forgotten."""
        for ref in refs:
            if ref not in self.items:
                self.items.append(ref)
        if len(self.items) <= MAX_ITEMS:
            return
        evicted, kept = self.items[:-MAX_ITEMS], self.items[-MAX_ITEMS:]
        whole = [c for c in dict.fromkeys(ref.split("/")[0] for ref in evicted) if c not in kept]
        self.items[:] = [*whole, *kept]

    def to_json(self) -> dict[str, Any]:
        """The state keys this trail sets (only those with something to say)."""
        data: dict[str, Any] = {}
        if self.read_untrusted:
            data[READ_UNTRUSTED] = True
        if self.seen:
            data[SEEN] = [s.to_json() for s in self.seen]
        if self.trusted:
            data[TRUSTED] = list(self.trusted)
        if self.items:
            data[ITEMS] = list(self.items)
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Trail:
        """Read the trail's keys out of a task's state (or a subtask's inherited record)."""
        return cls(
            read_untrusted=bool(data.get(READ_UNTRUSTED)),
            seen=[Seen.from_json(s) for s in data.get(SEEN) or ()],
            trusted=[str(t) for t in data.get(TRUSTED) or ()],
            items=[str(i) for i in data.get(ITEMS) or ()],
        )
