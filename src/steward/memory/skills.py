"""The skill library: what the agent learned to do, and the rules every change follows.

* A skill changes only by a new version; any version can be restored, as a new version: what
  already ran is not undone, later tasks follow the restored text.
* A proposal applies at once or waits for the person as the sentinel decides the action
  ``skill.apply`` (:meth:`~steward.sentinel.policy.PolicySentinel.judge`: hard limits, then the
  person's rules and grants, as for any action, and the decision is audited): allowed by the
  person's rule applies, denied refuses, anything else waits; without a rule, the library's
  ``auto_apply`` decides. Whatever the sentinel says, a proposal waits when its task had read
  others' text (a mail, a web page could be steering it), and when the person had archived the
  skill.
* Proposing what a skill already says changes nothing, so a retrospective that re-proposes the
  skill it followed does not churn versions.
* The agent is shown an index — names and one-line descriptions of the active skills that
  match the task, ranked by relevance and record — and loads a body only when it needs it.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from enum import StrEnum

from steward.domain.actions import ActionRequest, EffectClass, Verdict
from steward.domain.audience import PRIVATE, Audience
from steward.domain.clock import Clock
from steward.domain.ids import new_id
from steward.domain.personal import Recalled, RecallQuery, SkillProposal
from steward.domain.skill import (
    PendingChange,
    Skill,
    SkillContent,
    SkillStatus,
    SkillVersion,
    WorkflowStep,
    skill_name,
)
from steward.errors import UsageError
from steward.sentinel.policy import PolicyDecision, PolicySentinel
from steward.store import Store
from steward.store.memory_search import search_terms

APPLY_ACTION = "skill.apply"
"""What a person's rule names to decide whether learned skills apply without asking."""

_SUFFIXES = ("ing", "ed", "s")


class Disposition(StrEnum):
    CREATED = "created"
    """A new active skill."""
    UPDATED = "updated"
    """A new version of an active skill."""
    HELD = "held"
    """Waits for the person (a new skill, or a change to one)."""
    UNCHANGED = "unchanged"
    """The skill already says that."""
    REFUSED = "refused"
    """The person's rule does not let skills be learned."""


@dataclass(kw_only=True, frozen=True)
class Proposed:
    """What became of a proposal."""

    disposition: Disposition
    """Created, updated, held, unchanged or refused."""
    skill: Skill | None
    """The skill as it is now (None when refused before one existed)."""
    why: str = ""
    """Why it waits or was refused."""

    def describe(self) -> str:
        """In words, for the model's observation."""
        name = self.skill.name if self.skill is not None else "the skill"
        if self.disposition is Disposition.HELD:
            return f"skill {name!r} kept for the person to approve ({self.why})"
        if self.disposition is Disposition.REFUSED:
            return f"not kept: {self.why}"
        if self.disposition is Disposition.UNCHANGED:
            return f"skill {name!r} already says that; nothing changed"
        assert self.skill is not None
        return f"skill {name!r} {self.disposition} (version {self.skill.version})"


class SkillLibrary:
    """One person's skills, through the store, with the rules above."""

    def __init__(
        self,
        store: Store,
        clock: Clock,
        *,
        auto_apply: bool = True,
        sentinel: PolicySentinel | None = None,
    ) -> None:
        self.store = store
        self.clock = clock
        self.auto_apply = auto_apply
        """Without a rule of the person's: whether a trusted proposal applies at once."""
        self._sentinel = sentinel
        """The process's sentinel, to share its cache (None: one is made when first needed)."""

    @property
    def sentinel(self) -> PolicySentinel:
        """Decides whether a proposal may apply. Made on first use: most uses of a library
        (history, diff, restore) never ask."""
        if self._sentinel is None:
            self._sentinel = PolicySentinel(self.store, self.clock)
        return self._sentinel

    # --- learning ---------------------------------------------------------------------------

    async def propose(
        self,
        *,
        person_id: str,
        name: str,
        content: SkillContent,
        actor: str,
        trusted: bool = True,
    ) -> Proposed:
        """A new skill or a change to one, from the agent (``actor`` is ``agent:<task>``).
        Fields left empty in a change keep what the skill says; sources accumulate."""
        name = skill_name(name)
        current = await self.store.skills.find_skill(person_id=person_id, name=name)
        # a conversation that may not hear the skill of that name learns nothing of it: not
        # its text (no merge), not that it exists (the same answer as for a new name)
        hidden = current is not None and not content.audience.may_hear(current.content.audience)
        if current is not None and current.status is not SkillStatus.PROPOSED and not hidden:
            # a change keeps what it leaves unsaid; a held proposal (perhaps from others'
            # text) lends nothing to the one that replaces it
            content = _merged(current.content, content)
            if current.pending is not None and content.says_same(current.pending.content):
                return Proposed(disposition=Disposition.UNCHANGED, skill=current)
            if current.status is not SkillStatus.ARCHIVED and content.says_same(current.content):
                return Proposed(disposition=Disposition.UNCHANGED, skill=current)
        ruling = await self._ruling(person_id, actor)
        if ruling.verdict is Verdict.DENY:
            why = (
                f"the person's rule for {APPLY_ACTION} denies learning skills"
                if ruling.rule_id is not None
                else ruling.reason
            )
            return Proposed(disposition=Disposition.REFUSED, skill=current, why=why)
        why = _why_held(trusted, content.audience, current, ruling, self.auto_apply)
        now = self.clock.now()
        if current is None:
            skill = Skill(
                id=new_id("skl"),
                person_id=person_id,
                name=name,
                status=SkillStatus.PROPOSED if why else SkillStatus.ACTIVE,
                content=content,
                created_at=now,
                updated_at=now,
            )
            written = await self.store.skills.add_skill(
                skill, actor=actor, reason=f"proposed: {why}" if why else "created"
            )
            disposition = Disposition.HELD if why else Disposition.CREATED
            return Proposed(disposition=disposition, skill=written, why=why)
        if current.status is SkillStatus.PROPOSED:
            # still undecided: the newer proposal replaces the older one
            changed = replace(current, content=content, updated_at=now)
            reason = f"proposal replaced: {why}" if why else "created"
            if not why:
                changed = replace(changed, status=SkillStatus.ACTIVE)
        elif why:
            pending = PendingChange(content=content, actor=actor, reason=why, at=now)
            changed = replace(current, pending=pending, updated_at=now)
            reason = f"change proposed: {why}"
        else:
            # a change that waits for the person still waits: it is theirs to decide
            changed = replace(current, content=content, updated_at=now)
            reason = "updated"
        written = await self.store.skills.update_skill(
            changed, actor=actor, reason=reason, expected_version=current.version
        )
        if why:
            return Proposed(disposition=Disposition.HELD, skill=written, why=why)
        created = current.status is SkillStatus.PROPOSED
        disposition = Disposition.CREATED if created else Disposition.UPDATED
        return Proposed(disposition=disposition, skill=written)

    async def _ruling(self, person_id: str, actor: str) -> PolicyDecision:
        """The sentinel's decision, audited, on applying a skill the agent (``actor``)
        proposed: an action of no task's, touching nothing outside."""
        request = ActionRequest(
            person_id=person_id,
            task_id="",
            goal_id=None,
            tool=APPLY_ACTION,
            args={},
            effect=EffectClass.LOCAL,
            scopes=(),
            source="memory",
            wake_reason="",
        )
        return await self.sentinel.judge(request, actor=actor)

    # --- the person's decisions -------------------------------------------------------------

    async def decide(self, skill: Skill, *, approve: bool, actor: str) -> Skill:
        """Apply or reject what waits: a new skill, or a proposed change."""
        if skill.status is SkillStatus.PROPOSED:
            status = SkillStatus.ACTIVE if approve else SkillStatus.ARCHIVED
            changed = replace(skill, status=status)
            reason = "approved" if approve else "rejected"
        elif skill.pending is not None:
            by = skill.pending.actor
            if approve and skill.updated_at > skill.pending.at:
                # approving would put back what a later update replaced
                raise UsageError(
                    f"skill {skill.name!r} changed after this change was proposed: reject it, "
                    "or compare with `steward skill diff` and propose it again"
                )
            changed = replace(skill, pending=None)
            if approve:
                changed = replace(changed, content=skill.pending.content, status=SkillStatus.ACTIVE)
            reason = f"{'approved' if approve else 'rejected'} the change proposed by {by}"
        else:
            raise UsageError(f"nothing about skill {skill.name!r} waits for a decision")
        return await self.store.skills.update_skill(
            replace(changed, updated_at=self.clock.now()),
            actor=actor,
            reason=reason,
            expected_version=skill.version,
        )

    async def restore(self, skill: Skill, version: int, *, actor: str) -> Skill:
        """Make version ``version``'s text the current one, as a new version (active). Tasks
        that already ran keep what they did; later ones follow the restored text."""
        old = await self.store.skills.skill_version(skill.id, version)
        if skill.status is SkillStatus.ACTIVE and old.skill.content.says_same(skill.content):
            raise UsageError(f"skill {skill.name!r} already says what version {version} says")
        changed = replace(
            skill,
            content=old.skill.content,
            status=SkillStatus.ACTIVE,
            updated_at=self.clock.now(),
        )
        return await self.store.skills.update_skill(
            changed, actor=actor, reason=f"restored v{version}", expected_version=skill.version
        )

    async def archive(self, skill: Skill, *, actor: str) -> Skill:
        """Set a skill aside: no task is shown it; its history stays, and restoring a
        version brings it back."""
        if skill.status is SkillStatus.ARCHIVED:
            raise UsageError(f"skill {skill.name!r} is already archived")
        return await self.store.skills.update_skill(
            replace(skill, status=SkillStatus.ARCHIVED, updated_at=self.clock.now()),
            actor=actor,
            reason="archived",
            expected_version=skill.version,
        )

    # --- reading ----------------------------------------------------------------------------

    async def index(self, query: RecallQuery) -> list[Skill]:
        """The active skills the query's audience may hear that match its text, best first:
        by how much of a skill's description the text covers, then by its record."""
        words = _terms(query.text)
        ranked: list[tuple[float, str, Skill]] = []
        for skill in await self.store.skills.list_skills(
            person_id=query.person_id, statuses=[SkillStatus.ACTIVE]
        ):
            if not query.audience.may_hear(skill.content.audience):
                continue
            about = _terms(" ".join((skill.name, skill.description, skill.content.when_to_use)))
            relevance = len(words & about) / len(about) if about else 0.0
            if relevance > 0:
                ranked.append((relevance * (0.5 + skill.success_rate), skill.name, skill))
        ranked.sort(key=lambda r: (-r[0], r[1]))
        return [skill for _, _, skill in ranked[: query.limit]]

    async def load(self, query: RecallQuery, name: str) -> Skill | None:
        """An active skill by name, if the query's audience may hear it; counts a use."""
        try:
            found = await self.store.skills.find_skill(
                person_id=query.person_id, name=skill_name(name)
            )
        except UsageError:
            return None
        if found is None or found.status is not SkillStatus.ACTIVE:
            return None
        if not query.audience.may_hear(found.content.audience):
            return None
        await self.store.skills.record_skill_use(found.id)
        return found

    async def diff(
        self, skill: Skill, *, from_version: int | None = None, to_version: int | None = None
    ) -> str:
        """A unified diff of what two versions say. Without versions: from what the skill
        says to the change that waits, if one does; else from the previous version to this."""
        if from_version is None and to_version is None and skill.pending is not None:
            return unified_diff(
                skill.name,
                (f"v{skill.version}", skill.content),
                ("proposed", skill.pending.content),
            )
        to = to_version if to_version is not None else skill.version
        start = from_version if from_version is not None else to - 1
        older = await self._content_at(skill, start) if start >= 1 else None
        newer = await self._content_at(skill, to)
        return unified_diff(skill.name, (f"v{start}", older), (f"v{to}", newer))

    async def history(self, skill: Skill) -> list[SkillVersion]:
        return await self.store.skills.skill_history(skill.id)

    async def _content_at(self, skill: Skill, version: int) -> SkillContent:
        if version == skill.version:
            return skill.content
        return (await self.store.skills.skill_version(skill.id, version)).skill.content

    # --- as the harness sees it -------------------------------------------------------------

    async def recall(self, query: RecallQuery) -> list[Recalled]:
        """The index for an activation: one line per skill."""
        return [Recalled(id=s.name, text=_index_line(s)) for s in await self.index(query)]

    async def load_for(self, query: RecallQuery, name: str) -> Recalled | None:
        skill = await self.load(query, name)
        if skill is None:
            return None
        return Recalled(
            id=skill.id,
            text=skill.render(),
            provenance=", ".join(skill.content.sources),
            workflow=tuple(step.to_dict() for step in skill.content.workflow),
        )

    async def take(self, proposal: SkillProposal) -> str:
        """A proposal from a task's retrospective; what became of it, in words."""
        try:
            content = SkillContent(
                description=" ".join(proposal.description.split()),
                procedure=proposal.procedure,
                when_to_use=proposal.when_to_use.strip(),
                when_not=proposal.when_not.strip(),
                inputs=tuple(i.strip() for i in proposal.inputs if i.strip()),
                workflow=tuple(WorkflowStep.from_dict(s) for s in proposal.workflow),
                checks=tuple(c.strip() for c in proposal.checks if c.strip()),
                sources=(f"task:{proposal.task_id}",) if proposal.task_id else (),
                audience=proposal.audience,
            )
            proposed = await self.propose(
                person_id=proposal.person_id,
                name=proposal.name,
                content=content,
                actor=f"agent:{proposal.task_id or 'unknown'}",
                trusted=proposal.trusted,
            )
        except UsageError as exc:
            return f"error: not kept: {exc}"
        return proposed.describe()

    async def settle(self, person_id: str, skill_ids: Sequence[str], *, success: bool) -> None:
        await self.store.skills.record_skill_outcome(
            skill_ids, person_id=person_id, success=success
        )


def unified_diff(
    name: str,
    older: tuple[str, SkillContent | None],
    newer: tuple[str, SkillContent | None],
) -> str:
    """What changed between two texts of a skill, field by field, as a unified diff."""
    before = older[1].render().splitlines() if older[1] is not None else []
    after = newer[1].render().splitlines() if newer[1] is not None else []
    lines = difflib.unified_diff(
        before, after, fromfile=f"{name} {older[0]}", tofile=f"{name} {newer[0]}", lineterm=""
    )
    return "\n".join(lines)


def _index_line(skill: Skill) -> str:
    ended = skill.successes + skill.failures
    record = f" ({skill.successes}/{ended} succeeded)" if ended else ""
    return f"{skill.description}{record}"


def _why_held(
    trusted: bool, audience: Audience, current: Skill | None, ruling: PolicyDecision, auto: bool
) -> str:
    """Why a proposal must wait for the person ("" when it applies). What is learned where
    others listen always waits, so that the answer is the same whether or not the person has
    a skill of that name the conversation may not hear."""
    if not trusted:
        return "it was learned in a task that read others' text"
    if audience != PRIVATE:
        return "it was learned in a conversation with others"
    if current is not None and current.status is SkillStatus.ARCHIVED:
        return "the person archived this skill"
    if ruling.verdict is Verdict.ALLOW:
        # allowed by default, without a rule of the person's: the library's default decides
        return "" if ruling.rule_id is not None or auto else "new skills wait for the person"
    if ruling.rule_id is None:
        return ruling.reason
    return f"the person's rule for {APPLY_ACTION} is {ruling.verdict}"


def _merged(current: SkillContent, proposed: SkillContent) -> SkillContent:
    """A change as proposed, with what it leaves empty kept from the current text."""
    return replace(
        proposed,
        when_to_use=proposed.when_to_use or current.when_to_use,
        when_not=proposed.when_not or current.when_not,
        inputs=proposed.inputs or current.inputs,
        workflow=proposed.workflow or current.workflow,
        checks=proposed.checks or current.checks,
        sources=tuple(dict.fromkeys((*current.sources, *proposed.sources))),
        # text kept for one audience may not widen to another's: a mixed skill is private
        audience=proposed.audience if proposed.audience == current.audience else PRIVATE,
    )


def _terms(text: str) -> set[str]:
    return {_stem(t) for t in search_terms(re.sub(r"[-_.]", " ", text), most=64)}


def _stem(word: str) -> str:
    """Crude English stemming, enough for ``invoices`` to match ``invoice``."""
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and not word.endswith("ss") and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word
