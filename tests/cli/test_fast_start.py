"""``steward`` starts fast: ``--help`` imports no server, model client or connector, and the
long-running roles say what they started and how to stop them."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

from steward import __version__
from steward.cli.main import app
from support.cli import cli_json, runner
from support.startup import scaled

SERVING = ("fastapi", "steward.api", "steward.app", "openai", "anthropic", "mcp", "playwright")
"""The server, the app's wiring, model clients: only the commands that run them import them."""
HEAVY = (*SERVING, "sqlalchemy", "pydantic", "structlog", "importlib.metadata")
"""What ``steward --help`` must not import: each costs start-up time on every command (the
database, the settings and the logs are for the commands that use them)."""

PROBE = f"""
import sys
from steward.cli.main import app
try:
    app(["--help"], prog_name="steward")
except SystemExit:
    pass
print("imported:", *[m for m in {HEAVY!r} if m in sys.modules])
"""


def probe(
    code: str, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter (what it imports is what a command would)."""
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        check=True,
        stdin=subprocess.DEVNULL,
        env=env,
        timeout=scaled(60),
    )


def test_help_imports_nothing_heavy() -> None:
    done = probe(PROBE)
    assert "Usage: steward" in done.stdout, done.stdout
    assert done.stdout.rstrip().endswith("imported:"), done.stdout.splitlines()[-1]


READING = (
    *SERVING,
    "steward.harness.agent",
    "alembic",
    "nio",
    "aiohttp",
    "pywebpush",
    "requests",
    "apprise",
    "authlib",
    "imapclient",
    "lxml",
    "jsonpath_ng",
    "numpy",
    "httpx",
)
"""What a command that only reads (``steward goal list``) must not import either: the server,
the app's wiring and harnesses, migrations of a current database, the libraries of the
channels and connectors (each imported by the code that sends or connects)."""

READ_PROBE = f"""
import sys
from steward.cli.main import app
try:
    app(["goal", "list", "--db", sys.argv[1]], prog_name="steward")
except SystemExit as exc:
    assert not exc.code, exc.code
print("imported:", *[m for m in {READING!r} if m in sys.modules])
"""


def test_reading_goals_imports_nothing_heavy(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'current.db'}"
    cli_json(db, "goal", "create", "water the plants")  # set up, so opening it migrates nothing
    done = probe(
        READ_PROBE,
        db,
        env={**os.environ, "STEWARD_DATA_DIR": str(tmp_path / "data"), "COLUMNS": "200"},
    )
    assert "water the plants" in done.stdout, done.stdout
    assert done.stdout.rstrip().endswith("imported:"), done.stdout.splitlines()[-1]


def test_version_is_printed() -> None:
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0, result.output
    assert result.output == f"steward {__version__}\n"


def test_worker_says_what_it_started_and_that_it_stopped(tmp_path: Path) -> None:
    """A worker on a fresh SQLite database prints its start line (role, pid, database, model,
    how to stop it), and on SIGTERM a stop line, and exits 0."""
    db = tmp_path / "w.db"
    env = {**os.environ, "STEWARD_DATA_DIR": str(tmp_path / "data"), "COLUMNS": "400"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "steward.cli.main", "worker", "--db", f"sqlite:///{db}"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    try:
        first = proc.stdout.readline()  # type: ignore[union-attr]  # blocks until it is said
        assert first.startswith(f"worker started, pid {proc.pid}; data: {db} (SQLite"), first
        assert "model: none set" in first, first
        assert f"stop: Ctrl-C or kill {proc.pid}" in first, first
    finally:
        proc.send_signal(signal.SIGTERM)
        rest, _ = proc.communicate(timeout=scaled(60))
    assert proc.returncode == 0, rest
    assert "worker stopped" in rest, rest


REMOTE = ("sqlalchemy", "steward.store", "aiosqlite", "psycopg", "pydantic_settings", "numpy")
"""What a command acting through a server (``$STEWARD_SERVER``) must not import: the
database and its settings are the server's; the facade is loaded for its signatures alone."""

REMOTE_PROBE = f"""
import sys
from steward.cli.main import app
try:
    app(["goal", "list"], prog_name="steward")
except SystemExit as exc:
    assert exc.code == 1, exc.code  # nothing listens there: one line, exit 1
print("imported:", *[m for m in {REMOTE!r} if m in sys.modules])
"""


def test_a_command_through_a_server_imports_no_database(tmp_path: Path) -> None:
    with socket.socket() as unused:  # a port nothing listens on
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    done = probe(
        REMOTE_PROBE,
        env={
            **os.environ,
            "STEWARD_DATA_DIR": str(tmp_path / "data"),
            "STEWARD_SERVER": f"http://127.0.0.1:{port}",
            "STEWARD_TOKEN": "stw_not-a-real-token",
            "COLUMNS": "200",
        },
    )
    assert "cannot reach the Steward server" in done.stderr, done.stderr
    assert done.stdout.rstrip().endswith("imported:"), done.stdout.splitlines()[-1]
