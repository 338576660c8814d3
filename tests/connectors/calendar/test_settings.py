"""A calendar connection's settings: where credentials may go, and whose time it is."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from steward.connectors.base import SettingsInvalid, parse_settings
from steward.connectors.calendar.connector import CONNECTOR
from steward.connectors.calendar.settings import CalendarSettings


def test_plain_http_only_to_this_machine_and_no_credential_in_the_url() -> None:
    for url in ("http://127.0.0.1:5232", "http://localhost/dav", "http://[::1]:8080/"):
        assert CalendarSettings(url=url, username="ana").url.endswith("/")
    with pytest.raises(ValidationError, match="plain http is allowed only to this machine"):
        CalendarSettings(url="http://cal.example.test/dav", username="ana")
    with pytest.raises(ValidationError, match="put the credential in the vault"):
        CalendarSettings(url="https://ana:pw@cal.example.test/", username="ana")
    with pytest.raises(ValidationError, match="https:// URL"):
        CalendarSettings(url="ftp://cal.example.test/", username="ana")


def test_time_zone_and_address() -> None:
    settings = CalendarSettings(
        url="https://cal.example.test/", username="ana@example.test", time_zone="Europe/Paris"
    )
    assert (settings.email, settings.host, settings.zone.key) == (
        "ana@example.test",
        "cal.example.test",
        "Europe/Paris",
    )
    assert CalendarSettings(url="https://c.example.test/", username="ana").email is None
    with pytest.raises(SettingsInvalid, match=r"time_zone: .*unknown time zone 'Mars/Olympus'"):
        parse_settings(
            CONNECTOR,
            {"url": "https://c.example.test/", "username": "ana", "time_zone": "Mars/Olympus"},
        )
    assert CONNECTOR.hosts(CalendarSettings(url="https://c.example.test/", username="a")) == (
        "c.example.test",
    )
