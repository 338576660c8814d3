"""The e-mail channel's figures, against a real Dovecot and SMTP server started here (the test
suite's ``tests/support/mailserver.py``): ``.venv/bin/python bench/bench_mailchannel.py``.

- **approval → in the person's inbox**: an approval mail (its reply token issued and signed,
  the mail handed to the SMTP server, which delivers it into Dovecot) until the person's INBOX
  holds it, read over IMAP every 5 ms.
- **reply → decided**: the person's "approve" reply (DKIM-signed by their provider, a
  2048-bit RSA key whose DNS record the watch's lookup is served) handed to the SMTP server
  until the approval is approved, with the real watcher holding the agent's mailbox in IMAP
  IDLE (as ``steward up`` runs it): the signature verified, the token checked and spent with
  the decision, the confirmation mailed.
- **DKIM check**: :func:`~steward.connectors.mail.authenticity.verdict` on one signed message,
  ``--checks`` times in a row (off the event loop, as the watch runs it).

Each over ``--approvals`` approvals made one at a time by a scripted agent asking to send mail.
SQLite store in a temporary directory; wall clock throughout.
"""

from __future__ import annotations

import argparse
import asyncio
import email
import imaplib
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import aiosmtplib

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO / "tests"), str(Path(__file__).resolve().parent)]

from bench_support import percentile, quiet_logs  # noqa: E402
from steward.connectors.mail.authenticity import DKIM, verdict  # noqa: E402
from steward.connectors.mail.channel import EmailSender  # noqa: E402
from steward.connectors.mail.connector import CONNECTOR  # noqa: E402
from steward.connectors.mail.received import RECEIVED  # noqa: E402
from steward.connectors.watch import Watcher  # noqa: E402
from steward.domain import ApprovalStatus  # noqa: E402
from steward.domain.channel import OutboundMessage  # noqa: E402
from steward.domain.clock import Clock  # noqa: E402
from steward.harness.agent import AgentHarness  # noqa: E402
from steward.models import Message, ModelResponse, ScriptedModel, ToolSpec  # noqa: E402
from steward.models.scripted import call_tool  # noqa: E402
from steward.runtime.worker import Worker  # noqa: E402
from steward.sentinel.policy import PolicySentinel  # noqa: E402
from steward.sentinel.replytoken import ReplyTokens  # noqa: E402
from steward.sentinel.vault import Vault, VaultKeys  # noqa: E402
from steward.service import Service  # noqa: E402
from steward.store import Store  # noqa: E402
from support.dkimkeys import DkimDomain  # noqa: E402
from support.mailbox import mailbox_of  # noqa: E402
from support.mailserver import DOMAIN, MailServer, message, running_mail  # noqa: E402


def agent(messages: Sequence[Message], tools: Sequence[ToolSpec]) -> ModelResponse:
    if not [c for m in messages if m.role == "assistant" for c in m.tool_calls]:
        return call_tool("mail_send", to=[f"dana@{DOMAIN}"], subject="Hi", body="Thursday works")
    return call_tool("finish", result="sent")


def _count(server: MailServer, user: str) -> int:
    client = imaplib.IMAP4("127.0.0.1", server.imap_port)
    try:
        client.login(user, server.passwords[user])
        _, data = client.select("INBOX", readonly=True)
        return int(data[0] or 0)
    finally:
        client.logout()


def _last(server: MailServer, user: str) -> email.message.Message:
    [(_, raw)] = server.messages(user, "INBOX")[-1:]
    return email.message_from_bytes(raw)


async def run(server: MailServer, root: Path, n: int) -> dict[str, float]:
    store = await Store.open(f"sqlite:///{root / 'steward.db'}")
    clock = Clock()
    data = root / "data"
    data.mkdir()
    vault = Vault(VaultKeys.load(data))
    box = await mailbox_of(server, store, clock, data / "ws", vault)  # type: ignore[arg-type]
    await box.connect(name="Agent")
    svc = Service(store, clock, data_dir=data)
    me = server.add_user()
    channel = await svc.add_email_channel(
        person_id=box.person_id, name="email", connection="Agent", address=f"{me}@{DOMAIN}"
    )
    box.env.person_mail = svc
    provider = DkimDomain(DOMAIN)
    box.env.dkim_keys = provider.txt
    harness = AgentHarness(
        model=ScriptedModel(agent),
        workspace=box.env.workspace,
        tools=CONNECTOR.tools(box.env),
        sentinel=PolicySentinel(store, clock),
    )
    worker = Worker(store, harness, clock, lease_seconds=30.0, poll_seconds=None)
    sender = EmailSender(env=box.env, tokens=ReplyTokens(store=store, vault=vault, clock=clock))
    watcher = Watcher(env=box.env, holder="bench", refresh_seconds=0.2)
    stop = asyncio.Event()
    watching = asyncio.create_task(watcher.run(stop))
    await asyncio.sleep(1.0)  # took stock, in IDLE
    to_inbox, to_decided = [], []
    async with aiosmtplib.SMTP(hostname="127.0.0.1", port=server.smtp_port) as smtp:
        await smtp.login(me, server.passwords[me])
        for i in range(n):
            await svc.ask_agent(person_id=box.person_id, instructions=f"Tell Dana ({i})")
            await worker.run_until_idle()
            [approval] = await svc.list_approvals(person_id=box.person_id)
            before = await asyncio.to_thread(_count, server, me)
            began = time.perf_counter()
            await sender.send(
                channel,
                OutboundMessage(
                    key=f"bench:{approval.id}",
                    person_id=box.person_id,
                    kind="approval",
                    title="May I send this?",
                    body=approval.headline,
                    ref=approval.id,
                ),
            )
            # another process's state (Dovecot's, the watcher's writes): polled
            while await asyncio.to_thread(_count, server, me) == before:  # noqa: ASYNC110
                await asyncio.sleep(0.005)
            to_inbox.append(time.perf_counter() - began)
            mailed = await asyncio.to_thread(_last, server, me)
            reply = provider.sign(
                message(
                    sender=f"{me}@{DOMAIN}",
                    to=box.address,
                    subject=f"Re: {mailed['Subject']}",
                    body="approve",
                    extra=f"In-Reply-To: {mailed['Message-ID']}\r\n",
                )
            )
            began = time.perf_counter()
            await smtp.sendmail(f"{me}@{DOMAIN}", [box.address], reply)
            while (await svc.get_approval(approval.id)).status is ApprovalStatus.PENDING:  # noqa: ASYNC110
                await asyncio.sleep(0.005)
            to_decided.append(time.perf_counter() - began)
            await worker.run_until_idle()
    stop.set()
    await watching
    events = await store.schedule.list_events(person_id=box.person_id)
    assert not [e for e in events if e.type == RECEIVED], "a reply became an event"
    await store.close()
    return {
        **{f"inbox_{k}": v for k, v in _stats(to_inbox).items()},
        **{f"decided_{k}": v for k, v in _stats(to_decided).items()},
    }


async def checks(n: int) -> dict[str, float]:
    """One signed message verified ``n`` times."""
    provider = DkimDomain(DOMAIN)
    me = f"ana@{DOMAIN}"
    raw = provider.sign(message(sender=me, to=f"agent@{DOMAIN}", subject="Hi", body="x" * 2000))
    took = []
    for _ in range(n):
        began = time.perf_counter()
        found = await verdict(raw, address=me, check=DKIM, dns=provider.txt)
        took.append(time.perf_counter() - began)
        assert found.trusted, found.why
    return _stats(took)


def _stats(took: list[float]) -> dict[str, float]:
    return {
        "p50_ms": percentile(took, 50) * 1000,
        "p99_ms": percentile(took, 99) * 1000,
        "max_ms": max(took) * 1000,
    }


async def main(args: argparse.Namespace) -> None:
    quiet_logs()
    with tempfile.TemporaryDirectory() as tmp, running_mail(Path(tmp) / "mail") as server:
        found = await run(server, Path(tmp), args.approvals)
    checked = await checks(args.checks)
    n = args.approvals
    print(
        f"approval mail -> person's inbox, n={n}: p50 {found['inbox_p50_ms']:.0f} ms, "
        f"p99 {found['inbox_p99_ms']:.0f} ms, max {found['inbox_max_ms']:.0f} ms"
    )
    print(
        f"'approve' reply -> approval decided (IDLE), n={n}: p50 {found['decided_p50_ms']:.0f} "
        f"ms, p99 {found['decided_p99_ms']:.0f} ms, max {found['decided_max_ms']:.0f} ms"
    )
    print(
        f"DKIM check of one signed message, n={args.checks}: p50 {checked['p50_ms']:.2f} ms, "
        f"p99 {checked['p99_ms']:.2f} ms, max {checked['max_ms']:.2f} ms"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--approvals", type=int, default=30)
    parser.add_argument("--checks", type=int, default=200)
    asyncio.run(main(parser.parse_args()))
