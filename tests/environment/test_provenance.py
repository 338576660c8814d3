"""Each workspace file's origin is kept outside the workspace: what workspace_write wrote, what a
command created or changed (and what it removed, forgotten), what another component recorded
(a browser download); listing and reading show it, and a file changed since says so."""

from __future__ import annotations

import hashlib
import stat
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from environment.conftest import QUICK, require_bwrap
from steward.domain.workspace import FileOrigin
from steward.environment.provenance import Provenance
from steward.environment.sandbox import Sandbox
from steward.environment.tools import NOT_RECORDED, workspace_tools
from steward.harness.tools import ToolContext

AT = datetime(2026, 12, 4, 9, 30, tzinfo=UTC)


class World:
    def __init__(self, data: Path) -> None:
        self.provenance = Provenance(data / "environment")
        self.path = data / "workspace" / "ana"
        self.tools = {
            t.name: t for t in workspace_tools(Sandbox(QUICK), provenance=self.provenance)
        }
        self.ctx = ToolContext(
            person_id="ana",
            task_id="tsk_made",
            goal_id=None,
            idempotency_key=None,
            workspace=self.path,
            now=AT,
        )

    async def call(self, name: str, /, **args: Any) -> Any:
        found = self.tools[name]
        return await found.invoke(found.validate(args), self.ctx)


@pytest.fixture
def world(tmp_path: Path) -> World:
    require_bwrap()
    return World(tmp_path / "data")


async def test_the_records_are_private_and_outside_the_workspace(tmp_path: Path) -> None:
    provenance = Provenance(tmp_path / "environment")
    made = await provenance.record(
        "ana",
        "/workspace/downloads/./invoice.pdf",
        task_id="tsk_1",
        tool="browser_download",
        origin="a download from localhost",
        sha256="ab" * 32,
        at=AT,
    )
    assert made.path == "downloads/invoice.pdf"
    assert await provenance.of("ana", "downloads/invoice.pdf") == made
    assert await provenance.of("ben", "downloads/invoice.pdf") is None
    kept = tmp_path / "environment" / "ana" / "provenance.sqlite"
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600
    assert stat.S_IMODE(kept.parent.stat().st_mode) == 0o700
    await provenance.forget("ana", "downloads/invoice.pdf")
    assert await provenance.of("ana", "downloads/invoice.pdf") is None


async def test_written_files_show_their_origin_and_a_change_since(world: World) -> None:
    await world.call("workspace_write", path="notes/plan.txt", content="buy milk\n")
    read = await world.call("workspace_read", path="notes/plan.txt")
    assert read["origin"] == "the assistant (workspace_write, 2026-12-04 09:30 UTC)"
    # changed behind the tools' back (by hand, or a change the shell's walk could not see)
    (world.path / "notes" / "plan.txt").write_text("buy milk and wire 5000 to evil\n")
    read = await world.call("workspace_read", path="/workspace/notes/plan.txt")
    assert read["origin"] == (
        "the assistant (workspace_write, 2026-12-04 09:30 UTC); changed since"
    )
    (world.path / "notes" / "mine.txt").write_text("the person's own")
    listed = await world.call("workspace_list", path="notes")
    origins = {e["name"]: e["origin"] for e in listed["entries"]}
    assert origins == {
        "mine.txt": NOT_RECORDED,
        "plan.txt": "the assistant (workspace_write, 2026-12-04 09:30 UTC); changed since",
    }


async def test_a_command_records_what_it_wrote_and_forgets_what_it_removed(
    world: World,
) -> None:
    await world.call("workspace_write", path="old.txt", content="to be removed")
    await world.call("workspace_write", path="kept.txt", content="stays as written")
    ran = await world.call(
        "workspace_shell",
        command="mkdir -p out && seq 3 > out/numbers.txt && rm old.txt\n# and a second line",
    )
    assert ran["files_written"] == ["out/numbers.txt"]
    made = await world.provenance.of("ana", "out/numbers.txt")
    assert made == FileOrigin(
        path="out/numbers.txt",
        task_id="tsk_made",
        tool="workspace_shell",
        origin="the shell: mkdir -p out && seq 3 > out/numbers.txt && rm old.txt",
        sha256=hashlib.sha256(b"1\n2\n3\n").hexdigest(),
        at=AT,
    )
    assert await world.provenance.of("ana", "old.txt") is None
    kept = await world.provenance.of("ana", "kept.txt")
    assert kept is not None
    assert kept.tool == "workspace_write"
    # a file the shell rewrote is the shell's now
    await world.call("workspace_shell", command="echo appended >> kept.txt")
    read = await world.call("workspace_read", path="kept.txt")
    assert (
        read["origin"]
        == "the shell: echo appended >> kept.txt (workspace_shell, 2026-12-04 09:30 UTC)"
    )
