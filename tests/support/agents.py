"""A worker for agent-harness tests."""

from __future__ import annotations

from typing import Any

from steward.harness.agent import AgentHarness
from steward.runtime.clock import SimulatedClock
from steward.runtime.worker import Worker
from steward.store import Store


def agent_worker(store: Store, harness: AgentHarness, clock: SimulatedClock, **kw: Any) -> Worker:
    """A worker that polls only when told to (``poll_seconds=None``), with a 30 s lease."""
    kw.setdefault("retry_base_seconds", 10.0)
    return Worker(store, harness, clock, lease_seconds=30.0, poll_seconds=None, **kw)
