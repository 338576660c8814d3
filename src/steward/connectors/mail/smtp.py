"""Sending over SMTP with ``aiosmtplib``: sign in (a password, or XOAUTH2 with an OAuth 2.0
access token) and hand one message over.

What a failure means matters to a send: a refusal before the server took the message (the
sign-in, the sender, a recipient, the content) certainly sent nothing (:class:`MailError`); a
connection lost while the message was being handed over leaves it unknown
(:class:`MailUnreachable`), and the effect is then reconciled from the Sent folder.
"""

from __future__ import annotations

import ssl
from collections.abc import Sequence
from email.message import EmailMessage

import aiosmtplib

from steward import sendby
from steward.connectors.mail.failures import MailError, MailUnreachable
from steward.connectors.mail.settings import MailSettings
from steward.connectors.mail.tls import tls_context, tls_failure


def _client(settings: MailSettings, secret: str, timeout: float) -> aiosmtplib.SMTP:
    async def token() -> str:
        return secret

    oauth = settings.auth == "oauth2"
    return aiosmtplib.SMTP(
        hostname=settings.smtp_host,
        port=settings.port("smtp"),
        username=settings.username,
        password=None if oauth else secret,
        oauth_token_generator=token if oauth else None,
        use_tls=settings.smtp_security == "ssl",
        start_tls={"ssl": False, "starttls": True, "plain": False}[settings.smtp_security],
        tls_context=tls_context(),
        timeout=timeout,
    )


def _words(exc: aiosmtplib.SMTPResponseException) -> str:
    return " ".join(exc.message.split()) or f"code {exc.code}"


async def _connect(client: aiosmtplib.SMTP, settings: MailSettings) -> None:
    host, user = settings.smtp_host, settings.username
    try:
        await client.connect()
    except aiosmtplib.SMTPAuthenticationError:
        how = "access token" if settings.auth == "oauth2" else "password"
        raise MailError(
            f"{host} refused the sign-in as {user}: the {how} is wrong or has expired, or the "
            "account does not allow sending by SMTP"
        ) from None
    except ssl.SSLError as exc:
        raise MailError(tls_failure(host, "SMTP", exc)) from None
    except aiosmtplib.SMTPResponseException as exc:
        raise MailError(f"{host} refused the connection: {_words(exc)}") from None
    except aiosmtplib.SMTPException as exc:
        raise MailError(f"cannot connect to the mail server {host}: {exc}") from None
    except OSError as exc:
        reason = f" ({exc.strerror.lower()})" if exc.strerror else ""
        raise MailError(
            f"cannot reach the mail server {host} on port {settings.port('smtp')}{reason}"
        ) from None


async def check(settings: MailSettings, secret: str, *, seconds: float = 30.0) -> None:
    """Sign in to the SMTP server and leave; :class:`MailError` saying what is wrong."""
    client = _client(settings, secret, seconds)
    await _connect(client, settings)
    try:
        await client.quit()
    except aiosmtplib.SMTPException:
        client.close()


async def send(
    settings: MailSettings,
    secret: str,
    message: EmailMessage,
    recipients: Sequence[str],
    *,
    seconds: float = 60.0,
) -> tuple[str, ...]:
    """Hand ``message`` to the SMTP server for ``recipients``; the recipients it refused
    while taking the message for the others (usually none)."""
    client = _client(settings, secret, seconds)
    await _connect(client, settings)
    host = settings.smtp_host
    try:
        sendby.check()  # signing in took time: the message goes within the deadline, or never
        refused, _ = await client.send_message(
            message, sender=settings.sender, recipients=list(recipients)
        )
    except aiosmtplib.SMTPRecipientsRefused as exc:
        shown = ", ".join(r.recipient for r in exc.recipients)
        raise MailError(f"{host} refused the recipient {shown}; nothing was sent") from None
    except aiosmtplib.SMTPSenderRefused as exc:
        raise MailError(
            f"{host} refused {settings.sender} as the sender ({_words(exc)}); nothing was sent"
        ) from None
    except aiosmtplib.SMTPDataError as exc:
        raise MailError(f"{host} refused the message ({_words(exc)}); nothing was sent") from None
    except aiosmtplib.SMTPNotSupported as exc:
        # raised before the message is handed over (an international address on a server
        # without SMTPUTF8, say)
        raise MailError(f"{host} cannot take this message ({exc}); nothing was sent") from None
    except (aiosmtplib.SMTPException, OSError) as exc:
        # the message may have been taken just before the connection broke
        raise MailUnreachable(f"the connection to {host} broke while sending") from exc
    finally:
        if client.is_connected:
            try:
                await client.quit()
            except aiosmtplib.SMTPException:
                client.close()
    return tuple(sorted(refused))
