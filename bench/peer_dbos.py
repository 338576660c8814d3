"""Peer benchmark: DBOS durable workflows of no-op steps on a SQLite system database.

Measures how many checkpointed steps per second DBOS Transact (the ``dbos`` PyPI package,
3.x) sustains when running W workflows of N ``@DBOS.step()`` no-op steps each (every step
returns its index, so each step costs one durable checkpoint of a tiny result). The figure
is meant to sit next to Steward's own checkpointed steps/s in the same benchmark run.

Only workflow execution is timed: DBOS construction, ``DBOS.launch()`` (which creates and
migrates the system database) and ``DBOS.destroy()`` are excluded.

Modes:
  * sequential (default, ``--concurrency 1``): each workflow is called directly and runs to
    completion in the calling thread before the next one starts;
  * ``--concurrency C`` (C > 1): workflows are started in waves of up to C with
    ``DBOS.start_workflow`` (each runs on DBOS's executor thread pool) and every wave is
    awaited with ``handle.get_result()`` before the next wave starts.

This module is not imported by the project. ``dbos`` is deliberately not a project
dependency; run it with a separate virtualenv, e.g.::

    python3 -m venv /tmp/dbos-venv && /tmp/dbos-venv/bin/pip install dbos
    /tmp/dbos-venv/bin/python bench/peer_dbos.py --workflows 20 --steps 100 --db /tmp/d.sqlite

Output: exactly one JSON line on stdout (``--json-only``, the default behaviour);
diagnostics and DBOS's own logs (its console handler writes to stderr) go to stderr.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from importlib.metadata import version
from pathlib import Path
from typing import Any

from dbos import DBOS, DBOSConfig, WorkflowHandle

APP_NAME = "steward-peer-dbos"
SQLITE_SIDECARS = ("", "-journal", "-wal", "-shm")


def _log(message: str) -> None:
    print(f"[peer_dbos] {message}", file=sys.stderr, flush=True)


def _fresh_db(path: Path) -> None:
    """Delete the SQLite file and any journal/WAL sidecars so every run starts empty."""
    for suffix in SQLITE_SIDECARS:
        candidate = Path(f"{path}{suffix}")
        if candidate.exists():
            candidate.unlink()


@DBOS.step()
def noop_step(index: int) -> int:
    return index


@DBOS.workflow()
def noop_workflow(steps: int) -> int:
    total = 0
    for i in range(steps):
        total += noop_step(i)
    return total


def _expected_total(steps: int) -> int:
    return steps * (steps - 1) // 2


def _run_sequential(workflows: int, steps: int) -> None:
    expected = _expected_total(steps)
    for _ in range(workflows):
        result = noop_workflow(steps)
        if result != expected:
            raise RuntimeError(f"workflow returned {result}, expected {expected}")


def _run_concurrent(workflows: int, steps: int, concurrency: int) -> None:
    expected = _expected_total(steps)
    remaining = workflows
    while remaining > 0:
        wave = min(concurrency, remaining)
        handles: list[WorkflowHandle[int]] = [
            DBOS.start_workflow(noop_workflow, steps) for _ in range(wave)
        ]
        for handle in handles:
            result = handle.get_result()
            if result != expected:
                raise RuntimeError(
                    f"workflow {handle.get_workflow_id()} returned {result}, expected {expected}"
                )
        remaining -= wave


def run(workflows: int, steps: int, concurrency: int, db: Path, log_level: str) -> dict[str, Any]:
    _fresh_db(db)
    config: DBOSConfig = {
        "name": APP_NAME,
        "system_database_url": f"sqlite:///{db.resolve()}",
        "log_level": log_level,
    }
    DBOS(config=config)
    try:
        DBOS.launch()
        _log(f"launched dbos on {db}; running {workflows}x{steps} (concurrency {concurrency})")
        start = time.perf_counter()
        if concurrency <= 1:
            _run_sequential(workflows, steps)
        else:
            _run_concurrent(workflows, steps, concurrency)
        seconds = time.perf_counter() - start
    finally:
        DBOS.destroy(destroy_registry=False)
    total_steps = workflows * steps
    return {
        "system": "dbos",
        "version": version("dbos"),
        "workflows": workflows,
        "steps_per_workflow": steps,
        "concurrency": max(concurrency, 1),
        "seconds": round(seconds, 6),
        "steps_per_second": round(total_steps / seconds, 2) if seconds > 0 else None,
    }


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text}")
    return value


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--workflows", type=_positive_int, default=20, help="W workflows")
    parser.add_argument("--steps", type=_positive_int, default=100, help="N steps per workflow")
    parser.add_argument(
        "--concurrency",
        type=_positive_int,
        default=1,
        help="start up to C workflows at once with DBOS.start_workflow (default 1: sequential)",
    )
    parser.add_argument(
        "--db",
        type=Path,
        default=Path("/tmp/steward-peer-dbos.sqlite"),
        help="SQLite system database file (deleted first if it exists)",
    )
    parser.add_argument(
        "--json-only",
        action="store_true",
        default=True,
        help="print only the JSON result line on stdout (the default; diagnostics to stderr)",
    )
    parser.add_argument(
        "--log-level",
        default="WARNING",
        help="DBOS log level (DBOS logs to stderr; default WARNING hides launch/shutdown INFO)",
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = _parse_args(argv)
    # Keep stdout for the single JSON line: anything else that writes there goes to stderr.
    real_stdout = sys.stdout
    sys.stdout = sys.stderr
    try:
        result = run(args.workflows, args.steps, args.concurrency, args.db, args.log_level)
    finally:
        sys.stdout = real_stdout
    real_stdout.write(json.dumps(result) + "\n")
    real_stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
