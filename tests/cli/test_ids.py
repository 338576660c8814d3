"""Ids in the CLI's tables are shown whole: they are what a person copies into the next
command. Every command takes an id shortened to any start that names one of the person's, and
a goal's title or a named object's name in its place."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from support.cli import cli, cli_json
from support.cli_tenancy import World


def test_a_table_never_cuts_an_id_short(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'ids.db'}"
    goal = cli_json(db, "goal", "create", "A goal whose title is long enough to need room " * 2)
    task = cli_json(db, "task", "create", "noop", "--goal", goal["id"])
    code, out = cli(db, "task", "list", env={"COLUMNS": "200"})
    assert code == 0, out
    assert task["id"] in out, out
    assert goal["id"] in out, out
    # on a terminal too narrow for the whole row, an id is folded, never shortened
    for width in ("120", "60"):
        _, out = cli(db, "task", "list", env={"COLUMNS": width})
        cells = [line.split("│")[1].strip() for line in out.splitlines() if line.startswith("│")]
        assert "".join(cells) == task["id"], out


def test_goals_and_tasks_by_a_shortened_id_or_a_title(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'ids.db'}"
    goal = cli_json(db, "goal", "create", "Short ids")
    task = cli_json(db, "task", "create", "noop", "--goal", goal["id"][:-20])
    assert task["goal_id"] == goal["id"]
    shown = cli_json(db, "task", "show", task["id"][:-20])
    assert shown["id"] == task["id"]
    assert cli_json(db, "goal", "pause", goal["id"][:-20])["status"] == "paused"
    assert cli_json(db, "goal", "show", "short IDS")["id"] == goal["id"]
    assert cli_json(db, "task", "create", "noop", "--goal", "Short ids")["goal_id"] == goal["id"]
    code, out = cli(db, "goal", "show", "gol_zzz")
    assert code == 1, out
    assert "no goal starts with 'gol_zzz'" in out
    code, out = cli(db, "goal", "show", task["id"])
    assert code == 1, out
    assert "is a task's id; give a goal (gol_…)" in " ".join(out.split())
    cli_json(db, "goal", "create", "short ids")
    code, out = cli(db, "goal", "show", "Short ids")
    assert code == 1, out
    assert "more than one goal is called 'Short ids'" in " ".join(out.split())
    assert goal["id"] in out.replace("\n", "")


@pytest.fixture
def world(tmp_path: Path) -> World:
    return World(tmp_path)


def _short(whole: str) -> str:
    """The start of an id a person might type: its kind and 8 of its characters."""
    return whole[: whole.index("_") + 9]


def test_commands_take_a_shortened_id(world: World) -> None:
    ann = world.a
    env = {"STEWARD_TOKEN": ann.control, "STEWARD_DATA_DIR": str(world.data_dir)}
    code, out = world.run(["memory", "show", _short(ann.memory.id), "--json"], env)
    assert code == 0, out
    assert json.loads(out)["memory"]["id"] == ann.memory.id
    code, out = world.run(["effect", "resolve", _short(ann.effect.id), "--applied", "--json"], env)
    assert code == 0, out
    assert json.loads(out)["id"] == ann.effect.id
    code, out = world.run(["approval", "deny", _short(ann.approval.id)], env)
    assert code == 0, out
    assert f"{ann.approval.id}: denied" in out
    code, out = world.run(["trigger", "disable", ann.trigger.name, "--json"], env)
    assert code == 0, out
    assert json.loads(out)["id"] == ann.trigger.id
    code, out = world.run(["rule", "delete", _short(ann.rule.id)], env)
    assert code == 0, out
    assert f"{ann.rule.id} deleted" in out
    # bob's, shortened, is not there for ann's token: no others' ids are named
    code, out = world.run(["memory", "show", _short(world.b.memory.id)], env)
    assert code == 1, out
    assert f"no memory starts with '{_short(world.b.memory.id)}'" in out
