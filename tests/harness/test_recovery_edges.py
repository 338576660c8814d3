"""Edge cases of recovery and control found in review: a words-only answer whose outcome was
lost, a paused task whose wake-up happened meanwhile, an effect in doubt whose reconciler is
down or whose tool a policy no longer allows, a subtask asking for more authority (or nesting
deeper) than allowed, and a malformed budget in a task's input."""

from __future__ import annotations

from collections import Counter
from datetime import timedelta
from typing import Any

import pytest

from steward.domain import EffectStatus, Person, TaskSpec, TaskStatus
from steward.domain.actions import ActionRequest, Decision, EffectClass, Verdict
from steward.domain.clock import SimulatedClock
from steward.domain.ids import effect_key
from steward.harness.agent import AgentConfig, AgentHarness
from steward.harness.tools import Tool, ToolContext, tool
from steward.harness.workspace import Workspace
from steward.models.scripted import ScriptedModel, call_tool, say
from steward.runtime.run import TaskRun
from steward.runtime.scheduler import Scheduler
from steward.sentinel.defaults import AllowAll
from steward.store import Store
from support.agents import agent_worker

S = TaskStatus
LEASE = 30.0


class Died(BaseException):
    """The process running the activation is gone (a BaseException: nothing absorbs it)."""


async def new_task(store: Store, clock: SimulatedClock, person: Person, **extra: Any) -> str:
    spec = TaskSpec(kind="agent", input={"instructions": "do it", **extra})
    return (await store.tasks.create_task(spec, person_id=person.id, now=clock.now())).id


async def claim_one(store: Store, clock: SimulatedClock) -> TaskRun:
    [claim] = await store.tasks.claim_tasks(
        worker="w1", limit=1, lease_seconds=LEASE, now=clock.now(), lease_now=clock.lease_now()
    )
    return TaskRun(store=store, clock=clock, claim=claim)


async def activate_once(store: Store, clock: SimulatedClock, harness: AgentHarness) -> None:
    """One activation committed as a worker would, without claiming anything else after it."""
    run = await claim_one(store, clock)
    outcome = await harness.activate(run)
    await store.activations.finish_activation(
        run.fence,
        outcome,
        now=clock.now(),
        steps_taken=run.steps + (run.final_step is not None),
        usage=run.usage,
        lease_now=clock.lease_now(),
        final_step=run.final_step,
    )


async def reap(store: Store, clock: SimulatedClock) -> None:
    """The dead worker's lease lapses and the scheduler re-queues its task."""
    clock.advance(timedelta(seconds=LEASE + 1))
    await Scheduler(store, clock).tick()


async def observations(store: Store, task_id: str) -> list[dict[str, Any]]:
    return [s.output for s in await store.activations.list_steps(task_id) if s.kind == "tool"]


# --- 1. a words-only answer whose outcome was never committed --------------------------------


async def test_recorded_final_answer_is_not_bought_again(
    store: Store, clock: SimulatedClock, person: Person, workspace: Workspace
) -> None:
    """The model answered in words (committed as a ``model`` step); the worker died before the
    task's outcome was committed. The recovered activation finishes with that answer instead of
    asking the model again (which would pay twice and could say something else)."""
    model = ScriptedModel([say("the answer is 42"), say("a DIFFERENT answer")])
    harness = AgentHarness(model=model, workspace=workspace)
    task_id = await new_task(store, clock, person)
    await harness.activate(await claim_one(store, clock))  # the outcome is lost with the worker
    await reap(store, clock)

    assert await agent_worker(store, harness, clock).run_until_idle() == 1
    done = await store.tasks.get_task(task_id)
    assert (done.status, done.result) == (S.SUCCEEDED, {"text": "the answer is 42"})
    assert model.calls == 1
    assert [s.kind for s in await store.activations.list_steps(task_id)] == ["model", "finish"]


async def test_recorded_chat_reply_is_not_sent_twice(
    store: Store, clock: SimulatedClock, person: Person, workspace: Workspace
) -> None:
    """In chat mode the lost outcome was "wait for the person's reply": the recovered activation
    waits on the recorded reply; the model is not asked for another one."""
    model = ScriptedModel([say("Where would you like to go?"), say("a second reply")])
    harness = AgentHarness(model=model, workspace=workspace)
    task_id = await new_task(store, clock, person, mode="chat")
    await harness.activate(await claim_one(store, clock))
    await reap(store, clock)

    assert await agent_worker(store, harness, clock).run_until_idle() == 1
    waiting = await store.tasks.get_task(task_id)
    assert waiting.status is S.WAITING
    assert waiting.wait is not None
    assert (waiting.wait.kind, waiting.wait.prompt) == ("input", "Where would you like to go?")
    assert model.calls == 1
    steps = await store.activations.list_steps(task_id)
    assert [s.kind for s in steps] == ["model", "suspend"]
    assert steps[0].output["response"]["content"] == "Where would you like to go?"


# --- 2. what a paused task waited for happened during the pause ------------------------------


async def test_approval_decided_while_paused_makes_the_resumed_task_runnable(
    store: Store, clock: SimulatedClock, person: Person, workspace: Workspace
) -> None:
    """Wakers only wake waiting tasks: an approval decided while the task was paused must be
    noticed on resume, or the task would sleep on a decided approval for good."""
    sent: list[str] = []

    @tool(effect=EffectClass.EXTERNAL)
    async def send(to: str) -> str:
        """Send a message."""
        sent.append(to)
        return f"sent to {to}"

    model = ScriptedModel([call_tool("send", to="bob"), call_tool("finish", result="ok")])
    harness = AgentHarness(
        model=model,
        workspace=workspace,
        tools=[send],
        config=AgentConfig(approval_ttl=None),
    )
    task_id = await new_task(store, clock, person)
    worker = agent_worker(store, harness, clock)
    await worker.run_until_idle()
    task = await store.tasks.get_task(task_id)
    assert task.wait is not None
    assert (task.status, task.wait.kind) == (S.WAITING, "approval")

    await store.tasks.request_control(task_id, "pause", now=clock.now())
    await store.inbox.decide_approval(
        task.wait.ref or "", approve=True, decided_by="p", now=clock.now()
    )
    assert (await store.tasks.get_task(task_id)).status is S.PAUSED
    resumed = await store.tasks.request_control(task_id, "resume", now=clock.now())
    assert (resumed.status, resumed.wait) == (S.PENDING, None)

    assert await worker.run_until_idle() == 1
    assert (await store.tasks.get_task(task_id)).status is S.SUCCEEDED
    assert sent == ["bob"]
    assert model.calls == 2


async def test_child_finished_while_parent_paused_wakes_it_on_resume(
    store: Store, clock: SimulatedClock, person: Person, workspace: Workspace
) -> None:
    """The parent waits for its subtask and is paused; the subtask finishes meanwhile (which
    does not wake a paused parent). Resuming the parent makes it runnable at once, and it picks
    up the child's result."""
    model = ScriptedModel(
        [
            call_tool("spawn_subtask", title="child", instructions="do the part"),
            call_tool("finish", result="part done"),
            call_tool("finish", result="all done"),
        ]
    )
    harness = AgentHarness(model=model, workspace=workspace)
    parent_id = await new_task(store, clock, person)
    await activate_once(store, clock, harness)
    parent = await store.tasks.get_task(parent_id)
    assert parent.wait is not None
    assert (parent.status, parent.wait.kind) == (S.WAITING, "children")

    await store.tasks.request_control(parent_id, "pause", now=clock.now())
    worker = agent_worker(store, harness, clock)
    assert await worker.run_until_idle() == 1  # the child only
    [child] = await store.tasks.list_tasks(parent_id=parent_id)
    assert child.status is S.SUCCEEDED
    assert (await store.tasks.get_task(parent_id)).status is S.PAUSED

    resumed = await store.tasks.request_control(parent_id, "resume", now=clock.now())
    assert resumed.status is S.PENDING
    assert await worker.run_until_idle() == 1
    done = await store.tasks.get_task(parent_id)
    assert (done.status, done.result) == (S.SUCCEEDED, {"text": "all done"})
    report = (await observations(store, parent_id))[0]["observation"]
    assert '"result": {"text": "part done"}' in report


# --- 3. an effect in doubt whose reconciler is down -------------------------------------------


async def test_reconcile_failure_keeps_the_effect_in_doubt_and_retries(
    store: Store, clock: SimulatedClock, person: Person, workspace: Workspace
) -> None:
    """A non-idempotent external tool was sent and the worker died before recording the answer.
    The reconcile hook then fails: that says nothing about the effect, so it is neither sent
    again under a new key nor reported to the model as failed; the activation retries, and
    once the reconciler answers, the task goes on without sending anything."""
    sent: list[str] = []
    down = [True]

    async def reconcile(
        key: str, args: dict[str, Any], ctx: ToolContext
    ) -> tuple[bool, Any] | None:
        assert args == {"to": "bob"}
        assert ctx.idempotency_key == key
        if down[0]:
            raise ConnectionError("reconcile endpoint down")
        return True, f"sent under {key}"

    @tool(effect=EffectClass.EXTERNAL, reconcile=reconcile)
    async def send(to: str) -> str:
        """Send a message."""
        sent.append(to)
        if len(sent) == 1:
            raise Died  # the service applied it; the worker never heard back
        return "sent"

    model = ScriptedModel([call_tool("send", to="bob"), call_tool("finish", result="ok")])
    harness = AgentHarness(model=model, workspace=workspace, tools=[send], sentinel=AllowAll())
    task_id = await new_task(store, clock, person)
    with pytest.raises(Died):
        await harness.activate(await claim_one(store, clock))
    await reap(store, clock)
    key = effect_key(task_id, 2, 0)

    worker = agent_worker(store, harness, clock)
    assert await worker.run_until_idle() == 1
    retrying = await store.tasks.get_task(task_id)
    assert retrying.status is S.PENDING
    assert "reconcile endpoint down" in (retrying.error or "")
    [effect] = await store.effects.list_effects(task_id=task_id)
    assert (effect.key, effect.status) == (key, EffectStatus.IN_DOUBT)
    assert sent == ["bob"]
    assert model.calls == 1
    assert await observations(store, task_id) == []

    down[0] = False
    clock.advance(timedelta(minutes=10))
    assert await worker.run_until_idle() == 1
    done = await store.tasks.get_task(task_id)
    assert done.status is S.SUCCEEDED
    assert sent == ["bob"]
    [effect] = await store.effects.list_effects(task_id=task_id)
    assert (effect.status, effect.result) == (EffectStatus.SUCCEEDED, f"sent under {key}")
    [observed] = (await observations(store, task_id))[:1]
    assert (observed["observation"], observed["error"]) == (f"sent under {key}", False)
    assert not any("failed" in o["observation"] for o in await observations(store, task_id))


# --- 4. a policy that changed after an allowed effect was sent -------------------------------


class AllowFirst:
    """Allows the first external call; answers ``then`` to later ones (a time-limited grant
    that lapsed while the task was being recovered). Control tools are always allowed."""

    def __init__(self, *, then: Verdict) -> None:
        self.then = then
        self.checks = 0

    async def check(self, request: ActionRequest) -> Decision:
        if request.effect is not EffectClass.EXTERNAL:
            return Decision(verdict=Verdict.ALLOW, reason="not external")
        self.checks += 1
        verdict = Verdict.ALLOW if self.checks == 1 else self.then
        return Decision(verdict=verdict, reason=f"check {self.checks}")


class KeyedService:
    """An in-process stand-in for a service that dedupes by idempotency key (or not)."""

    def __init__(self, *, honours_keys: bool) -> None:
        self.honours_keys = honours_keys
        self.requests: Counter[str] = Counter()
        self.applied: Counter[str] = Counter()
        self.die_after_first = True

        @tool(effect=EffectClass.EXTERNAL, idempotent=honours_keys)
        async def send(to: str, ctx: ToolContext) -> dict[str, Any]:
            """Send a message."""
            key = ctx.idempotency_key
            assert key is not None
            self.requests[key] += 1
            if not (self.honours_keys and self.applied[key]):
                self.applied[key] += 1
            if self.die_after_first:
                self.die_after_first = False
                raise Died  # applied and answered; the worker never recorded it
            return {"to": to, "applied": self.applied[key]}

        self.tool: Tool = send


@pytest.mark.parametrize(
    ("then", "honours_keys"),
    [(Verdict.ASK, True), (Verdict.DENY, True), (Verdict.ASK, False)],
    ids=["ask-idempotent", "deny-idempotent", "ask-unkeyed"],
)
async def test_sent_effect_is_settled_through_the_journal_whatever_the_new_verdict(
    store: Store,
    clock: SimulatedClock,
    person: Person,
    workspace: Workspace,
    then: Verdict,
    honours_keys: bool,
) -> None:
    """The sentinel allowed an external call; it was sent and the worker died. On recovery the
    sentinel would now ask (or deny), but the effect may already have happened: it is settled
    through the journal under its key — retried once with the same key if the service dedupes,
    else left in doubt for the person — never run again under a new key after an approval,
    and never hidden behind a "denied" observation."""
    service = KeyedService(honours_keys=honours_keys)
    model = ScriptedModel([call_tool("send", to="bob"), call_tool("finish", result="ok")])
    harness = AgentHarness(
        model=model, workspace=workspace, tools=[service.tool], sentinel=AllowFirst(then=then)
    )
    task_id = await new_task(store, clock, person)
    with pytest.raises(Died):
        await harness.activate(await claim_one(store, clock))
    await reap(store, clock)
    key = effect_key(task_id, 2, 0)

    worker = agent_worker(store, harness, clock)
    assert await worker.run_until_idle() == 1
    assert await store.inbox.list_approvals(task_id=task_id) == []
    [effect] = await store.effects.list_effects(task_id=task_id)
    assert effect.key == key
    task = await store.tasks.get_task(task_id)
    if honours_keys:
        assert service.requests == Counter({key: 2})
        assert service.applied == Counter({key: 1})
        assert task.status is S.SUCCEEDED
        assert (effect.status, effect.result) == (
            EffectStatus.SUCCEEDED,
            {"to": "bob", "applied": 1},
        )
        [observed, _] = await observations(store, task_id)
        assert observed["error"] is False
    else:
        assert service.requests == Counter({key: 1})
        assert effect.status is EffectStatus.IN_DOUBT
        assert task.wait is not None
        assert (task.status, task.wait.kind, task.wait.ref) == (S.WAITING, "effect", effect.id)
        assert await observations(store, task_id) == []
    assert model.calls == 1 + honours_keys


# --- 5. subtasks never get more authority, nor nest without end ------------------------------


async def test_subtask_may_not_use_tools_its_parent_may_not(
    store: Store, clock: SimulatedClock, person: Person, workspace: Workspace
) -> None:
    @tool
    async def a() -> str:
        """Tool a."""
        return "a"

    @tool
    async def b() -> str:
        """Tool b."""
        return "b"

    model = ScriptedModel(
        [
            call_tool("spawn_subtask", title="t", instructions="use b", tools=["a", "b"]),
            call_tool("finish", result="gave up"),
        ]
    )
    harness = AgentHarness(model=model, workspace=workspace, tools=[a, b])
    task_id = await new_task(store, clock, person, tools=["a"])
    await agent_worker(store, harness, clock).run_until_idle()

    assert (await store.tasks.get_task(task_id)).status is S.SUCCEEDED
    [refused, _] = await observations(store, task_id)
    assert (refused["observation"], refused["error"]) == (
        "error: a subtask may not use ['b']",
        True,
    )
    assert await store.tasks.list_tasks(parent_id=task_id) == []


async def test_subtasks_nest_at_most_max_subtask_depth(
    store: Store, clock: SimulatedClock, person: Person, workspace: Workspace
) -> None:
    """With a depth of 1 the task may spawn a subtask, whose own spawn is refused."""
    spawn = call_tool("spawn_subtask", title="t", instructions="go deeper")
    model = ScriptedModel(
        [spawn, spawn, call_tool("finish", result="child"), call_tool("finish", result="top")]
    )
    harness = AgentHarness(
        model=model, workspace=workspace, config=AgentConfig(max_subtask_depth=1)
    )
    task_id = await new_task(store, clock, person)
    await agent_worker(store, harness, clock).run_until_idle()

    assert (await store.tasks.get_task(task_id)).status is S.SUCCEEDED
    [child] = await store.tasks.list_tasks(parent_id=task_id)
    assert child.status is S.SUCCEEDED
    [refused, _] = await observations(store, child.id)
    assert (refused["observation"], refused["error"]) == (
        "error: subtasks nest at most 1 deep",
        True,
    )
    assert await store.tasks.list_tasks(parent_id=child.id) == []


# --- 6. a malformed budget fails the task at once --------------------------------------------


@pytest.mark.parametrize(
    ("budget", "reason"),
    [
        ({"max_stepz": 3}, "unknown budget fields ['max_stepz']"),
        (5, "budget must be an object"),
        ({"max_steps": "three"}, "max_steps must be a number"),
    ],
    ids=["unknown-field", "not-an-object", "not-a-number"],
)
async def test_malformed_budget_fails_the_task_without_retries(
    store: Store,
    clock: SimulatedClock,
    person: Person,
    workspace: Workspace,
    budget: Any,
    reason: str,
) -> None:
    """Retrying cannot fix a task's input: one activation, failed, with the reason."""
    model = ScriptedModel([call_tool("finish", result="never")])
    harness = AgentHarness(model=model, workspace=workspace)
    task_id = await new_task(store, clock, person, budget=budget)
    worker = agent_worker(store, harness, clock)
    assert await worker.run_until_idle() == 1
    clock.advance(timedelta(hours=1))
    assert await worker.run_until_idle() == 0

    failed = await store.tasks.get_task(task_id)
    assert failed.status is S.FAILED
    assert reason in (failed.error or "")
    assert len(await store.activations.list_activations(task_id=task_id)) == 1
    assert model.calls == 0
