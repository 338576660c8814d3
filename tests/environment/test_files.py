"""The workspace file tools reach the person's workspace and nothing else: absolute paths, ``..``,
links out (made by the shell, to ``/`` or another person) are refused in words; writes are
atomic and private; stored outputs are not written over."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from steward.domain.actions import EffectClass
from steward.environment.tools import workspace_tools
from steward.harness.tools import Tool, ToolContext, ToolError


@pytest.fixture
def data(tmp_path: Path) -> Path:
    data = tmp_path / "data"
    (data / "workspace" / "ben").mkdir(parents=True)
    (data / "workspace" / "ben" / "diary.txt").write_text("ben's private diary")
    (data / "vault.key").write_text("the vault key")
    return data


def tools() -> dict[str, Tool]:
    return {t.name: t for t in workspace_tools(None)}


async def call(data: Path, name: str, /, **args: Any) -> Any:
    found = tools()[name]
    ctx = ToolContext(
        person_id="ana",
        task_id="tsk_test",
        goal_id=None,
        idempotency_key=None,
        workspace=data / "workspace" / "ana",
        now=datetime(2026, 12, 4, tzinfo=UTC),
    )
    return await found.invoke(found.validate(args), ctx)


def test_the_tools_are_declared_for_the_sentinel() -> None:
    found = tools()
    assert sorted(found) == ["workspace_list", "workspace_read", "workspace_write"]
    assert found["workspace_read"].effect is EffectClass.READ
    assert found["workspace_read"].untrusted_output
    assert (found["workspace_write"].effect, found["workspace_write"].scopes) == (
        EffectClass.LOCAL,
        ("workspace.write",),
    )
    assert found["workspace_write"].summary({"path": "a.txt", "content": "x"}) == (
        "Write a.txt in the workspace"
    )


async def test_write_then_read_and_list(data: Path) -> None:
    written = await call(data, "workspace_write", path="notes/plan.txt", content="buy milk\n")
    assert written == {"path": "/workspace/notes/plan.txt", "written": "created", "size": "9 bytes"}
    again = await call(data, "workspace_write", path="/workspace/notes/plan.txt", content="v2")
    assert again["written"] == "replaced"
    plan = data / "workspace" / "ana" / "notes" / "plan.txt"
    assert (plan.read_text(), plan.stat().st_mode & 0o777) == ("v2", 0o600)
    assert not [p for p in plan.parent.iterdir() if p.name.startswith(".steward-")]
    read = await call(data, "workspace_read", path="notes/plan.txt")
    assert read["text"] == "v2"
    listed = await call(data, "workspace_list", path="")
    assert [e["name"] for e in listed["entries"]] == ["notes"]


async def test_a_long_file_is_read_in_pages(data: Path) -> None:
    text = "".join(f"line {n}\n" for n in range(30_000))
    await call(data, "workspace_write", path="long.txt", content=text)
    first = await call(data, "workspace_read", path="long.txt")
    assert len(first["text"]) == 200_000
    assert "offset=200000" in first["more"]
    rest = await call(data, "workspace_read", path="long.txt", offset=200_000)
    assert first["text"] + rest["text"] == text
    assert "more" not in rest


@pytest.mark.parametrize(
    ("path", "why"),
    [
        ("/etc/passwd", "only your workspace can be reached"),
        ("~/x", "only your workspace can be reached"),
        ("../ben/diary.txt", "cannot go up with .."),
        ("/workspace/../ben/diary.txt", "cannot go up with .."),
        ("notes/../../vault.key", "cannot go up with .."),
        ("a\x00b", "NUL"),
    ],
)
async def test_paths_out_of_the_workspace_are_refused(data: Path, path: str, why: str) -> None:
    for name, args in (
        ("workspace_read", {"path": path}),
        ("workspace_list", {"path": path}),
        ("workspace_write", {"path": path, "content": "x"}),
    ):
        with pytest.raises(ToolError, match=why):
            await call(data, name, **args)
    assert (data / "workspace" / "ben" / "diary.txt").read_text() == "ben's private diary"


async def test_links_out_are_not_followed(data: Path) -> None:
    ana = data / "workspace" / "ana"
    ana.mkdir(parents=True)
    os.symlink(data / "workspace" / "ben", ana / "ben")
    os.symlink(data / "vault.key", ana / "key")
    os.symlink("/", ana / "root")
    for path in ("ben/diary.txt", "key", "root/etc/hostname"):
        with pytest.raises(ToolError, match="symbolic link"):
            await call(data, "workspace_read", path=path)
    with pytest.raises(ToolError, match="symbolic link"):
        await call(data, "workspace_write", path="ben/diary.txt", content="overwritten")
    # writing over a link replaces the link itself, never what it points to
    await call(data, "workspace_write", path="key", content="mine")
    assert (ana / "key").read_text() == "mine"
    assert not (ana / "key").is_symlink()
    assert (data / "vault.key").read_text() == "the vault key"
    assert (data / "workspace" / "ben" / "diary.txt").read_text() == "ben's private diary"
    listed = await call(data, "workspace_list", path="")
    assert {e["name"]: e["kind"] for e in listed["entries"]}["root"] == "link (not followed)"


async def test_stored_outputs_are_not_written(data: Path) -> None:
    with pytest.raises(ToolError, match="stored tool outputs"):
        await call(data, "workspace_write", path="artifacts/x.txt", content="x")
