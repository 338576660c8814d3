"""``steward backup`` and ``restore`` as a person types them: plain sentences, the vault key
called out, one-line refusals that change nothing (``steward upgrade``: in
``tests/store/test_release_upgrade.py``, with the databases it upgrades)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from steward.cli.main import app

runner = CliRunner()


@pytest.fixture
def data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("STEWARD_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("STEWARD_LOGIN_FILE", str(tmp_path / "login.json"))
    monkeypatch.setenv("COLUMNS", "200")
    for name in ("STEWARD_DATABASE_URL", "STEWARD_SERVER", "STEWARD_TOKEN", "STEWARD_VAULT_KEY"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path / "data"


def steward(*args: str, stdin: str | None = None) -> tuple[int, str]:
    result = runner.invoke(app, list(args), input=stdin)
    return result.exit_code, result.output


def test_backup_then_restore_elsewhere(
    data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out = steward("secret", "set", "mail", "--host", "mail.example", stdin="hunter2\n")
    assert code == 0, out
    code, out = steward("backup", "--to", str(tmp_path / "b.tar.gz"))
    assert code == 0, out
    assert "1 secrets" in out
    assert "This archive holds your vault key: keep it safe" in out

    code, out = steward("backup", "--to", str(tmp_path / "s.bin"), "--passphrase-env", "PASS")
    assert code == 1
    assert out.strip() == ("error: --passphrase-env PASS: the environment variable PASS is not set")
    monkeypatch.setenv("PASS", "correct horse")
    code, out = steward("backup", "--to", str(tmp_path / "s.bin"), "--passphrase-env", "PASS")
    assert code == 0, out
    assert "keep it safe" not in out

    # into the same, non-empty place: refused, saying what it would replace
    code, out = steward("restore", str(tmp_path / "b.tar.gz"))
    assert code == 1
    assert "would replace the database" in " ".join(out.split())
    assert "--force" in out

    monkeypatch.setenv("STEWARD_DATA_DIR", str(tmp_path / "elsewhere"))
    code, out = steward("restore", str(tmp_path / "s.bin"))
    assert code == 1
    assert "sealed with a passphrase" in out
    code, out = steward("restore", str(tmp_path / "s.bin"), "--passphrase-env", "PASS")
    assert code == 0, out
    assert "1 secrets" in out
    assert (tmp_path / "elsewhere" / "vault.key").read_text() == (data / "vault.key").read_text()
