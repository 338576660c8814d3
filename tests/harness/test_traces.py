"""Telemetry of one agent activation: with an OpenTelemetry SDK exporter configured, a span per
activation holds its model calls, the sentinel's decision, the tool and its effect, and the
checkpoints; the Prometheus counters count the same activation."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from steward import telemetry
from steward.domain import Person, TaskSpec
from steward.domain.actions import EffectClass
from steward.domain.clock import SimulatedClock
from steward.harness.agent import AgentHarness
from steward.harness.tools import tool
from steward.harness.workspace import Workspace
from steward.models import ScriptedModel
from steward.models.scripted import call_tool
from steward.sentinel.defaults import AllowAll
from steward.store import Store
from support.agents import agent_worker


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    """The spans Steward records while the test runs (then tracing is off again)."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    telemetry.trace_to(provider)
    try:
        yield exporter
    finally:
        telemetry.trace_off()
        provider.shutdown()


def tree(spans: tuple[ReadableSpan, ...]) -> list[tuple[int, str]]:
    """The spans in start order as (depth, name)."""
    by_id = {s.context.span_id: s for s in spans if s.context is not None}

    def depth(s: ReadableSpan) -> int:
        return 0 if s.parent is None else 1 + depth(by_id[s.parent.span_id])

    return [(depth(s), s.name) for s in sorted(spans, key=lambda s: s.start_time or 0)]


def sample(name: str, **labels: str) -> float:
    value = telemetry.REGISTRY.get_sample_value(name, labels)
    return value or 0.0


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
async def test_one_activation_is_one_span_tree_and_is_counted(
    store: Store,
    clock: SimulatedClock,
    person: Person,
    workspace: Workspace,
    spans: InMemorySpanExporter,
) -> None:
    @tool(effect=EffectClass.EXTERNAL)
    async def send_note(text: str) -> str:
        """Send a note."""
        return f"sent: {text}"

    model = ScriptedModel(
        [call_tool("send_note", text="hello"), call_tool("finish", result="Sent.")]
    )
    harness = AgentHarness(model=model, workspace=workspace, tools=[send_note], sentinel=AllowAll())
    before = {
        "succeed": sample("steward_activations_total", outcome="succeed"),
        "calls": sample("steward_model_calls_total"),
        "allow": sample("steward_sentinel_decisions_total", verdict="allow"),
        "effects": sample("steward_effects_total", outcome="succeeded"),
        "claims": sample("steward_claim_latency_seconds_count"),
    }
    spec = TaskSpec(kind="agent", input={"instructions": "send a note"})
    await store.tasks.create_task(spec, person_id=person.id, now=clock.now())
    assert await agent_worker(store, harness, clock).run_until_idle() == 1

    # model call, its checkpoint; the sentinel allows the tool, whose effect goes through the
    # journal and is checkpointed; model call, checkpoint; finish (a tool the sentinel sees too)
    assert tree(spans.get_finished_spans()) == [
        (0, "activation"),
        (1, "model call"),
        (1, "checkpoint"),
        (1, "sentinel decision"),
        (1, "tool"),
        (2, "effect"),
        (2, "checkpoint"),
        (1, "model call"),
        (1, "checkpoint"),
        (1, "sentinel decision"),
        (1, "tool"),
    ]
    [activation] = [s for s in spans.get_finished_spans() if s.name == "activation"]
    assert activation.attributes is not None
    assert activation.attributes["kind"] == "agent"

    assert sample("steward_activations_total", outcome="succeed") == before["succeed"] + 1
    assert sample("steward_model_calls_total") == before["calls"] + 2
    assert sample("steward_sentinel_decisions_total", verdict="allow") == before["allow"] + 2
    assert sample("steward_effects_total", outcome="succeeded") == before["effects"] + 1
    assert sample("steward_claim_latency_seconds_count") == before["claims"] + 1
