"""A person's workspace holds at most its quota: a write that would pass it is refused before
anything is written; a command may make a file grow only by what is left; a workspace over its
quota (several files, each within what was left) is said so, then takes no write and lets a
command only read, move and remove, until files are removed."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from environment.conftest import QUICK, require_bwrap
from steward.config import Settings
from steward.environment import quota
from steward.environment.sandbox import Sandbox
from steward.environment.tools import workspace_tools
from steward.harness.tools import ToolContext, ToolError


class Workspace:
    def __init__(self, root: Path, most: int) -> None:
        self.path = root / "workspace" / "ana"
        self.tools = {t.name: t for t in workspace_tools(Sandbox(QUICK), quota_bytes=most)}
        self.ctx = ToolContext(
            person_id="ana",
            task_id="tsk_quota",
            goal_id=None,
            idempotency_key=None,
            workspace=self.path,
            now=datetime(2026, 12, 4, tzinfo=UTC),
        )

    async def call(self, name: str, /, **args: Any) -> Any:
        found = self.tools[name]
        return await found.invoke(found.validate(args), self.ctx)

    async def run(self, command: str) -> dict[str, Any]:
        result: dict[str, Any] = await self.call("workspace_shell", command=command)
        return result


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    require_bwrap()
    return Workspace(tmp_path, 2_000_000)


async def test_a_write_past_the_quota_is_refused_before_writing(ws: Workspace) -> None:
    await ws.call("workspace_write", path="a.txt", content="x" * 900_000)
    await ws.call("workspace_write", path="b.txt", content="y" * 900_000)
    with pytest.raises(ToolError) as refused:
        await ws.call("workspace_write", path="c.txt", content="z" * 500_000)
    assert str(refused.value) == (
        "writing 500.0 KB would take your workspace past its 2.0 MB quota (it holds 1.8 MB): "
        "remove files first; nothing was written"
    )
    assert not (ws.path / "c.txt").exists()
    # replacing a file counts what it replaces
    await ws.call("workspace_write", path="b.txt", content="y" * 1_000_000)
    assert (ws.path / "b.txt").stat().st_size == 1_000_000


async def test_a_file_grows_only_by_what_is_left(ws: Workspace) -> None:
    await ws.call("workspace_write", path="a.txt", content="x" * 1_000_000)
    ran = await ws.run("head -c 3000000 /dev/zero > big.bin")
    assert ran["result"].startswith("stopped: it tried to write a file larger than")
    assert "what is left of your workspace's 2.0 MB quota" in ran["quota"]
    assert 0 < (ws.path / "big.bin").stat().st_size <= 1_000_000


async def test_a_workspace_over_its_quota_takes_nothing_until_files_are_removed(
    ws: Workspace,
) -> None:
    # each file is within what was left when the command started; together they are not
    ran = await ws.run("for n in 1 2 3; do head -c 1500000 /dev/zero > part$n.bin; done; ls")
    assert ran["result"] == "finished"
    assert ran["files_written"] == ["part1.bin", "part2.bin", "part3.bin"]
    assert ran["quota"] == (
        "your workspace holds 4.5 MB, more than its 2.0 MB quota: remove files before writing "
        "anything else"
    )
    with pytest.raises(ToolError, match=r"more than its 2\.0 MB quota.*nothing was written"):
        await ws.call("workspace_write", path="note.txt", content="hello")
    # a command still reads and removes, and makes nothing grow
    ran = await ws.run("echo more >> part1.bin")
    assert (
        ran["result"]
        == "stopped: it tried to write to a file, and this command may make no file grow"
    )
    assert ran["quota"].endswith("this command could read, move and remove files, not add")
    assert (ws.path / "part1.bin").stat().st_size == 1_500_000
    ran = await ws.run("ls *.bin | wc -l; rm part2.bin part3.bin")
    assert (ran["result"], ran["output"].strip()) == ("finished", "3")
    assert ran["quota"] == "your workspace is within its quota again (1.5 MB of 2.0 MB)"
    await ws.call("workspace_write", path="note.txt", content="hello")
    assert (ws.path / "note.txt").read_text() == "hello"


def test_links_and_deep_folders_do_not_escape_the_measure(tmp_path: Path) -> None:
    home = tmp_path / "ana"
    (home / "in").mkdir(parents=True)
    (home / "in" / "f").write_bytes(b"x" * 1000)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "huge").write_bytes(b"y" * 100_000)
    (home / "link").symlink_to(outside)
    measured = quota.measure(home)
    assert (measured.used, measured.problem) == (1000, None)
    assert list(measured.files) == ["in/f"]
    deep = home.joinpath(*["d"] * (quota.MAX_DEPTH + 2))
    deep.mkdir(parents=True)
    problem = quota.over(quota.measure(home), 1 << 30)
    assert (
        problem == f"your workspace is full: it has folders nested more than {quota.MAX_DEPTH} deep"
    )


def test_the_quota_is_a_setting(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("STEWARD_DATA_DIR", str(tmp_path))
    assert Settings().workspace_quota_mb == 1024
    monkeypatch.setenv("STEWARD_WORKSPACE_QUOTA_MB", "5")
    assert Settings().workspace_quota_mb == 5
