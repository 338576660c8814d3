"""Apprise delivery to real local endpoints over real sockets: a JSON webhook, an ntfy server
and an SMTP server each receive the title and body as sent; a refusal and an outage are told
apart; a private address needs the person's confirmation; the URL never shows."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime

import pytest

from steward.connectors.notify import PRIVATE_NETWORK, SECRET
from steward.connectors.notify.apprise import AppriseSender, describe, needs_private_network
from steward.domain.channel import Channel, ChannelKind, OutboundMessage
from steward.errors import ChannelRefused, ChannelUnavailable, UsageError
from support.notifyservers import mail_sink, receiving

_ids = itertools.count(1)


class Secrets:
    """The vault, reduced to a dict (the service tests use the real one)."""

    def __init__(self) -> None:
        self.values: dict[tuple[str, str], str] = {}

    async def open(self, person_id: str, name: str) -> str:
        try:
            return self.values[person_id, name]
        except KeyError:
            raise ChannelRefused("not in the vault") from None


def channel(secrets: Secrets, url: str, *, private: bool = True) -> Channel:
    name = f"channel-{next(_ids)}"
    secrets.values["per_1", name] = url
    return Channel(
        id=f"chn_{name}",
        person_id="per_1",
        kind=ChannelKind.APPRISE,
        name="phone",
        config={SECRET: name, PRIVATE_NETWORK: private},
        created_at=datetime(2026, 12, 4, tzinfo=UTC),
    )


def message(**changes: str) -> OutboundMessage:
    fields = {
        "key": "rep_1:chn_1",
        "person_id": "per_1",
        "kind": "report",
        "title": "Invoice from Acme is due Friday",
        "body": "€1,200 to Acme Ltd.\nPay it before Friday noon.",
        "importance": "actionable",
        "link": "/away#rep_1",
        **changes,
    }
    return OutboundMessage(**fields)  # type: ignore[arg-type]


async def test_a_json_webhook_receives_the_title_and_body() -> None:
    secrets = Secrets()
    sender = AppriseSender(secrets, dashboard_url="https://steward.example.org/")
    with receiving() as rx:
        chan = channel(secrets, f"json://127.0.0.1:{rx.port}/hook")
        receipt = await sender.send(chan, message())
        [hit] = rx.hits
    assert receipt.accepted
    assert receipt.detail == "taken by JSON"
    assert hit.path == "/hook"
    sent = hit.json()
    assert sent["title"] == "Invoice from Acme is due Friday"
    assert sent["message"] == (
        "€1,200 to Acme Ltd.\nPay it before Friday noon.\n\nhttps://steward.example.org/away#rep_1"
    )
    assert sent["type"] == "warning"  # actionable


async def test_an_ntfy_server_receives_the_title_and_body() -> None:
    secrets = Secrets()
    sender = AppriseSender(secrets)
    with receiving() as rx:
        chan = channel(secrets, f"ntfy://127.0.0.1:{rx.port}/steward-alerts")
        await sender.send(chan, message(importance="urgent"))
        [hit] = rx.hits
    sent = hit.json()
    assert sent["topic"] == "steward-alerts"
    assert sent["title"] == "Invoice from Acme is due Friday"
    # no dashboard address given: the path alone (``steward up`` always gives one)
    assert sent["message"] == "€1,200 to Acme Ltd.\nPay it before Friday noon.\n\n/away#rep_1"


async def test_an_smtp_server_receives_the_mail() -> None:
    secrets = Secrets()
    sender = AppriseSender(secrets)
    with mail_sink() as sink:
        url = f"mailto://127.0.0.1:{sink.port}?to=me@example.test&from=steward@example.test"
        await sender.send(channel(secrets, url), message())
        [mail] = sink.messages
    assert sink.recipients == [["me@example.test"]]
    assert mail["Subject"] == "Invoice from Acme is due Friday"
    body = mail.get_body(("plain",))
    assert body is not None
    assert "€1,200 to Acme Ltd." in body.get_content()
    assert "Pay it before Friday noon." in body.get_content()


async def test_a_refusal_is_final_and_an_outage_passes_and_neither_shows_the_url() -> None:
    secrets = Secrets()
    sender = AppriseSender(secrets, timeout=20)
    with receiving() as rx:
        url = f"json://127.0.0.1:{rx.port}/hook-s3cr3t-token"
        chan = channel(secrets, url)
        rx.status = 404
        with pytest.raises(ChannelRefused, match="JSON refused the message") as refused:
            await sender.send(chan, message())
        rx.status = 503
        with pytest.raises(ChannelUnavailable) as unavailable:
            await sender.send(chan, message())
        rx.status = 429
        with pytest.raises(ChannelUnavailable):
            await sender.send(chan, message())
    assert len(rx.hits) == 3
    for error in (refused.value, unavailable.value):
        assert "s3cr3t" not in str(error)
        assert "127.0.0.1" not in str(error)
    # nothing listens any more: the service is unreachable, which may pass
    with pytest.raises(ChannelUnavailable):
        await sender.send(chan, message())


async def test_a_private_address_needs_the_persons_confirmation() -> None:
    secrets = Secrets()
    sender = AppriseSender(secrets)
    with receiving() as rx:
        url = f"json://127.0.0.1:{rx.port}/hook"
        assert await needs_private_network(url)
        with pytest.raises(ChannelRefused, match="private network") as refused:
            await sender.send(channel(secrets, url, private=False), message())
        assert rx.hits == []
        assert "127.0.0.1" not in str(refused.value)
        await sender.send(channel(secrets, url, private=True), message())
        assert len(rx.hits) == 1


async def test_every_self_hosted_service_is_checked_however_its_host_is_spelled() -> None:
    """A server's host that is one word (``nas``) or a number (``2130706433`` is 127.0.0.1)
    on a self-hosted service the list of schemes does not name (Kodi, Synology, Mastodon)."""
    secrets = Secrets()
    sender = AppriseSender(secrets)
    with receiving() as rx:
        for url in (f"kodi://2130706433:{rx.port}", f"synology://2130706433:{rx.port}/token"):
            assert await needs_private_network(url)
            with pytest.raises(ChannelRefused, match="private network"):
                await sender.send(channel(secrets, url, private=False), message())
        assert rx.hits == []
    assert describe("kodi://nas").hosts == ("nas",)
    assert describe("mastodon://token@nas").hosts == ("nas",)


async def test_what_an_apprise_url_reaches_is_shown_masked() -> None:
    telegram = describe("tgram://123456789:AAHsecretbottoken/987654")
    assert telegram.service == "Telegram"
    assert telegram.masked == "tgram://…"
    assert telegram.hosts == ()  # a token, never looked up
    assert not await needs_private_network("tgram://123456789:AAHsecretbottoken/987654")
    assert describe("ntfy://my-private-topic").hosts == ()  # ntfy.sh
    assert describe("ntfys://ntfy.home.arpa/alerts").hosts == ("ntfy.home.arpa",)
    mail = describe("mailto://me:pw@example.org?smtp=smtp.example.org")
    assert mail.hosts == ("example.org", "smtp.example.org")
    for bad in ("", "https//nope", "nonsense://x", "not a url"):
        with pytest.raises(UsageError, match="Apprise does not understand"):
            describe(bad)


async def test_a_channel_whose_secret_is_gone_is_refused() -> None:
    secrets = Secrets()
    chan = channel(secrets, "json://127.0.0.1:9/hook")
    secrets.values.clear()
    with pytest.raises(ChannelRefused):
        await AppriseSender(secrets).send(chan, message())
