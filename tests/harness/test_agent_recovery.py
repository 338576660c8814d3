"""The agent harness after its process dies mid-activation: the journal, not memory, decides
what happens next. A recorded model answer is reused rather than bought again; an external
effect that may have been sent is retried only under the same idempotency key, and otherwise
left in doubt for the person instead of being repeated."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import httpx
import pytest

from steward.domain import EffectStatus, Person, TaskSpec, TaskStatus, WaitCondition
from steward.domain.actions import ActionRequest, Decision, EffectClass
from steward.domain.clock import SimulatedClock
from steward.domain.ids import effect_key
from steward.domain.outcome import Wait
from steward.errors import EffectInDoubt
from steward.harness.agent import AgentHarness
from steward.harness.tools import Tool, ToolContext, tool
from steward.harness.workspace import Workspace
from steward.models.openai_compat import OpenAIModel
from steward.models.scripted import ScriptedModel, call_tool, call_tools
from steward.runtime.run import TaskRun
from steward.runtime.scheduler import Scheduler
from steward.sentinel.defaults import AllowAll
from steward.store import Store
from steward.testing.effect_service import (
    EffectServiceClient,
    RunningService,
    run_effect_service,
)
from steward.testing.model_server import ModelServer, run_model_server
from support.agents import agent_worker

S = TaskStatus
LEASE = 30.0


class Died(BaseException):
    """The process running the activation is gone: nothing after this point happens. A
    BaseException, so no ``except Exception`` in the harness or runtime can absorb it."""


@pytest.fixture(scope="module")
def effect_service() -> Iterator[RunningService]:
    """One service process for the module; every test uses its own keys (task ids)."""
    with run_effect_service() as service:
        yield service


async def doomed_run(store: Store, clock: SimulatedClock) -> TaskRun:
    """Claim the due task as a worker that is about to die (no heartbeat, no outcome)."""
    [claim] = await store.tasks.claim_tasks(
        worker="doomed", limit=1, lease_seconds=LEASE, now=clock.now(), lease_now=clock.lease_now()
    )
    return TaskRun(store=store, clock=clock, claim=claim)


async def crash(store: Store, clock: SimulatedClock, harness: AgentHarness) -> TaskRun:
    """Run one activation on a doomed claim until the process 'dies', then let the lease lapse
    and the scheduler re-queue the task."""
    run = await doomed_run(store, clock)
    with pytest.raises(Died):
        await harness.activate(run)
    clock.advance(timedelta(seconds=LEASE + 1))
    await Scheduler(store, clock).tick()
    assert (await store.tasks.get_task(run.task.id)).status is S.PENDING
    return run


def remote(server: ModelServer) -> OpenAIModel:
    """A fresh client of the model server, as a restarted process would build."""
    return OpenAIModel(name=server.model.name, base_url=server.url, api_key=server.api_key)


class DiesOnCheck:
    """A sentinel whose ``n``-th check is where the process dies: after the model's answer
    (and any observations before it) were committed, before that tool call ran."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.checks = 0

    async def check(self, request: ActionRequest) -> Decision:
        self.checks += 1
        if self.checks == self.n:
            raise Died
        return await AllowAll().check(request)


@pytest.mark.parametrize("dies_at", [1, 2], ids=["before-first-call", "before-second-call"])
async def test_recovered_activation_reuses_the_recorded_answer(
    store: Store, clock: SimulatedClock, person: Person, workspace: Workspace, dies_at: int
) -> None:
    """The model answers with two tool calls (the answer is committed as a step) and the worker
    dies before the first call ran, or after the first was observed and before the second. A
    fresh worker with a fresh harness carries on from the journal without asking the model
    again: one request per answer over the wire, and each tool call runs exactly once."""
    fetched: list[str] = []

    @tool
    async def fetch_statement(month: str) -> str:
        """The bank statement of a month."""
        fetched.append(month)
        return f"statement {month}: 3 transactions"

    model = ScriptedModel(
        [
            call_tools(
                ("fetch_statement", {"month": "2026-01"}),
                ("fetch_statement", {"month": "2026-02"}),
            ),
            call_tool("finish", result="6 transactions"),
        ]
    )
    task = await store.tasks.create_task(
        TaskSpec(kind="agent", input={"instructions": "Summarise the quarter"}),
        person_id=person.id,
        now=clock.now(),
    )
    with run_model_server(model) as server:
        sentinel = DiesOnCheck(dies_at)
        first = AgentHarness(
            model=remote(server), workspace=workspace, tools=[fetch_statement], sentinel=sentinel
        )
        dead = await crash(store, clock, first)
        assert server.requests == 1
        assert fetched == ["2026-01"][: dies_at - 1]
        before = await store.activations.list_steps(task.id)
        assert [s.kind for s in before] == ["model", "tool"][:dies_at]
        assert {s.activation_id for s in before} == {dead.claim.activation.id}

        second = AgentHarness(
            model=remote(server), workspace=workspace, tools=[fetch_statement], sentinel=sentinel
        )
        assert await agent_worker(store, second, clock).run_until_idle() == 1
        assert server.requests == 2  # the recovered answer cost no request

    done = await store.tasks.get_task(task.id)
    assert (done.status, done.result) == (S.SUCCEEDED, {"text": "6 transactions"})
    assert fetched == ["2026-01", "2026-02"]
    steps = await store.activations.list_steps(task.id)
    assert [s.kind for s in steps] == ["model", "tool", "tool", "model", "tool"]
    assert [s.output["observation"] for s in steps[1:3]] == [
        "statement 2026-01: 3 transactions",
        "statement 2026-02: 3 transactions",
    ]
    lost, recovered = await store.activations.list_activations(task_id=task.id)
    assert (lost.outcome, recovered.reason, recovered.outcome) == ("lost", "recovered", "succeed")
    assert lost.usage["model_calls"] == 1  # saved with the answer, though the worker died
    assert {s.activation_id for s in steps[dies_at:]} == {recovered.id}


class Payments:
    """A payment tool calling the effect service; the first call can 'kill the process' right
    after the service applied it, before the harness recorded the answer."""

    def __init__(self, service: RunningService, *, honours_keys: bool) -> None:
        self.die_after_send = True
        self.keys: list[str] = []
        path = "/effect" if honours_keys else "/effect/unkeyed"

        @tool(effect=EffectClass.EXTERNAL, idempotent=honours_keys)
        async def pay(amount: int, ctx: ToolContext) -> Any:
            """Pay an amount."""
            assert ctx.idempotency_key is not None
            self.keys.append(ctx.idempotency_key)
            async with httpx.AsyncClient(timeout=10.0) as client:
                answer = await client.post(
                    service.url + path,
                    json={"amount": amount},
                    headers={"Idempotency-Key": ctx.idempotency_key},
                )
            answer.raise_for_status()
            if self.die_after_send:
                self.die_after_send = False
                raise Died
            return answer.json()

        self.tool: Tool = pay


async def pay_task(store: Store, clock: SimulatedClock, person: Person) -> str:
    task = await store.tasks.create_task(
        TaskSpec(kind="agent", input={"instructions": "Pay the plumber 80"}),
        person_id=person.id,
        now=clock.now(),
    )
    return task.id


async def test_idempotent_effect_is_retried_with_the_same_key(
    store: Store,
    clock: SimulatedClock,
    person: Person,
    workspace: Workspace,
    effect_service: RunningService,
) -> None:
    """The service applied the payment, then the worker died before the effect's answer was
    recorded. The tool honours idempotency keys, so the recovered activation sends it again
    under the same key; the service applies it once and answers with its first answer."""
    payments = Payments(effect_service, honours_keys=True)
    model = ScriptedModel([call_tool("pay", amount=80), call_tool("finish", result="paid")])
    task_id = await pay_task(store, clock, person)
    with run_model_server(model) as server:

        def harness() -> AgentHarness:
            return AgentHarness(
                model=remote(server),
                workspace=workspace,
                tools=[payments.tool],
                sentinel=AllowAll(),
            )

        await crash(store, clock, harness())
        key = effect_key(task_id, 2, 0)
        effect = await store.effects.get_effect_by_key(key)
        assert effect is not None
        assert effect.status is EffectStatus.SENT
        await agent_worker(store, harness(), clock).run_until_idle()
        assert server.requests == 2

    assert payments.keys == [key, key]
    stats = (await EffectServiceClient(effect_service.url).stats())[key]
    assert (stats["requests"], stats["applied"]) == (2, 1)
    done = await store.tasks.get_task(task_id)
    assert done.status is S.SUCCEEDED
    effect = await store.effects.get_effect_by_key(key)
    assert effect is not None
    assert (effect.status, effect.attempts) == (EffectStatus.SUCCEEDED, 2)
    assert effect.result["key"] == key
    assert effect.result["applied_count"] == 1
    observed = next(
        s.output for s in await store.activations.list_steps(task_id) if s.kind == "tool"
    )
    assert '"applied_count": 1' in observed["observation"]


async def test_effect_without_idempotency_is_left_in_doubt_not_repeated(
    store: Store,
    clock: SimulatedClock,
    person: Person,
    workspace: Workspace,
    effect_service: RunningService,
) -> None:
    """The same crash with a service that ignores keys: the recovered activation does not send
    the payment again (that could pay twice). The effect is in doubt and the task waits for the
    person; when they confirm it happened, the task goes on without sending anything."""
    payments = Payments(effect_service, honours_keys=False)
    model = ScriptedModel([call_tool("pay", amount=80), call_tool("finish", result="paid")])
    task_id = await pay_task(store, clock, person)
    with run_model_server(model) as server:

        def harness() -> AgentHarness:
            return AgentHarness(
                model=remote(server),
                workspace=workspace,
                tools=[payments.tool],
                sentinel=AllowAll(),
            )

        await crash(store, clock, harness())
        key = effect_key(task_id, 2, 0)
        worker = agent_worker(store, harness(), clock)
        await worker.run_until_idle()
        effect = await store.effects.get_effect_by_key(key)
        assert effect is not None
        assert effect.status is EffectStatus.IN_DOUBT
        waiting = await store.tasks.get_task(task_id)
        assert waiting.status is S.WAITING
        assert waiting.wait is not None
        assert (waiting.wait.kind, waiting.wait.ref) == ("effect", effect.id)
        assert payments.keys == [key]
        assert server.requests == 1
        stats = (await EffectServiceClient(effect_service.url).stats())[key]
        assert (stats["requests"], stats["applied"]) == (1, 1)

        await store.effects.resolve_effect(effect.id, applied=True, now=clock.now())
        await worker.run_until_idle()
        assert server.requests == 2

    assert (await store.tasks.get_task(task_id)).status is S.SUCCEEDED
    assert payments.keys == [key]
    stats = (await EffectServiceClient(effect_service.url).stats())[key]
    assert (stats["requests"], stats["applied"]) == (1, 1)


async def test_effect_resolved_before_the_task_is_asleep_still_wakes_it(
    store: Store,
    clock: SimulatedClock,
    person: Person,
    workspace: Workspace,
    effect_service: RunningService,
) -> None:
    """The effect is listed as in doubt as soon as the recovering activation marks it, before
    the task's wait is committed. A person who resolves it at once must not leave the task
    asleep for good."""
    payments = Payments(effect_service, honours_keys=False)
    model = ScriptedModel([call_tool("pay", amount=80), call_tool("finish", result="paid")])
    harness = AgentHarness(
        model=model, workspace=workspace, tools=[payments.tool], sentinel=AllowAll()
    )
    task_id = await pay_task(store, clock, person)
    await crash(store, clock, harness)
    # what a worker does, with the person's decision falling between the two commits
    [claim] = await store.tasks.claim_tasks(
        worker="w", limit=1, lease_seconds=LEASE, now=clock.now(), lease_now=clock.lease_now()
    )
    run = TaskRun(store=store, clock=clock, claim=claim)
    with pytest.raises(EffectInDoubt) as doubt:
        await harness.activate(run)
    effect_id = doubt.value.effect_id
    await store.effects.resolve_effect(effect_id, applied=True, now=clock.now())
    await store.activations.finish_activation(
        run.fence,
        Wait(condition=WaitCondition(kind="effect", ref=effect_id)),
        now=clock.now(),
        steps_taken=run.steps,
        usage=run.usage,
        lease_now=clock.lease_now(),
    )
    assert (await store.tasks.get_task(task_id)).status is S.PENDING
