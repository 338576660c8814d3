"""``steward report list`` and ``steward reach``: reports in plain words and the person's zone;
quiet hours and the digest time set, bad times refused at the door with nothing changed."""

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


def test_reach_and_reports(db: str, env: dict[str, str]) -> None:
    code, out = cli(db, "report", "list", env=env)
    assert (code, flat(out)) == (0, "Nothing reported yet.")
    code, out = cli(db, "reach", "quiet", "22:00-07:00", env=env)
    assert (code, flat(out)) == (0, "quiet from 22:00 to 07:00; daily digest at 18:00 (UTC).")
    code, out = cli(db, "reach", "digest", "7:30", env=env)
    assert flat(out) == "quiet from 22:00 to 07:00; daily digest at 07:30 (UTC)."
    for bad, words in (
        (("quiet", "2200"), "quiet hours look like 22:00-07:00"),
        (("quiet", "22-07"), "the start must be a time like 07:30"),
        (("quiet", "25:00-07:00"), "must be a time like 07:30"),
        (("digest", "noon"), "must be a time like 07:30"),
    ):
        code, out = cli(db, "reach", *bad, env=env)
        assert code == 1, out
        assert words in flat(out)
    code, out = cli(db, "reach", "quiet", "off", env=env)
    assert flat(out) == "no quiet hours; daily digest at 07:30 (UTC)."
    # a goal cancelled writes its final report
    goal = cli_json(db, "goal", "create", "Laptop price", env=env)
    code, out = cli(db, "goal", "cancel", goal["id"], env=env)
    assert code == 0, out
    code, out = cli(db, "report", "list", env=env)
    assert "Your goal 'Laptop price' was cancelled on" in flat(out)
    [report] = cli_json(db, "report", "list", env=env)
    assert (report["origin"], report["goal_id"], report["state"]) == (
        "runtime",
        goal["id"],
        "digest",  # the person cancelled it: information, for the digest
    )
