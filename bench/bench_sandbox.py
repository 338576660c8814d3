"""The workspace shell's latency: ``.venv/bin/python bench/bench_sandbox.py``.

Each figure is one call of the ``workspace_shell`` tool as the harness makes it (arguments
validated, the person's workspace made private, bubblewrap started with its namespaces and
mounts, ``prlimit`` setting the limits, the command run, its output read, the process group
killed; as root, a ``pids`` control group made and removed) until the tool returns:

- **true**: the cost of the sandbox itself;
- **python**: a small Python script in the workspace (reads a CSV of 1,000 rows, sums a column),
  the usual kind of command an agent runs.

Over ``--runs`` calls each, after ``--warmup`` calls not counted; wall clock.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(Path(__file__).resolve().parent)]

from bench_support import percentile  # noqa: E402
from steward.environment import sandbox  # noqa: E402
from steward.environment.sandbox import Sandbox  # noqa: E402
from steward.environment.tools import workspace_tools  # noqa: E402
from steward.harness.tools import Tool, ToolContext  # noqa: E402

SCRIPT = """import csv
with open("prices.csv") as f:
    print(sum(float(row["price"]) for row in csv.DictReader(f)))
"""


async def timed(shell: Tool, ctx: ToolContext, command: str, runs: int, warmup: int) -> list[float]:
    args = shell.validate({"command": command})
    took: list[float] = []
    for n in range(warmup + runs):
        began = time.perf_counter()
        result = await shell.invoke(args, ctx)
        if n >= warmup:
            took.append(time.perf_counter() - began)
        assert result["exit_status"] == 0, result
    return took


async def main(args: argparse.Namespace) -> None:
    if not sandbox.available():
        sys.exit(f"{sandbox.BWRAP} is missing: install Debian's bubblewrap")
    [shell] = [t for t in workspace_tools(Sandbox()) if t.name == "workspace_shell"]
    with tempfile.TemporaryDirectory() as tmp:
        workspace = Path(tmp) / "workspace" / "per_bench"
        workspace.mkdir(parents=True, mode=0o700)
        rows = "".join(f"item {n},{n % 97}.5\n" for n in range(1000))
        (workspace / "prices.csv").write_text("name,price\n" + rows)
        (workspace / "sum.py").write_text(SCRIPT)
        ctx = ToolContext(
            person_id="per_bench",
            task_id="tsk_bench",
            goal_id=None,
            idempotency_key=None,
            workspace=workspace,
            now=datetime.now(UTC),
        )
        who = "root (pids control group)" if os.geteuid() == 0 else "an ordinary user"
        print(f"workspace_shell as {who}, n={args.runs} each after {args.warmup} warm-up calls:")
        for name, command in (("true", "true"), ("python", "python3 sum.py")):
            took = await timed(shell, ctx, command, args.runs, args.warmup)
            print(
                f"  {name:7s} p50 {percentile(took, 50) * 1000:.1f} ms, "
                f"p99 {percentile(took, 99) * 1000:.1f} ms, max {max(took) * 1000:.1f} ms"
            )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=10)
    asyncio.run(main(parser.parse_args()))
