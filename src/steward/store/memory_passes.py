"""Consolidation passes: their diffs and decisions, and applying one operation of a pass to its
memories in a single transaction, refused when any of them changed since it was planned."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, select, update

from steward.domain.memory import Memory
from steward.domain.memory_pass import MemoryPass, PassOperation, PassStatus
from steward.errors import Conflict, InvalidTransition, NotFound
from steward.store import rows
from steward.store.backend import Backend
from steward.store.memory import load_memory, save_memory
from steward.store.schema import memory_passes


def _pass(row: Any) -> MemoryPass:
    diff = rows.load(row.diff)
    return MemoryPass(
        id=row.id,
        person_id=row.person_id,
        task_id=row.task_id,
        status=PassStatus(row.status),
        operations=tuple(PassOperation.from_json(op) for op in diff["operations"]),
        active=int(diff["active"]),
        share=float(row.share),
        created_at=rows.dt(row.created_at),
        decided_at=rows.dt_opt(row.decided_at),
    )


def _diff(operations: Sequence[PassOperation], active: int) -> str:
    return rows.dump({"operations": [op.to_json() for op in operations], "active": active})


class MemoryPassRepository:
    """Consolidation passes: proposed memory changes, decided and applied."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend

    async def add_memory_pass(self, memory_pass: MemoryPass) -> MemoryPass:
        """Record a pass. The person's passes still held are expired by it: they were planned
        on memories this newer pass has looked at again."""

        def op(conn: Connection) -> MemoryPass:
            conn.execute(
                update(memory_passes)
                .where(
                    memory_passes.c.person_id == memory_pass.person_id,
                    memory_passes.c.status == PassStatus.HELD.value,
                )
                .values(status=PassStatus.EXPIRED.value, decided_at=rows.ts(memory_pass.created_at))
            )
            conn.execute(
                memory_passes.insert().values(
                    id=memory_pass.id,
                    person_id=memory_pass.person_id,
                    task_id=memory_pass.task_id,
                    status=memory_pass.status.value,
                    diff=_diff(memory_pass.operations, memory_pass.active),
                    share=memory_pass.share,
                    created_at=rows.ts(memory_pass.created_at),
                    decided_at=rows.ts_opt(memory_pass.decided_at),
                )
            )
            return memory_pass

        return await self.backend.write(op)

    async def get_memory_pass(self, pass_id: str) -> MemoryPass:
        def op(conn: Connection) -> MemoryPass:
            row = conn.execute(select(memory_passes).where(memory_passes.c.id == pass_id)).first()
            if row is None:
                raise NotFound("memory pass", pass_id)
            return _pass(row)

        return await self.backend.read(op)

    async def find_memory_pass(self, pass_id: str) -> MemoryPass | None:
        """The pass with this id, or None (a job looks for the pass an earlier try recorded)."""
        try:
            return await self.get_memory_pass(pass_id)
        except NotFound:
            return None

    async def list_memory_passes(
        self, *, person_id: str, status: PassStatus | None = None, limit: int = 50
    ) -> list[MemoryPass]:
        """Newest first."""
        query = select(memory_passes).where(memory_passes.c.person_id == person_id)
        if status is not None:
            query = query.where(memory_passes.c.status == status.value)
        query = query.order_by(memory_passes.c.created_at.desc(), memory_passes.c.id.desc())
        return await self.backend.read(
            lambda conn: [_pass(r) for r in conn.execute(query.limit(limit))]
        )

    async def decide_memory_pass(
        self,
        pass_id: str,
        status: PassStatus,
        *,
        operations: Sequence[PassOperation],
        now: datetime,
    ) -> MemoryPass:
        """Settle a held pass as applied (with what each operation did) or rejected."""

        def op(conn: Connection) -> MemoryPass:
            row = conn.execute(select(memory_passes).where(memory_passes.c.id == pass_id)).first()
            if row is None:
                raise NotFound("memory pass", pass_id)
            current = _pass(row)
            if current.status is not PassStatus.HELD:
                raise InvalidTransition(f"memory pass {pass_id} is {current.status}, not held")
            conn.execute(
                update(memory_passes)
                .where(memory_passes.c.id == pass_id)
                .values(
                    status=status.value,
                    diff=_diff(operations, current.active),
                    decided_at=rows.ts(now),
                )
            )
            return replace(current, status=status, operations=tuple(operations), decided_at=now)

        return await self.backend.write(op)

    async def apply_memory_changes(
        self,
        changes: Sequence[tuple[Memory, str]],
        *,
        expected: Mapping[str, int],
        actor: str,
    ) -> list[Memory]:
        """Write each ``(memory, reason)`` as the next version of its record, all or none:
        :class:`Conflict` when a memory in ``expected`` is no longer at that version."""

        def op(conn: Connection) -> list[Memory]:
            for memory_id, version in expected.items():
                current = load_memory(conn, memory_id)
                if current.version != version:
                    raise Conflict(
                        f"memory {memory_id} changed since (version {current.version}, "
                        f"planned on {version})"
                    )
            written = []
            for memory, reason in changes:
                current = load_memory(conn, memory.id)
                if current.person_id != memory.person_id:
                    raise NotFound("memory", memory.id)
                new = replace(memory, version=current.version + 1, uses=current.uses)
                save_memory(conn, self.backend, new, actor=actor, reason=reason)
                written.append(new)
            return written

        return await self.backend.write(op)
