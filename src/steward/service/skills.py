"""The facade's skills part: what the agent learned to do, its versions, and the person's
decisions about it (approve or reject a proposal, restore a version, archive).

A skill is named by its id (``skl_…``, or enough of its start) or by its name.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from steward.domain.skill import Skill, SkillStatus, SkillVersion
from steward.domain.tokens import CONTROL, READ
from steward.errors import UsageError
from steward.service.ids import IdService

if TYPE_CHECKING:
    from steward.memory.skills import SkillLibrary


class SkillService(IdService):
    def _library(self) -> SkillLibrary:
        from steward.memory.skills import SkillLibrary

        return SkillLibrary(self.store, self.clock)

    async def _skill(self, ref: str, person_id: str | None, scope: str) -> Skill:
        self._may(scope)
        return await self.store.skills.get_skill(
            await self.resolve_id(ref, "skl", person_id=person_id)
        )

    async def list_skills(
        self, *, person_id: str | None = None, status: str | None = None
    ) -> list[Skill]:
        """The person's skills by name: all of them, or those with ``status`` (``active``,
        ``proposed``, ``archived``)."""
        who = self._for(person_id, READ)
        statuses = None
        if status is not None:
            try:
                statuses = [SkillStatus(status)]
            except ValueError:
                known = ", ".join(s.value for s in SkillStatus)
                raise UsageError(f"unknown skill status {status!r}; use one of {known}") from None
        return await self.store.skills.list_skills(person_id=who, statuses=statuses)

    async def get_skill(self, skill: str, *, person_id: str | None = None) -> Skill:
        return await self._skill(skill, person_id, READ)

    async def skill_history(
        self, skill: str, *, person_id: str | None = None
    ) -> list[SkillVersion]:
        """Every version, oldest first, with who changed it and why."""
        return await self._library().history(await self._skill(skill, person_id, READ))

    async def skill_diff(
        self,
        skill: str,
        *,
        person_id: str | None = None,
        from_version: int | None = None,
        to_version: int | None = None,
    ) -> str:
        """A unified diff between two versions; without versions, of the change waiting for
        a decision if there is one, else of the last change."""
        found = await self._skill(skill, person_id, READ)
        return await self._library().diff(found, from_version=from_version, to_version=to_version)

    async def restore_skill(
        self, skill: str, version: int, *, person_id: str | None = None
    ) -> Skill:
        """Make an earlier version's text current again (a new version): later tasks follow
        it; what earlier tasks did stays done."""
        found = await self._skill(skill, person_id, CONTROL)
        return await self._library().restore(found, version, actor=self._decider("person"))

    async def archive_skill(self, skill: str, *, person_id: str | None = None) -> Skill:
        """Set a skill aside: no task is shown it until a version is restored."""
        found = await self._skill(skill, person_id, CONTROL)
        return await self._library().archive(found, actor=self._decider("person"))

    async def decide_skill_proposal(
        self, skill: str, *, approve: bool, person_id: str | None = None
    ) -> Skill:
        """Apply or reject what waits for the person: a new skill, or a proposed change."""
        found = await self._skill(skill, person_id, CONTROL)
        return await self._library().decide(found, approve=approve, actor=self._decider("person"))
