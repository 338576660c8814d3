"""``steward up`` watches a connected mailbox: each new message is one ``mail.received`` event
and starts the matching trigger's task once — across a kill -9 of the process and a restart,
with mail arriving while it is down (nothing missed, nothing repeated, nothing old reported)."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from steward.connectors.mail.received import RECEIVED
from steward.domain import TaskSpec, TriggerKind
from steward.domain.clock import SimulatedClock
from steward.sentinel.vault import KEY_ENV, Vault, VaultKeys, generate_key
from steward.store import Store
from support.mailbox import Mailbox, mailbox_of
from support.mailserver import MailServer, message
from support.processes import log_tails, spawn, start_deadline, stop_all, until

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("startup")]


async def test_each_message_is_one_event_and_one_task_across_a_kill_and_a_restart(
    mail_server: MailServer, store: Store, clock: SimulatedClock, db_url: str, tmp_path: Path
) -> None:
    key = generate_key()  # the process opens the password with the same vault key
    box: Mailbox = await mailbox_of(
        mail_server,
        store,
        clock,
        tmp_path / "workspace",
        vault=Vault(VaultKeys(keys=(key,), source="test")),
    )
    con = await box.connect(name="Mail")
    # new mail from the shop starts a task; the rest is only an event
    await box.svc.add_trigger(
        person_id=box.person_id,
        kind=TriggerKind.EVENT,
        spec=RECEIVED,
        match={"from": {"endswith": "@shop.test"}},
        task=TaskSpec(kind="noop"),
    )
    await box.receive(message(sender="old@shop.test", to=box.address, subject="Before"))

    def arrive(n: int, sender: str) -> list[str]:
        ids = [f"<{sender.split('@')[0]}-{n}-{i}@test>" for i in range(3)]
        for ident in ids:
            raw = message(sender=sender, to=box.address, subject=f"No {n}", message_id=ident)
            mail_server.deliver(box.user, raw)
        return ids

    logs = tmp_path / "logs"
    logs.mkdir()
    env = {
        "STEWARD_DATA_DIR": str(tmp_path / "data"),
        KEY_ENV: key,
        "STEWARD_WATCH_INTERVAL_SECONDS": "1",
    }
    procs: dict[str, subprocess.Popen[bytes]] = {}

    def start() -> None:
        procs["up"] = spawn("up", db_url, logs / "up.log", "--no-http", env=env)

    async def received() -> list[str]:
        found = await store.schedule.list_events(person_id=box.person_id)
        return [e.dedupe_key for e in found if e.type == RECEIVED]

    def seen(ids: list[str]) -> Callable[[], Awaitable[bool]]:
        async def check() -> bool:
            keys = await received()
            return all(any(ident.strip("<>") in k for k in keys) for ident in ids)

        return check

    try:
        start()

        async def took_stock() -> bool:
            state = await store.watches.get(con.id, RECEIVED)
            return state is not None and state.cursor is not None

        await until(took_stock, "the first poll of the inbox", procs, logs, start_deadline())
        first = arrive(1, "news@shop.test") + arrive(1, "dana@example.test")
        await until(seen(first), "the first mail to be seen", procs, logs, start_deadline())

        # more mail, and the process dies at once, perhaps in the middle of reporting it
        second = arrive(2, "news@shop.test")
        os.kill(procs["up"].pid, signal.SIGKILL)
        procs["up"].wait()
        third = arrive(3, "news@shop.test") + arrive(3, "dana@example.test")  # while down
        start()
        everything = first + second + third
        # the killed process's lease on the watch runs out first (about a minute)
        await until(seen(everything), "all mail to be seen", procs, logs, start_deadline(90))

        async def tasks_started() -> bool:
            return len(await store.tasks.list_tasks(person_id=box.person_id, kind="noop")) >= 9

        await until(tasks_started, "the shop's mail to start tasks", procs, logs, start_deadline())
    finally:
        stop_all(procs)

    keys = await received()
    assert len(keys) == len(set(keys)) == len(everything), log_tails(logs)
    # each is one of these (nothing from before the connection was first polled)
    assert all(any(i.strip("<>") in k for i in everything) for k in keys)
    assert len(await store.tasks.list_tasks(person_id=box.person_id, kind="noop")) == 9
