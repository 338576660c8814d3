"""Links that open from a phone: every channel's text carries the dashboard page on the
address the person reaches (one helper joins them); the address is a setting, by default
where ``steward up`` serves."""

from __future__ import annotations

import socket

import pytest
from pydantic import ValidationError

from steward.config import Settings
from steward.connectors.mail.channel import approval_body, plain_body
from steward.connectors.matrix.room import plain_text
from steward.domain.channel import OutboundMessage, dashboard_link

DASHBOARD = "https://steward.home.example/"


def message(kind: str = "approval") -> OutboundMessage:
    return OutboundMessage(
        key="apr_7:chn_1",
        person_id="per_1",
        kind=kind,  # type: ignore[arg-type]
        title="May I send the reply to Dana?",
        body="The reply says you will come on Friday.",
        importance="actionable",
        link="/inbox/apr_7",
    )


def test_a_path_is_joined_to_the_dashboards_address_once() -> None:
    for base in ("https://steward.home.example", DASHBOARD):
        assert dashboard_link(base, "/inbox/apr_7") == "https://steward.home.example/inbox/apr_7"
        assert dashboard_link(base, "away#rep_1") == "https://steward.home.example/away#rep_1"
    assert dashboard_link("https://h.example/steward", "/goals/g") == (
        "https://h.example/steward/goals/g"
    )
    assert dashboard_link(None, "/inbox") == "/inbox"
    assert dashboard_link(DASHBOARD, None) is None


def test_mail_and_matrix_texts_carry_the_absolute_link() -> None:
    wanted = "Details in the dashboard: https://steward.home.example/inbox/apr_7"
    assert wanted in plain_body(message("report"), DASHBOARD)
    assert wanted in approval_body(message(), "tok-1", DASHBOARD)
    assert wanted in plain_text(message(), DASHBOARD)
    # no address known: the path, as before
    assert "Details in the dashboard: /inbox/apr_7" in plain_text(message())


def test_the_dashboards_address_defaults_to_where_steward_up_serves(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("STEWARD_DASHBOARD_URL", "STEWARD_HOST", "STEWARD_PORT", "STEWARD_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("STEWARD_CONFIG", "/nonexistent/steward.toml")
    assert Settings().resolved_dashboard_url() == "http://127.0.0.1:8470"
    assert Settings(port=9000).resolved_dashboard_url(port=9123) == "http://127.0.0.1:9123"
    everywhere = Settings(host="0.0.0.0").resolved_dashboard_url()
    assert everywhere == f"http://{socket.gethostname()}:8470"
    assert Settings().resolved_dashboard_url(host="::1") == "http://[::1]:8470"
    monkeypatch.setenv("STEWARD_DASHBOARD_URL", "https://steward.home.example/ ")
    assert Settings().resolved_dashboard_url(port=1) == "https://steward.home.example"


@pytest.mark.parametrize("bad", ["steward.home.example", "ftp://h.example", "https://"])
def test_a_dashboard_address_that_is_not_one_is_refused_at_the_door(bad: str) -> None:
    with pytest.raises(ValidationError, match="dashboard's http"):
        Settings(dashboard_url=bad)
