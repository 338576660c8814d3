"""API latency under load: 50 concurrent clients on loopback against a real ``steward up``.

    .venv/bin/python bench/api_latency.py                 # SQLite, 10,000 steps, 50 clients
    .venv/bin/python bench/api_latency.py --backend postgres --json
    .venv/bin/python bench/api_latency.py --kind "dashboard first page" --before /tmp/old/src

The database holds one person with a goal whose task took 10,000 steps (committed through the
store's fenced checkpoints, as a worker does), 100 pending approvals, 300 notifications and 300
reports. ``steward up --port 0`` serves it from a child process; this process runs the clients
(one ``httpx.AsyncClient`` each, keep-alive), each sending its requests one after another:

* ``timeline, first page``: ``GET /goals/{id}/timeline?limit=100``;
* ``timeline, deep page``: ``GET /goals/{id}/timeline?after=<a random seq>&limit=100``;
* ``inbox``: ``GET /approvals`` (pending) then ``GET /notifications?unread=true``, timed as one;
* ``dashboard first page``: ``GET /`` with the session cookie (when the dashboard is served).

Reported per kind: latency seen by the client (p50/p99), the server's own time from the
``Server-Timing`` header (p50/p99), and the server process's CPU time per request (which does
not depend on what else the machine runs). Clients and server share the machine's cores, so
the client-side figures include the clients' own work. ``--before SRC`` also serves the
``steward`` package found in ``SRC`` (an older checkout's ``src/``), on its own database with
the same data; ``--rounds N`` measures the servers in turn, N times, so all meet the same load.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import json
import os
import random
import re
import statistics
import sys
import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psutil

from bench_support import STEWARD, fresh_database, percentile, quiet_logs
from steward.domain import Approval, ApprovalStatus, Notification, TaskSpec
from steward.domain.approval import args_hash
from steward.domain.clock import Clock
from steward.domain.ids import new_id
from steward.domain.report import Report, report_id
from steward.service import Service
from steward.store import Fence, Store

STEPS = 10_000
APPROVALS = 100
NOTIFICATIONS = 300
REPORTS = 300
TARGET_FIRST_PAGE_MS = 200.0
"""The first page's goal: server time p50 under 50 clients."""
KINDS = ("timeline, first page", "timeline, deep page", "inbox", "dashboard first page")


async def build(url: str, steps: int) -> dict[str, Any]:
    """The person's goal, its long task, the inbox, and a control token."""
    store = await Store.open(url)
    clock = Clock()
    try:
        svc = Service(store, clock)
        person = await svc.ensure_person()
        goal = await svc.create_goal(person_id=person.id, title="A long-running goal")
        task = await svc.create_task(
            person_id=person.id, spec=TaskSpec(kind="noop", title="the long task"), goal_id=goal.id
        )
        [claim] = await store.tasks.claim_tasks(
            worker="bench", limit=1, lease_seconds=86_400, now=clock.now()
        )
        fence = Fence.of(claim)
        started = time.perf_counter()
        for seq in range(1, steps + 1):
            await store.activations.checkpoint(
                fence, seq=seq, kind="tool", output={"n": seq}, state={}, now=clock.now()
            )
        written = time.perf_counter() - started
        for n in range(APPROVALS):
            args = {"to": f"friend{n}@example.com"}
            approval_id = new_id("apr")
            await store.inbox.request_approval(
                fence,
                Approval(
                    id=approval_id,
                    person_id=person.id,
                    task_id=task.id,
                    goal_id=goal.id,
                    step_seq=n + 1,
                    tool="send_email",
                    args=args,
                    args_hash=args_hash("send_email", args),
                    reason="an external action",
                    scopes=("email.send",),
                    status=ApprovalStatus.PENDING,
                    created_at=clock.now(),
                ),
                Notification(
                    id=new_id("ntf"),
                    person_id=person.id,
                    kind="approval",
                    title=f"may I write to friend{n}?",
                    body="",
                    task_id=task.id,
                    ref=approval_id,
                    created_at=clock.now(),
                ),
            )
        for n in range(NOTIFICATIONS - APPROVALS):
            await store.inbox.notify(
                Notification(
                    id=new_id("ntf"),
                    person_id=person.id,
                    kind="info",
                    title=f"news {n}",
                    body="",
                    created_at=clock.now(),
                )
            )
        for n in range(REPORTS):
            await store.reports.add(
                Report(
                    id=report_id(f"bench:{n}"),
                    person_id=person.id,
                    goal_id=goal.id,
                    task_id=task.id,
                    origin="agent",
                    what=f"Invoice {n} from Acme is due Friday",
                    why="€1,200 to Acme Ltd.",
                    todo="Pay it before Friday noon." if n % 3 == 0 else None,
                    importance="actionable" if n % 3 == 0 else "info",
                    created_at=clock.now(),
                )
            )
        _, token = await svc.create_token(person_id=person.id, name="bench", scopes=["control"])
        head = await store.feed.feed_head(person_id=person.id)
        return {"goal": goal.id, "token": token, "head": head, "steps_written_s": written}
    finally:
        await store.close()


async def measure(
    address: str,
    built: dict[str, Any],
    clients: int,
    per_client: int,
    rng: random.Random,
    *,
    kinds: Sequence[str] = KINDS,
    cpu: Callable[[], float] = lambda: 0.0,
) -> dict[str, Samples]:
    """Each kind's requests from ``clients`` clients at once; ``cpu``: the server's CPU
    seconds so far."""
    token, goal = built["token"], built["goal"]
    base = f"{address}/api/v1"

    async def timeline_first(client: httpx.AsyncClient) -> list[httpx.Response]:
        return [await client.get(f"{base}/goals/{goal}/timeline", params={"limit": 100})]

    async def timeline_deep(client: httpx.AsyncClient) -> list[httpx.Response]:
        after = rng.randrange(built["head"])
        params = {"after": after, "limit": 100}
        return [await client.get(f"{base}/goals/{goal}/timeline", params=params)]

    async def inbox(client: httpx.AsyncClient) -> list[httpx.Response]:
        return [
            await client.get(f"{base}/approvals"),
            await client.get(f"{base}/notifications", params={"unread": "true"}),
        ]

    async def dashboard(client: httpx.AsyncClient) -> list[httpx.Response]:
        return [await client.get(f"{address}/", cookies={"steward_session": token})]

    requests = {
        "timeline, first page": timeline_first,
        "timeline, deep page": timeline_deep,
        "inbox": inbox,
        "dashboard first page": dashboard,
    }
    report: dict[str, Samples] = {}
    for name in kinds:
        request = requests[name]
        wall: list[float] = []
        server: list[float] = []
        statuses: dict[int, int] = {}

        async def one_client(
            request: Any = request,
            wall: list[float] = wall,
            server: list[float] = server,
            statuses: dict[int, int] = statuses,
        ) -> None:
            headers = {"Authorization": f"Bearer {token}"}
            async with httpx.AsyncClient(headers=headers, timeout=60) as client:
                await request(client)  # warm the connection (its CPU is counted too)
                statuses[0] = statuses.get(0, 0) + 1
                for _ in range(per_client):
                    started = time.perf_counter()
                    responses = await request(client)
                    wall.append((time.perf_counter() - started) * 1000)
                    server.append(sum(_server_ms(r) for r in responses))
                    for r in responses:
                        statuses[r.status_code] = statuses.get(r.status_code, 0) + 1

        started, cpu_before = time.perf_counter(), cpu()
        await asyncio.gather(*(one_client() for _ in range(clients)))
        warm = statuses.pop(0)
        report[name] = Samples(
            wall=wall,
            server=server,
            seconds=time.perf_counter() - started,
            statuses=statuses,
            cpu_seconds=cpu() - cpu_before,
            cpu_requests=len(wall) + warm,
        )
    return report


@dataclass(kw_only=True)
class Samples:
    """One kind's requests against one server, over one or more rounds."""

    wall: list[float] = field(default_factory=list)
    """Milliseconds each request took, seen by its client."""
    server: list[float] = field(default_factory=list)
    """Milliseconds the server says it spent (``Server-Timing``)."""
    seconds: float = 0.0
    """Wall-clock seconds the rounds took."""
    statuses: dict[int, int] = field(default_factory=dict)
    """How many answers had each status code."""
    cpu_seconds: float = 0.0
    """The server process's CPU time (all its threads) meanwhile."""
    cpu_requests: int = 0
    """Requests it served meanwhile (the clients' first ones included)."""

    def add(self, other: Samples) -> None:
        self.wall += other.wall
        self.server += other.server
        self.seconds += other.seconds
        self.cpu_seconds += other.cpu_seconds
        self.cpu_requests += other.cpu_requests
        for code, n in other.statuses.items():
            self.statuses[code] = self.statuses.get(code, 0) + n

    def figures(self) -> dict[str, Any]:
        if set(self.statuses) != {200}:
            return {"skipped": f"answers {self.statuses}"}
        return {
            "requests": len(self.wall),
            "per_second": round(len(self.wall) / self.seconds, 1),
            "client_p50_ms": round(percentile(self.wall, 50), 1),
            "client_p99_ms": round(percentile(self.wall, 99), 1),
            "server_p50_ms": round(percentile(self.server, 50), 1),
            "server_p99_ms": round(percentile(self.server, 99), 1),
            "server_cpu_ms_per_request": round(1000 * self.cpu_seconds / self.cpu_requests, 2),
        }


def _cpu_seconds(process: psutil.Process) -> float:
    times = process.cpu_times()
    return float(times.user + times.system)


def _server_ms(response: httpx.Response) -> float:
    found = re.search(r"dur=([\d.]+)", response.headers.get("server-timing", ""))
    return float(found.group(1)) if found else float("nan")


@dataclass(kw_only=True)
class Served:
    """One ``steward up`` under measurement, on its own database."""

    code: str
    """Where its ``steward`` package came from."""
    address: str
    """Its base URL."""
    process: psutil.Process
    """Its process."""
    built: dict[str, Any]
    """The data :func:`build` made for it."""
    samples: dict[str, Samples] = field(default_factory=dict)
    """What was measured, by kind."""
    loads: list[float] = field(default_factory=list)
    """The machine's load average after each round."""


async def run(
    backend: str,
    steps: int,
    clients: int,
    per_client: int,
    *,
    kinds: Sequence[str] = KINDS,
    codes: Sequence[Path | None] = (None,),
    rounds: int = 1,
) -> list[dict[str, Any]]:
    """Build the data and start ``steward up`` on it once per entry of ``codes`` (None: this
    checkout; a directory: serve its ``steward`` package instead, e.g. an older checkout's
    ``src/`` for a before/after comparison), then measure ``kinds`` on each server in turn,
    ``rounds`` times, so that all of them meet the same load on a shared machine."""
    async with contextlib.AsyncExitStack() as stack:
        served = []
        for src in codes:
            url = stack.enter_context(fresh_database(backend))
            built = await build(url, steps)
            address, pid = await stack.enter_async_context(_serving(url, src))
            served.append(
                Served(
                    code=str(src or "this checkout"),
                    address=address,
                    process=psutil.Process(pid),
                    built=built,
                )
            )
        for n in range(rounds):
            for one in served:
                got = await measure(
                    one.address,
                    one.built,
                    clients,
                    per_client,
                    random.Random(n),
                    kinds=kinds,
                    cpu=functools.partial(_cpu_seconds, one.process),
                )
                for kind, samples in got.items():
                    one.samples.setdefault(kind, Samples()).add(samples)
                one.loads.append(os.getloadavg()[0])
        return [
            {
                "backend": backend,
                "code": one.code,
                "steps": steps,
                "clients": clients,
                "requests_per_client": per_client * rounds,
                "feed_entries": one.built["head"],
                "steps_written_s": round(one.built["steps_written_s"], 1),
                "load_average": round(statistics.fmean(one.loads), 2),
                "results": {kind: s.figures() for kind, s in one.samples.items()},
            }
            for one in served
        ]


@contextlib.asynccontextmanager
async def _serving(url: str, src: Path | None) -> AsyncIterator[tuple[str, int]]:
    """``steward up`` on ``url`` in a child process (its code from ``src`` if given); yields
    its address and process id."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    if src is not None:
        env["PYTHONPATH"] = str(src)
    proc = await asyncio.create_subprocess_exec(
        STEWARD,
        "up",
        "--db",
        url,
        "--port",
        "0",
        "--log-level",
        "warning",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        env=env,
    )
    try:
        assert proc.stdout is not None
        banner = b""
        while b"api:" not in banner:
            banner += await asyncio.wait_for(proc.stdout.readline(), 60)
        [address] = re.findall(r"open:\s+(http://127\.0\.0\.1:\d+)/", banner.decode())
        yield address, proc.pid
    finally:
        proc.terminate()
        await proc.wait()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--backend", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument("--steps", type=int, default=STEPS)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--requests", type=int, default=20, help="per client and kind (20)")
    parser.add_argument(
        "--kind", action="append", choices=KINDS, help="measure only these (repeatable)"
    )
    parser.add_argument(
        "--before",
        type=Path,
        metavar="SRC",
        help="also serve from this directory's steward package (e.g. an older checkout's "
        "src/), measured first, for a before/after comparison in one run",
    )
    parser.add_argument(
        "--rounds", type=int, default=1, help="measure each server this many times, in turn"
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    quiet_logs()
    kinds = tuple(args.kind or KINDS)
    codes = ([args.before] if args.before else []) + [None]
    runs = asyncio.run(
        run(
            args.backend,
            args.steps,
            args.clients,
            args.requests,
            kinds=kinds,
            codes=codes,
            rounds=args.rounds,
        )
    )
    if args.json:
        print(json.dumps(runs if args.before else runs[0], indent=2))
        return 0
    for report in runs:
        _print(report)
    return 0


def _print(report: dict[str, Any]) -> None:
    print(
        f"{report['backend']}, code: {report['code']}: a goal with {report['steps']:,} steps "
        f"({report['feed_entries']:,} feed entries), {report['clients']} clients x "
        f"{report['requests_per_client']} requests per kind; load average "
        f"{report['load_average']:.2f}"
    )
    print(
        f"{'kind':24} {'req/s':>7} {'client p50':>11} {'p99':>8} {'server p50':>11} {'p99':>8}"
        f" {'CPU/request':>12}"
    )
    for name, row in report["results"].items():
        if "skipped" in row:
            print(f"{name:24} skipped: {row['skipped']}")
            continue
        print(
            f"{name:24} {row['per_second']:7.1f} {row['client_p50_ms']:9.1f}ms "
            f"{row['client_p99_ms']:6.1f}ms {row['server_p50_ms']:9.1f}ms "
            f"{row['server_p99_ms']:6.1f}ms {row['server_cpu_ms_per_request']:10.2f}ms"
        )
    first = report["results"].get("dashboard first page", {})
    if "server_p50_ms" in first:
        met = "met" if first["server_p50_ms"] <= TARGET_FIRST_PAGE_MS else "NOT met"
        print(f"dashboard first page at or under {TARGET_FIRST_PAGE_MS:.0f} ms p50: {met}")
    print()


if __name__ == "__main__":
    sys.exit(main())
