"""Memory queries the facade needs beyond the core ones: what a memory superseded, and the
source keys under a prefix (every item of a connection)."""

from __future__ import annotations

from sqlalchemy import Connection, select

from steward.domain.memory import Memory
from steward.store.backend import Backend
from steward.store.memory import memory_from_row
from steward.store.schema import memories, memory_sources


class MemoryExtraQueries:
    backend: Backend

    async def memories_superseded_by(self, memory_id: str, *, person_id: str) -> list[Memory]:
        """The person's memories that ``memory_id`` replaced, oldest first."""

        def op(conn: Connection) -> list[Memory]:
            query = (
                select(memories)
                .where(memories.c.person_id == person_id, memories.c.superseded_by == memory_id)
                .order_by(memories.c.observed_at, memories.c.id)
            )
            return [memory_from_row(r) for r in conn.execute(query)]

        return await self.backend.read(op)

    async def memory_source_keys(self, *, person_id: str, prefix: str) -> list[str]:
        """The distinct source keys of the person's memories that start with ``prefix``
        (taken literally: ``_`` and ``%`` in it match only themselves)."""

        def op(conn: Connection) -> list[str]:
            query = (
                select(memory_sources.c.source_key)
                .where(
                    memory_sources.c.person_id == person_id,
                    memory_sources.c.source_key.startswith(prefix, autoescape=True),
                )
                .distinct()
                .order_by(memory_sources.c.source_key)
            )
            return [r[0] for r in conn.execute(query)]

        return await self.backend.read(op)
