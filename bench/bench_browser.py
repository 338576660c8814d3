"""The person's browser: ``.venv/bin/python bench/bench_browser.py``.

Against a small page served on 127.0.0.1 (uvicorn in a thread), through
``steward.environment.browser.session`` exactly as the agent's tools use it:

- **cold start**: an activation entered, the session opened (Chromium launched on the person's
  persistent profile, the route installed), the page opened and its first view (aria snapshot)
  returned; then the activation left (Chromium closed). ``--starts`` times.
- **actions**: on that page, ``click`` (a button that changes the page's text, no navigation),
  ``type`` (a text box) and ``view``, each returning the fresh view; ``--runs`` each after
  ``--warmup`` not counted.
- **memory**: the memory of every Chromium process of this process while a session is open:
  the sum of their RSS (shared pages counted in each process: an upper bound) and of their PSS
  (shared pages divided among the processes sharing them: what the browser really adds), and
  how many processes are left once the activation is over.

Wall clock throughout.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import psutil
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.routing import Route

sys.path[:0] = [str(Path(__file__).resolve().parent)]

from bench_support import percentile  # noqa: E402
from steward.domain.clock import Clock  # noqa: E402
from steward.environment.browser.profile import Profiles  # noqa: E402
from steward.environment.browser.session import BrowserHost, PageView, Rules  # noqa: E402
from steward.harness.workspace import Workspace  # noqa: E402
from steward.testing.model_server import serve_in_thread  # noqa: E402

CHROMIUM = Path("/usr/bin/chromium")
PAGE = """<!doctype html><title>Kettles</title><h1>Kettles</h1>
<p id=count>0 in the cart</p>
<button onclick="n = (window.n || 0) + 1; count.textContent = n + ' in the cart'">Add</button>
<label>Note <input name=note></label>
""" + "".join(
    f"<article><h2>Kettle {n}</h2><p>Stainless, 1.7 l, {20 + n}.90</p></article>" for n in range(40)
)


def app() -> Starlette:
    async def page(_: Request) -> HTMLResponse:
        return HTMLResponse(PAGE)

    return Starlette(routes=[Route("/", page)])


def ref(view: PageView, pattern: str) -> str:
    for line in view.snapshot.splitlines():
        if re.search(pattern, line):
            found = re.search(r"\[ref=(e\d+)\]", line)
            if found:
                return found.group(1)
    raise SystemExit(f"nothing like {pattern!r} on the page")


def chromium_processes() -> list[psutil.Process]:
    return [
        p
        for p in psutil.Process().children(recursive=True)
        if "chrom" in p.name().lower() and p.status() != psutil.STATUS_ZOMBIE
    ]


def line(name: str, took: list[float]) -> str:
    return (
        f"  {name:11s} p50 {percentile(took, 50) * 1000:7.1f} ms, "
        f"p99 {percentile(took, 99) * 1000:7.1f} ms, max {max(took) * 1000:7.1f} ms"
    )


async def timed(action: Callable[[], Awaitable[object]], runs: int, warmup: int) -> list[float]:
    took: list[float] = []
    for n in range(warmup + runs):
        began = time.perf_counter()
        await action()
        if n >= warmup:
            took.append(time.perf_counter() - began)
    return took


async def main(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as tmp, serve_in_thread(app()) as url:
        host = BrowserHost(
            Profiles(Path(tmp) / "browser"), Workspace(Path(tmp) / "workspace"), clock=Clock()
        )
        rules = Rules(hosts=frozenset({"127.0.0.1"}))
        starts: list[float] = []
        for n in range(args.starts):
            began = time.perf_counter()
            async with host.activation("per_bench", f"tsk_{n}"):
                session = await host.session("per_bench", f"tsk_{n}", rules)
                await session.open(url + "/")
                starts.append(time.perf_counter() - began)
        print(f"browser, {args.starts} cold starts; actions n={args.runs} after {args.warmup}:")
        print(line("cold start", starts))

        async with host.activation("per_bench", "tsk_actions"):
            session = await host.session("per_bench", "tsk_actions", rules)
            view = await session.open(url + "/")
            add, note = ref(view, r'button "Add"'), ref(view, r'textbox "Note"')
            print(line("click", await timed(lambda: session.click(add), args.runs, args.warmup)))
            print(
                line(
                    "type",
                    await timed(lambda: session.type(note, "two, boxed"), args.runs, args.warmup),
                )
            )
            print(line("view", await timed(session.view, args.runs, args.warmup)))
            print(line("screenshot", await timed(session.screenshot, args.runs // 5, 2)))
            processes = chromium_processes()
            memory = [p.memory_full_info() for p in processes]
            rss = sum(m.rss for m in memory) / 2**20
            pss = sum(m.pss for m in memory) / 2**20
            print(
                f"  memory      {len(processes)} Chromium processes, RSS sum {rss:.0f} MiB, "
                f"PSS sum {pss:.0f} MiB (snapshot {len(view.snapshot)} characters)"
            )
        await asyncio.sleep(1.0)
        print(f"  after       {len(chromium_processes())} Chromium processes")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--starts", type=int, default=10)
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--warmup", type=int, default=5)
    if not CHROMIUM.exists():
        sys.exit(f"{CHROMIUM} is missing: install Debian's chromium")
    asyncio.run(main(parser.parse_args()))
