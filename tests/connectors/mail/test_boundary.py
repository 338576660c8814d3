"""What the model writes never becomes an IMAP command of its own: a line break in a search, a
folder name or a label is refused before it reaches the server (imapclient quotes arguments
but lets CR/LF through), on a read-only connection as on any other; searches in any script are
sent as UTF-8; labels are keywords, never Steward's own mark."""

from __future__ import annotations

from pathlib import Path

import pytest

from steward.connectors.mail.access import open_mailbox
from steward.connectors.mail.imap import MailError
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
