"""Running ``steward`` commands in-process against a database, as the CLI tests do."""

from __future__ import annotations

import json
from typing import Any

from typer.testing import CliRunner

from steward.cli.main import app

runner = CliRunner()

WIDE = {"COLUMNS": "200"}
"""A terminal wide enough that tables are not cut short."""


def cli(db: str, *args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    """``steward <args> --db <db>``: its exit code and output."""
    result = runner.invoke(app, [*args, "--db", db], env=env)
    return result.exit_code, result.output


def cli_json(db: str, *args: str, env: dict[str, str] | None = None) -> Any:
    """The JSON a successful ``steward <args> --db <db> --json`` printed."""
    code, out = cli(db, *args, "--json", env=env)
    assert code == 0, out
    return json.loads(out)
