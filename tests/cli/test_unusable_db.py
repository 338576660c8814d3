"""A database the CLI cannot use is one plain line and exit code 1, never a traceback, and
nothing is changed (a read-only one: tests/store/test_unusable.py)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from support.cli import cli, cli_json


def test_a_text_file_is_not_a_database(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("shopping: milk, bread\n")
    code, out = cli(f"sqlite:///{notes}", "task", "list")
    assert code == 1, out
    assert f"error: {notes} is not a SQLite database" in " ".join(out.split()), out
    assert "Traceback" not in out
    assert notes.read_text() == "shopping: milk, bread\n"


def test_a_schema_newer_than_the_code_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "newer.db"
    db = f"sqlite:///{path}"
    cli_json(db, "goal", "list")  # a current database
    with sqlite3.connect(path) as conn:  # as a later Steward would leave it
        conn.execute("UPDATE alembic_version SET version_num = '9999'")
    for command in (["task", "list"], ["db", "upgrade"]):
        code, out = cli(db, *command)
        assert code == 1, out
        assert "error: the database" in out, out
        assert "schema revision 9999, which a newer Steward wrote" in " ".join(out.split())
        assert "Traceback" not in out
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT version_num FROM alembic_version").fetchall() == [("9999",)]
