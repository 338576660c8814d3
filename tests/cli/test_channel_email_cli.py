"""``steward channel add email``: checked at the door (a connected mail account, one plain
address), in plain words, nothing stored when refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from steward.cli.channel_email import proven_by
from support.cli import WIDE, cli, cli_json


@pytest.fixture
def db(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'cli.db'}"


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {**WIDE, "STEWARD_DATA_DIR": str(tmp_path / "data")}


def flat(text: str) -> str:
    return " ".join(text.split())


def test_adding_an_email_channel_needs_a_mail_account_and_an_address(
    db: str, env: dict[str, str]
) -> None:
    code, out = cli(
        db,
        "channel",
        "add",
        "email",
        "email",
        "--connection",
        "Mail",
        "--address",
        "a@b.io",
        env=env,
    )
    assert code == 1
    assert "not found" in flat(out)
    assert "Mail" in out
    code, out = cli(
        db,
        "channel",
        "add",
        "email",
        "email",
        "--connection",
        "Mail",
        "--address",
        "a, b",
        env=env,
    )
    assert code == 1
    assert '"a, b" is not one plain e-mail address' in flat(out)
    code, out = cli(db, "channel", "add", "email", "--help", env=env)
    assert code == 0
    assert "--connection" in out
    assert cli_json(db, "connection", "list", env=env) == []  # nothing stored


def test_how_mail_is_proven_yours_is_chosen_at_the_door(db: str, env: dict[str, str]) -> None:
    add = ("channel", "add", "email", "email", "--connection", "Mail", "--address", "a@b.io")
    code, out = cli(db, *add, "--verify", "spf", env=env)
    assert code == 1
    assert '"spf" is not a way to check your mail' in flat(out)
    code, out = cli(db, "channel", "add", "email", "--help", env=env)
    assert code == 0
    said = flat(out.replace("│", " "))  # the help's box
    assert "--verify" in said
    assert "anyone who can put mail in this mailbox with your address as From can speak as you" in (
        said
    )
    assert cli_json(db, "channel", "list", env=env) == []  # nothing stored


def test_what_the_check_means_is_said_plainly() -> None:
    assert "DKIM" in proven_by("dkim")
    assert proven_by("authserv:mx.example.com").startswith("mx.example.com, the server")
    assert proven_by("none") == (
        "nothing more is checked: anyone who can put mail in this mailbox with your address as "
        "From can speak as you."
    )
