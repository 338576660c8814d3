"""What the model writes never becomes an IMAP command of its own: a line break in a search, a
folder name or a label is refused before it reaches the server (imapclient quotes arguments
but lets CR/LF through), on a read-only connection as on any other; searches in any script are
sent as UTF-8; labels are keywords, never Steward's own mark."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path
from urllib.parse import quote

import pytest
from imapclient.exceptions import IMAPClientError

from steward.connectors.base import ConnectionFailed
from steward.connectors.mail.access import open_mailbox, settings_of
from steward.connectors.mail.failures import MailError, server_words
from steward.connectors.mail.sending import SENDING
from steward.connectors.mail.tools import READ
from steward.harness.tools import ToolError
from support.mailbox import Mailbox
from support.mailserver import message

INJECTED = "a\r\nX1 UID MOVE 1:* Trash\r\nX2 NOOP"


async def test_a_line_break_in_a_search_never_reaches_the_server(
    mailbox: Mailbox, tmp_path: Path
) -> None:
    con = await mailbox.connect(scopes=(READ,))
    await mailbox.receive(message(sender="dana@example.test", to=mailbox.address, subject="Hi"))
    ctx = mailbox.context(tmp_path)
    for field in ("text", "subject", "sender", "folder"):
        with pytest.raises(ToolError, match="cannot contain a line break"):
            await mailbox.call(ctx, "mail_search", **{field: INJECTED})
    async with await open_mailbox(mailbox.env, con) as acct:
        with pytest.raises(MailError, match="cannot contain a line break"):
            await acct.search("INBOX", ["TEXT", INJECTED], limit=10)
        with pytest.raises(MailError, match="cannot contain a line break"):
            await acct.search("INBOX\r\nX1 DELETE INBOX\r\nX2 SELECT INBOX", [], limit=10)
    assert len(await mailbox.folder("INBOX")) == 1
    assert await mailbox.folder("Trash") == []


async def test_a_search_in_another_script_finds_its_message(
    mailbox: Mailbox, tmp_path: Path
) -> None:
    await mailbox.connect()
    await mailbox.receive(
        message(
            sender="li@example.test",
            to=mailbox.address,
            subject="=?utf-8?b?5pif5pyf5Zub55qE5Lya6K6u?=",  # 星期四的会议
            body="会议在十点",
        )
    )
    await mailbox.receive(message(sender="dana@example.test", to=mailbox.address, subject="Hi"))
    ctx = mailbox.context(tmp_path)
    [found] = (await mailbox.call(ctx, "mail_search", subject="会议"))["messages"]
    assert found["subject"] == "星期四的会议"
    [found] = (await mailbox.call(ctx, "mail_search", text="十点"))["messages"]
    assert found["from"] == "li@example.test"


async def test_labels_are_keywords_and_never_steward_s_own_mark(
    mailbox: Mailbox, tmp_path: Path
) -> None:
    con = await mailbox.connect()
    await mailbox.receive(message(sender="dana@example.test", to=mailbox.address, subject="Hi"))
    ctx = mailbox.context(tmp_path)
    [hi] = [m["message"] for m in (await mailbox.call(ctx, "mail_search"))["messages"]]
    for label in ["Shop\r\nX1 EXPUNGE", "two words", "\\Deleted", "", SENDING, "$stewardX"]:
        with pytest.raises(ToolError):
            await mailbox.call(ctx, "mail_label", messages=[hi], labels=[label])
        with pytest.raises(ToolError):
            await mailbox.call(ctx, "mail_label", messages=[hi], labels=[label], remove=True)
    async with await open_mailbox(mailbox.env, con) as acct:
        [header] = (await acct.search("INBOX", [], limit=1))[0]
        with pytest.raises(MailError, match="cannot contain a line break"):
            await acct.label([header.ref], ["Shop\r\nX1 EXPUNGE"], add=True)
    await mailbox.call(ctx, "mail_label", messages=[hi], labels=["Receipts-2026", "$Later"])
    [(flags, _)] = await mailbox.folder("INBOX")
    assert b"Receipts-2026" in flags
    assert b"$Later" in flags
    assert b"\\Deleted" not in flags


async def test_a_reply_to_an_encoded_message_id_adds_no_header(
    mailbox: Mailbox, tmp_path: Path
) -> None:
    """A Message-ID written as encoded words that decode to a line break and a Bcc: the reply
    threads on the Message-ID in it and goes to Dana alone."""
    await mailbox.connect()
    await mailbox.receive(
        message(
            sender="dana@example.test",
            to=mailbox.address,
            subject="Plan",
            message_id="=?utf-8?q?<p1@example.test>=0D=0ABcc:_eve@example.test?=",
        )
    )
    ctx = mailbox.context(tmp_path, key="reply-encoded")
    [plan] = (await mailbox.call(ctx, "mail_search"))["messages"]
    sent = await mailbox.call(
        ctx,
        "mail_send",
        to=["dana@example.test"],
        subject="Plan",
        body="Yes",
        mode="reply",
        message=plan["message"],
    )
    [accepted] = [
        a
        for a in mailbox.server.accepted
        if a.login == mailbox.user and sent["message_id"].encode() in a.data
    ]
    assert accepted.recipients == ["dana@example.test"]
    assert b"In-Reply-To: <p1@example.test>\r\n" in accepted.data
    assert b"Bcc" not in accepted.data


async def test_nothing_is_moved_into_sent(mailbox: Mailbox, tmp_path: Path) -> None:
    """Sent is what a send is reconciled by: mail from others never goes there."""
    await mailbox.connect()
    await mailbox.receive(message(sender="dana@example.test", to=mailbox.address, subject="Hi"))
    ctx = mailbox.context(tmp_path)
    [hi] = [m["message"] for m in (await mailbox.call(ctx, "mail_search"))["messages"]]
    with pytest.raises(ToolError, match="cannot be moved into Sent"):
        await mailbox.call(ctx, "mail_move", messages=[hi], folder="Sent")
    assert await mailbox.folder("Sent") == []


async def test_a_long_attachment_name_in_another_script_is_saved(
    mailbox: Mailbox, tmp_path: Path
) -> None:
    """120 CJK characters are 360 bytes, more than a file name may have: the name is cut by
    bytes, at a character boundary, and keeps its extension."""
    await mailbox.connect()
    name = "会议纪要" * 30 + ".pdf"
    raw = (
        f"From: li@example.test\r\nTo: {mailbox.address}\r\nSubject: Notes\r\n"
        "Date: Tue, 08 Dec 2026 10:00:00 +0000\r\nMIME-Version: 1.0\r\n"
        "Content-Type: multipart/mixed; boundary=XX\r\n\r\n"
        "--XX\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nattached\r\n"
        "--XX\r\nContent-Type: application/pdf\r\n"
        f"Content-Disposition: attachment; filename*=utf-8''{quote(name)}\r\n"
        "Content-Transfer-Encoding: base64\r\n\r\nJVBERi0xLjQK\r\n--XX--\r\n"
    ).encode()
    await mailbox.receive(raw)
    ctx = mailbox.context(tmp_path / "person")
    [notes] = (await mailbox.call(ctx, "mail_search"))["messages"]
    [attachment] = (await mailbox.call(ctx, "mail_read", message=notes["message"]))["attachments"]
    assert attachment["name"] == name
    saved = tmp_path / "person" / attachment["saved_as"]
    assert saved.read_bytes() == b"%PDF-1.4\n"
    assert saved.name.endswith(".pdf")
    assert len(saved.name.encode()) <= 200
    assert saved.name.startswith("会议纪要会议")

    # where it would be saved is taken by a file: the model reads why, never where
    shutil.rmtree(saved.parent)
    saved.parent.write_bytes(b"")
    with pytest.raises(ToolError) as caught:
        await mailbox.call(ctx, "mail_read", message=notes["message"])
    assert str(caught.value).startswith("could not save the attachment 会议纪要")
    assert str(tmp_path) not in str(caught.value)


async def test_where_a_reply_goes_is_shown_as_the_sender_s_words(
    mailbox: Mailbox, tmp_path: Path
) -> None:
    """A Reply-To is the sender's choice: the model reads it in the listing (untrusted), and
    a refused reply does not repeat it in the error (errors are not marked untrusted)."""
    await mailbox.connect()
    await mailbox.receive(
        message(
            sender="dana@example.test",
            to=mailbox.address,
            subject="Invoice",
            extra="Reply-To: Accounts <payments@elsewhere.test>\r\n",
        )
    )
    ctx = mailbox.context(tmp_path, key="reply-to")
    [invoice] = (await mailbox.call(ctx, "mail_search"))["messages"]
    assert invoice["reply_to"] == ["payments@elsewhere.test"]
    search = mailbox.tools()["mail_search"]
    assert search.untrusted_output
    with pytest.raises(ToolError) as caught:
        await mailbox.call(
            ctx,
            "mail_send",
            to=["dana@example.test"],
            subject="Invoice",
            body="Paid",
            mode="reply",
            message=invoice["message"],
        )
    assert "elsewhere" not in str(caught.value)
    assert "reply_to" in str(caught.value)


async def test_a_sender_named_with_capitals_is_that_sender(
    mailbox: Mailbox, tmp_path: Path
) -> None:
    await mailbox.connect()
    await mailbox.receive(message(sender="Dana@Example.test", to=mailbox.address, subject="Hi"))
    ctx = mailbox.context(tmp_path)
    [hi] = (await mailbox.call(ctx, "mail_search"))["messages"]
    assert hi["from"] == "Dana@example.test"
    done = await mailbox.call(ctx, "mail_archive", messages=[hi["message"]], sender=hi["from"])
    assert done == {"archived": 1, "to": "Archive"}


async def test_an_address_the_smtp_server_cannot_take_sends_nothing(
    mailbox: Mailbox, tmp_path: Path
) -> None:
    """An international address needs SMTPUTF8, which this server lacks: refused before the
    message was handed over, so nothing was sent for certain (not in doubt), and no copy."""
    await mailbox.connect()
    ctx = mailbox.context(tmp_path, key="utf8")
    with pytest.raises(ToolError, match="nothing was sent"):
        await mailbox.call(ctx, "mail_send", to=["jörg@example.test"], subject="Hi", body="Hey")
    assert await mailbox.folder("Sent") == []


async def test_errors_read_as_plain_words(mailbox: Mailbox) -> None:
    """What the server or the settings say reaches the person without Python around it."""
    con = await mailbox.connect()
    async with await open_mailbox(mailbox.env, con) as acct:
        with pytest.raises(MailError) as caught:
            await acct.search("INBOX", ["HEADER"], limit=1)
    text = str(caught.value)
    assert text.startswith("127.0.0.1 refused: Error in IMAP command")
    assert "b'" not in text
    assert "secs" not in text
    two_lines = IMAPClientError("[b'[ALERT] first line', b'second line.']")
    assert server_words(two_lines) == "first line second line"
    broken = replace(con, settings={**con.settings, "imap_port": "a port"})
    with pytest.raises(ConnectionFailed) as failed:
        settings_of(broken)
    assert str(failed.value) == "the settings of Mail no longer fit (imap_port): connect it again"
