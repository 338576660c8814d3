"""Connecting a mailbox: the login check says what it found in one sentence, and a wrong
password, a server that is not there or a refused address say what is wrong in plain words."""

from __future__ import annotations

import pytest

from steward.connectors.base import ConnectionFailed
from steward.connectors.mail.connector import CONNECTOR
from support.mailbox import Mailbox
from support.mailserver import free_port, message


async def test_the_check_says_what_it_found(mailbox: Mailbox) -> None:
    for n in range(3):
        await mailbox.receive(
            message(sender="dana@example.test", to=mailbox.address, subject=f"n{n}")
        )
    con = await mailbox.connect()
    said = await CONNECTOR.check(con, mailbox.env)
    assert said == (f"Signed in to 127.0.0.1 as {mailbox.user}: 6 folders, 3 unread in Inbox")


async def test_a_wrong_password_reads_as_a_sentence(mailbox: Mailbox) -> None:
    con = await mailbox.connect(password="not-it")
    with pytest.raises(ConnectionFailed) as caught:
        await CONNECTOR.check(con, mailbox.env)
    assert str(caught.value) == (
        f"127.0.0.1 refused the sign-in as {mailbox.user}: the password is wrong or has "
        "expired, or the account does not allow IMAP"
    )
    assert "b'" not in str(caught.value)


async def test_a_server_that_is_not_there_reads_as_a_sentence(mailbox: Mailbox) -> None:
    port = free_port()
    con = await mailbox.connect(settings=mailbox.settings(imap_port=port))
    with pytest.raises(ConnectionFailed) as caught:
        await CONNECTOR.check(con, mailbox.env)
    assert str(caught.value) == (
        f"127.0.0.1 refused the connection on port {port} (is that the IMAP port?)"
    )


async def test_a_wrong_smtp_password_is_found_at_connect_time(mailbox: Mailbox) -> None:
    """IMAP takes the password, the SMTP server refuses it (a different account there)."""
    mailbox.server.passwords[mailbox.user] = "changed-for-smtp"
    try:
        con = await mailbox.connect(password=f"{mailbox.user}-secret")
        with pytest.raises(ConnectionFailed) as caught:
            await CONNECTOR.check(con, mailbox.env)
    finally:
        mailbox.server.passwords[mailbox.user] = f"{mailbox.user}-secret"
    assert str(caught.value) == (
        f"127.0.0.1 refused the sign-in as {mailbox.user}: the password is wrong or has "
        "expired, or the account does not allow sending by SMTP"
    )


async def test_a_certificate_no_authority_signed_is_refused(mailbox: Mailbox) -> None:
    settings = mailbox.settings(imap_security="ssl", imap_port=mailbox.server.tls_port)
    con = await mailbox.connect(settings=settings)
    with pytest.raises(ConnectionFailed) as caught:
        await CONNECTOR.check(con, mailbox.env)
    assert str(caught.value) == (
        "the certificate of 127.0.0.1 is not trusted (self-signed certificate), so the "
        "password was not sent: check the server name"
    )


async def test_tls_to_a_plain_port_says_what_to_check(mailbox: Mailbox) -> None:
    con = await mailbox.connect(settings=mailbox.settings(imap_security="ssl"))
    with pytest.raises(ConnectionFailed) as caught:
        await CONNECTOR.check(con, mailbox.env)
    assert str(caught.value).startswith("127.0.0.1 did not set up a secure connection (")
    assert str(caught.value).endswith("): check the IMAP port and security (ssl or starttls)")
