"""The mail tools against Dovecot: search and read (HTML as text, attachments saved to the
workspace, nothing marked read), a whole thread, archive/mark/label, drafts, and sending a new
message and a reply whose threading headers arrive with it."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from steward.harness.tools import ToolError
from support.mailbox import Mailbox
from support.mailserver import message

HTML_WITH_PDF = (
    "From: Shop <news@shop.test>\r\nTo: {to}\r\nSubject: Your invoice\r\n"
    "Date: Tue, 08 Dec 2026 10:00:00 +0000\r\nMessage-ID: <inv-1@shop.test>\r\n"
    "MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=XX\r\n\r\n"
    "--XX\r\nContent-Type: text/html; charset=utf-8\r\n\r\n"
    "<html><body><h1>Thanks!</h1><p>Your <b>invoice</b> is attached.</p></body></html>\r\n"
    "--XX\r\nContent-Type: application/pdf\r\n"
    'Content-Disposition: attachment; filename="../../etc/in\u200bvoice.pdf"\r\n'
    "Content-Transfer-Encoding: base64\r\n\r\nJVBERi0xLjQK\r\n--XX--\r\n"
)


async def test_search_and_read_an_html_mail_saving_its_attachment(
    mailbox: Mailbox, tmp_path: Path
) -> None:
    con = await mailbox.connect()
    await mailbox.receive(message(sender="dana@example.test", to=mailbox.address, subject="Hi"))
    await mailbox.receive(HTML_WITH_PDF.format(to=mailbox.address).encode())
    ctx = mailbox.context(tmp_path / "person")

    found = await mailbox.call(ctx, "mail_search", sender="shop.test", unread=True)
    [listed] = found["messages"]
    assert listed["from"] == "Shop <news@shop.test>"
    assert listed["subject"] == "Your invoice"
    assert listed["date"] == "Tue 8 Dec 2026, 11:00"  # Paris time
    assert listed["unread"]
    assert listed["has_attachment"]
    assert ctx.items_read == [f"{con.id}/{listed['message']}"]

    read = await mailbox.call(ctx, "mail_read", message=listed["message"])
    assert read["text"] == "# Thanks!\n\nYour **invoice** is attached."
    [attachment] = read["attachments"]
    assert attachment["type"] == "application/pdf"
    saved = tmp_path / "person" / attachment["saved_as"]
    assert saved.read_bytes() == b"%PDF-1.4\n"
    assert saved.name == "invoice.pdf"  # no path, no invisible character
    assert saved.resolve().is_relative_to((tmp_path / "person").resolve())
    assert (saved.stat().st_mode & 0o777) == 0o600
    await mailbox.receive(
        message(
            sender="=?utf-8?q?S=C3=A9b?= <seb@example.test>",
            to="x@y.test",
            subject="=?utf-8?q?Caf=C3=A9?=",
        )
    )
    [encoded] = (await mailbox.call(ctx, "mail_search", sender="seb@"))["messages"]
    assert (encoded["from"], encoded["subject"]) == ("S\u00e9b <seb@example.test>", "Caf\u00e9")
    again = await mailbox.call(ctx, "mail_search", sender="shop.test", unread=True)
    assert len(again["messages"]) == 1  # reading did not mark it read


async def test_archive_mark_and_label_newsletters(mailbox: Mailbox, tmp_path: Path) -> None:
    await mailbox.connect()
    for n in range(3):
        await mailbox.receive(
            message(sender="news@shop.test", to=mailbox.address, subject=f"Deals {n}")
        )
    await mailbox.receive(message(sender="dana@example.test", to=mailbox.address, subject="Hi"))
    ctx = mailbox.context(tmp_path / "person")
    news = [
        m["message"] for m in (await mailbox.call(ctx, "mail_search", sender="news@"))["messages"]
    ]
    dana = (await mailbox.call(ctx, "mail_search", sender="dana@"))["messages"][0]["message"]

    archive = mailbox.tools()["mail_archive"]
    assert archive.summary({"messages": news, "sender": "news@shop.test"}) == (
        "Archive 3 emails from news@shop.test"
    )
    with pytest.raises(ToolError, match=r"some are from dana@example\.test"):
        await mailbox.call(ctx, "mail_archive", messages=[*news, dana], sender="news@shop.test")
    await mailbox.call(ctx, "mail_label", messages=news[:1], labels=["Shopping"])
    await mailbox.call(ctx, "mail_mark", messages=news, mark="read", sender="news@shop.test")
    done = await mailbox.call(ctx, "mail_archive", messages=news, sender="news@shop.test")
    assert done == {"archived": 3, "to": "Archive"}

    inbox = await mailbox.folder("INBOX")
    assert [b"Subject: Hi" in raw for _, raw in inbox] == [True]
    archived = await mailbox.folder("Archive")
    assert len(archived) == 3
    assert all(b"\\Seen" in flags for flags, _ in archived)
    assert sum(b"Shopping" in flags for flags, _ in archived) == 1
    with pytest.raises(ToolError, match="there is no folder Receipts:"):
        await mailbox.call(ctx, "mail_move", messages=[dana], folder="Receipts")
    moved = await mailbox.call(ctx, "mail_move", messages=[dana], folder="Junk")
    assert moved == {"moved": 1, "to": "Junk"}
    [dana] = [
        m["message"] for m in (await mailbox.call(ctx, "mail_search", folder="Junk"))["messages"]
    ]
    await mailbox.call(ctx, "mail_move", messages=[dana], folder="INBOX")
    [dana] = [m["message"] for m in (await mailbox.call(ctx, "mail_search"))["messages"]]
    await mailbox.call(ctx, "mail_mark", messages=[dana], mark="flagged")
    [(flags, _)] = await mailbox.folder("INBOX")
    assert b"\\Flagged" in flags
    assert b"\\Seen" not in flags


async def test_a_thread_across_inbox_and_sent(mailbox: Mailbox, tmp_path: Path) -> None:
    await mailbox.connect()
    first = message(
        sender="dana@example.test",
        to=mailbox.address,
        subject="Thursday?",
        body="Does Thursday work?",
        message_id="<t1@example.test>",
    )
    mine = message(
        sender=mailbox.address,
        to="dana@example.test",
        subject="Re: Thursday?",
        body="At 10?",
        message_id="<t2@example.test>",
        extra="In-Reply-To: <t1@example.test>\r\nReferences: <t1@example.test>\r\n",
        date="Mon, 07 Dec 2026 10:00:00 +0100",
    )
    last = message(
        sender="dana@example.test",
        to=mailbox.address,
        subject="Re: Thursday?",
        body="10 is fine",
        message_id="<t3@example.test>",
        extra="In-Reply-To: <t2@example.test>\r\n"
        "References: <t1@example.test> <t2@example.test>\r\n",
        date="Mon, 07 Dec 2026 11:00:00 +0100",
    )
    await mailbox.receive(first)
    await mailbox.receive(mine, folder="Sent")
    await mailbox.receive(last)
    await mailbox.receive(message(sender="x@example.test", to=mailbox.address, subject="Other"))
    ctx = mailbox.context(tmp_path / "person")
    [newest] = (await mailbox.call(ctx, "mail_search", text="10 is fine"))["messages"]
    thread = await mailbox.call(ctx, "mail_thread", message=newest["message"])
    assert [m["text"] for m in thread["thread"]] == ["Does Thursday work?", "At 10?", "10 is fine"]
    assert len(ctx.items_read) == 1 + 3


async def test_draft_and_send_a_reply_with_threading_headers(
    mailbox: Mailbox, tmp_path: Path
) -> None:
    await mailbox.connect()
    await mailbox.receive(
        message(
            sender="Dana <dana@example.test>",
            to=mailbox.address,
            subject="Thursday?",
            body="Does Thursday work?",
            message_id="<q1@example.test>",
            extra="References: <q0@example.test>\r\n",
        )
    )
    ctx = mailbox.context(tmp_path / "person", key=f"effect-{uuid.uuid4().hex}")
    [question] = (await mailbox.call(ctx, "mail_search", subject="Thursday"))["messages"]
    reply = {
        "to": ["dana@example.test"],
        "subject": "Thursday?",
        "body": "Hi Dana, Thursday at 10:00 works for me. See you then, and thanks for "
        "asking so kindly!",
        "mode": "reply",
        "message": question["message"],
    }
    send = mailbox.tools()["mail_send"]
    assert send.summary(reply) == (
        'Send a reply to dana@example.test \N{EM DASH} "Re: Thursday?" \N{EM DASH} '
        "Hi Dana, Thursday at 10:00 works for me. See you then, and thanks for asking…"
    )
    with pytest.raises(ToolError, match="goes to exactly its reply_to"):
        await mailbox.call(ctx, "mail_send", **(reply | {"to": ["eve@example.test"]}))

    drafted = await mailbox.call(ctx, "mail_draft", **reply)
    await mailbox.call(ctx, "mail_draft", **reply)  # the same draft again: stored once
    [(flags, draft)] = await mailbox.folder("Drafts")
    assert b"\\Draft" in flags
    assert drafted["subject"] == "Re: Thursday?"
    assert b"In-Reply-To: <q1@example.test>" in draft
    assert all(a.login != mailbox.user for a in mailbox.server.accepted)  # nothing was sent

    sent = await mailbox.call(ctx, "mail_send", **reply)
    assert sent["to"] == "dana@example.test"
    [(_, received)] = [
        m for m in await mailbox.folder("INBOX", user="dana") if sent["message_id"].encode() in m[1]
    ]
    assert b"In-Reply-To: <q1@example.test>" in received
    assert b"References: <q0@example.test> <q1@example.test>" in received
    assert b"Subject: Re: Thursday?" in received
    assert b"From: Ana Example <" + mailbox.address.encode() + b">" in received
    [(flags, copy)] = await mailbox.folder("Sent")
    assert sent["message_id"].encode() in copy
    assert b"$StewardSending" not in flags
    assert b"\\Seen" in flags


async def test_reply_all_names_exactly_the_people_of_the_thread(
    mailbox: Mailbox, tmp_path: Path
) -> None:
    await mailbox.connect()
    await mailbox.receive(
        message(
            sender="dana@example.test",
            to=f"{mailbox.address}, bo@example.test",
            subject="Plan",
            extra="Cc: cy@example.test\r\n",
        )
    )
    ctx = mailbox.context(tmp_path / "person", key=f"effect-{uuid.uuid4().hex}")
    [plan] = (await mailbox.call(ctx, "mail_search", subject="Plan"))["messages"]
    base = {"subject": "Plan", "body": "Yes", "mode": "reply_all", "message": plan["message"]}
    with pytest.raises(ToolError, match="its to and its cc, less you"):
        await mailbox.call(ctx, "mail_send", to=["dana@example.test"], **base)
    sent = await mailbox.call(
        ctx,
        "mail_send",
        to=["dana@example.test", "bo@example.test"],
        cc=["cy@example.test"],
        **base,
    )
    assert sent["cc"] == "cy@example.test"
    [accepted] = [a for a in mailbox.server.accepted if sent["message_id"].encode() in a.data]
    assert sorted(accepted.recipients) == [
        "bo@example.test",
        "cy@example.test",
        "dana@example.test",
    ]
    assert accepted.login == mailbox.user


async def test_forward_attaches_the_message(mailbox: Mailbox, tmp_path: Path) -> None:
    await mailbox.connect()
    await mailbox.receive(HTML_WITH_PDF.format(to=mailbox.address).encode())
    ctx = mailbox.context(tmp_path / "person", key=f"effect-{uuid.uuid4().hex}")
    [invoice] = (await mailbox.call(ctx, "mail_search"))["messages"]
    sent = await mailbox.call(
        ctx,
        "mail_send",
        to=["dana@example.test"],
        subject="Your invoice",
        body="For the records",
        mode="forward",
        message=invoice["message"],
    )
    assert sent["subject"] == "Fwd: Your invoice"
    [(_, received)] = [
        m for m in await mailbox.folder("INBOX", user="dana") if sent["message_id"].encode() in m[1]
    ]
    assert b"Content-Type: message/rfc822" in received
    assert b"Message-ID: <inv-1@shop.test>" in received


async def test_a_refused_recipient_sends_nothing_and_keeps_no_copy(
    mailbox: Mailbox, tmp_path: Path
) -> None:
    await mailbox.connect()
    ctx = mailbox.context(tmp_path / "person", key=f"effect-{uuid.uuid4().hex}")
    with pytest.raises(ToolError) as caught:
        await mailbox.call(ctx, "mail_send", to=["ghost@nowhere.test"], subject="Hi", body="Hello")
    assert str(caught.value) == (
        "127.0.0.1 refused the recipient ghost@nowhere.test; nothing was sent"
    )
    assert await mailbox.folder("Sent") == []


async def test_the_approval_says_what_kind_of_message_and_which_it_answers(
    mailbox: Mailbox, tmp_path: Path
) -> None:
    """A reply or forward goes out under the subject of the message it answers or forwards,
    so the sentence the person approves names that message; it says reply, reply to all or
    forward, and a long subject is cut."""
    await mailbox.connect()
    await mailbox.receive(HTML_WITH_PDF.format(to=mailbox.address).encode())
    ctx = mailbox.context(tmp_path / "person", key=f"effect-{uuid.uuid4().hex}")
    [invoice] = (await mailbox.call(ctx, "mail_search"))["messages"]
    forward = {
        "to": ["dana@example.test"],
        "subject": "Holiday photos",
        "body": "Look",
        "mode": "forward",
        "message": invoice["message"],
    }
    with pytest.raises(ToolError, match="keeps the subject of the message it answers"):
        await mailbox.call(ctx, "mail_send", **forward)
    with pytest.raises(ToolError, match="keeps the subject of the message it answers"):
        await mailbox.call(ctx, "mail_draft", **(forward | {"mode": "reply"}))
    assert all(a.login != mailbox.user for a in mailbox.server.accepted)
    send, draft = mailbox.tools()["mail_send"], mailbox.tools()["mail_draft"]
    em = "\N{EM DASH}"
    plan = {"to": ["dana@example.test"], "cc": ["bo@example.test"], "subject": "Plan", "body": ""}
    assert send.summary(plan | {"mode": "reply_all"}) == (
        f'Send a reply to all: to dana@example.test (copy to bo@example.test) {em} "Re: Plan"'
    )
    assert draft.summary(plan | {"mode": "forward"}) == (
        f'Draft a forward to dana@example.test (copy to bo@example.test) {em} "Fwd: Plan" '
        "(not sent)"
    )
    long = send.summary(plan | {"subject": "word " * 40})
    assert long.endswith(f'{em} "{"word " * 14}word…"')
