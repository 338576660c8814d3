"""``steward channel``: add an Apprise channel with its URL read from standard input (never the
command line), list it masked, test it against a real local webhook, turn it off and on,
remove it."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from steward.cli.main import app
from support.cli import WIDE
from support.notifyservers import receiving


def test_a_channel_from_adding_to_removing(tmp_path: Path) -> None:
    runner = CliRunner()
    db = f"sqlite:///{tmp_path / 'cli.db'}"
    env = {**WIDE, "STEWARD_DATA_DIR": str(tmp_path)}

    def steward(*args: str, stdin: str | None = None) -> tuple[int, str]:
        result = runner.invoke(app, [*args, "--db", db], env=env, input=stdin)
        return result.exit_code, result.output

    with receiving() as rx:
        url = f"json://127.0.0.1:{rx.port}/hook-t0ken"
        code, out = steward("channel", "add", "apprise", "home", "--url-stdin", stdin=url + "\n")
        assert code == 1
        assert "confirm it is on your own network" in out
        code, out = steward(
            "channel", "add", "apprise", "home", "--url-stdin", "--private-network", stdin=url
        )
        assert code == 0, out
        assert "Added 'home': JSON (json://127.0.0.1/…), on your own network." in out
        code, out = steward("channel", "list", "--json")
        [listed] = json.loads(out)
        assert listed["name"] == "home"
        assert "t0ken" not in out

        code, out = steward("channel", "test", "home")
        assert code == 0, out
        assert "home: Sent (taken by JSON)." in out
        assert rx.hits[0].json()["title"] == "Test from Steward"

        code, out = steward("channel", "disable", "home")
        assert "'home' is off" in out
        code, out = steward("channel", "enable", "home")
        assert "'home' is on" in out
        rx.status = 410
        code, out = steward("channel", "test", "home")
        assert code == 1
        assert "Refused: JSON refused the message (it answered 410)" in out

    code, out = steward("channel", "remove", "home")
    assert "Removed 'home'." in out
    code, out = steward("secret", "list", "--json")
    assert json.loads(out) == []
    code, out = steward("channel", "add", "apprise", "x", "--url-stdin", stdin="nonsense://x\n")
    assert code == 1
    assert "Apprise does not understand that address" in out
