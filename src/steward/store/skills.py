"""Skills: one row per skill with what it says now and its usage counts, and every version
whole in ``skill_versions``. Each change is audited."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, delete, select, update

from steward.domain.skill import PendingChange, Skill, SkillContent, SkillStatus, SkillVersion
from steward.errors import Conflict, NotFound
from steward.store import rows
from steward.store.audit import append_in
from steward.store.backend import Backend
from steward.store.schema import skill_versions, skills


def _body(skill: Skill) -> dict[str, Any]:
    pending = skill.pending
    return {
        "content": skill.content.to_dict(),
        "pending": None
        if pending is None
        else {
            "content": pending.content.to_dict(),
            "actor": pending.actor,
            "reason": pending.reason,
            "at": rows.ts(pending.at),
        },
    }


def _values(skill: Skill) -> dict[str, Any]:
    return {
        "id": skill.id,
        "person_id": skill.person_id,
        "name": skill.name,
        "status": skill.status.value,
        "version": skill.version,
        "body": rows.dump(_body(skill)),
        "description": skill.content.description,
        "uses": skill.uses,
        "successes": skill.successes,
        "failures": skill.failures,
        "created_at": rows.ts(skill.created_at),
        "updated_at": rows.ts(skill.updated_at),
    }


def _skill(data: Any) -> Skill:
    body = rows.load(data["body"])
    pending = body.get("pending")
    return Skill(
        id=data["id"],
        person_id=data["person_id"],
        name=data["name"],
        status=SkillStatus(data["status"]),
        version=data["version"],
        content=SkillContent.from_dict(body["content"]),
        pending=None
        if pending is None
        else PendingChange(
            content=SkillContent.from_dict(pending["content"]),
            actor=pending["actor"],
            reason=pending["reason"],
            at=rows.dt(pending["at"]),
        ),
        uses=data["uses"],
        successes=data["successes"],
        failures=data["failures"],
        created_at=rows.dt(data["created_at"]),
        updated_at=rows.dt(data["updated_at"]),
    )


class SkillRepository:
    """Skills and their versions."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend

    # --- writing ----------------------------------------------------------------------------

    async def add_skill(self, skill: Skill, *, actor: str, reason: str = "created") -> Skill:
        """Write a new skill as version 1; a name the person already uses is a
        :class:`Conflict`."""

        def op(conn: Connection) -> Skill:
            taken = conn.execute(
                select(skills.c.id).where(
                    skills.c.person_id == skill.person_id, skills.c.name == skill.name
                )
            ).first()
            if taken is not None:
                raise Conflict(f"there is already a skill named {skill.name!r} ({taken.id})")
            written = replace(skill, version=1)
            conn.execute(skills.insert().values(_values(written)))
            self._add_version(conn, written, actor=actor, reason=reason)
            return written

        return await self.backend.write(op)

    async def update_skill(
        self, skill: Skill, *, actor: str, reason: str, expected_version: int | None = None
    ) -> Skill:
        """Store ``skill`` as the next version of its record (its usage counts stay as
        counted). With ``expected_version``, a record changed meanwhile is refused
        (:class:`Conflict`) and nothing is written."""

        def op(conn: Connection) -> Skill:
            current = self._load_skill(conn, skill.id)
            if current.person_id != skill.person_id:
                raise NotFound("skill", skill.id)
            if expected_version is not None and current.version != expected_version:
                raise Conflict(
                    f"skill {current.name!r} changed meanwhile (now version {current.version}, "
                    f"you changed version {expected_version}); look again and redo the change"
                )
            written = replace(
                skill,
                name=current.name,
                version=current.version + 1,
                uses=current.uses,
                successes=current.successes,
                failures=current.failures,
                created_at=current.created_at,
            )
            conn.execute(update(skills).where(skills.c.id == skill.id).values(_values(written)))
            self._add_version(conn, written, actor=actor, reason=reason)
            return written

        return await self.backend.write(op)

    async def record_skill_use(self, skill_id: str) -> None:
        """Count a task loading the skill (not a new version: nothing about it changed)."""

        def op(conn: Connection) -> None:
            conn.execute(
                update(skills).where(skills.c.id == skill_id).values(uses=skills.c.uses + 1)
            )

        await self.backend.write(op)

    async def record_skill_outcome(
        self, skill_ids: Sequence[str], *, person_id: str, success: bool
    ) -> None:
        """Count how a task of ``person_id`` that loaded these skills ended."""
        if not skill_ids:
            return
        column = skills.c.successes if success else skills.c.failures

        def op(conn: Connection) -> None:
            conn.execute(
                update(skills)
                .where(skills.c.id.in_(list(skill_ids)), skills.c.person_id == person_id)
                .values({column.name: column + 1})
            )

        await self.backend.write(op)

    # --- reading ----------------------------------------------------------------------------

    async def get_skill(self, skill_id: str) -> Skill:
        return await self.backend.read(lambda conn: self._load_skill(conn, skill_id))

    async def find_skill(self, *, person_id: str, name: str) -> Skill | None:
        query = select(skills).where(skills.c.person_id == person_id, skills.c.name == name)

        def op(conn: Connection) -> Skill | None:
            row = conn.execute(query).first()
            return None if row is None else _skill(row._mapping)

        return await self.backend.read(op)

    async def purge_skills_from(
        self, person_id: str, source_keys: Sequence[str], *, now: datetime, actor: str
    ) -> int:
        """Delete, with every version, the person's skills that any version of learned (even
        in part) from one of ``source_keys``; returns how many."""
        keys = set(source_keys)

        def op(conn: Connection) -> int:
            mine = select(skill_versions.c.skill_id, skill_versions.c.snapshot).where(
                skill_versions.c.person_id == person_id
            )
            doomed = sorted(
                {
                    row.skill_id
                    for row in conn.execute(mine)
                    if keys & set(_skill(rows.load(row.snapshot)).content.sources)
                }
            )
            if not doomed:
                return 0
            conn.execute(delete(skill_versions).where(skill_versions.c.skill_id.in_(doomed)))
            conn.execute(delete(skills).where(skills.c.id.in_(doomed)))
            append_in(
                conn,
                self.backend,
                person_id=person_id,
                kind="skill_forgotten",
                actor=actor,
                data={"sources": sorted(keys), "skills": doomed},
                now=now,
            )
            return len(doomed)

        return await self.backend.write(op)

    async def list_skills(
        self, *, person_id: str, statuses: Sequence[SkillStatus] | None = None
    ) -> list[Skill]:
        """By name."""
        query = select(skills).where(skills.c.person_id == person_id)
        if statuses is not None:
            query = query.where(skills.c.status.in_([s.value for s in statuses]))
        query = query.order_by(skills.c.name)
        return await self.backend.read(
            lambda conn: [_skill(r._mapping) for r in conn.execute(query)]
        )

    async def skill_history(self, skill_id: str) -> list[SkillVersion]:
        """Oldest first."""
        query = (
            select(skill_versions)
            .where(skill_versions.c.skill_id == skill_id)
            .order_by(skill_versions.c.version)
        )
        return await self.backend.read(lambda conn: [_version(r) for r in conn.execute(query)])

    async def skill_version(self, skill_id: str, version: int) -> SkillVersion:
        query = select(skill_versions).where(
            skill_versions.c.skill_id == skill_id, skill_versions.c.version == version
        )

        def op(conn: Connection) -> SkillVersion:
            row = conn.execute(query).first()
            if row is None:
                raise NotFound("skill version", f"{skill_id} v{version}")
            return _version(row)

        return await self.backend.read(op)

    # --- inside a transaction ---------------------------------------------------------------

    def _load_skill(self, conn: Connection, skill_id: str) -> Skill:
        row = conn.execute(select(skills).where(skills.c.id == skill_id)).first()
        if row is None:
            raise NotFound("skill", skill_id)
        return _skill(row._mapping)

    def _add_version(self, conn: Connection, skill: Skill, *, actor: str, reason: str) -> None:
        values = _values(skill)
        conn.execute(
            skill_versions.insert().values(
                skill_id=skill.id,
                version=skill.version,
                person_id=skill.person_id,
                snapshot=rows.dump(values),
                actor=actor,
                reason=reason,
                at=values["updated_at"],
            )
        )
        # a skill steers later tasks: the person's audit log says who changed it, and why
        append_in(
            conn,
            self.backend,
            person_id=skill.person_id,
            kind="skill",
            actor=actor,
            data={
                "skill": skill.id,
                "name": skill.name,
                "version": skill.version,
                "status": skill.status.value,
                "reason": reason,
            },
            now=skill.updated_at,
        )


def _version(row: Any) -> SkillVersion:
    return SkillVersion(
        skill_id=row.skill_id,
        version=row.version,
        skill=_skill(rows.load(row.snapshot)),
        actor=row.actor,
        reason=row.reason,
        at=rows.dt(row.at),
    )
