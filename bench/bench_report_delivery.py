"""Report → delivery: from the moment a report is stored until a channel's local endpoint has
it, on each channel, through the whole path ``steward up`` runs:
``.venv/bin/python bench/bench_report_delivery.py [--backend sqlite|postgres]``.

The person's channel is added through the facade (its secret sealed in a real vault); the
report is stored as the ``report`` tool stores it (fenced under its task's lease, placed by its
goal's policy, its deliveries planned in the same transaction); the dispatcher is the one
``steward up`` builds (:func:`steward.app.notify_dispatcher`, with the facade's senders),
running in this process; the endpoints are the test suite's, on 127.0.0.1
(``tests/support/notifyservers.py``, ``tests/support/pushservice.py``):

- **Apprise → JSON webhook**, **Apprise → ntfy**: until the HTTP receiver has the request;
- **Apprise → SMTP**: until aiosmtpd has accepted the message;
- **Web Push**: until the local push service has verified the VAPID signature and decrypted
  the payload.

Two ways the dispatcher learns of a report:

- **woken**: the report is stored through the dispatcher's own store, as the agent's reports,
  approvals and questions are under ``steward up`` (one process): the commit that plans its
  deliveries wakes the dispatcher (:meth:`steward.store.Store.on_deliveries_planned`);
- **polled**: the report is stored through a second store on the same database, as another
  process would store it: nothing wakes the dispatcher, which looks again when its sleep ends
  (at most ``refresh_seconds``, 60 s). Measured on the JSON webhook only (``--polled``
  reports, each after a random pause), since the wait does not depend on the channel.

Reports one at a time (``--reports`` per channel); p50/p99/max in milliseconds, wall clock.
The e-mail channel (approval mail through SMTP into Dovecot) and its reply are measured by
``bench/bench_mailchannel.py``; Matrix is not measured here.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO / "tests"), str(Path(__file__).resolve().parent)]

from bench_support import fresh_database, percentile, postgres_problem, quiet_logs  # noqa: E402
from steward.app import notify_dispatcher  # noqa: E402
from steward.config import Settings  # noqa: E402
from steward.connectors.notify import PRIVATE_PUSH_ENV  # noqa: E402
from steward.connectors.notify.dispatch import Dispatcher  # noqa: E402
from steward.domain import TaskSpec  # noqa: E402
from steward.domain.clock import Clock  # noqa: E402
from steward.domain.report import Report, report_id  # noqa: E402
from steward.service import Service  # noqa: E402
from steward.store import Fence, Store  # noqa: E402
from support.notifyservers import mail_sink, receiving  # noqa: E402
from support.pushservice import push_service  # noqa: E402

TIMEOUT_S = 120.0
"""Longest wait for one report to arrive (the dispatcher's refresh is 60 s)."""


@dataclass(kw_only=True)
class Person:
    """The person the reports are for, with the task that reports."""

    service: Service
    """The facade (owner), with a vault in a temporary data directory."""
    store: Store
    """Its store (the dispatcher's)."""
    elsewhere: Store
    """A second store on the same database: another process's."""
    person_id: str
    """Whom the reports are for."""
    goal_id: str
    """The goal they are about (policy ``actionable``)."""
    task_id: str
    """The task that reports (claimed: its lease fences each report)."""
    fence: Fence
    """The task's lease."""
    clock: Clock
    """Wall clock."""


async def report(person: Person, n: int, *, through: Store) -> None:
    """Store report ``n`` as the ``report`` tool does: fenced, placed by the goal's policy."""
    await through.reports.add(
        Report(
            id=report_id(f"bench:{person.task_id}:{n}:{time.monotonic_ns()}"),
            person_id=person.person_id,
            goal_id=person.goal_id,
            task_id=person.task_id,
            origin="agent",
            what=f"The invoice from Acme is due Friday ({n})",
            why="€1,200 to Acme Ltd.",
            todo="Pay it before Friday noon.",
            importance="actionable",
            created_at=person.clock.now(),
        ),
        fence=person.fence,
        lease_now=person.clock.lease_now(),
    )


async def until_arrived(arrivals: Callable[[], list[float]], count: int) -> float:
    """When the ``count``-th message arrived (``time.monotonic``), waiting for it."""
    deadline = time.monotonic() + TIMEOUT_S
    while len(arrivals()) < count:
        if time.monotonic() > deadline:
            raise TimeoutError(f"message {count} did not arrive in {TIMEOUT_S:.0f} s")
        await asyncio.sleep(0.0005)
    return arrivals()[count - 1]


async def measure(
    person: Person,
    dispatcher: Dispatcher,
    arrivals: Callable[[], list[float]],
    n: int,
    *,
    woken: bool,
    pause: Callable[[], float] = lambda: 0.0,
) -> list[float]:
    """Milliseconds from storing each of ``n`` reports to its arrival, one at a time, after
    one not counted (the first loads Apprise's plugin and opens the first connection)."""
    took: list[float] = []
    for i in range(n + 1):
        await asyncio.sleep(pause() if i else 0.0)
        began = time.monotonic()
        await report(person, i, through=person.store if woken else person.elsewhere)
        took_ms = (await until_arrived(arrivals, i + 1) - began) * 1000
        if i:
            took.append(took_ms)
    return took


@contextlib.asynccontextmanager
async def person_with_dispatcher(url: str) -> AsyncIterator[tuple[Person, Dispatcher]]:
    """A person with a goal and a reporting task, and the dispatcher ``steward up`` builds,
    running until the block ends."""
    store = await Store.open(url)
    elsewhere = await Store.open(url)
    clock = Clock()
    try:
        with tempfile.TemporaryDirectory(prefix="steward-bench-") as data:
            svc = Service(store, clock, data_dir=Path(data))
            who = await svc.ensure_person()
            goal = await svc.create_goal(
                person_id=who.id, title="Pay the bills", report_policy="actionable"
            )
            task = await svc.create_task(
                person_id=who.id, spec=TaskSpec(kind="noop", title="bills"), goal_id=goal.id
            )
            [claim] = await store.tasks.claim_tasks(
                worker="bench", limit=1, lease_seconds=86_400, now=clock.now()
            )
            person = Person(
                service=svc,
                store=store,
                elsewhere=elsewhere,
                person_id=who.id,
                goal_id=goal.id,
                task_id=task.id,
                fence=Fence.of(claim),
                clock=clock,
            )
            dispatcher = notify_dispatcher(
                Settings(), store, clock, also=list(svc.channel_senders().values())
            )
            stop = asyncio.Event()
            running = asyncio.create_task(dispatcher.run(stop))
            try:
                yield person, dispatcher
            finally:
                stop.set()
                await running
    finally:
        await elsewhere.close()
        await store.close()


async def bench(url: str, n: int, polled: int) -> dict[str, list[float]]:
    """Each channel in turn: added through the facade, ``n`` reports woken (and, on the JSON
    webhook, ``polled`` not), removed."""
    results: dict[str, list[float]] = {}
    async with person_with_dispatcher(url) as (person, dispatcher):
        svc, who = person.service, person.person_id

        async def on(name: str, channel: str, arrivals: Callable[[], list[float]]) -> None:
            results[name] = await measure(person, dispatcher, arrivals, n, woken=True)
            await svc.remove_channel(channel, person_id=who)

        with receiving() as rx:
            hook = f"json://127.0.0.1:{rx.port}/hook"
            await svc.add_apprise_channel("hook", hook, private_network=True, person_id=who)
            if polled:
                rng = random.Random(7)
                results["Apprise → JSON webhook, polled"] = await measure(
                    person,
                    dispatcher,
                    lambda: [h.at for h in rx.hits],
                    polled,
                    woken=False,
                    pause=lambda: rng.uniform(0, dispatcher.refresh_seconds),
                )
            hits = len(rx.hits)
            await on("Apprise → JSON webhook", "hook", lambda: [h.at for h in rx.hits[hits:]])
        with receiving() as rx:
            ntfy = f"ntfy://127.0.0.1:{rx.port}/bench"
            await svc.add_apprise_channel("ntfy", ntfy, private_network=True, person_id=who)
            await on("Apprise → ntfy", "ntfy", lambda: [h.at for h in rx.hits])
        with mail_sink() as sink:
            mailto = f"mailto://127.0.0.1:{sink.port}?to=me@example.test&from=steward@example.test"
            await svc.add_apprise_channel("mail", mailto, private_network=True, person_id=who)
            await on("Apprise → SMTP (aiosmtpd)", "mail", lambda: sink.arrived)
        key = await svc.push_public_key()
        with push_service(expected_key=key, now=person.clock.now) as push:
            await svc.subscribe_push("phone", push.subscribe(), person_id=who)
            pushed = push.receiver.hits
            await on("Web Push (VAPID + aes128gcm)", "phone", lambda: [h.at for h in pushed])
            if push.rejected:
                raise RuntimeError(f"the push service refused: {push.rejected}")
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", choices=("sqlite", "postgres", "both"), default="both")
    parser.add_argument("--reports", type=int, default=100, help="per channel, woken (100)")
    parser.add_argument(
        "--polled", type=int, default=3, help="reports to the JSON webhook, not woken (3)"
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    quiet_logs()
    os.environ[PRIVATE_PUSH_ENV] = "1"  # the local push service is on 127.0.0.1
    backends = ("sqlite", "postgres") if args.backend == "both" else (args.backend,)
    everything: dict[str, dict[str, list[float]]] = {}
    for backend in backends:
        if backend == "postgres" and (problem := postgres_problem()):
            print(f"postgres skipped: {problem}")
            continue
        with fresh_database(backend) as url:
            everything[backend] = asyncio.run(bench(url, args.reports, args.polled))
    if args.json:
        print(json.dumps(everything, indent=2))
        return 0
    print(f"report stored → arrived at the local endpoint, one at a time (ms); load average "
          f"{os.getloadavg()[0]:.2f}")  # fmt: skip
    print(f"{'backend':9} {'channel':40} {'n':>4} {'p50':>8} {'p99':>8} {'max':>8}")
    for backend, results in everything.items():
        for name, took in results.items():
            p50, p99 = percentile(took, 50), percentile(took, 99)
            print(f"{backend:9} {name:40} {len(took):4} {p50:8.1f} {p99:8.1f} {max(took):8.1f}")
    print("not measured here: the e-mail channel through the dispatcher (its sender and Dovecot:")
    print("bench/bench_mailchannel.py) and Matrix (a Synapse would have to be started)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
