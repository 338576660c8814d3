"""Steward's benchmark suite: ``make bench`` (or ``.venv/bin/python bench/run.py``).

Runs each measurement through the real runtime on SQLite (a file in a temporary directory) and
PostgreSQL (a fresh database on ``$STEWARD_BENCH_POSTGRES_URL``, default the local server,
dropped afterwards), prints a table and writes everything to ``bench/results/<time>.json``.

    bench/run.py                      # everything, both backends (~10 minutes)
    bench/run.py --quick              # smaller sizes, a couple of minutes
    bench/run.py --only steps,dbos    # some benchmarks
    bench/run.py --backend sqlite     # one backend

Benchmarks: steps (checkpointed no-op steps/s), dbos (the same WxN on DBOS, and the ratio),
latency (claim-to-start), timers (lateness of 10,000 timers), idle (CPU of an idle runtime with
10,000 waiting goals), size (store size per 1,000 finished tasks, and pruning), simulate (a
month of 100 daily goals on a simulated clock), harness (the agent harness's overhead per
model/tool iteration, context assembly on a 10,000-step task), langgraph (the same tool loop on
LangGraph, and the ratio), sentinel (policy decision time with 1,000 grants and 200 rules),
watches (10,000 web watches in one process: CPU per check, lateness, RSS, change to event).
See docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import sqlite3
import subprocess
import sys
import time
import traceback
from collections.abc import Awaitable, Callable
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg

from bench_harness import LANGGRAPH_PYTHON, bench_harness, bench_langgraph
from bench_idle import bench_idle
from bench_latency import bench_latency
from bench_sentinel import bench_sentinel
from bench_simulate import bench_simulate
from bench_size import bench_size
from bench_steps import DBOS_PYTHON, bench_dbos, bench_steps
from bench_support import (
    BACKENDS,
    PG_URL,
    REPO,
    Metric,
    Outcome,
    postgres_problem,
    quiet_logs,
)
from bench_timers import bench_timers
from bench_watches import bench_watches

Bench = Callable[[str, bool], Awaitable[Outcome]]

ORDER = (
    "steps",
    "dbos",
    "latency",
    "timers",
    "idle",
    "size",
    "simulate",
    "harness",
    "langgraph",
    "sentinel",
    "watches",
)
BENCHES: dict[str, Bench] = {
    "steps": bench_steps,
    "dbos": bench_dbos,
    "latency": bench_latency,
    "timers": bench_timers,
    "idle": bench_idle,
    "size": bench_size,
    "simulate": bench_simulate,
    "harness": bench_harness,
    "langgraph": bench_langgraph,
    "sentinel": bench_sentinel,
    "watches": bench_watches,
}
RESULTS = REPO / "bench" / "results"
BENCH_TIMEOUT = 300.0
"""Seconds one benchmark on one backend may take before it is recorded as failed (a hung
store must not hang the whole run)."""
TIMEOUTS = {"watches": 900.0}
"""Benchmarks that take longer by design (watches: rounds of checks on the real clock)."""


def machine() -> dict[str, Any]:
    """What the figures were measured on."""
    cpu = ""
    with open("/proc/cpuinfo") as info:
        for line in info:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    mem_kib = 0
    with open("/proc/meminfo") as info:
        for line in info:
            if line.startswith("MemTotal:"):
                mem_kib = int(line.split()[1])
                break
    pg_version = None
    if postgres_problem() is None:
        with psycopg.connect(PG_URL.replace("postgresql+psycopg://", "postgresql://")) as conn:
            row = conn.execute("SHOW server_version").fetchone()
            pg_version = row[0] if row else None
            sync = conn.execute("SHOW synchronous_commit").fetchone()
            fsync = conn.execute("SHOW fsync").fetchone()
    commit = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    dirty = subprocess.run(
        ["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=no"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    dbos_version = _peer_version(DBOS_PYTHON, "dbos")
    langgraph_version = _peer_version(LANGGRAPH_PYTHON, "langgraph")
    from importlib.metadata import version

    return {
        "nproc": os.cpu_count(),
        "cpu": cpu,
        "memory_gib": round(mem_kib / 2**20, 1),
        "kernel": platform.release(),
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "sqlalchemy": version("sqlalchemy"),
        "psycopg": version("psycopg"),
        "postgresql": pg_version,
        "postgresql_synchronous_commit": sync[0] if pg_version and sync else None,
        "postgresql_fsync": fsync[0] if pg_version and fsync else None,
        "dbos": dbos_version,
        "langgraph": langgraph_version,
        "commit": commit + ("+dirty" if dirty else ""),
        "load_average_at_start": os.getloadavg(),
    }


def _peer_version(python: Path, package: str) -> str | None:
    """The version of ``package`` in a peer's virtualenv, None if it is not there."""
    if not python.exists():
        return None
    return (
        subprocess.run(
            [
                str(python),
                "-c",
                f"from importlib.metadata import version; print(version({package!r}))",
            ],
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip()
        or None
    )


def _fmt(value: float | None) -> str:
    if value is None:
        return "-"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:,.2f}".rstrip("0").rstrip(".") if value % 1 else f"{value:,.0f}"


def print_table(metrics: list[Metric]) -> None:
    rows = [
        (
            m.backend,
            m.name,
            f"{_fmt(m.value)} {m.unit}".strip(),
            m.target,
            {True: "yes", False: "NO", None: ""}[m.met],
            m.note,
        )
        for m in metrics
    ]
    header = ("backend", "measurement", "value", "target", "met", "note")
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header) - 1)]
    line = "  ".join(h.ljust(w) for h, w in zip(header, widths, strict=False)) + "  note"
    print(line)
    print("-" * min(len(line) + 40, 160))
    for row in rows:
        cells = "  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=False))
        print(f"{cells}  {row[-1]}")


async def run_one(name: str, backend: str, quick: bool) -> tuple[Outcome, float]:
    start = time.perf_counter()
    try:
        async with asyncio.timeout(TIMEOUTS.get(name, BENCH_TIMEOUT)):
            outcome = await BENCHES[name](backend, quick)
    except Exception as exc:
        traceback.print_exc()
        outcome = Outcome(details={"error": f"{type(exc).__name__}: {exc}"})
        outcome.add(
            bench=name,
            backend=backend,
            name=name,
            value=None,
            unit="",
            met=False,
            note=f"FAILED: {type(exc).__name__}: {exc}"[:300],
        )
    return outcome, time.perf_counter() - start


async def main_async(args: argparse.Namespace) -> int:
    quiet_logs()
    selected = [n for n in ORDER if n in args.only] if args.only else list(ORDER)
    backends = list(BACKENDS) if args.backend == "both" else [args.backend]
    skipped: dict[str, str] = {}
    if "postgres" in backends:
        problem = postgres_problem()
        if problem is not None:
            skipped["postgres"] = problem
            backends.remove("postgres")
            print(f"PostgreSQL not reachable at {PG_URL}: {problem}; skipping it", file=sys.stderr)
    info = machine()
    print(
        f"machine: {info['nproc']} CPUs ({info['cpu']}), {info['memory_gib']} GiB, "
        f"Python {info['python']}, SQLite {info['sqlite']}, PostgreSQL {info['postgresql']}, "
        f"DBOS {info['dbos']}, LangGraph {info['langgraph']}; commit {info['commit']}",
        flush=True,
    )
    started = time.perf_counter()
    metrics: list[Metric] = []
    report: dict[str, Any] = {}
    for name in selected:
        for backend in backends:
            if name in ("dbos", "langgraph") and backend != "sqlite":
                continue  # the peers run on their own SQLite databases
            print(f"[{time.perf_counter() - started:6.1f}s] {name} on {backend}...", flush=True)
            outcome, seconds = await run_one(name, backend, args.quick)
            metrics += outcome.metrics
            report.setdefault(name, {})[backend] = outcome.details | {
                "bench_seconds": round(seconds, 1)
            }
            for m in outcome.metrics:
                print(f"    {m.name}: {_fmt(m.value)} {m.unit}  {m.note}", flush=True)
    total = time.perf_counter() - started
    print()
    print_table(metrics)
    print(f"\ntotal {total:.0f} s")
    RESULTS.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    path = RESULTS / f"bench-{stamp}{'-quick' if args.quick else ''}.json"
    payload = {
        "started_at": stamp,
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "quick": args.quick,
        "backends": backends,
        "skipped_backends": skipped,
        "machine": info,
        "total_seconds": round(total, 1),
        "load_average_at_end": os.getloadavg(),
        "metrics": [asdict(m) for m in metrics],
        "details": report,
    }
    path.write_text(json.dumps(payload, indent=2, default=str) + "\n")
    print(f"wrote {path.relative_to(REPO)}")
    failed = [m for m in metrics if m.note.startswith("FAILED")]
    return 1 if failed else 0


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Steward benchmarks (see docs/benchmarks.md).")
    parser.add_argument(
        "--only",
        type=lambda text: [part.strip() for part in text.split(",") if part.strip()],
        action="extend",
        default=[],
        metavar="NAME[,NAME]",
        help=f"run only these benchmarks ({', '.join(ORDER)}); repeatable",
    )
    parser.add_argument("--quick", action="store_true", help="smaller sizes, for a quick look")
    parser.add_argument("--backend", choices=["both", *BACKENDS], default="both")
    args = parser.parse_args(argv)
    unknown = [n for n in args.only if n not in ORDER]
    if unknown:
        parser.error(f"unknown benchmark(s) {', '.join(unknown)}; choose from {', '.join(ORDER)}")
    return args


def main(argv: list[str] | None = None) -> int:
    return asyncio.run(main_async(parse_args(argv)))


if __name__ == "__main__":
    sys.exit(main())
