"""``steward skill``: list, show, history, diff, approve/reject, restore and archive the skills
the agent learned, against a real SQLite database."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from steward.domain.clock import Clock
from steward.domain.skill import SkillContent
from steward.memory.skills import SkillLibrary
from steward.store import Store
from support.cli import WIDE
from support.cli import cli as run
from support.cli import cli_json as run_json


def cli(db: str, *args: str) -> tuple[int, str]:
    return run(db, *args, env=WIDE)


def cli_json(db: str, *args: str) -> Any:
    return run_json(db, *args, env=WIDE)


def table(procedure: str) -> SkillContent:
    return SkillContent(description="Book a table at the usual place", procedure=procedure)


@pytest.fixture
def db(tmp_path: Path) -> str:
    """A person with an active skill at version 2 with a change waiting for them, and a new
    skill waiting for approval."""
    url = f"sqlite:///{tmp_path / 'cli.db'}"

    async def seed() -> None:
        store = await Store.open(url)
        try:
            clock = Clock()
            person = (await store.persons.create_person(name="ada", now=clock.now())).id
            eager, cautious = (
                SkillLibrary(store, clock),
                SkillLibrary(store, clock, auto_apply=False),
            )
            for library, procedure in (
                (eager, "Call Luigi's"),
                (eager, "Call Luigi's before noon"),
                (cautious, "Use the booking app"),
            ):
                await library.propose(
                    person_id=person,
                    name="book-table",
                    content=table(procedure),
                    actor="agent:tsk_1",
                )
            await cautious.propose(
                person_id=person,
                name="plan-trip",
                content=SkillContent(description="Plan a weekend trip", procedure="Ask first"),
                actor="agent:tsk_2",
            )
        finally:
            await store.close()

    asyncio.run(seed())
    return url


def test_list_show_history_and_diff(db: str) -> None:
    listed = cli_json(db, "skill", "list")
    assert [(s["name"], s["status"], s["version"]) for s in listed] == [
        ("book-table", "active", 3),
        ("plan-trip", "proposed", 1),
    ]
    assert listed[0]["pending"]["content"]["procedure"] == "Use the booking app"
    code, out = cli(db, "skill", "list")
    assert code == 0, out
    assert "book-table" in out
    assert "True" in out  # the waiting column
    proposed = cli_json(db, "skill", "list", "--status", "proposed")
    assert [s["name"] for s in proposed] == ["plan-trip"]

    code, out = cli(db, "skill", "show", "book-table")
    assert code == 0, out
    assert out.startswith("# Skill book-table (version 3, active)")
    assert "Call Luigi's before noon" in out
    assert "A change waits for you (new skills wait for the person)" in out
    assert "-Call Luigi's before noon" in out
    assert "+Use the booking app" in out
    code, out = cli(db, "skill", "show", "Book Table", "--version", "1")
    assert code == 0, out
    assert "(version 1, active)" in out
    assert "Call Luigi's\n" in out
    shown = cli_json(db, "skill", "show", "book-table")
    assert shown["content"]["procedure"] == "Call Luigi's before noon"

    history = cli_json(db, "skill", "history", "book-table")
    assert [(v["version"], v["actor"], v["reason"]) for v in history] == [
        (1, "agent:tsk_1", "created"),
        (2, "agent:tsk_1", "updated"),
        (3, "agent:tsk_1", "change proposed: new skills wait for the person"),
    ]
    code, out = cli(db, "skill", "diff", "book-table", "--from", "1", "--to", "2")
    assert code == 0, out
    assert out.splitlines()[:2] == ["--- book-table v1", "+++ book-table v2"]
    assert "-Call Luigi's" in out
    assert "+Call Luigi's before noon" in out
    code, out = cli(db, "skill", "diff", "book-table", "--from", "2", "--to", "3")
    assert (code, out.strip()) == (0, "no difference")  # v3 only added the waiting change


def test_decide_restore_and_archive(db: str) -> None:
    code, out = cli(db, "skill", "approve", "plan-trip")
    assert code == 0, out
    assert out.strip() == "plan-trip: approved; now v2, active"
    code, out = cli(db, "skill", "reject", "book-table")
    assert code == 0, out
    assert out.strip() == "book-table: rejected; now v4, active"
    code, out = cli(db, "skill", "approve", "book-table")
    assert code == 1
    assert "nothing about skill 'book-table' waits for a decision" in out

    restored = cli_json(db, "skill", "restore", "book-table", "1")
    assert (restored["version"], restored["content"]["procedure"]) == (5, "Call Luigi's")
    code, out = cli(db, "skill", "restore", "book-table", "1")
    assert code == 1
    assert "already says what version 1 says" in out

    skill_id = restored["id"]
    code, out = cli(db, "skill", "archive", skill_id)
    assert code == 0, out
    assert out.strip() == "book-table: archived (v6)"
    assert [s["name"] for s in cli_json(db, "skill", "list", "--status", "active")] == ["plan-trip"]


def test_mistakes_are_one_clear_line(db: str) -> None:
    for argv, message in (
        (["skill", "show", "no-such-skill"], "skill 'no-such-skill' not found"),
        (["skill", "show", "skl_missing"], "no skill starts with 'skl_missing'"),
        (["skill", "list", "--status", "gone"], "unknown skill status 'gone'"),
        (["skill", "restore", "book-table", "9"], "not found"),
        (["skill", "show", "book-table", "--version", "9"], "'book-table v9' not found"),
        (["skill", "show", "bad name!"], "bad skill name"),
    ):
        code, out = cli(db, *argv)
        assert code == 1, (argv, out)
        assert out.startswith("error:"), (argv, out)
        assert message in out, (argv, out)
