"""A vault key file that went missing while the database holds secrets encrypted with it is
not silently replaced (which would leave those secrets unreadable for good, and put new ones
under another key): Steward refuses to start, says where the key was expected, how many
secrets need it and how to restore it, and changes nothing."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from steward.cli.main import app
from support.startup import scaled

runner = CliRunner()


@pytest.fixture
def data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("STEWARD_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("STEWARD_LOGIN_FILE", str(tmp_path / "login.json"))
    for name in ("STEWARD_DATABASE_URL", "STEWARD_SERVER", "STEWARD_TOKEN", "STEWARD_VAULT_KEY"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path / "data"


def steward(*args: str, stdin: str | None = None) -> tuple[int, str]:
    result = runner.invoke(app, list(args), input=stdin)
    return result.exit_code, result.output


def stored(data: Path) -> list[tuple[str, str]]:
    with sqlite3.connect(data / "steward.db") as conn:
        return conn.execute("SELECT name, ciphertext FROM secrets ORDER BY name").fetchall()


def refusal(out: str, key: Path) -> None:
    def squeezed(text: str) -> str:  # the terminal wraps long lines, long paths too
        return "".join(text.split())

    for part in (
        f"the vault key {key} is missing",
        "holds 2 secret(s)",
        "Restore the file from your backup",
        "Nothing was changed",
    ):
        assert squeezed(part) in squeezed(out), out


@pytest.mark.slow
def test_a_lost_key_with_stored_secrets_stops_steward_and_changes_nothing(
    data: Path, startup: float
) -> None:
    for name in ("github", "mail"):
        code, out = steward("secret", "set", name, "--host", "api.example.com", stdin="s3cret")
        assert code == 0, out
    key = data / "vault.key"
    saved = key.read_bytes()
    secrets = stored(data)
    key.unlink()

    # a worker (as `steward up` and the scheduler) refuses to start
    worker = subprocess.Popen(
        [sys.executable, "-m", "steward.cli.main", "worker"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=os.environ.copy(),
    )
    try:
        out, _ = worker.communicate(timeout=scaled(60))
    except subprocess.TimeoutExpired:
        worker.kill()
        out, _ = worker.communicate()
        pytest.fail(f"the worker started without its vault key:\n{out}")
    assert worker.returncode == 1, out
    refusal(out, key)
    assert "Traceback" not in out

    # storing another secret, or rotating the key, would make a new key: refused too
    code, out = steward("secret", "set", "new", "--host", "api.example.com", stdin="v")
    assert code == 1
    refusal(out, key)
    code, out = steward("vault", "rotate")
    assert code == 1
    refusal(out, key)
    assert not key.exists()
    assert stored(data) == secrets

    # the way out it names: the key restored from a backup opens them again
    fd = os.open(key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.write(fd, saved)
    os.close(fd)
    code, out = steward("secret", "set", "new", "--host", "api.example.com", stdin="v")
    assert code == 0, out
    assert key.read_bytes() == saved


def test_without_secrets_a_missing_key_is_simply_made(data: Path) -> None:
    code, out = steward("secret", "set", "first", "--host", "api.example.com", stdin="v")
    assert code == 0, out
    assert (data / "vault.key").exists()
