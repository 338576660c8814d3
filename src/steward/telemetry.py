"""What a running Steward measures of itself: Prometheus metrics and OpenTelemetry traces.

Every layer reports through the few functions here (an activation ended, a model call's usage,
a sentinel verdict, an effect's outcome, a watch check) and opens spans with :func:`span`; none
imports prometheus_client or OpenTelemetry itself. The counters live in :data:`REGISTRY`, one
per process, and the API's ``/metrics`` serves them with the queue depth read from the store at
scrape time. Traces are off unless an exporter is configured (:func:`configure_tracing`); until
then :func:`span` does nothing at all.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from contextlib import AbstractContextManager, nullcontext
from typing import Literal

from opentelemetry import trace
from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from steward.errors import ConfigError

REGISTRY = CollectorRegistry()
"""This process's Steward metrics (not prometheus_client's global registry: a test or an
embedding application may make several Steward instances in one process)."""

CLAIM_LATENCY = Histogram(
    "steward_claim_latency_seconds",
    "From the time a task became due to a worker claiming it.",
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0),
    registry=REGISTRY,
)
ACTIVATIONS = Counter(
    "steward_activations",
    "Activations ended, by how they ended (succeed, fail, retry, wait, requeue, stop, lost).",
    ["outcome"],
    registry=REGISTRY,
)
MODEL_CALLS = Counter("steward_model_calls", "Model calls made.", registry=REGISTRY)
MODEL_TOKENS = Counter(
    "steward_model_tokens", "Model tokens used, by direction.", ["direction"], registry=REGISTRY
)
MODEL_COST = Counter(
    "steward_model_cost_usd", "What model calls cost, in US dollars.", registry=REGISTRY
)
SENTINEL_DECISIONS = Counter(
    "steward_sentinel_decisions",
    "The sentinel's decisions on proposed actions, by verdict.",
    ["verdict"],
    registry=REGISTRY,
)
EFFECTS = Counter(
    "steward_effects",
    "Side effects attempted through the effect journal, by outcome.",
    ["outcome"],
    registry=REGISTRY,
)
WATCH_CHECKS = Counter(
    "steward_watch_checks",
    "Watch checks (web pages, connected accounts), by kind and result.",
    ["kind", "result"],
    registry=REGISTRY,
)


# --- what the layers report --------------------------------------------------------------------


def claimed(latency_seconds: float) -> None:
    CLAIM_LATENCY.observe(max(0.0, latency_seconds))


def activation_ended(outcome: str) -> None:
    ACTIVATIONS.labels(outcome=outcome).inc()


def model_used(
    *, calls: int, input_tokens: float, output_tokens: float, cost_usd: float | None
) -> None:
    if calls:
        MODEL_CALLS.inc(calls)
    MODEL_TOKENS.labels(direction="input").inc(max(0.0, input_tokens))
    MODEL_TOKENS.labels(direction="output").inc(max(0.0, output_tokens))
    if cost_usd:
        MODEL_COST.inc(max(0.0, cost_usd))


def sentinel_decided(verdict: str) -> None:
    SENTINEL_DECISIONS.labels(verdict=verdict).inc()


def effect_ended(outcome: str) -> None:
    EFFECTS.labels(outcome=outcome).inc()


def watch_checked(kind: str, result: Literal["ok", "changed", "failed"]) -> None:
    WATCH_CHECKS.labels(kind=kind, result=result).inc()


# --- scraping -----------------------------------------------------------------------------------


class QueueDepth(Collector):
    """Tasks by status, as read from the store for this scrape."""

    def __init__(self, counts: Mapping[str, int]) -> None:
        self.counts = counts

    def collect(self) -> Iterable[Metric]:
        family = GaugeMetricFamily(
            "steward_tasks", "Tasks in the store, by status.", labels=["status"]
        )
        for status, count in sorted(self.counts.items()):
            family.add_metric([status], count)
        yield family


def exposition(queue: Mapping[str, int]) -> bytes:
    """The Prometheus text exposition: this process's counters and the queue depth."""
    scrape = CollectorRegistry(auto_describe=False)
    scrape.register(QueueDepth(queue))
    return generate_latest(REGISTRY) + generate_latest(scrape)


# --- traces -------------------------------------------------------------------------------------

EXPORTERS = ("none", "console", "otlp")
"""Where traces go: nowhere (the default), the console (standard error), or an OTLP collector
(``OTEL_EXPORTER_OTLP_ENDPOINT``; needs the ``observability`` extra)."""

_tracer: trace.Tracer | None = None
"""Steward's tracer once tracing is configured; until then spans are skipped outright (even
the API's no-op tracer costs microseconds per span, and a checkpoint opens one)."""


_OFF = nullcontext(trace.INVALID_SPAN)


def span(
    name: str, **attributes: str | int | float | bool | None
) -> AbstractContextManager[trace.Span]:
    """A span around a piece of work, child of the current one (the activation's); nothing
    unless tracing is configured. Attributes that are None are left out."""
    if _tracer is None:
        return _OFF
    given = {k: v for k, v in attributes.items() if v is not None}
    return _tracer.start_as_current_span(name, attributes=given)


def trace_to(provider: trace.TracerProvider) -> None:
    """Record Steward's spans with ``provider`` (an SDK ``TracerProvider`` with its exporters)."""
    global _tracer
    _tracer = provider.get_tracer("steward")


def trace_off() -> None:
    """Stop recording Steward's spans."""
    global _tracer
    _tracer = None


def configure_tracing(exporter: str, *, service_name: str = "steward") -> None:
    """Send this process's spans to ``exporter`` (one of :data:`EXPORTERS`); ``none`` leaves
    the no-op tracer. Raises :class:`ConfigError` for an unknown exporter or a missing package."""
    if exporter not in EXPORTERS:
        raise ConfigError(f"otel_exporter must be one of {', '.join(EXPORTERS)}, not {exporter!r}")
    if exporter == "none":
        return
    try:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import (
            BatchSpanProcessor,
            ConsoleSpanExporter,
            SpanExporter,
        )

        chosen: SpanExporter
        if exporter == "console":
            chosen = ConsoleSpanExporter()
        else:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

            chosen = OTLPSpanExporter()
    except ImportError as exc:
        raise ConfigError(
            f"traces to {exporter} need the observability extra: "
            "pip install 'steward[observability]'"
        ) from exc
    provider = TracerProvider(resource=Resource.create({"service.name": service_name}))
    provider.add_span_processor(BatchSpanProcessor(chosen))
    trace.set_tracer_provider(provider)  # for libraries that trace too
    trace_to(provider)
