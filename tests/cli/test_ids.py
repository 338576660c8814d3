"""Ids in the CLI's tables are shown whole: they are what a person copies into the next
command."""

from __future__ import annotations

from pathlib import Path

from support.cli import cli, cli_json


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
