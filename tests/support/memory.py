"""Where a memory came from, in memory tests."""

from __future__ import annotations

from steward.domain.memory import Source, SourceKind


def said_in(ref: str, *, trusted: bool = True) -> Source:
    """Said in the task ``ref``."""
    return Source(kind=SourceKind.TASK, ref=ref, trusted=trusted)
