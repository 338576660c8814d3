"""Where a memory came from, in memory tests."""

from __future__ import annotations

from typing import Any

from steward.cli.common import to_jsonable
from steward.domain.memory import Source, SourceKind
from steward.service import Service


def said_in(ref: str, *, trusted: bool = True) -> Source:
    """Said in the task ``ref``."""
    return Source(kind=SourceKind.TASK, ref=ref, trusted=trusted)


async def everything(svc: Service, person: str) -> Any:
    """All of the person's memories (deleted ones too) with their histories and sources, and
    tombstones: what a test compares before and after a call that must change nothing."""
    memories = await svc.store.memory.list_memories(person_id=person, limit=10_000)
    return to_jsonable(
        {
            "memories": [await svc.memory_detail(m.id) for m in memories],
            "tombstones": await svc.list_tombstones(person_id=person),
        }
    )
