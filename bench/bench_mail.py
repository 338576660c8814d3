"""The mail connector's figures, against a real Dovecot and SMTP server started here (the test
suite's ``tests/support/mailserver.py``): ``.venv/bin/python bench/bench_mail.py``.

- **delivery → event** and **delivery → first step**: a message handed to the SMTP server
  (which delivers it into Dovecot) until the running watcher has stored its ``mail.received``
  event, with IMAP IDLE; and until the task an event trigger started for it runs its first
  step. The real runtime (scheduler + one worker, the builtin step harness) runs in the same
  process, woken by the watcher as ``steward up`` wires it; "first step" is the moment the
  worker, having claimed the task, enters its step function (the ``noop`` kind, wrapped here
  to note the time) -- the earliest point at which the task is running. p50/p99/max over
  ``--messages`` messages sent one at a time.
- **headers indexed per second**: a mailbox of ``--mailbox`` messages is connected; the time to
  take stock of it (the watch's first poll), to list every message's headers (headers only,
  no bodies), and for one search of it as the model's ``mail_search`` does.
- **RSS of one process watching ``--watched`` mailboxes**, each with its own IDLE connection.

Stores on SQLite in a temporary directory; wall clock throughout.
"""

from __future__ import annotations

import argparse
import asyncio
import imaplib
import sys
import tempfile
import time
from pathlib import Path

import aiosmtplib
import psutil

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO / "tests"), str(Path(__file__).resolve().parent)]

from bench_support import percentile, quiet_logs  # noqa: E402
from steward.connectors.mail.access import open_mailbox  # noqa: E402
from steward.connectors.mail.connector import CONNECTOR  # noqa: E402
from steward.connectors.mail.received import RECEIVED, ReceivedSource  # noqa: E402
from steward.connectors.watch import Watcher  # noqa: E402
from steward.domain import TaskSpec, TriggerKind  # noqa: E402
from steward.domain.authority import Connection  # noqa: E402
from steward.domain.clock import Clock  # noqa: E402
from steward.domain.outcome import Outcome  # noqa: E402
from steward.harness.tools import ToolContext  # noqa: E402
from steward.runtime.builtin import builtin_harness, noop  # noqa: E402
from steward.runtime.runtime import Runtime, RuntimeConfig  # noqa: E402
from steward.runtime.stepfn import StepContext  # noqa: E402
from steward.sentinel.vault import Vault, VaultKeys, generate_key  # noqa: E402
from steward.store import Store  # noqa: E402
from support.mailbox import mailbox_of  # noqa: E402
from support.mailserver import MailServer, message, running_mail  # noqa: E402

VAULT = Vault(VaultKeys(keys=(generate_key(),), source="bench"))
"""One vault for every mailbox: one watcher process opens them all."""


async def latency(server: MailServer, store: Store, root: Path, n: int) -> dict[str, float]:
    box = await mailbox_of(server, store, Clock(), root / "ws", VAULT)  # type: ignore[arg-type]
    con = await box.connect(name="Latency")
    await box.svc.add_trigger(
        person_id=box.person_id, kind=TriggerKind.EVENT, spec=RECEIVED, task=TaskSpec(kind="noop")
    )
    stepped = asyncio.Event()
    step_at: list[float] = []

    async def first_step(ctx: StepContext) -> Outcome | None:
        step_at.append(time.perf_counter())
        stepped.set()
        return await noop(ctx)

    harness = builtin_harness()
    harness.register("noop", first_step)
    runtime = Runtime(store, harness, box.clock, RuntimeConfig(workers=1))
    stored = asyncio.Event()

    def on_events() -> None:
        stored.set()
        runtime.notify_scheduler()

    watcher = Watcher(env=box.env, holder="bench", refresh_seconds=0.2, on_events=on_events)
    stop = asyncio.Event()
    roles = [asyncio.create_task(watcher.run(stop)), asyncio.create_task(runtime.run())]
    await _until_watching(store, con)
    to_event, to_step = [], []
    async with aiosmtplib.SMTP(hostname="127.0.0.1", port=server.smtp_port) as smtp:
        await smtp.login("dana", server.passwords["dana"])
        for i in range(n):
            await asyncio.sleep(0.05)  # the watch is back in IDLE after the last poll
            stored.clear()
            stepped.clear()
            raw = message(sender="dana@example.test", to=box.address, subject=f"m{i}")
            began = time.perf_counter()
            await smtp.sendmail("dana@example.test", [box.address], raw)
            await asyncio.wait_for(stored.wait(), 30)
            to_event.append(time.perf_counter() - began)
            await asyncio.wait_for(stepped.wait(), 30)
            to_step.append(step_at[-1] - began)
    stop.set()
    runtime.stop()
    await asyncio.gather(*roles)
    events = await store.schedule.list_events(person_id=box.person_id)
    assert len([e for e in events if e.type == RECEIVED]) == n, "an event missing or repeated"
    assert len(step_at) == n, "a task missing or repeated"
    return {
        **{f"event_{k}": v for k, v in _stats(to_event).items()},
        **{f"step_{k}": v for k, v in _stats(to_step).items()},
    }


def _stats(took: list[float]) -> dict[str, float]:
    return {
        "p50_ms": percentile(took, 50) * 1000,
        "p99_ms": percentile(took, 99) * 1000,
        "max_ms": max(took) * 1000,
    }


async def _until_watching(store: Store, con: Connection) -> None:
    """Until the watch took stock (its first poll stored a cursor)."""
    while True:
        state = await store.watches.get(con.id, RECEIVED)
        if state is not None and state.failures:
            raise RuntimeError(f"the watch of {con.name} fails: {state.last_error}")
        if state is not None and state.cursor is not None:
            break
        await asyncio.sleep(0.05)
    await asyncio.sleep(0.3)  # and went on to IDLE


def _fill(server: MailServer, user: str, count: int) -> None:
    client = imaplib.IMAP4("127.0.0.1", server.imap_port)
    client.login(user, server.passwords[user])
    for i in range(count):
        raw = message(
            sender=f"sender{i % 97}@example.test",
            to=f"{user}@example.test",
            subject=f"Message {i} about topic {i % 13}",
            body=f"Body of message {i}. " * 20,
        )
        client.append("INBOX", None, None, raw)
    client.logout()


async def big_mailbox(server: MailServer, store: Store, root: Path, count: int) -> dict[str, float]:
    box = await mailbox_of(server, store, Clock(), root / "ws", VAULT)  # type: ignore[arg-type]
    began = time.perf_counter()
    await asyncio.to_thread(_fill, server, box.user, count)
    filled = time.perf_counter() - began
    con = await box.connect(name="Big")
    began = time.perf_counter()
    await ReceivedSource(box.env).poll(con, None)
    stock = time.perf_counter() - began
    async with await open_mailbox(box.env, con) as acct:
        began = time.perf_counter()
        listed, total = await acct.search("INBOX", [], limit=0)
        headers = time.perf_counter() - began
    assert total == len(listed) == count
    search = next(t for t in CONNECTOR.tools(box.env) if t.name == "mail_search")
    ctx = ToolContext(
        person_id=box.person_id,
        task_id="bench",
        goal_id=None,
        idempotency_key=None,
        workspace=root / "ws",
        now=box.clock.now(),
    )
    began = time.perf_counter()
    found = await search.invoke(
        search.validate({"subject": "topic 7", "limit": 20, "account": "Big"}), ctx
    )
    searched = time.perf_counter() - began
    assert found["messages"], "the search found nothing"
    return {
        "messages": count,
        "filled_s": filled,
        "first_poll_ms": stock * 1000,
        "all_headers_s": headers,
        "headers_per_s": count / headers,
        "search_ms": searched * 1000,
    }


async def many(server: MailServer, store: Store, root: Path, count: int) -> dict[str, float]:
    process = psutil.Process()
    boxes = [
        await mailbox_of(server, store, Clock(), root / "ws", VAULT)  # type: ignore[arg-type]
        for i in range(count)
    ]
    before = process.memory_info().rss
    connections = [await box.connect(name=f"Mail {i}") for i, box in enumerate(boxes)]
    watcher = Watcher(env=boxes[0].env, holder="bench", refresh_seconds=0.5)
    stop = asyncio.Event()
    running = asyncio.create_task(watcher.run(stop))
    for con in connections:
        await _until_watching(store, con)
    await asyncio.sleep(2)
    after = process.memory_info().rss
    stop.set()
    await running
    return {"mailboxes": count, "rss_mib": after / 2**20, "added_mib": (after - before) / 2**20}


async def main(args: argparse.Namespace) -> None:
    quiet_logs()
    with tempfile.TemporaryDirectory() as tmp, running_mail(Path(tmp) / "mail") as server:
        root = Path(tmp)
        (root / "mail").mkdir(exist_ok=True)
        store = await Store.open(f"sqlite:///{root / 'steward.db'}")
        try:
            rss = await many(server, store, root, args.watched)
            print(
                f"RSS watching {rss['mailboxes']} mailboxes (IDLE each): {rss['rss_mib']:.0f} MiB "
                f"(+{rss['added_mib']:.1f} MiB for the watches)"
            )
            lat = await latency(server, store, root, args.messages)
            for key, what in (("event", "mail.received stored"), ("step", "task's first step")):
                print(
                    f"SMTP delivery -> {what}, IDLE, n={args.messages}: "
                    f"p50 {lat[f'{key}_p50_ms']:.0f} ms, p99 {lat[f'{key}_p99_ms']:.0f} ms, "
                    f"max {lat[f'{key}_max_ms']:.0f} ms"
                )
            big = await big_mailbox(server, store, root, args.mailbox)
            print(
                f"Mailbox of {big['messages']} messages (filled in {big['filled_s']:.1f} s): "
                f"first watch poll {big['first_poll_ms']:.0f} ms; all headers in "
                f"{big['all_headers_s']:.2f} s = {big['headers_per_s']:.0f} headers/s; "
                f"mail_search (subject, newest 20) {big['search_ms']:.0f} ms"
            )
        finally:
            await store.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=50)
    parser.add_argument("--mailbox", type=int, default=10_000)
    parser.add_argument("--watched", type=int, default=20)
    asyncio.run(main(parser.parse_args()))
