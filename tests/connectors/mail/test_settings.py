"""Mail settings: plain text only to this machine, the from-address taken from the user name
when it is one, the usual ports, and the hosts the credential may go to."""

from __future__ import annotations

from typing import Any

import pytest

from steward.connectors.base import SettingsInvalid, parse_settings
from steward.connectors.mail.connector import CONNECTOR
from steward.connectors.mail.settings import MailSettings

BASE: dict[str, Any] = {
    "imap_host": "imap.example.com",
    "smtp_host": "smtp.example.com",
    "username": "ana@example.com",
}


def test_defaults_are_tls_on_the_usual_ports_from_the_user_name() -> None:
    settings = MailSettings.model_validate(BASE)
    assert (settings.port("imap"), settings.port("smtp")) == (993, 465)
    assert settings.sender == "ana@example.com"
    assert CONNECTOR.hosts(settings) == ("imap.example.com", "smtp.example.com")
    starttls = MailSettings.model_validate(BASE | {"smtp_security": "starttls"})
    assert starttls.port("smtp") == 587


def test_one_host_for_both_is_named_once() -> None:
    settings = MailSettings.model_validate(
        BASE | {"imap_host": "Mail.Example.com", "smtp_host": "mail.example.com"}
    )
    assert settings.hosts() == ("mail.example.com",)


@pytest.mark.parametrize(
    ("change", "said"),
    [
        (
            {"imap_security": "plain"},
            "plain (unencrypted) is allowed only to this machine, not imap.example.com",
        ),
        (
            {"username": "ana"},
            "give the address mail is sent from (the user name is not one)",
        ),
        ({"address": "Ana <ana@example.com>"}, "is not one plain address"),
        ({"time_zone": "Mars/Olympus"}, "unknown time zone"),
        ({"password": "x"}, "password: Extra inputs are not permitted"),
    ],
)
def test_what_does_not_fit_is_named(change: dict[str, Any], said: str) -> None:
    with pytest.raises(SettingsInvalid) as caught:
        parse_settings(CONNECTOR, BASE | change)
    assert said in str(caught.value)


def test_plain_text_to_this_machine_and_a_separate_address() -> None:
    settings = MailSettings.model_validate(
        BASE
        | {
            "imap_host": "127.0.0.1",
            "imap_security": "plain",
            "username": "ana",
            "address": "Ana@Example.COM",
        }
    )
    assert settings.sender == "Ana@example.com"
    assert settings.port("imap") == 143
