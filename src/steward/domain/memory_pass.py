"""Consolidation passes ("dreaming"): what one pass over a person's memories changes, as a diff
the person can review, and whether it was applied or held for them to decide."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any


class PassStatus(StrEnum):
    HELD = "held"
    """It would drop or rewrite too much at once: nothing applied; the person decides."""
    APPLIED = "applied"
    """Applied (an operation whose memories changed after it was planned was skipped)."""
    REJECTED = "rejected"
    """Held, then refused by the person: nothing applied."""
    EXPIRED = "expired"
    """Held, then replaced by a newer pass before the person decided: nothing applied."""


class OperationKind(StrEnum):
    MERGE = "merge"
    """Duplicates become one memory: the oldest is kept with every source; the rest are
    archived."""
    SUPERSEDE = "supersede"
    """A newer fact of the same kind and slot ends an older one's validity (kept in history)."""
    PROMOTE = "promote"
    """A trusted, confirmed candidate becomes active."""
    ARCHIVE = "archive"
    """A stale memory is set aside (kept, not recalled)."""


@dataclass(kw_only=True, frozen=True)
class PassOperation:
    """One change a pass makes, with enough to review it and to apply it later safely."""

    kind: OperationKind
    """Merge, supersede, promote or archive."""
    memory_ids: tuple[str, ...]
    """The memories it concerns, by role: for a merge the one kept, then those merged into it;
    for a supersession the older memory, then the newer; otherwise the one memory."""
    versions: dict[str, int]
    """The version of each memory it was planned on: applied later, it is skipped unless every
    one of them is still at that version."""
    before: dict[str, str]
    """Each memory it changes, in words, as it was."""
    after: dict[str, str]
    """Each memory it changes, in words, as it would be."""
    reason: str
    """Why, for the person."""
    skipped: str | None = None
    """Why it was not applied (its memories changed meanwhile); None otherwise."""

    @property
    def drops(self) -> int:
        """How many memories it takes out of recall (archives, or ends the validity of)."""
        if self.kind is OperationKind.MERGE:
            return len(self.memory_ids) - 1
        return 0 if self.kind is OperationKind.PROMOTE else 1

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "kind": str(self.kind),
            "memory_ids": list(self.memory_ids),
            "versions": self.versions,
            "before": self.before,
            "after": self.after,
            "reason": self.reason,
        }
        if self.skipped is not None:
            data["skipped"] = self.skipped
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> PassOperation:
        return cls(
            kind=OperationKind(data["kind"]),
            memory_ids=tuple(data["memory_ids"]),
            versions={str(k): int(v) for k, v in data["versions"].items()},
            before=dict(data["before"]),
            after=dict(data["after"]),
            reason=str(data["reason"]),
            skipped=data.get("skipped"),
        )


@dataclass(kw_only=True, frozen=True)
class MemoryPass:
    """One consolidation pass over a person's memories and its diff."""

    id: str
    """Stable id, ``mps_…``; the versions it writes name it as their actor
    (``consolidation:<id>``)."""
    person_id: str
    """Whose memories."""
    task_id: str | None
    """The ``memory.consolidate`` task that ran it (None when run directly)."""
    status: PassStatus
    """Held, applied, rejected or expired."""
    operations: tuple[PassOperation, ...]
    """The diff, in the order it applies."""
    active: int
    """Active memories when it was planned."""
    share: float
    """The share of those it drops: above the pass's limit it is held."""
    created_at: datetime
    """When it was planned."""
    decided_at: datetime | None = None
    """When it was applied, refused or replaced (None while held)."""

    @property
    def drops(self) -> int:
        return sum(op.drops for op in self.operations)

    def describe(self) -> list[str]:
        """The diff in words, one line per change, for the person."""
        lines: list[str] = []
        for op in self.operations:
            lines.append(
                f"{op.kind}: {op.reason}" + (f" [skipped: {op.skipped}]" if op.skipped else "")
            )
            for memory_id in op.memory_ids:
                if memory_id in op.after:
                    lines.append(f"  {memory_id}: {op.before[memory_id]}")
                    lines.append(f"  {' ' * len(memory_id)}→ {op.after[memory_id]}")
        return lines
