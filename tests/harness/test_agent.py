"""The agent harness end to end: a scripted model behind a real OpenAI-compatible socket (or in
process), the real store on both backends, a simulated clock over days. Tool-call trouble,
large outputs, questions, subtasks, chat, and the sentinel's verdicts."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from datetime import timedelta
from typing import Annotated, Any

import pytest
from pydantic import Field

from steward.domain import ApprovalStatus, Person, TaskSpec, TaskStatus, WaitCondition
from steward.domain.actions import ActionRequest, Decision, EffectClass, Verdict
from steward.domain.clock import SimulatedClock
from steward.errors import InvalidTransition
from steward.harness.agent import AgentConfig, AgentHarness
from steward.harness.tools import Tool, tool
from steward.harness.workspace import Workspace
from steward.models import Message, ModelResponse, ScriptedModel, ToolSpec
from steward.models.openai_compat import OpenAIModel
from steward.models.scripted import call_tool, call_tools, raw_call, say
from steward.runtime.run import TaskRun
from steward.runtime.scheduler import Scheduler
from steward.sentinel.defaults import AllowAll
from steward.store import Store
from steward.testing.model_server import run_model_server
from support.agents import agent_worker

S = TaskStatus


# --- helpers --------------------------------------------------------------------------------


async def observations(store: Store, task_id: str) -> list[dict[str, Any]]:
    """The outputs of the task's tool steps, in order."""
    return [s.output for s in await store.activations.list_steps(task_id) if s.kind == "tool"]


async def kinds(store: Store, task_id: str) -> list[str]:
    return [s.kind for s in await store.activations.list_steps(task_id)]


async def agent_task(
    store: Store,
    clock: SimulatedClock,
    person: Person,
    *,
    instructions: str = "do it",
    goal_id: str | None = None,
    **extra: Any,
) -> str:
    spec = TaskSpec(
        kind="agent", title=instructions[:40], input={"instructions": instructions, **extra}
    )
    task = await store.tasks.create_task(
        spec, person_id=person.id, goal_id=goal_id, now=clock.now()
    )
    return task.id


# --- end to end over a socket, across days --------------------------------------------------


async def test_goal_task_runs_three_activations_over_days_through_a_real_socket(
    store: Store, clock: SimulatedClock, person: Person, workspace: Workspace
) -> None:
    """A goal's agent task checks the inbox, notes what it found and waits for a reply; two
    days later the reply arrives as an event, the model reads it from the observation, writes a
    result into the goal and sleeps a day; then it finishes. Three activations, one HTTP
    request per model call, the goal holds the state and records written."""
    inbox_checks: list[str] = []

    @tool
    async def check_inbox(folder: str = "inbox") -> str:
        """Look for new mail."""
        inbox_checks.append(folder)
        return "1 message from Ana: 'Will confirm the venue by Wednesday.' (thread t-42)"

    def after_reply(messages: Sequence[Message], tools: Sequence[ToolSpec]) -> ModelResponse:
        seen = messages[-1]
        assert seen.role == "tool"
        assert "event arrived" in seen.content
        payload = json.loads(seen.content.split("event arrived: ", 1)[1])["payload"]
        return call_tool(
            "write_goal",
            kind="result",
            content=f"venue confirmed: {payload['venue']}",
            state={"venue": payload["venue"], "confirmed": True},
        )

    model = ScriptedModel(
        [
            call_tools(
                ("check_inbox", {}),
                ("write_goal", {"kind": "note", "content": "Ana will confirm by Wednesday"}),
            ),
            call_tool("wait_for_event", event_type="reply.received", match={"thread": "t-42"}),
            after_reply,
            call_tool("wait_until", delay_seconds=86400),
            call_tool("finish", result="The venue is the Old Mill; Ana confirmed."),
        ]
    )
    goal = await store.goals.create_goal(
        person_id=person.id, title="Book the venue", now=clock.now()
    )
    with run_model_server(model) as server:
        remote = OpenAIModel(name=model.name, base_url=server.url, api_key=server.api_key)
        harness = AgentHarness(model=remote, workspace=workspace, tools=[check_inbox])
        task_id = await agent_task(
            store, clock, person, instructions="Get Ana's venue confirmation", goal_id=goal.id
        )
        scheduler = Scheduler(store, clock)
        worker = agent_worker(store, harness, clock)

        assert await worker.run_until_idle() == 1
        waiting = await store.tasks.get_task(task_id)
        assert waiting.status is S.WAITING
        assert waiting.wait is not None
        assert (waiting.wait.kind, waiting.wait.event_type, waiting.wait.match) == (
            "event",
            "reply.received",
            {"thread": "t-42"},
        )
        assert inbox_checks == ["inbox"]
        assert server.requests == 2

        clock.advance(timedelta(days=2))
        await store.schedule.add_event(
            person_id=person.id,
            type="reply.received",
            source="test",
            dedupe_key="other",
            payload={"thread": "t-99", "venue": "wrong"},
            now=clock.now(),
        )
        await scheduler.tick()
        assert (await store.tasks.get_task(task_id)).status is S.WAITING  # not its thread
        await store.schedule.add_event(
            person_id=person.id,
            type="reply.received",
            source="test",
            dedupe_key="reply-1",
            payload={"thread": "t-42", "venue": "Old Mill"},
            now=clock.now(),
        )
        await scheduler.tick()
        assert (await store.tasks.get_task(task_id)).status is S.PENDING
        assert await worker.run_until_idle() == 1
        sleeping = await store.tasks.get_task(task_id)
        assert sleeping.status is S.WAITING
        assert sleeping.wait == WaitCondition(kind="until", until=clock.now() + timedelta(days=1))
        assert server.requests == 4

        clock.advance(timedelta(days=1))
        await scheduler.tick()
        assert await worker.run_until_idle() == 1
        assert server.requests == 5

    done = await store.tasks.get_task(task_id)
    assert done.status is S.SUCCEEDED
    assert done.result == {
        "text": "The venue is the Old Mill; Ana confirmed.",
        # the answer came after others' text (the reply event): it says so
        "untrusted_sources": ["event:reply.received (step 6)"],
    }
    assert model.calls == server.requests == 5
    # the third request's last message is the observation of the event
    third, _ = model.requests[2]
    assert "Old Mill" in third[-1].content
    activations = await store.activations.list_activations(task_id=task_id)
    assert [a.reason for a in activations] == ["created", "event", "timer"]
    assert [a.outcome for a in activations] == ["wait", "wait", "succeed"]
    final_goal = await store.goals.get_goal(goal.id)
    assert final_goal.state == {"venue": "Old Mill", "confirmed": True}
    records = await store.goals.list_goal_records(goal.id)
    assert [r.kind for r in records] == ["note", "result", "result"]
    assert records[0].content == {"text": "Ana will confirm by Wednesday"}
    assert records[1].content == {"text": "venue confirmed: Old Mill"}
    assert {r.task_id for r in records} == {task_id}
    assert inbox_checks == ["inbox"]  # never re-run by later activations
    steps = await store.activations.list_steps(task_id)
    model_steps = [s for s in steps if s.kind == "model"]
    assert len(model_steps) == 5
    # every answer was recorded with the prompt size it was made from
    assert all(s.output["context_tokens"] > 0 for s in model_steps)


# --- trouble with tool calls ----------------------------------------------------------------


@tool
async def forecast(city: Annotated[str, Field(description="City name")]) -> str:
    """Weather forecast for a city."""
    return f"{city}: sunny, 21°C"


async def test_bad_tool_calls_become_error_observations_and_the_task_goes_on(
    store: Store, clock: SimulatedClock, person: Person, workspace: Workspace
) -> None:
    """Malformed JSON, arguments that do not fit the schema, an unknown tool, a tool that
    raises, a tool that hangs past its timeout and a control tool refusing its arguments each
    come back to the model as an error observation saying what went wrong; the activation
    neither crashes nor retries, and the model recovers and finishes."""
    ran: list[str] = []

    @tool
    async def explode() -> str:
        """Always fails."""
        ran.append("explode")
        raise ValueError("the upstream API returned 500")

    @tool(timeout_seconds=0.05)
    async def slow() -> str:
        """Never answers in time."""
        ran.append("slow")
        await asyncio.sleep(30)
        return "too late"

    model = ScriptedModel(
        [
            raw_call("forecast", '{"city": "Lisbon"'),
            call_tool("forecast", town="Lisbon"),
            call_tool("teleport", to="Mars"),
            call_tool("explode"),
            call_tool("slow"),
            call_tool("wait_until"),
            call_tool("forecast", city="Lisbon"),
            call_tool("finish", result="Sunny in Lisbon."),
        ]
    )
    with run_model_server(model) as server:
        remote = OpenAIModel(name=model.name, base_url=server.url, api_key=server.api_key)
        harness = AgentHarness(model=remote, workspace=workspace, tools=[forecast, explode, slow])
        task_id = await agent_task(store, clock, person)
        assert await agent_worker(store, harness, clock).run_until_idle() == 1
        assert server.requests == 8

    done = await store.tasks.get_task(task_id)
    assert (done.status, done.attempts, done.result) == (
        S.SUCCEEDED,
        0,
        {"text": "Sunny in Lisbon."},
    )
    seen = await observations(store, task_id)
    assert [o["error"] for o in seen[:7]] == [True, True, True, True, True, True, False]
    texts = [o["observation"] for o in seen]
    assert texts[0].startswith("error: arguments are not valid JSON:")
    assert texts[1].startswith("error: invalid arguments:")
    assert "city: Field required" in texts[1]
    assert "town: Extra inputs are not permitted" in texts[1]
    assert texts[2].startswith("error: unknown tool 'teleport'; use one of: [")
    assert "'forecast'" in texts[2]
    assert texts[3] == "error: explode failed: the upstream API returned 500"
    assert texts[4] == "error: slow timed out after 0.05s"
    assert texts[5] == "error: give exactly one of 'at' or 'delay_seconds'"
    assert texts[6] == "Lisbon: sunny, 21°C"
    assert ran == ["explode", "slow"]
    # each observation is what the model saw next, answering the call it made
    for index, observation in enumerate(seen[:7]):
        messages, _ = model.requests[index + 1]
        assert messages[-1].role == "tool"
        assert messages[-1].content == observation["observation"]
        assert messages[-1].tool_call_id == observation["call_id"]
    [activation] = await store.activations.list_activations(task_id=task_id)
    assert activation.outcome == "succeed"


async def test_large_output_becomes_an_artifact_the_model_can_page_through(
    store: Store, clock: SimulatedClock, person: Person, workspace: Workspace
) -> None:
    """An output over the threshold is written to the person's workspace and recorded as an
    artifact; the model sees a bounded excerpt naming the artifact, and read_artifact returns
    the slice it asks for next. An unknown artifact id is an error observation."""
    report = "".join(f"line {i:05d}\n" for i in range(1000))  # 11 000 characters

    @tool
    async def export_report() -> str:
        """The whole report."""
        return report

    def read_next(messages: Sequence[Message], tools: Sequence[ToolSpec]) -> ModelResponse:
        excerpt = messages[-1].content
        artifact_id = excerpt.split("read_artifact(artifact_id='", 1)[1].split("'", 1)[0]
        return call_tool("read_artifact", artifact_id=artifact_id, offset=1500, length=1100)

    model = ScriptedModel(
        [
            call_tool("export_report"),
            read_next,
            call_tool("read_artifact", artifact_id="art.nope"),
            call_tool("finish", result="read it"),
        ]
    )
    config = AgentConfig(artifact_threshold_chars=6000, excerpt_chars=1500)
    harness = AgentHarness(model=model, workspace=workspace, tools=[export_report], config=config)
    task_id = await agent_task(store, clock, person)
    await agent_worker(store, harness, clock).run_until_idle()
    assert (await store.tasks.get_task(task_id)).status is S.SUCCEEDED

    [artifact] = await store.inbox.list_artifacts(task_id=task_id)
    assert (artifact.person_id, artifact.name, artifact.size) == (person.id, "export_report", 11000)
    on_disk = workspace.person_dir(person.id) / artifact.path
    assert on_disk.read_text() == report
    first, second, missing = [o["observation"] for o in (await observations(store, task_id))[:3]]
    assert first.startswith(report[:1500] + "\n…[output is 11000 characters")
    assert artifact.id in first
    assert len(first) < 1800  # the excerpt, not the output
    assert second.startswith(report[1500:2600] + "\n…[characters 1500-2600 of 11000 bytes]")
    assert missing == "error: artifact 'art.nope' not found"


# --- the person in the loop ------------------------------------------------------------------


@pytest.mark.parametrize("answered", [True, False], ids=["answered", "timed-out"])
async def test_question_waits_for_the_persons_answer_days_later(
    store: Store, clock: SimulatedClock, person: Person, workspace: Workspace, answered: bool
) -> None:
    """ask_person suspends the task on the person's input and raises a question notification;
    the answer, two days later, wakes it and the model reads it as the tool's observation. Left
    unanswered past its timeout, the task wakes and the model is told nobody answered."""
    model = ScriptedModel(
        [
            call_tool(
                "ask_person", question="Which day suits you for the dentist?", timeout_hours=72
            ),
            call_tool("finish", result="Booked for Tuesday."),
        ]
    )
    harness = AgentHarness(model=model, workspace=workspace)
    task_id = await agent_task(store, clock, person)
    worker = agent_worker(store, harness, clock)
    await worker.run_until_idle()
    waiting = await store.tasks.get_task(task_id)
    assert waiting.status is S.WAITING
    assert waiting.wait is not None
    assert (waiting.wait.kind, waiting.wait.prompt, waiting.wait.until) == (
        "input",
        "Which day suits you for the dentist?",
        clock.now() + timedelta(hours=72),
    )
    [question] = await store.inbox.list_notifications(person_id=person.id)
    assert (question.kind, question.title, question.task_id, question.ref) == (
        "question",
        "Which day suits you for the dentist?",
        task_id,
        waiting.wait.ref,
    )
    clock.advance(timedelta(days=2))
    assert await worker.run_until_idle() == 0  # asleep until answered
    if answered:
        await store.inbox.answer_input(task_id, "Tuesday afternoon", now=clock.now())
    else:
        clock.advance(timedelta(days=1))
        await Scheduler(store, clock).tick()
    assert await worker.run_until_idle() == 1
    assert (await store.tasks.get_task(task_id)).status is S.SUCCEEDED
    seen, _ = model.requests[1]
    assert seen[-1].role == "tool"
    [observed] = (await observations(store, task_id))[:1]
    if answered:
        assert seen[-1].content == "the person answered: Tuesday afternoon"
        assert observed["error"] is False
    else:
        assert seen[-1].content == "the person did not answer in time"
        assert observed["error"] is True
        with pytest.raises(InvalidTransition):
            await store.inbox.answer_input(task_id, "too late", now=clock.now())
    reasons = [a.reason for a in await store.activations.list_activations(task_id=task_id)]
    assert reasons == ["created", "input" if answered else "timeout"]


async def test_subtask_result_must_meet_its_acceptance_and_returns_to_the_parent(
    store: Store, clock: SimulatedClock, person: Person, workspace: Workspace
) -> None:
    """The parent spawns an agent subtask that must report ``count``; the child's first finish
    without it is refused with an error observation, its second is accepted; the parent, which
    waited for its child, is woken with the child's result and uses it."""

    def script(messages: Sequence[Message], tools: Sequence[ToolSpec]) -> ModelResponse:
        task_text = messages[1].content
        last = messages[-1]
        if "Count the open invoices" in task_text:  # the child
            if last.role == "tool" and "not accepted" in last.content:
                return call_tool("finish", result="3 open", data={"count": 3})
            return call_tool("finish", result="there are some")
        if last.role != "tool":
            return call_tool(
                "spawn_subtask",
                title="count invoices",
                instructions="Count the open invoices",
                required_keys=["count"],
            )
        [report] = json.loads(last.content)
        return call_tool("finish", result=f"{report['result']['data']['count']} invoices open")

    model = ScriptedModel(script)
    harness = AgentHarness(model=model, workspace=workspace)
    parent_id = await agent_task(store, clock, person, instructions="Chase unpaid invoices")
    await agent_worker(store, harness, clock).run_until_idle()

    [child] = await store.tasks.list_tasks(parent_id=parent_id)
    assert child.kind == "agent"
    assert child.input["acceptance"]["required_keys"] == ["count"]
    assert (child.status, child.result) == (S.SUCCEEDED, {"text": "3 open", "data": {"count": 3}})
    refused, accepted = await observations(store, child.id)
    assert refused["error"] is True
    assert refused["observation"] == "error: not accepted: the data must include keys ['count']"
    assert accepted["observation"] == "finished"
    parent = await store.tasks.get_task(parent_id)
    assert (parent.status, parent.result) == (S.SUCCEEDED, {"text": "3 invoices open"})
    reasons = [a.reason for a in await store.activations.list_activations(task_id=parent_id)]
    assert reasons == ["created", "children"]


async def test_chat_replies_wait_for_the_person_and_continue_the_conversation(
    store: Store, clock: SimulatedClock, person: Person, workspace: Workspace
) -> None:
    """In chat mode a text answer is a reply: the task waits for the person's next message,
    which enters the conversation as a user step, and the model answers it."""
    model = ScriptedModel(
        [
            say("Where would you like to go?"),
            say("Lisbon in May is lovely. Shall I look for flights?"),
            call_tool("finish", result="The person will book themselves."),
        ]
    )
    harness = AgentHarness(model=model, workspace=workspace)
    task_id = await agent_task(store, clock, person, instructions="Plan a trip", mode="chat")
    worker = agent_worker(store, harness, clock)
    await worker.run_until_idle()
    first = await store.tasks.get_task(task_id)
    assert first.status is S.WAITING
    assert first.wait is not None
    assert (first.wait.kind, first.wait.prompt) == ("input", "Where would you like to go?")

    await store.inbox.answer_input(task_id, "Lisbon, in May", now=clock.now())
    await worker.run_until_idle()
    second = await store.tasks.get_task(task_id)
    assert second.wait is not None
    assert second.wait.prompt == "Lisbon in May is lovely. Shall I look for flights?"
    messages, _ = model.requests[1]
    assert (messages[-1].role, messages[-1].content) == ("user", "Lisbon, in May")
    assert [m.role for m in messages[2:]] == ["assistant", "user"]

    await store.inbox.answer_input(task_id, "No thanks, I'll book", now=clock.now())
    await worker.run_until_idle()
    assert (await store.tasks.get_task(task_id)).status is S.SUCCEEDED
    assert await kinds(store, task_id) == [
        "model",
        "suspend",
        "user",
        "model",
        "suspend",
        "user",
        "model",
        "tool",
    ]


# --- the sentinel ----------------------------------------------------------------------------


class Mailer:
    """An external tool that counts what it really sent."""

    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []

        @tool(effect=EffectClass.EXTERNAL, scopes=["invoice.send"])
        async def send_invoice(to: str, amount: int) -> str:
            """Send an invoice."""
            self.sent.append({"to": to, "amount": amount})
            return f"invoice sent to {to}"

        self.tool: Tool = send_invoice


SEND = call_tool("send_invoice", to="ana@example.com", amount=120)
FINISH = call_tool("finish", result="done")


@pytest.mark.parametrize("decision", ["approve", "deny", "expire"])
async def test_external_call_waits_for_approval(
    store: Store,
    clock: SimulatedClock,
    person: Person,
    workspace: Workspace,
    decision: str,
) -> None:
    """The default sentinel asks before an external effect: an approval for the exact call is
    recorded with a notification and the task sleeps on it, holding no lease. Approved three
    days later, the task resumes at that call (the model is not asked again) and the tool runs
    exactly once, through the effect journal; denied, the model is told so; left undecided
    past its lifetime, it expires when the scheduler wakes the task and the model is told that.
    A decided or expired approval cannot be decided again."""
    mailer = Mailer()
    model = ScriptedModel([SEND, FINISH])
    config = AgentConfig(approval_ttl=timedelta(hours=1) if decision == "expire" else None)
    harness = AgentHarness(model=model, workspace=workspace, tools=[mailer.tool], config=config)
    task_id = await agent_task(store, clock, person)
    worker = agent_worker(store, harness, clock)
    await worker.run_until_idle()

    [approval] = await store.inbox.list_approvals(task_id=task_id)
    assert approval.status is ApprovalStatus.PENDING
    assert (approval.tool, approval.args) == (
        "send_invoice",
        {"to": "ana@example.com", "amount": 120},
    )
    assert "send_invoice acts on the world" in approval.reason
    waiting = await store.tasks.get_task(task_id)
    assert (waiting.status, waiting.lease_owner) == (S.WAITING, None)
    assert waiting.wait is not None
    assert (waiting.wait.kind, waiting.wait.ref) == ("approval", approval.id)
    [notice] = await store.inbox.list_notifications(person_id=person.id)
    assert (notice.kind, notice.ref, notice.task_id) == ("approval", approval.id, task_id)
    assert mailer.sent == []

    if decision == "expire":
        clock.advance(timedelta(hours=2))
        await Scheduler(store, clock).tick()
    else:
        clock.advance(timedelta(days=3))
        assert await worker.run_until_idle() == 0  # nothing happens until the person decides
        await store.inbox.decide_approval(
            approval.id,
            approve=decision == "approve",
            decided_by="person",
            note="not this month" if decision == "deny" else None,
            now=clock.now(),
        )
    assert await worker.run_until_idle() == 1
    assert (await store.tasks.get_task(task_id)).status is S.SUCCEEDED
    assert model.calls == 2

    steps = await store.activations.list_steps(task_id)
    assert [s.kind for s in steps] == ["model", "suspend", "tool", "model", "tool"]
    [call] = steps[0].output["response"]["tool_calls"]
    observed = steps[2].output
    assert observed["call_id"] == call["id"]
    decided = await store.inbox.get_approval(approval.id)
    if decision == "approve":
        assert mailer.sent == [{"to": "ana@example.com", "amount": 120}]
        assert (observed["observation"], observed["error"]) == (
            "invoice sent to ana@example.com",
            False,
        )
        [effect] = await store.effects.list_effects(task_id=task_id)
        assert (effect.tool, effect.status.value, effect.step_seq) == (
            "send_invoice",
            "succeeded",
            3,
        )
        assert decided.status is ApprovalStatus.APPROVED
    elif decision == "deny":
        assert mailer.sent == []
        assert observed["error"] is True
        assert observed["observation"] == "not done: the person denied it (not this month)"
        assert decided.status is ApprovalStatus.DENIED
    else:
        assert mailer.sent == []
        assert observed["error"] is True
        assert observed["observation"] == "not done: the approval request expired"
        assert decided.status is ApprovalStatus.EXPIRED
    with pytest.raises(InvalidTransition):
        await store.inbox.decide_approval(
            approval.id, approve=True, decided_by="person", now=clock.now()
        )


class Rules:
    """A sentinel with a verdict for one tool; everything else is allowed."""

    def __init__(self, tool_name: str, verdict: Verdict, reason: str) -> None:
        self.tool_name = tool_name
        self.verdict = verdict
        self.reason = reason
        self.seen: list[ActionRequest] = []

    async def check(self, request: ActionRequest) -> Decision:
        self.seen.append(request)
        if request.tool == self.tool_name:
            return Decision(verdict=self.verdict, reason=self.reason, rule="test")
        return await AllowAll().check(request)


async def test_denied_call_is_never_run_and_the_model_is_told_why(
    store: Store, clock: SimulatedClock, person: Person, workspace: Workspace
) -> None:
    mailer = Mailer()
    rules = Rules("send_invoice", Verdict.DENY, "invoices need the accountant")
    model = ScriptedModel([SEND, FINISH])
    harness = AgentHarness(model=model, workspace=workspace, tools=[mailer.tool], sentinel=rules)
    task_id = await agent_task(store, clock, person)
    await agent_worker(store, harness, clock).run_until_idle()

    assert (await store.tasks.get_task(task_id)).status is S.SUCCEEDED
    assert mailer.sent == []
    denied = (await observations(store, task_id))[0]
    assert (denied["observation"], denied["error"]) == (
        "denied: invoices need the accountant",
        True,
    )
    request = rules.seen[0]
    assert (request.tool, request.args, request.effect, request.source) == (
        "send_invoice",
        {"to": "ana@example.com", "amount": 120},
        EffectClass.EXTERNAL,
        "python",
    )
    assert (request.person_id, request.task_id, request.scopes) == (
        person.id,
        task_id,
        ("invoice.send",),
    )
    assert await store.inbox.list_approvals(task_id=task_id) == []
    assert await store.effects.list_effects(task_id=task_id) == []


async def test_handoff_asks_the_person_to_do_it_themselves(
    store: Store, clock: SimulatedClock, person: Person, workspace: Workspace
) -> None:
    mailer = Mailer()
    rules = Rules("send_invoice", Verdict.HANDOFF, "only the person may send invoices")
    model = ScriptedModel([SEND, FINISH])
    harness = AgentHarness(model=model, workspace=workspace, tools=[mailer.tool], sentinel=rules)
    task_id = await agent_task(store, clock, person)
    worker = agent_worker(store, harness, clock)
    await worker.run_until_idle()

    waiting = await store.tasks.get_task(task_id)
    assert waiting.status is S.WAITING
    assert waiting.wait is not None
    assert waiting.wait.kind == "input"
    assert "only the person may send invoices" in (waiting.wait.prompt or "")
    [notice] = await store.inbox.list_notifications(person_id=person.id)
    assert (notice.kind, notice.ref) == ("handoff", waiting.wait.ref)
    assert "send_invoice" in notice.title
    assert "ana@example.com" in notice.title

    clock.advance(timedelta(days=1))
    await store.inbox.answer_input(task_id, "sent it from my phone", now=clock.now())
    await worker.run_until_idle()
    assert (await store.tasks.get_task(task_id)).status is S.SUCCEEDED
    assert mailer.sent == []
    observed = (await observations(store, task_id))[0]
    assert observed["observation"] == "the person handled it themselves: sent it from my phone"


async def test_approval_revoked_after_it_was_given_still_stops_the_call(
    store: Store, clock: SimulatedClock, person: Person, workspace: Workspace
) -> None:
    """An approval answers the sentinel's question, not its refusal: if the policy denies the
    call by the time the task resumes, the approved call does not run."""
    mailer = Mailer()
    rules = Rules("send_invoice", Verdict.ASK, "invoices are checked")
    model = ScriptedModel([SEND, FINISH])
    harness = AgentHarness(model=model, workspace=workspace, tools=[mailer.tool], sentinel=rules)
    task_id = await agent_task(store, clock, person)
    worker = agent_worker(store, harness, clock)
    await worker.run_until_idle()
    [approval] = await store.inbox.list_approvals(task_id=task_id)
    rules.verdict, rules.reason = Verdict.DENY, "the person revoked invoice sending"
    await store.inbox.decide_approval(
        approval.id, approve=True, decided_by="person", now=clock.now()
    )
    await worker.run_until_idle()
    assert (await store.tasks.get_task(task_id)).status is S.SUCCEEDED
    assert mailer.sent == []
    observed = (await observations(store, task_id))[0]
    assert observed["observation"] == "denied: the person revoked invoice sending"


async def test_approval_decided_before_the_task_is_asleep_still_wakes_it(
    store: Store, clock: SimulatedClock, person: Person, workspace: Workspace
) -> None:
    """The approval notification is visible as soon as it is recorded, before the activation
    has committed its wait. A person who decides at once must not leave the task asleep."""
    mailer = Mailer()
    model = ScriptedModel([SEND, FINISH])
    config = AgentConfig(approval_ttl=None)
    harness = AgentHarness(model=model, workspace=workspace, tools=[mailer.tool], config=config)
    task_id = await agent_task(store, clock, person)
    # what a worker does, with the person's decision falling between the two commits
    [claim] = await store.tasks.claim_tasks(
        worker="w", limit=1, lease_seconds=30, now=clock.now(), lease_now=clock.lease_now()
    )
    run = TaskRun(store=store, clock=clock, claim=claim)
    outcome = await harness.activate(run)
    [approval] = await store.inbox.list_approvals(task_id=task_id)
    await store.inbox.decide_approval(
        approval.id, approve=True, decided_by="person", now=clock.now()
    )
    await store.activations.finish_activation(
        run.fence,
        outcome,
        now=clock.now(),
        steps_taken=run.steps + 1,
        usage=run.usage,
        lease_now=clock.lease_now(),
        final_step=run.final_step,
    )
    assert (await store.tasks.get_task(task_id)).status is S.PENDING
    await agent_worker(store, harness, clock).run_until_idle()
    assert mailer.sent == [{"to": "ana@example.com", "amount": 120}]


# --- waiting for events, repeatedly ------------------------------------------------------------


def reply_waiter() -> ScriptedModel:
    """Waits for two replies on a thread, one after the other, then reports them."""
    wait = call_tool("wait_for_event", event_type="reply.received", match={"thread": "t-7"})

    def report(messages: Sequence[Message], tools: Sequence[ToolSpec]) -> ModelResponse:
        replies = [m.content for m in messages if m.role == "tool" and "event arrived" in m.content]
        texts = [json.loads(r.split("event arrived: ", 1)[1])["payload"]["text"] for r in replies]
        return call_tool("finish", result=" / ".join(texts))

    return ScriptedModel([wait, wait, report])


async def reply(store: Store, clock: SimulatedClock, person: Person, text: str) -> None:
    await store.schedule.add_event(
        person_id=person.id,
        type="reply.received",
        source="test",
        dedupe_key=text,
        payload={"thread": "t-7", "text": text},
        now=clock.now(),
    )


async def test_one_event_satisfies_only_one_wait(
    store: Store, clock: SimulatedClock, person: Person, workspace: Workspace
) -> None:
    """Woken by a reply, the task waits for the next one: the reply it already observed does
    not count again, even though (in a simulation) no time passed meanwhile."""
    harness = AgentHarness(model=reply_waiter(), workspace=workspace)
    task_id = await agent_task(store, clock, person)
    worker = agent_worker(store, harness, clock)
    scheduler = Scheduler(store, clock)
    await worker.run_until_idle()
    clock.advance(timedelta(days=1))
    await reply(store, clock, person, "first")
    await scheduler.tick()
    await worker.run_until_idle()
    assert (await store.tasks.get_task(task_id)).status is S.WAITING
    clock.advance(timedelta(days=1))
    await reply(store, clock, person, "second")
    await scheduler.tick()
    await worker.run_until_idle()
    done = await store.tasks.get_task(task_id)
    assert done.result == {
        "text": "first / second",
        "untrusted_sources": ["event:reply.received (step 3)", "event:reply.received (step 6)"],
    }


async def test_event_arriving_while_the_task_is_busy_is_not_lost(
    store: Store, clock: SimulatedClock, person: Person, workspace: Workspace
) -> None:
    """Two replies arrive a minute apart; the first wakes the task, the second finds it
    pending (not waiting) and wakes nobody. The task's next wait must still see it."""
    harness = AgentHarness(model=reply_waiter(), workspace=workspace)
    task_id = await agent_task(store, clock, person)
    worker = agent_worker(store, harness, clock)
    scheduler = Scheduler(store, clock)
    await worker.run_until_idle()
    clock.advance(timedelta(days=1))
    await reply(store, clock, person, "first")
    clock.advance(timedelta(minutes=1))
    await reply(store, clock, person, "second")
    await scheduler.tick()
    clock.advance(timedelta(minutes=1))
    await worker.run_until_idle()
    done = await store.tasks.get_task(task_id)
    assert done.result == {
        "text": "first / second",
        "untrusted_sources": ["event:reply.received (step 3)", "event:reply.received (step 6)"],
    }
