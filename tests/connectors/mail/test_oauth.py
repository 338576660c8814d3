"""An account signed in with OAuth 2.0 (Gmail, Microsoft 365): the vault holds an access token,
sent with XOAUTH2 to Dovecot (whose oauth2 passdb asks a token introspection endpoint) and to
the SMTP server. An expired or revoked token reads as a sentence."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from steward.connectors.base import ConnectionFailed
from steward.connectors.mail.connector import CONNECTOR
from steward.harness.tools import ToolContext
from support.mailbox import Mailbox
from support.mailserver import message


async def test_an_oauth_account_reads_and_sends_with_its_access_token(
    mailbox: Mailbox, tmp_path: Path
) -> None:
    token = f"tok-{uuid.uuid4().hex}"
    mailbox.server.tokens[token] = mailbox.user
    con = await mailbox.connect(settings=mailbox.settings(auth="oauth2"), password=token)
    await mailbox.receive(message(sender="dana@example.test", to=mailbox.address, subject="Hi"))
    assert await CONNECTOR.check(con, mailbox.env) == (
        f"Signed in to 127.0.0.1 as {mailbox.user}: 6 folders, 1 unread in Inbox"
    )
    send = next(t for t in CONNECTOR.tools(mailbox.env) if t.name == "mail_send")
    ctx = ToolContext(
        person_id=mailbox.person_id,
        task_id="t",
        goal_id=None,
        idempotency_key=f"k-{uuid.uuid4().hex}",
        workspace=tmp_path,
        now=mailbox.clock.now(),
    )
    args = {"to": ["dana@example.test"], "subject": "Hello", "body": "From my token"}
    sent = await send.invoke(send.parse_arguments(json.dumps(args)), ctx)
    [accepted] = [a for a in mailbox.server.accepted if sent["message_id"].encode() in a.data]
    assert accepted.login == mailbox.user


async def test_a_revoked_token_reads_as_a_sentence(mailbox: Mailbox) -> None:
    con = await mailbox.connect(settings=mailbox.settings(auth="oauth2"), password="revoked")
    with pytest.raises(ConnectionFailed) as caught:
        await CONNECTOR.check(con, mailbox.env)
    assert str(caught.value) == (
        f"127.0.0.1 refused the sign-in as {mailbox.user}: the access token is wrong or has "
        "expired, or the account does not allow IMAP"
    )
