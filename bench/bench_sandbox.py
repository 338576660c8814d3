"""The workspace shell's latency: ``.venv/bin/python bench/bench_sandbox.py``.

Each figure is one call of a shell tool as the app builds it (quota and provenance on) and the
harness makes it (arguments validated, the workspace measured against its quota, the person's
workspace made private, bubblewrap started with its namespaces and mounts, ``prlimit`` setting
the limits, the command run, its output read, the process group killed, the workspace measured
again and the files it wrote recorded; as root, a ``pids`` control group made and removed)
until the tool returns:

- **true**: the cost of the sandbox itself (``workspace_shell``);
- **python**: a small Python script in the workspace (reads a CSV of 1,000 rows, sums a column),
  the usual kind of command an agent runs;
- **online true**: ``workspace_shell_online`` running ``true``: the proxy's socket made, the
  forwarder (the system's Python) started inside before the command;
- **online curl**: ``curl`` fetching a 1 KB page from a local HTTP server (named by a ``web``
  connection) through the forwarder, the proxy and the broker's address check (a database
  read and an audit entry), written to a file whose origin is then recorded.

Over ``--runs`` calls each, after ``--warmup`` calls not counted; wall clock.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import http.server
import os
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(Path(__file__).resolve().parent)]

from bench_support import percentile  # noqa: E402
from steward.domain import Connection  # noqa: E402
from steward.domain.ids import new_id  # noqa: E402
from steward.environment import sandbox  # noqa: E402
from steward.environment.provenance import Provenance  # noqa: E402
from steward.environment.sandbox import Sandbox  # noqa: E402
from steward.environment.tools import workspace_tools  # noqa: E402
from steward.harness.tools import Tool, ToolContext  # noqa: E402
from steward.sentinel.egress import EgressBroker  # noqa: E402
from steward.sentinel.vault import Vault, VaultKeys, generate_key  # noqa: E402
from steward.store import Store  # noqa: E402

SCRIPT = """import csv
with open("prices.csv") as f:
    print(sum(float(row["price"]) for row in csv.DictReader(f)))
"""


async def timed(
    shell: Tool, ctx: ToolContext, args: dict[str, Any], runs: int, warmup: int
) -> list[float]:
    args = shell.validate(args)
    took: list[float] = []
    for n in range(warmup + runs):
        began = time.perf_counter()
        result = await shell.invoke(args, ctx)
        if n >= warmup:
            took.append(time.perf_counter() - began)
        assert result["exit_status"] == 0, result
    return took


@contextlib.contextmanager
def local_page() -> Iterator[str]:
    """A 1 KB page served on 127.0.0.1 (a thread); its URL."""

    class Page(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = b"x" * 1024
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Page)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/page"
    finally:
        server.shutdown()


async def main(args: argparse.Namespace) -> None:
    if not sandbox.available():
        sys.exit(f"{sandbox.BWRAP} is missing: install Debian's bubblewrap")
    with tempfile.TemporaryDirectory() as tmp, local_page() as url:
        store = await Store.open(f"sqlite:///{Path(tmp) / 'steward.db'}")
        now = datetime.now(UTC)
        person = (await store.persons.create_person(name="bench", now=now)).id
        await store.authority.add_connection(
            Connection(
                id=new_id("con"),
                person_id=person,
                kind="web",
                name="home",
                scopes=("web.read",),
                hosts=("127.0.0.1",),
                created_at=now,
            )
        )
        vault = Vault(VaultKeys(keys=(generate_key(),), source="bench"))
        broker = EgressBroker(store, vault, audit=store.audit.append_audit)
        tools = {
            t.name: t
            for t in workspace_tools(
                Sandbox(), broker=broker, provenance=Provenance(Path(tmp) / "environment")
            )
        }
        workspace = Path(tmp) / "workspace" / person
        workspace.mkdir(parents=True, mode=0o700)
        rows = "".join(f"item {n},{n % 97}.5\n" for n in range(1000))
        (workspace / "prices.csv").write_text("name,price\n" + rows)
        (workspace / "sum.py").write_text(SCRIPT)
        ctx = ToolContext(
            person_id=person,
            task_id="tsk_bench",
            goal_id=None,
            idempotency_key=None,
            workspace=workspace,
            now=now,
        )
        who = "root (pids control group)" if os.geteuid() == 0 else "an ordinary user"
        print(f"shell tools as {who}, n={args.runs} each after {args.warmup} warm-up calls:")
        online = ["127.0.0.1"]
        cases: list[tuple[str, str, dict[str, Any]]] = [
            ("true", "workspace_shell", {"command": "true"}),
            ("python", "workspace_shell", {"command": "python3 sum.py"}),
            ("online true", "workspace_shell_online", {"command": "true", "hosts": online}),
            (
                "online curl",
                "workspace_shell_online",
                {"command": f"curl -sSf --max-time 20 -o page.html {url}", "hosts": online},
            ),
        ]
        try:
            for name, tool_name, call in cases:
                took = await timed(tools[tool_name], ctx, call, args.runs, args.warmup)
                print(
                    f"  {name:12s} p50 {percentile(took, 50) * 1000:.1f} ms, "
                    f"p99 {percentile(took, 99) * 1000:.1f} ms, max {max(took) * 1000:.1f} ms"
                )
        finally:
            await store.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=10)
    asyncio.run(main(parser.parse_args()))
