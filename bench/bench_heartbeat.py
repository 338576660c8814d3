"""Heartbeats without burn: model tokens per idle day, and scheduler CPU per idle beat.

One goal with a 10-minute heartbeat (watching three event types) and three event triggers
standing in for its watches; its tasks are agent tasks whose model is a scripted
OpenAI-compatible server on loopback that counts requests. Replayed for ``--days`` simulated
days through the real scheduler, worker and store (only the clock is simulated), with nothing
happening: the model must see no request and the goal spend no token. CPU is the process's CPU
time over the replay (scheduler ticks, store, simulated clock) divided by the beats.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parent)]

from bench_support import fresh_database, quiet_logs  # noqa: E402
from steward.domain import TaskSpec, TriggerKind  # noqa: E402
from steward.domain.clock import SimulatedClock  # noqa: E402
from steward.harness.agent import AgentHarness  # noqa: E402
from steward.harness.workspace import Workspace  # noqa: E402
from steward.models import ScriptedModel  # noqa: E402
from steward.models.openai_compat import OpenAIModel  # noqa: E402
from steward.models.scripted import call_tool  # noqa: E402
from steward.runtime.simulate import run_simulation  # noqa: E402
from steward.service import Service  # noqa: E402
from steward.store import Store  # noqa: E402
from steward.testing.model_server import run_model_server  # noqa: E402

WATCHED = ("web.changed", "feed.entry", "file.*")
START = datetime(2026, 1, 5, 8, 0, tzinfo=UTC)


async def run(url: str, days: int, workspace: Path) -> dict[str, float]:
    model = ScriptedModel([call_tool("finish", result="done")], loop_last=True)
    store = await Store.open(url)
    try:
        clock = SimulatedClock(START)
        service = Service(store, clock)
        person = await service.ensure_person()
        goal = await service.create_goal(person_id=person.id, title="Watch the roof")
        task = TaskSpec(kind="agent", input={"instructions": "See what needs doing."})
        beat = await service.add_trigger(
            person_id=person.id,
            goal_id=goal.id,
            kind=TriggerKind.HEARTBEAT,
            spec="10m",
            task=task,
            watch=list(WATCHED),
        )
        for kind in ("web.changed", "feed.entry", "file.created"):
            await service.add_trigger(
                person_id=person.id, goal_id=goal.id, kind=TriggerKind.EVENT, spec=kind, task=task
            )
        with run_model_server(model) as server:
            remote = OpenAIModel(name=model.name, base_url=server.url, api_key=server.api_key)
            harness = AgentHarness(model=remote, workspace=Workspace(workspace))
            cpu = time.process_time()
            report = await run_simulation(
                store, harness, clock, until=START + timedelta(days=days, minutes=1)
            )
            cpu = time.process_time() - cpu
            requests = server.requests
        usage = await store.activations.goal_usage(goal.id)
        after = await store.schedule.get_trigger(beat.id)
        firings = len(await store.schedule.list_firings(beat.id))
    finally:
        await store.close()
    return {
        "days": days,
        "beats": after.idle_beats,
        "firing_rows": firings,
        "model_requests": requests,
        "tokens_per_idle_day": usage["tokens"] / days,
        "cpu_ms_per_beat": 1000 * cpu / max(after.idle_beats, 1),
        "wall_seconds": report.wall_seconds,
    }


async def main(args: argparse.Namespace) -> None:
    quiet_logs()
    for backend in args.backend:
        with fresh_database(backend) as url, tempfile.TemporaryDirectory() as tmp:
            result = await run(url, args.days, Path(tmp))
        print(backend, {k: round(v, 3) for k, v in result.items()})
        if result["model_requests"] or result["tokens_per_idle_day"]:
            raise SystemExit("an idle heartbeat woke the model")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=int, default=7)
    parser.add_argument("--backend", action="append", choices=["sqlite", "postgres"], default=None)
    parsed = parser.parse_args()
    parsed.backend = parsed.backend or ["sqlite"]
    asyncio.run(main(parsed))
