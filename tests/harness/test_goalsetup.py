"""Goals from conversation: said in chat through the Service (the dashboard's path), the agent
sets up standing work with ``create_goal``; the person is asked with one sentence, a rule of
theirs can allow it, a denial creates nothing, a lost outcome replayed creates nothing twice,
the schedule runs in the person's time zone on a simulated clock, a deadline expires the goal
and stops its trigger, and bad arguments come back to the model before anyone is asked."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from steward.app import build_harness
from steward.config import Settings
from steward.domain import (
    ApprovalStatus,
    GoalStatus,
    Person,
    TaskStatus,
    TriggerKind,
)
from steward.domain.audience import Audience
from steward.domain.clock import SimulatedClock
from steward.domain.journal import EffectStatus
from steward.harness.agent import AgentHarness
from steward.harness.tools import ToolContext
from steward.models import ScriptedModel
from steward.models.base import Message, ModelResponse
from steward.models.scripted import ScriptItem, call_tool
from steward.runtime.simulate import run_simulation
from steward.runtime.standing import StandingWork
from steward.sentinel.defaults import STANDING_WORK_REASON, STANDING_WORK_TOOLS
from steward.service import Service
from steward.store import Store
from support.agents import agent_worker
from support.clock import START

ZURICH = ZoneInfo("Europe/Zurich")
ASKED = "Every weekday at 8, check my calendar for conflicts and tell me only if there is one"
CALENDAR_GOAL = {
    "title": "Calendar conflicts",
    "instructions": "Check your calendar and tell you if two events overlap.",
    "schedule": ["cron 0 8 * * 1-5"],
    "report_policy": "actionable",
    "timezone": "Europe/Zurich",
}
SENTENCE = (
    "Set up a standing goal 'Calendar conflicts': every weekday at 08:00 (Europe/Zurich) "
    "check your calendar and tell you if two events overlap (telling you only what needs you)."
)


@pytest.fixture
async def person(store: Store, clock: SimulatedClock) -> Person:
    """Ana, in Zurich; the clock starts Monday 5 January 2026, 09:00 her time."""
    return await store.persons.create_person(
        name="Ana", timezone="Europe/Zurich", now=clock.now(), max_concurrency=8
    )


async def agent(
    store: Store, clock: SimulatedClock, tmp_path: Path, script: list[ModelResponse]
) -> tuple[AgentHarness, ScriptedModel]:
    """The harness a worker process runs (``build_harness``), answering from ``script`` and
    then finishing every further task."""
    model = ScriptedModel(
        [*script, call_tool("finish", result="Nothing overlaps.")], loop_last=True
    )
    harness = await build_harness(Settings(data_dir=tmp_path), store, clock, model=model)
    return harness, model


def observations(model: ScriptedModel) -> str:
    return "\n".join(str(m.content) for m in model.requests[-1][0] if m.role == "tool")


async def test_a_weekday_goal_said_in_chat_is_set_up_once_after_approval_and_runs_on_weekdays(
    store: Store, clock: SimulatedClock, person: Person, tmp_path: Path
) -> None:
    svc = Service(store, clock)
    harness, _ = await agent(
        store,
        clock,
        tmp_path,
        [call_tool("create_goal", **CALENDAR_GOAL), call_tool("finish", result="Set up.")],
    )
    chat = await svc.ask_agent(person_id=person.id, instructions=ASKED, chat=True)
    worker = agent_worker(store, harness, clock)
    await worker.run_until_idle()

    [approval] = await svc.list_approvals(person_id=person.id)
    assert approval.status is ApprovalStatus.PENDING
    assert approval.summary == SENTENCE
    assert approval.reason == STANDING_WORK_REASON
    assert await store.goals.list_goals(person_id=person.id) == []  # nothing before the yes

    await svc.decide_approval(approval.id, approve=True)
    await worker.run_until_idle()
    assert (await store.tasks.get_task(chat.id)).status is TaskStatus.SUCCEEDED
    [goal] = await store.goals.list_goals(person_id=person.id)
    assert (goal.title, goal.report_policy, goal.person_id) == (
        "Calendar conflicts",
        "actionable",
        person.id,
    )
    [trigger] = await store.schedule.list_triggers(goal_id=goal.id)
    assert (trigger.kind, trigger.spec, trigger.timezone) == (
        TriggerKind.CRON,
        "0 8 * * 1-5",
        "Europe/Zurich",
    )
    assert trigger.task.input["audience"] == "private"

    await run_simulation(store, harness, clock, until=START + timedelta(days=14))
    runs = [
        t
        for t in await store.tasks.list_tasks(goal_id=goal.id, limit=100)
        if t.trigger_id == trigger.id
    ]
    assert len(runs) == 10  # two weeks of weekdays after Monday 09:00
    for run in runs:
        local = run.created_at.astimezone(ZURICH)
        assert (local.hour, local.minute) == (8, 0)
        assert local.weekday() < 5
        assert run.status is TaskStatus.SUCCEEDED
    assert len(await store.goals.list_goals(person_id=person.id)) == 1


class LosesTheAnswer(StandingWork):
    """Writes the goal, then loses the connection before the answer comes back (the first time
    only): the journal cannot tell whether it happened."""

    lost = 0

    async def create_goal(self, **kw: Any) -> Any:
        made = await super().create_goal(**kw)
        if not self.lost:
            self.lost += 1
            raise ConnectionResetError("connection lost after the goal was written")
        return made


async def test_an_outcome_lost_after_the_goal_was_written_is_replayed_without_a_second_goal(
    store: Store, clock: SimulatedClock, person: Person, tmp_path: Path
) -> None:
    from steward.harness.goalsetup import goal_tools

    svc = Service(store, clock)
    await svc.add_rule(person_id=person.id, pattern="create_goal", mode="do")
    flaky = LosesTheAnswer(store, clock)
    harness, _ = await agent(
        store,
        clock,
        tmp_path,
        [call_tool("create_goal", **CALENDAR_GOAL), call_tool("finish", result="Set up.")],
    )
    harness.tools.with_overrides("create_goal", invoke=goal_tools(flaky, clock)[0].invoke)
    chat = await svc.ask_agent(person_id=person.id, instructions=ASKED, chat=True)
    worker = agent_worker(store, harness, clock)
    await worker.run_until_idle()
    clock.advance(timedelta(minutes=5))  # past the retry's back-off
    await worker.run_until_idle()

    assert flaky.lost == 1
    assert (await store.tasks.get_task(chat.id)).status is TaskStatus.SUCCEEDED
    [goal] = await store.goals.list_goals(person_id=person.id)
    assert len(await store.schedule.list_triggers(goal_id=goal.id)) == 1
    [effect] = await store.effects.list_effects(task_id=chat.id)
    assert (effect.tool, effect.status) == ("create_goal", EffectStatus.SUCCEEDED)


async def test_a_denied_goal_is_not_created_and_a_rule_allowing_goal_setup_asks_nothing(
    store: Store, clock: SimulatedClock, person: Person, tmp_path: Path
) -> None:
    svc = Service(store, clock)
    harness, model = await agent(
        store,
        clock,
        tmp_path,
        [
            call_tool("create_goal", **CALENDAR_GOAL),
            call_tool("finish", result="Not set up."),
            call_tool("create_goal", **CALENDAR_GOAL),
            call_tool("finish", result="Set up."),
        ],
    )
    worker = agent_worker(store, harness, clock)
    denied = await svc.ask_agent(person_id=person.id, instructions=ASKED, chat=True)
    await worker.run_until_idle()
    [approval] = await svc.list_approvals(person_id=person.id)
    await svc.decide_approval(approval.id, approve=False)
    await worker.run_until_idle()
    assert (await store.tasks.get_task(denied.id)).status is TaskStatus.SUCCEEDED
    assert "denied" in observations(model)
    assert await store.goals.list_goals(person_id=person.id) == []
    assert await store.schedule.list_triggers(person_id=person.id) == []

    await svc.add_rule(person_id=person.id, pattern="create_goal", mode="do")
    group = Audience.parse("group:family")
    allowed = await svc.ask_agent(
        person_id=person.id, instructions=ASKED, chat=True, audience=group
    )
    await worker.run_until_idle()
    assert (await store.tasks.get_task(allowed.id)).status is TaskStatus.SUCCEEDED
    assert [a.id for a in await svc.list_approvals(person_id=person.id, status=None)] == [
        approval.id
    ]
    [goal] = await store.goals.list_goals(person_id=person.id)
    [trigger] = await store.schedule.list_triggers(goal_id=goal.id)
    # made in a family group chat: its runs speak to that group, never more widely
    assert trigger.task.input["audience"] == str(group)


async def test_remind_me_on_friday_at_nine_is_a_goal_with_one_at_trigger(
    store: Store, clock: SimulatedClock, person: Person, tmp_path: Path
) -> None:
    svc = Service(store, clock)
    await svc.add_rule(person_id=person.id, pattern="create_goal", mode="do")
    friday = datetime(2026, 1, 9, 9, 0, tzinfo=ZURICH)
    harness, model = await agent(
        store,
        clock,
        tmp_path,
        [
            call_tool(
                "create_goal",
                title="Call Dana",
                instructions="Remind the person to call Dana.",
                schedule=[f"at {friday.isoformat()}"],
                report_policy="all",
            ),
            call_tool("finish", result="I will remind you on Friday at 09:00."),
        ],
    )
    await svc.ask_agent(
        person_id=person.id, instructions="remind me on Friday at 9 to call Dana", chat=True
    )
    await agent_worker(store, harness, clock).run_until_idle()
    [goal] = await store.goals.list_goals(person_id=person.id)
    [trigger] = await store.schedule.list_triggers(goal_id=goal.id)
    assert (trigger.kind, trigger.timezone, goal.report_policy) == (
        TriggerKind.AT,
        "Europe/Zurich",  # the person's, not given by the model
        "all",
    )
    assert trigger.next_fire_at == friday
    # the model was told the time as the person lives it, to know which Friday and which 9
    told = str(model.requests[0][0][0].content)
    assert "Current time: 2026-01-05T09:00:00+01:00 (Monday, the person's time zone " in told
    assert trigger.next_fire_at.astimezone(ZURICH).strftime("%a %H:%M") == "Fri 09:00"


async def test_until_the_end_of_the_month_expires_the_goal_and_stops_its_trigger(
    store: Store, clock: SimulatedClock, person: Person, tmp_path: Path
) -> None:
    svc = Service(store, clock)
    await svc.add_rule(person_id=person.id, pattern="create_goal", mode="do")
    end = datetime(2026, 1, 31, 23, 59, 59, tzinfo=ZURICH)
    harness, _ = await agent(
        store,
        clock,
        tmp_path,
        [
            call_tool(
                "create_goal",
                title="Flat listings",
                instructions="Look for new flat listings in Zurich.",
                schedule=["cron 0 9 * * *"],
                deadline=end.isoformat(),
            ),
            call_tool("finish", result="Set up until the end of January."),
        ],
    )
    await svc.ask_agent(
        person_id=person.id,
        instructions="Every morning until the end of the month, look for new flat listings",
        chat=True,
    )
    await agent_worker(store, harness, clock).run_until_idle()
    [goal] = await store.goals.list_goals(person_id=person.id)
    assert goal.deadline == end

    await run_simulation(store, harness, clock, until=datetime(2026, 2, 4, tzinfo=ZURICH))
    goal = await store.goals.get_goal(goal.id)
    assert goal.status is GoalStatus.EXPIRED
    [trigger] = await store.schedule.list_triggers(goal_id=goal.id)
    assert not trigger.enabled
    runs = [t for t in await store.tasks.list_tasks(goal_id=goal.id, limit=100) if t.trigger_id]
    days = sorted(t.created_at.astimezone(ZURICH).date() for t in runs)
    assert len(days) == 26  # 6 to 31 January at 09:00, none in February
    assert days[-1] == end.date()


async def test_bad_goal_arguments_come_back_to_the_model_and_nothing_is_asked_or_made(
    store: Store, clock: SimulatedClock, person: Person, tmp_path: Path
) -> None:
    svc = Service(store, clock)
    bad = [
        {"schedule": ["cron 0 25 * * *"]},
        {"deadline": (START - timedelta(days=1)).isoformat()},
        {"report_policy": "sometimes"},
        {"timezone": "Mars/Olympus"},
        {"schedule": ["fortnightly"]},
        {"schedule": [f"at {(START - timedelta(hours=1)).isoformat()}"]},
    ]
    harness, model = await agent(
        store,
        clock,
        tmp_path,
        [
            *(call_tool("create_goal", **(CALENDAR_GOAL | changed)) for changed in bad),
            call_tool("finish", result="I could not set it up."),
        ],
    )
    task = await svc.ask_agent(person_id=person.id, instructions=ASKED, chat=True)
    await agent_worker(store, harness, clock).run_until_idle()

    assert (await store.tasks.get_task(task.id)).status is TaskStatus.SUCCEEDED
    seen = observations(model)
    for reason in (
        "bad cron expression '0 25 * * *'",
        "the deadline",
        "has already passed",
        "report_policy",
        "unknown time zone 'Mars/Olympus'",
        "schedule 'fortnightly' is not one of",
        "the reminder time",
    ):
        assert reason in seen
    assert await svc.list_approvals(person_id=person.id) == []
    assert await store.goals.list_goals(person_id=person.id) == []
    assert await store.effects.list_effects(task_id=task.id) == []


def _made(conversation: Sequence[Message], key: str) -> list[Any]:
    """The values of ``key`` in the tool results so far, oldest first."""
    found = []
    for message in conversation:
        if message.role == "tool" and message.content.startswith("{"):
            result = json.loads(message.content)
            if key in result:
                found.append(result[key])
    return found


def on_goal(name: str, **arguments: Any) -> Callable[[Sequence[Message], Any], ModelResponse]:
    """A scripted answer calling ``name`` on the goal the conversation created."""

    def answer(conversation: Sequence[Message], _tools: Any) -> ModelResponse:
        [goal_id] = _made(conversation, "goal_id")[:1]
        given = {k: v(conversation) if callable(v) else v for k, v in arguments.items()}
        return call_tool(name, goal=goal_id, **given)

    return answer


async def test_a_goal_is_changed_rescheduled_and_completed_when_its_stop_condition_holds(
    store: Store, clock: SimulatedClock, person: Person, tmp_path: Path
) -> None:
    svc = Service(store, clock)
    await svc.add_rule(person_id=person.id, pattern="*_goal", mode="do")
    first_trigger = lambda conversation: _made(conversation, "triggers")[0][0]["id"]  # noqa: E731
    deadline = datetime(2026, 2, 28, 23, 59, 59, tzinfo=ZURICH)
    script: list[ScriptItem] = [
        call_tool(
            "create_goal",
            title="Parcel",
            instructions="Check whether the parcel from Basel has arrived.",
            schedule=["cron 0 9 * * *"],
            stop_condition="the tracking page says delivered",
        ),
        # by the goal's title, as the person knows it
        call_tool("update_goal", goal="parcel", state="pause", report_policy="all"),
        on_goal("update_goal", state="resume", deadline=deadline.isoformat(), sources=["post"]),
        on_goal("schedule_goal", add="every 6h"),
        on_goal("schedule_goal", stop_trigger=first_trigger),
        call_tool("finish", result="I will watch the parcel until it arrives."),
        # the first run of the 6-hourly schedule: the goal's stop condition holds
        call_tool("complete_goal", evidence="The tracking page says delivered on Monday."),
        call_tool("finish", result="The parcel arrived."),
    ]
    model = ScriptedModel(script)
    harness = await build_harness(Settings(data_dir=tmp_path), store, clock, model=model)
    chat = await svc.ask_agent(person_id=person.id, instructions="Watch my parcel", chat=True)
    await agent_worker(store, harness, clock).run_until_idle()
    assert (await store.tasks.get_task(chat.id)).status is TaskStatus.SUCCEEDED
    [goal] = await store.goals.list_goals(person_id=person.id)
    assert (goal.status, goal.report_policy, goal.deadline, goal.sources) == (
        GoalStatus.ACTIVE,
        "all",
        deadline,
        ["post"],
    )
    by_kind = {t.kind: t for t in await store.schedule.list_triggers(goal_id=goal.id)}
    daily, six_hourly = by_kind[TriggerKind.CRON], by_kind[TriggerKind.INTERVAL]
    assert (daily.kind, daily.enabled) == (TriggerKind.CRON, False)
    assert (six_hourly.spec, six_hourly.enabled) == ("21600", True)

    await run_simulation(store, harness, clock, until=START + timedelta(days=2))
    [run] = [t for t in await store.tasks.list_tasks(goal_id=goal.id) if t.trigger_id]
    assert run.trigger_id == six_hourly.id
    prompt = str(model.requests[6][0][0].content)
    assert "Done when: the tracking page says delivered" in prompt
    assert "call complete_goal" in prompt
    assert run.status is TaskStatus.SUCCEEDED  # the task that completed it is not cancelled
    goal = await store.goals.get_goal(goal.id)
    assert goal.status is GoalStatus.COMPLETED
    assert not any(t.enabled for t in await store.schedule.list_triggers(goal_id=goal.id))
    [evidence] = [r for r in await store.goals.list_goal_records(goal.id) if r.kind == "evidence"]
    assert evidence.content["text"] == "The tracking page says delivered on Monday."
    assert model.calls == len(script)  # no further run after it completed


async def test_another_persons_goal_cannot_be_changed_and_changes_read_as_sentences(
    store: Store, clock: SimulatedClock, person: Person, tmp_path: Path
) -> None:
    svc = Service(store, clock)
    other = await store.persons.create_person(name="Bo", now=clock.now())
    theirs = await store.goals.create_goal(person_id=other.id, title="Bo's taxes", now=clock.now())
    await svc.add_rule(person_id=person.id, pattern="*_goal", mode="do")
    harness, model = await agent(
        store,
        clock,
        tmp_path,
        [
            call_tool("update_goal", goal=theirs.id, state="pause"),
            call_tool("complete_goal", goal="Bo's taxes", evidence="Filed."),
            call_tool("finish", result="No such goal."),
        ],
    )
    await svc.ask_agent(person_id=person.id, instructions="Pause Bo's taxes", chat=True)
    await agent_worker(store, harness, clock).run_until_idle()
    assert observations(model).count("you have no running goal called") == 2
    assert (await store.goals.get_goal(theirs.id)).status is GoalStatus.ACTIVE

    update = harness.tools.get("update_goal")
    assert update is not None
    args = update.parse_arguments(
        json.dumps({"goal": "Parcel", "state": "pause", "report_policy": "none"})
    )
    assert (
        update.summary(args)
        == "Change your standing goal 'Parcel': pause it; go on without telling you."
    )
    # a time in words, not an ISO string; a schedule by what it is, not its id
    args = update.parse_arguments(
        json.dumps({"goal": "Parcel", "deadline": "2027-01-31T23:59:00+01:00"})
    )
    assert update.summary(args) == (
        "Change your standing goal 'Parcel': set its deadline to Sun 31 Jan 2027 23:59."
    )
    schedule = harness.tools.get("schedule_goal")
    assert schedule is not None
    args = schedule.parse_arguments(
        json.dumps({"goal": "Parcel", "stop_trigger": "trg_01abcdef0123456789"})
    )
    assert schedule.summary(args) == "Stop one of the schedules of your goal 'Parcel'."


async def test_every_goal_tool_is_offered_journalled_and_asked_about_by_default(
    store: Store, clock: SimulatedClock, tmp_path: Path
) -> None:
    harness, _ = await agent(store, clock, tmp_path, [])
    for name in sorted(STANDING_WORK_TOOLS):
        found = harness.tools.get(name)
        assert found is not None, name
        assert found.effect.journalled, name
        assert found.idempotent, name


async def test_a_page_watched_for_a_goal_is_asked_about_made_once_and_bad_ones_refused(
    store: Store, clock: SimulatedClock, person: Person, tmp_path: Path
) -> None:
    svc = Service(store, clock)
    await svc.add_rule(person_id=person.id, pattern="create_goal", mode="do")
    watch = {
        "goal": "Tent",
        "url": "https://shop.example/tent",
        "read": "css",
        "selector": ".price",
        "conditions": [{"kind": "below", "threshold": "200"}],
        "every": "1h",
    }
    harness, model = await agent(
        store,
        clock,
        tmp_path,
        [
            call_tool(
                "create_goal",
                title="Tent",
                instructions="Tell me when the tent costs less than 200.",
                report_policy="actionable",
            ),
            call_tool("watch_page", **(watch | {"every": "10s"})),
            call_tool("watch_page", **(watch | {"selector": "..price"})),
            call_tool("watch_page", **(watch | {"conditions": [{"kind": "cheaper"}]})),
            call_tool("watch_page", **watch),
            call_tool("finish", result="Watching the tent's price."),
        ],
    )
    chat = await svc.ask_agent(
        person_id=person.id, instructions="Tell me when the tent is under 200", chat=True
    )
    worker = agent_worker(store, harness, clock)
    await worker.run_until_idle()
    seen = observations(model)
    assert "at most once a minute" in seen
    assert "a condition is not one of the kinds" in seen
    assert seen.count("error:") == 3
    [approval] = await svc.list_approvals(person_id=person.id)  # only the good one is asked
    assert approval.summary == (
        "Watch https://shop.example/tent for your goal 'Tent': the element .price, checked "
        "hourly; wake the goal when below 200."
    )
    await svc.decide_approval(approval.id, approve=True)
    await worker.run_until_idle()
    assert (await store.tasks.get_task(chat.id)).status is TaskStatus.SUCCEEDED
    [goal] = await store.goals.list_goals(person_id=person.id)
    [made] = await store.webwatches.list_for(person.id)
    assert (made.goal_id, made.url, made.interval_seconds) == (goal.id, watch["url"], 3600.0)
    [trigger] = await store.schedule.list_triggers(goal_id=goal.id)
    assert (trigger.kind, trigger.match) == (TriggerKind.EVENT, {"watch_id": made.id})

    # the same call replayed under its effect key finds the watch it made
    [effect] = [
        e for e in await store.effects.list_effects(task_id=chat.id) if e.tool == "watch_page"
    ]
    tool = harness.tools.get("watch_page")
    assert tool is not None
    context = ToolContext(
        person_id=person.id,
        task_id=chat.id,
        goal_id=None,
        idempotency_key=effect.key,
        workspace=tmp_path,
        now=clock.now(),
    )
    again = await tool.invoke(tool.parse_arguments(json.dumps(watch)), context)
    assert again["watch_id"] == made.id
    assert len(await store.webwatches.list_for(person.id)) == 1
