"""A server from before IDLE and MOVE: archiving copies, then deletes and expunges the
original; the watch sleeps on the clock between polls instead of idling."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path

from steward.connectors.mail.connector import CONNECTOR
from steward.harness.tools import ToolContext
from support.mailbox import Mailbox
from support.mailserver import message
from support.startup import scaled


async def test_archive_without_move(basic_mailbox: Mailbox, tmp_path: Path) -> None:
    box = basic_mailbox
    await box.connect()
    await box.receive(message(sender="news@shop.test", to=box.address, subject="Deals"))
    await box.receive(message(sender="dana@example.test", to=box.address, subject="Hi"))
    tools = {t.name: t for t in CONNECTOR.tools(box.env)}
    ctx = ToolContext(
        person_id=box.person_id,
        task_id="t",
        goal_id=None,
        idempotency_key=None,
        workspace=tmp_path,
        now=box.clock.now(),
    )
    search, archive = tools["mail_search"], tools["mail_archive"]
    [deals] = (await search.invoke(search.validate({"sender": "news@"}), ctx))["messages"]
    await archive.invoke(archive.validate({"messages": [deals["message"]]}), ctx)
    assert [b"Subject: Hi" in raw for _, raw in await box.folder("INBOX")] == [True]
    assert [b"Subject: Deals" in raw for _, raw in await box.folder("Archive")] == [True]


async def test_without_idle_the_watch_sleeps_on_the_clock(basic_mailbox: Mailbox) -> None:
    box = basic_mailbox
    con = await box.connect()
    [watch] = CONNECTOR.sources(box.env)
    await watch.poll(con, None)
    waiting = asyncio.create_task(watch.wait(con, 60))
    await box.receive(message(sender="dana@example.test", to=box.address, subject="Now"))
    await asyncio.sleep(1.5)  # longer than a server with IDLE takes to say so (0.5 s)
    assert not waiting.done()  # no IDLE: mail does not end the wait
    box.clock.advance(timedelta(seconds=60))
    await asyncio.wait_for(waiting, scaled(10))
