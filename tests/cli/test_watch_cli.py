"""``steward watch``: setting up, listing, pausing and removing a watch, in plain words; bad
input refused at the door with nothing stored."""

from __future__ import annotations

from pathlib import Path

import pytest

from support.cli import WIDE, cli, cli_json


@pytest.fixture
def db(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'cli.db'}"


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {**WIDE, "STEWARD_DATA_DIR": str(tmp_path / "data")}


def flat(text: str) -> str:
    return " ".join(text.split())


def test_add_list_show_pause_resume_remove(db: str, env: dict[str, str]) -> None:
    goal = cli_json(db, "goal", "create", "Buy a laptop", env=env)
    code, out = cli(
        db,
        *("watch", "add", "https://shop.example/laptop", "--select", ".price"),
        *("--below", "1000", "--contains", "In stock", "--every", "1h"),
        *("--goal", goal["id"], "--name", "Laptop"),
        env=env,
    )
    assert code == 0, out
    assert flat(out).startswith(
        "Watching Laptop at shop.example: not checked yet → checks hourly, tells you when "
        'below 1,000 and the page says "In stock".'
    )
    assert "the goal is woken with the old and new value" in flat(out)
    [watch] = cli_json(db, "watch", "list", env=env)
    assert watch["conditions"] == [
        {"kind": "below", "text": None, "threshold": "1000"},
        {"kind": "contains", "text": "In stock", "threshold": None},
    ]
    [report] = cli_json(db, "trigger", "list", env=env)
    trigger = report["trigger"]
    assert (trigger["spec"], trigger["match"]) == ("web.changed", {"watch_id": watch["id"]})
    code, out = cli(db, "watch", "list", env=env)
    assert "Laptop at shop.example" in out
    assert "first check at" in out
    code, out = cli(db, "watch", "show", "laptop", env=env)
    assert code == 0, out
    assert "reads the element .price" in out
    assert "no value read yet" in out
    assert flat(cli(db, "watch", "pause", "Laptop", env=env)[1]) == "Paused Laptop."
    assert "(paused)" in cli(db, "watch", "list", env=env)[1]
    assert not cli_json(db, "trigger", "list", env=env)[0]["trigger"]["enabled"]
    assert flat(cli(db, "watch", "resume", watch["id"], env=env)[1]) == "Resumed Laptop."
    assert cli_json(db, "trigger", "list", env=env)[0]["trigger"]["enabled"]
    code, out = cli(db, "watch", "remove", "Laptop", env=env)
    assert flat(out) == "Removed Laptop: it is no longer checked."
    assert cli_json(db, "watch", "list", env=env) == []
    assert not cli_json(db, "trigger", "list", env=env)[0]["trigger"]["enabled"]


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["ftp://shop.example/x", "--select", ".p"], "not an http or https URL"),
        (["https://shop.example/x", "--select", "..p"], "is not a CSS selector"),
        (["https://shop.example/x", "--xpath", "//p["], "is not an XPath expression"),
        (["https://shop.example/x", "--jsonpath", "$.a["], "is not a JSON path"),
        (["https://shop.example/x"], "say what to read"),
        (["https://shop.example/x", "--select", ".p", "--text"], "say what to read"),
        (["https://shop.example/x", "--select", ".p", "--every", "30s"], "at most once a minute"),
        (["https://shop.example/x", "--select", ".p", "--every", "soon"], "not a duration"),
        (["https://shop.example/x", "--select", ".p", "--below", "cheap"], "not a number"),
        (["https://shop.example/x", "--text", "--below", "9"], "choose the element"),
        (["https://shop.example/x", "--select", ".p", "--goal", "gol_nope"], "no goal starts with"),
    ],
)
def test_bad_input_is_refused_and_nothing_is_stored(
    db: str, env: dict[str, str], args: list[str], words: str
) -> None:
    code, out = cli(db, "watch", "add", *args, env=env)
    assert code != 0
    assert words in flat(out), out
    assert cli_json(db, "watch", "list", env=env) == []
    assert cli_json(db, "trigger", "list", env=env) == []


def test_unknown_watch_is_one_line(db: str, env: dict[str, str]) -> None:
    code, out = cli(db, "watch", "pause", "nothing-here", env=env)
    assert code == 1
    assert "not found" in out
    assert len(out.strip().splitlines()) == 1
