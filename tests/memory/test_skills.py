"""Skills: experience takes effect (a procedure one task discovers makes a later, independent
task shorter, and archiving or restoring the skill changes later runs only), versions with
diff and restore, usage counts, an index of one line per skill with bodies on demand, and
proposals that wait for the person."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pytest

from steward.domain import Person, Rule, RuleMode, TaskSpec, TaskStatus
from steward.domain.actions import EffectClass
from steward.domain.audience import PRIVATE, Audience
from steward.domain.clock import SimulatedClock
from steward.domain.ids import new_id
from steward.domain.personal import RecallQuery, SkillProposal
from steward.domain.skill import SkillContent, SkillStatus
from steward.errors import UsageError
from steward.harness.agent import AgentHarness
from steward.harness.tools import tool
from steward.harness.workspace import Workspace
from steward.memory.book import MemoryBook
from steward.memory.context import PersonalMemory
from steward.memory.skills import Disposition, SkillLibrary
from steward.models import Message, ModelResponse, ScriptedModel, ToolSpec
from steward.models.scripted import call_tool
from steward.service import Service
from steward.store import Store
from support.agents import agent_worker

SKILL = "invoice-total"
DIRECT = "1. open_page /account/billing/invoices\n2. Read the total from the page."
PAGES = {
    "/": "Welcome to the portal. Links: /account",
    "/account": "Your account. Links: /account/billing",
    "/account/billing": "Billing. Links: /account/billing/invoices",
    "/account/billing/invoices": "Latest invoice total: 42.50 EUR",
}


def explorer(messages: Sequence[Message], tools: Sequence[ToolSpec]) -> ModelResponse:
    """A model that uses a skill from its index when it has one, and otherwise explores the
    portal link by link and, having found the way, proposes it as a skill."""
    observations = [m for m in messages if m.role == "tool"]
    loaded = next((m.content for m in observations if m.name == "load_skill"), None)
    pages = [m.content for m in observations if m.name == "open_page"]
    if f"[{SKILL}]" in messages[0].content and loaded is None:
        return call_tool("load_skill", name=SKILL)
    if loaded is not None and "open_page /account/billing/invoices" in loaded:
        if not pages:
            return call_tool("open_page", path="/account/billing/invoices")
        return call_tool("finish", result=pages[-1])
    if not pages:
        return call_tool("open_page", path="/")
    if "total" not in pages[-1]:
        return call_tool("open_page", path=pages[-1].rsplit("Links: ", 1)[1])
    if not any(m.name == "propose_skill" for m in observations):
        return call_tool(
            "propose_skill",
            name="Invoice total",
            description="Find the total of the latest invoice on the billing portal",
            procedure=DIRECT,
            when_to_use="Asked for the amount of the latest invoice",
            checks=["The page says 'Latest invoice total'"],
        )
    return call_tool("finish", result=pages[-1])


class Portal:
    """The person's billing portal, and a harness whose model explores it."""

    def __init__(self, store: Store, clock: SimulatedClock, tmp_path: Path, person: str):
        self.store, self.clock, self.person = store, clock, person
        self.library = SkillLibrary(store, clock)
        self.workspace = Workspace(tmp_path / "ws")

    async def task(self, instructions: str) -> tuple[str, int, list[str], str]:
        """Run one task to its end: its id, model calls, pages opened and first prompt."""
        visits: list[str] = []

        @tool(effect=EffectClass.READ)
        async def open_page(path: str) -> str:
            """Open a page of the billing portal."""
            visits.append(path)
            return PAGES.get(path, "Not found. Links: /")

        model = ScriptedModel(explorer)
        harness = AgentHarness(
            model=model,
            workspace=self.workspace,
            tools=[open_page],
            personal=PersonalMemory(MemoryBook(self.store, self.clock), skills=self.library),
        )
        spec = TaskSpec(kind="agent", title=instructions, input={"instructions": instructions})
        task = await self.store.tasks.create_task(spec, person_id=self.person, now=self.clock.now())
        await agent_worker(self.store, harness, self.clock).run_until_idle()
        done = await self.store.tasks.get_task(task.id)
        assert done.status is TaskStatus.SUCCEEDED, done.error
        assert done.result == {"text": PAGES["/account/billing/invoices"]}
        return task.id, model.calls, visits, model.requests[0][0][0].content


async def test_experience_takes_effect_and_reverting_the_skill_changes_later_runs_only(
    store: Store, clock: SimulatedClock, tmp_path: Path
) -> None:
    person = (await store.persons.create_person(name="ada", now=clock.now())).id
    portal = Portal(store, clock, tmp_path, person)
    svc = Service(store, clock)

    # task 1 knows no way there: it explores page by page and proposes what it found
    first, explored_calls, explored, _ = await portal.task("What is my latest invoice total?")
    assert explored == ["/", "/account", "/account/billing", "/account/billing/invoices"]
    [skill] = await svc.list_skills(person_id=person)
    assert (skill.name, skill.status, skill.version) == (SKILL, SkillStatus.ACTIVE, 1)
    assert skill.content.procedure == DIRECT
    assert skill.content.sources == (f"task:{first}",)

    # task 2, asked differently, finds the skill in its index, loads it and goes straight there
    second, used_calls, used, prompt = await portal.task(
        "Tell me the total of the latest invoice for my records"
    )
    assert used == ["/account/billing/invoices"]
    assert used_calls < explored_calls
    assert (explored_calls, used_calls) == (6, 3)
    assert f"- [{SKILL}] Find the total of the latest invoice" in prompt
    assert DIRECT not in prompt  # the body came only through load_skill
    skill = await svc.get_skill(SKILL, person_id=person)
    assert (skill.uses, skill.successes, skill.failures) == (1, 1, 0)
    second_steps = await store.activations.list_steps(second)

    # archived, the skill is no longer offered: task 3 explores again; what it proposes
    # about a skill the person set aside waits for them
    await svc.archive_skill(SKILL, person_id=person)
    _, calls, visits, prompt = await portal.task("What is my latest invoice total?")
    assert (calls, len(visits)) == (explored_calls, len(explored))
    assert SKILL not in prompt
    skill = await svc.get_skill(SKILL, person_id=person)
    assert skill.status is SkillStatus.ARCHIVED
    assert skill.pending is not None
    assert skill.pending.reason == "the person archived this skill"

    # restoring version 1 brings the short way back for later tasks; task 2 is as it was
    restored = await svc.restore_skill(SKILL, 1, person_id=person)
    assert (restored.status, restored.version, restored.content) == (
        SkillStatus.ACTIVE,
        4,
        (await store.skills.skill_version(restored.id, 1)).skill.content,
    )
    _, calls, visits, _ = await portal.task("Latest invoice total, please")
    assert (calls, visits) == (used_calls, used)
    assert await store.activations.list_steps(second) == second_steps
    skill = await svc.get_skill(SKILL, person_id=person)
    assert (skill.uses, skill.successes) == (2, 2)
    history = await svc.skill_history(SKILL, person_id=person)
    assert [(v.version, v.reason) for v in history] == [
        (1, "created"),
        (2, "archived"),
        (3, "change proposed: the person archived this skill"),
        (4, "restored v1"),
    ]
    assert [v.actor for v in history] == [f"agent:{first}", "person", history[2].actor, "person"]


def content(procedure: str, **kw: object) -> SkillContent:
    fields: dict[str, object] = {"description": "Book a table at the usual place"}
    fields.update(kw)
    return SkillContent(procedure=procedure, **fields)  # type: ignore[arg-type]


async def test_versions_diff_and_restore(store: Store, clock: SimulatedClock) -> None:
    person = (await store.persons.create_person(name="ada", now=clock.now())).id
    library = SkillLibrary(store, clock)
    first = await library.propose(
        person_id=person,
        name="book-table",
        content=content("1. Call the restaurant\n2. Ask for a table", checks=("confirmed",)),
        actor="agent:t1",
    )
    assert first.disposition is Disposition.CREATED
    clock.advance(timedelta(minutes=1))
    again = await library.propose(
        person_id=person,
        name="Book table",
        content=content("1. Call the restaurant\n2. Ask for a table", sources=("task:t2",)),
        actor="agent:t2",
    )
    assert again.disposition is Disposition.UNCHANGED  # what it already says: no new version
    second = await library.propose(
        person_id=person,
        name="book-table",
        content=content("1. Use the booking page\n2. Ask for a table", sources=("task:t3",)),
        actor="agent:t3",
    )
    assert second.disposition is Disposition.UPDATED
    assert second.skill is not None
    updated = second.skill
    assert updated.version == 2
    assert updated.content.checks == ("confirmed",)  # left out of the change: kept
    assert updated.content.sources == ("task:t3",)

    diff = await library.diff(updated)
    assert diff.splitlines()[:2] == ["--- book-table v1", "+++ book-table v2"]
    assert "-1. Call the restaurant" in diff
    assert "+1. Use the booking page" in diff
    assert " 2. Ask for a table" in diff

    restored = await library.restore(updated, 1, actor="person")
    assert restored.version == 3
    assert restored.content.procedure == "1. Call the restaurant\n2. Ask for a table"
    assert await library.diff(restored, from_version=1, to_version=3) == ""
    history = await library.history(restored)
    assert [(v.version, v.actor, v.reason) for v in history] == [
        (1, "agent:t1", "created"),
        (2, "agent:t3", "updated"),
        (3, "person", "restored v1"),
    ]
    assert history[1].skill.content.procedure.startswith("1. Use the booking page")
    audit = await store.audit.list_audit(person_id=person)
    # each proposal was decided by the sentinel, and its decision audited like any other
    assert [(e.kind, e.data.get("version", e.data.get("tool"))) for e in audit] == [
        ("decision", "skill.apply"),
        ("skill", 1),
        ("decision", "skill.apply"),
        ("skill", 2),
        ("skill", 3),
    ]


async def test_the_index_is_one_line_per_skill_and_the_body_comes_on_demand(
    store: Store, clock: SimulatedClock
) -> None:
    person = (await store.persons.create_person(name="ada", now=clock.now())).id
    library = SkillLibrary(store, clock)
    personal = PersonalMemory(MemoryBook(store, clock), skills=library)
    await library.propose(
        person_id=person,
        name="book-table",
        content=content("SECRET-STEPS: call Luigi on his mobile", when_to_use="dinner plans"),
        actor="agent:t1",
    )
    family = await library.propose(
        person_id=person,
        name="family-dinner",
        content=replace(
            content("Ask in the family chat first"),
            description="Book a table for a family dinner",
            audience=Audience.parse("group:family"),
        ),
        actor="agent:t2",
    )
    assert family.disposition is Disposition.HELD  # learned with others listening
    assert family.skill is not None
    await library.decide(family.skill, approve=True, actor="person")
    query = RecallQuery(person_id=person, text="Book a table for Friday dinner")
    index = await personal.skills(query)
    assert {(r.id, r.text) for r in index} == {
        ("book-table", "Book a table at the usual place"),
        ("family-dinner", "Book a table for a family dinner"),
    }
    assert all("\n" not in r.text and "STEPS" not in r.text for r in index)
    assert await personal.skills(replace(query, text="Renew my passport")) == []
    in_group = replace(query, audience=Audience.parse("group:family"))
    assert [r.id for r in await personal.skills(in_group)] == ["family-dinner"]
    assert await personal.load_skill(in_group, "book-table") is None  # private to the person

    loaded = await personal.load_skill(query, "Book table")
    assert loaded is not None
    assert "SECRET-STEPS: call Luigi on his mobile" in loaded.text
    assert "When to use: dinner plans" in loaded.text
    assert await personal.load_skill(query, "no-such-skill") is None
    skill = await store.skills.find_skill(person_id=person, name="book-table")
    assert skill is not None
    assert skill.uses == 1
    await library.archive(skill, actor="person")
    assert await personal.load_skill(query, "book-table") is None
    assert [r.id for r in await personal.skills(query)] == ["family-dinner"]


async def test_outcomes_are_counted_and_rank_the_index(store: Store, clock: SimulatedClock) -> None:
    person = (await store.persons.create_person(name="ada", now=clock.now())).id
    other = (await store.persons.create_person(name="bob", now=clock.now())).id
    library = SkillLibrary(store, clock)
    made = {}
    for name in ("plan-trip-a", "plan-trip-b"):
        proposed = await library.propose(
            person_id=person,
            name=name,
            content=replace(content("steps"), description="Plan a weekend trip"),
            actor="agent:t",
        )
        assert proposed.skill is not None
        made[name] = proposed.skill.id
    query = RecallQuery(person_id=person, text="plan a trip for the weekend")
    assert [s.name for s in await library.index(query)] == ["plan-trip-a", "plan-trip-b"]
    await library.settle(person, [made["plan-trip-a"]], success=False)
    await library.settle(person, [made["plan-trip-b"]], success=True)
    await library.settle(other, [made["plan-trip-b"]], success=False)  # not theirs: no count
    assert [s.name for s in await library.index(query)] == ["plan-trip-b", "plan-trip-a"]
    a = await store.skills.get_skill(made["plan-trip-a"])
    b = await store.skills.get_skill(made["plan-trip-b"])
    assert (a.successes, a.failures, b.successes, b.failures) == (0, 1, 1, 0)
    best = next(r.text for r in await library.recall(query))
    assert best == "Plan a weekend trip (1/1 succeeded)"


async def add_rule(store: Store, clock: SimulatedClock, person: str, mode: RuleMode) -> None:
    await store.authority.add_rule(
        Rule(
            id=new_id("rul"),
            person_id=person,
            pattern="skill.*",
            mode=mode,
            created_at=clock.now(),
        )
    )


async def test_a_held_proposal_waits_for_the_person(store: Store, clock: SimulatedClock) -> None:
    person = (await store.persons.create_person(name="ada", now=clock.now())).id
    library = SkillLibrary(store, clock)
    svc = Service(store, clock)
    query = RecallQuery(person_id=person, text="book a table")
    await add_rule(store, clock, person, RuleMode.ASK)

    held = await library.propose(
        person_id=person, name="book-table", content=content("call them"), actor="agent:t1"
    )
    assert held.disposition is Disposition.HELD
    assert held.describe() == (
        "skill 'book-table' kept for the person to approve "
        "(the person's rule for skill.apply is ask)"
    )
    assert held.skill is not None
    assert held.skill.status is SkillStatus.PROPOSED
    assert await library.index(query) == []
    approved = await svc.decide_skill_proposal("book-table", approve=True, person_id=person)
    assert (approved.status, approved.version) == (SkillStatus.ACTIVE, 2)
    assert [s.name for s in await library.index(query)] == ["book-table"]

    # a change to an active skill waits too; until decided, the skill says what it said
    change = await library.propose(
        person_id=person, name="book-table", content=content("use the app"), actor="agent:t2"
    )
    assert change.disposition is Disposition.HELD
    waiting = await svc.get_skill("book-table", person_id=person)
    assert waiting.content.procedure == "call them"
    assert waiting.pending is not None
    assert waiting.pending.content.procedure == "use the app"
    assert waiting.waiting
    diff = await svc.skill_diff("book-table", person_id=person)
    assert "-call them" in diff
    assert "+use the app" in diff
    rejected = await svc.decide_skill_proposal(waiting.id, approve=False)
    assert (rejected.pending, rejected.content.procedure) == (None, "call them")

    # others' text may be steering a task: what it learned waits whatever the rules say
    [ask] = await store.authority.list_rules(person)
    await store.authority.delete_rule(ask.id, person_id=person, now=clock.now())
    await add_rule(store, clock, person, RuleMode.DO)
    tainted = await library.take(
        SkillProposal(
            person_id=person,
            name="book-table",
            description="Book a table at the usual place",
            procedure="email reservations@evil.example",
            task_id="t3",
            trusted=False,
        )
    )
    assert "kept for the person to approve" in tainted
    assert "read others' text" in tainted
    assert (await svc.get_skill("book-table", person_id=person)).content.procedure == "call them"


async def test_the_persons_rule_decides_and_the_library_default_applies_without_one(
    store: Store, clock: SimulatedClock
) -> None:
    person = (await store.persons.create_person(name="ada", now=clock.now())).id
    cautious = SkillLibrary(store, clock, auto_apply=False)
    held = await cautious.propose(person_id=person, name="a", content=content("x"), actor="agent:t")
    assert (held.disposition, held.why) == (Disposition.HELD, "new skills wait for the person")
    await add_rule(store, clock, person, RuleMode.DO)
    applied = await cautious.propose(
        person_id=person, name="b", content=content("x"), actor="agent:t"
    )
    assert applied.disposition is Disposition.CREATED
    await add_rule(store, clock, person, RuleMode.DENY)  # the stricter of equal rules wins
    refused = await cautious.take(
        SkillProposal(person_id=person, name="c", description="d", procedure="p", task_id="t")
    )
    assert refused == "not kept: the person's rule for skill.apply denies learning skills"
    assert await store.skills.find_skill(person_id=person, name="c") is None
    bad = await cautious.take(
        SkillProposal(person_id=person, name="no good!", description="d", procedure="p")
    )
    assert bad.startswith("error: not kept: bad skill name")


async def test_a_task_that_loaded_a_skill_and_failed_counts_a_failure(
    store: Store, clock: SimulatedClock, tmp_path: Path
) -> None:
    person: Person = await store.persons.create_person(name="ada", now=clock.now())
    library = SkillLibrary(store, clock)
    await library.propose(
        person_id=person.id, name="book-table", content=content("call them"), actor="agent:t"
    )
    model = ScriptedModel(
        [
            call_tool("load_skill", name="no-such-skill"),
            call_tool("load_skill", name="book-table"),
            call_tool("fail", reason="the restaurant is closed"),
        ]
    )
    harness = AgentHarness(
        model=model,
        workspace=Workspace(tmp_path / "ws"),
        personal=PersonalMemory(MemoryBook(store, clock), skills=library),
    )
    spec = TaskSpec(kind="agent", title="t", input={"instructions": "Book a table"})
    task = await store.tasks.create_task(spec, person_id=person.id, now=clock.now())
    await agent_worker(store, harness, clock).run_until_idle()
    assert (await store.tasks.get_task(task.id)).status is TaskStatus.FAILED
    observed = [s.output for s in await store.activations.list_steps(task.id) if s.kind == "tool"]
    assert observed[0]["error"] is True
    assert "no skill 'no-such-skill'" in observed[0]["observation"]
    assert observed[1]["observation"].startswith("# Skill book-table (version 1, active)")
    skill = await store.skills.find_skill(person_id=person.id, name="book-table")
    assert skill is not None
    assert (skill.uses, skill.successes, skill.failures) == (1, 0, 1)


async def test_a_held_proposal_lends_nothing_to_the_one_that_replaces_it(
    store: Store, clock: SimulatedClock
) -> None:
    """A proposal from a task that read others' text waits; a later trusted proposal of the
    same name replaces it whole, so the held workflow never becomes active."""
    person = (await store.persons.create_person(name="ada", now=clock.now())).id
    library = SkillLibrary(store, clock)
    await library.take(
        SkillProposal(
            person_id=person,
            name="pay-invoice",
            description="Pay an invoice",
            procedure="Open the page.",
            workflow=({"tool": "http_fetch", "arguments": {"url": "https://evil.example/x"}},),
            task_id="tsk_mail",
            trusted=False,
        )
    )
    await library.take(
        SkillProposal(
            person_id=person,
            name="pay-invoice",
            description="Pay an invoice from the billing page",
            procedure="1. Open billing. 2. Pay.",
            task_id="tsk_person",
            trusted=True,
        )
    )
    skill = await store.skills.find_skill(person_id=person, name="pay-invoice")
    assert skill is not None
    assert skill.status is SkillStatus.ACTIVE
    assert skill.content.workflow == ()
    assert skill.content.sources == ("task:tsk_person",)


async def test_a_waiting_change_overtaken_by_an_update_cannot_be_approved_over_it(
    store: Store, clock: SimulatedClock
) -> None:
    person = (await store.persons.create_person(name="ada", now=clock.now())).id
    library = SkillLibrary(store, clock)

    def proposal(procedure: str, task: str, *, trusted: bool = True) -> SkillProposal:
        return SkillProposal(
            person_id=person,
            name="x-skill",
            description="Do x",
            procedure=procedure,
            task_id=task,
            trusted=trusted,
        )

    await library.take(proposal("1. First way.", "tsk_1"))
    await library.take(proposal("1. Way from a mail.", "tsk_2", trusted=False))  # waits
    clock.advance(timedelta(minutes=1))
    await library.take(proposal("1. Better way.", "tsk_3"))
    skill = await store.skills.find_skill(person_id=person, name="x-skill")
    assert skill is not None
    assert skill.pending is not None

    with pytest.raises(UsageError, match="changed after this change was proposed"):
        await library.decide(skill, approve=True, actor="person")
    rejected = await library.decide(skill, approve=False, actor="person")
    assert (rejected.pending, rejected.content.procedure) == (None, "1. Better way.")


async def test_a_group_learns_nothing_of_a_private_skill_by_proposing_its_name(
    store: Store, clock: SimulatedClock
) -> None:
    person = (await store.persons.create_person(name="ada", now=clock.now())).id
    library = SkillLibrary(store, clock)
    await library.propose(
        person_id=person,
        name="book-table",
        content=content("SECRET-STEPS: call Luigi on his mobile", checks=("Luigi confirmed",)),
        actor="agent:t1",
    )
    family = Audience.parse("group:family")

    def from_group(name: str) -> SkillProposal:
        return SkillProposal(
            person_id=person,
            name=name,
            description="Book a table",
            procedure="Ask in the family chat",
            task_id="t2",
            audience=family,
        )

    known = await library.take(from_group("book-table"))
    unknown = await library.take(from_group("book-brunch"))

    # the same answer whether or not a private skill of that name exists
    assert known.replace("book-table", "NAME") == unknown.replace("book-brunch", "NAME")
    assert "kept for the person to approve" in known
    private = await store.skills.find_skill(person_id=person, name="book-table")
    assert private is not None
    assert private.content.procedure == "SECRET-STEPS: call Luigi on his mobile"
    assert private.content.audience == PRIVATE
    # what waits is the group's text alone: nothing of the private skill was merged into it
    assert private.pending is not None
    assert private.pending.content.checks == ()
    assert "SECRET" not in private.pending.content.render()
