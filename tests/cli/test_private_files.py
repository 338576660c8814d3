"""Other users of the machine cannot read a person's data: the data directory is 0700, the
database (with its ``-wal`` and ``-shm``), the config file, the vault key, the workspace and
the saved login are 0600/0700, whatever the umask; ones left readable by an earlier version
are tightened on start, and the person is told once."""

from __future__ import annotations

import json
import os
import sqlite3
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from steward.cli.main import app
from steward.harness.workspace import Workspace
from steward.store import Store

runner = CliRunner()


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A data directory that does not exist yet; the usual umask (files 0644, dirs 0755)."""
    monkeypatch.setenv("STEWARD_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("STEWARD_LOGIN_FILE", str(tmp_path / "config" / "login.json"))
    for name in ("STEWARD_DATABASE_URL", "STEWARD_SERVER", "STEWARD_TOKEN", "STEWARD_VAULT_KEY"):
        monkeypatch.delenv(name, raising=False)
    previous = os.umask(0o022)
    try:
        yield tmp_path / "data"
    finally:
        os.umask(previous)


def steward(*args: str, stdin: str | None = None) -> tuple[int, str]:
    result = runner.invoke(app, list(args), input=stdin)
    return result.exit_code, result.output


def test_a_first_start_makes_everything_private(data: Path) -> None:
    """The data directory, the SQLite database and its WAL files, and the vault key are made
    private by the command that first creates them."""
    code, first = steward("secret", "set", "github", "--host", "api.github.com", stdin="s3cret")
    assert code == 0, first
    code, second = steward("task", "create", "noop")  # the next command opens it again
    assert code == 0, second
    assert mode(data) == 0o700
    assert mode(data / "vault.key") == 0o600
    db = data / "steward.db"
    assert mode(db) == 0o600
    # SQLite creates -wal and -shm with the database file's own mode: a reader makes both
    # (the last connection to close removed them), and they are private too
    conn = sqlite3.connect(db)
    try:
        conn.execute("SELECT count(*) FROM tasks").fetchone()
        companions = [db.with_name(db.name + s) for s in ("-wal", "-shm")]
        assert [mode(p) for p in companions] == [0o600, 0o600]
    finally:
        conn.close()
    assert "could be read by other users" not in first + second  # nothing to tell


def test_files_an_earlier_version_left_readable_are_tightened_and_said_once(data: Path) -> None:
    """A data directory 0755 with a database, WAL files, config file and workspace that others
    could read: the next command makes each private and says which; the one after says
    nothing."""
    data.mkdir(mode=0o755)
    db = data / "steward.db"
    conn = sqlite3.connect(db)  # SQLite's own default: 0644 for the file, its WAL and shm
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("CREATE TABLE t (x)")
    conn.execute("INSERT INTO t VALUES (1)")
    conn.commit()
    wal, shm = db.with_name("steward.db-wal"), db.with_name("steward.db-shm")
    config = data / "steward.toml"
    config.write_text('model = "llama3.1"\n')
    (data / "workspace").mkdir(mode=0o755)
    loose = [data, db, wal, shm, config, data / "workspace"]
    assert [mode(p) for p in loose] == [0o755, 0o644, 0o644, 0o644, 0o644, 0o755]
    try:  # open while the command runs, so that the WAL files are there to be tightened
        code, out = steward("task", "list")
        assert code == 0, out
        assert [mode(p) for p in loose] == [0o700, 0o600, 0o600, 0o600, 0o600, 0o700]
    finally:
        conn.close()
    told = [line for line in out.splitlines() if "could be read by other users" in line]
    assert len(told) == len(loose), out
    for path in loose:
        assert any(f"{path} could be read" in line for line in told), (path, out)

    code, out = steward("task", "list")
    assert code == 0, out
    assert "could be read by other users" not in out


async def test_an_existing_database_opened_by_the_store_is_tightened(tmp_path: Path) -> None:
    """Opening a 0644 SQLite database (an older install, or a worker's ``--db``) makes it and
    its WAL files 0600 before anything is written."""
    previous = os.umask(0o022)
    try:
        home = tmp_path / "mine"
        home.mkdir(mode=0o755)
        db = home / "old.db"
        conn = sqlite3.connect(db)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("CREATE TABLE t (x)")
        files = [db, db.with_name("old.db-wal"), db.with_name("old.db-shm")]
        assert [mode(p) for p in files] == [0o644] * 3
        store = await Store.open(f"sqlite:///{db}")
        try:
            assert [mode(p) for p in files] == [0o600] * 3
            assert mode(home) == 0o755  # the person's own directory is theirs to set
        finally:
            await store.close()
            conn.close()
    finally:
        os.umask(previous)


async def test_workspace_files_and_directories_are_private(tmp_path: Path) -> None:
    previous = os.umask(0o022)
    try:
        workspace = Workspace(tmp_path / "workspace")
        relative = workspace.artifact_path("per_1", "tsk_1", 3, "page")
        await workspace.write_text("per_1", relative, "a large output")
    finally:
        os.umask(previous)
    written = workspace.person_dir("per_1") / relative
    assert written.read_text() == "a large output"
    assert mode(written) == 0o600
    directories = [written.parent, written.parent.parent, workspace.person_dir("per_1")]
    assert [mode(d) for d in [*directories, workspace.root]] == [0o700] * 4


def test_the_saved_login_and_its_directory_are_private(data: Path, tmp_path: Path) -> None:
    """A login saved by an older version with mode 0644 is tightened when next read."""
    login = tmp_path / "config" / "login.json"
    login.parent.mkdir()
    login.write_text(json.dumps({"server": "http://127.0.0.1:9", "token": "stw_x"}))
    assert mode(login) == 0o644
    from steward.cli.remote import Login, read_login, save_login

    assert read_login() == Login(server="http://127.0.0.1:9", token="stw_x")
    assert mode(login) == 0o600
    login.unlink()
    login.parent.rmdir()
    save_login(Login(server="http://127.0.0.1:9", token="stw_y"))
    assert (mode(login.parent), mode(login)) == (0o700, 0o600)
