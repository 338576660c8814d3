"""``steward connect folder`` from the terminal, on both store backends: no password is asked
(there is none), the check says what was found, a folder that is not there is refused and
nothing kept."""

from __future__ import annotations

import asyncio
from pathlib import Path

from support.cli import WIDE, cli, cli_json


async def test_connecting_folders_from_the_terminal(db_url: str, tmp_path: Path) -> None:
    env = {**WIDE, "STEWARD_DATA_DIR": str(tmp_path / "data"), "STEWARD_VAULT_KEY": ""}
    (tmp_path / "Documents" / "taxes").mkdir(parents=True)
    (tmp_path / "Documents" / "taxes" / "2025.txt").write_text("Income")
    (tmp_path / "Scans").mkdir()
    roots = f"--set=roots={tmp_path / 'Documents'}, Invoices={tmp_path / 'Scans'}"
    code, out = await asyncio.to_thread(
        cli, db_url, "connect", "folder", "--name", "files", roots, "--read-only", env=env
    )
    assert code == 0, out
    assert " ".join(out.split()) == (
        "Connected files (folder). 2 folders: Documents (1 file), Invoices (0 files); "
        "read-only. Steward may read files in your folders through it."
    )
    [listed] = await asyncio.to_thread(cli_json, db_url, "connection", "list", env=env)
    assert (listed["name"], listed["scopes"]) == ("files", ["folder.read"])

    missing = f"--set=roots={tmp_path / 'Nowhere'}"
    code, out = await asyncio.to_thread(
        cli, db_url, "connect", "folder", "--name", "more", missing, env=env
    )
    assert code == 1
    assert "there is no folder" in out
    assert len(await asyncio.to_thread(cli_json, db_url, "connection", "list", env=env)) == 1
