"""The facade's workspace files: listed newest first with where a task's files came from, and
downloaded confined as the agent's file tools are — no way up or out, no link followed, another
person's file not found."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from steward.domain import Artifact, TaskSpec
from steward.domain.clock import SimulatedClock
from steward.domain.ids import new_id
from steward.errors import NotFound, UsageError
from steward.harness.workspace import Workspace
from steward.service import Service
from steward.store import Store
from support.tenancy import Tenant, make_tenant

T0 = datetime(2026, 3, 1, 9, 14, tzinfo=UTC).timestamp()


def _write(home: Path, path: str, data: bytes, at: float) -> Path:
    file = home / path
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_bytes(data)
    os.utime(file, (at, at))
    return file


@pytest.fixture
async def world(
    store: Store, clock: SimulatedClock, tmp_path: Path
) -> tuple[Tenant, Tenant, Service, Path, Path]:
    a = await make_tenant(store, clock, "ann", tmp_path)
    b = await make_tenant(store, clock, "bob", tmp_path)
    workspace = Workspace(tmp_path / "workspace")
    return (
        a,
        b,
        Service(store, clock, data_dir=tmp_path),
        workspace.person_dir(a.person.id),
        workspace.person_dir(b.person.id),
    )


async def test_files_are_listed_newest_first_with_the_task_that_made_them(
    store: Store, clock: SimulatedClock, world: tuple[Tenant, Tenant, Service, Path, Path]
) -> None:
    a, _, owner, home, bobs = world
    as_a = await owner.authenticate(a.read)
    task = await owner.create_task(
        person_id=a.person.id, spec=TaskSpec(kind="noop", title="Compare laptop prices")
    )
    workspace = Workspace(home.parent)
    kept = workspace.artifact_path(a.person.id, task.id, 3, "web_fetch")
    size, sha256 = await workspace.write_text(a.person.id, kept, "x" * 12_400)
    os.utime(home / kept, (T0 + 60, T0 + 60))
    await store.inbox.add_artifact(
        Artifact(
            id=new_id("art"),
            person_id=a.person.id,
            task_id=task.id,
            name="web_fetch",
            path=kept,
            size=size,
            sha256=sha256,
            media_type="text/plain",
            created_at=clock.now(),
        )
    )
    _write(home, "notes/plan.txt", b"pack light", T0)
    os.utime(home / a.file, (T0 - 60, T0 - 60))
    _write(home, "report.pdf", b"%PDF-1.7", T0 + 120)
    _write(home, "film.mp4.part", b"half", T0 + 180)  # a download still running
    (home / "outside").symlink_to(bobs)  # links lead nowhere, in a listing too
    (home / "secret").symlink_to(home.parent.parent / "vault.key")
    # another name of a file elsewhere
    os.link(_write(bobs, "diary.txt", b"dear diary", T0), home / "bobs.txt")

    listing = await as_a.workspace_files()

    paths = [f.path for f in listing.files]
    assert paths == ["report.pdf", kept, "notes/plan.txt", a.file]
    made = {f.path: f for f in listing.files}
    assert made[kept].task == "Compare laptop prices"
    assert made[kept].tool == "web_fetch"
    assert made[kept].size_in_words == "12.4 KB"
    assert made["notes/plan.txt"].task is None
    assert made["notes/plan.txt"].modified == datetime(2026, 3, 1, 9, 14, tzinfo=UTC)
    assert made["notes/plan.txt"].size_in_words == "10 bytes"
    assert listing.not_shown == 0


async def test_a_download_is_confined_to_the_persons_own_workspace(
    world: tuple[Tenant, Tenant, Service, Path, Path],
) -> None:
    a, b, owner, home, bobs = world
    as_a = await owner.authenticate(a.read)
    _write(home, "notes/plan.txt", b"pack light\x00\xff", T0)
    (home / "to-bob").symlink_to(bobs)
    (home / "bobs-page").symlink_to(bobs / b.file)
    (home / "key").symlink_to(home.parent.parent / "vault.key")
    os.link(_write(bobs, "diary.txt", b"dear diary", T0), home / "bobs.txt")

    got = await as_a.workspace_file("notes/plan.txt")
    assert (got.name, got.data) == ("plan.txt", b"pack light\x00\xff")
    assert (await as_a.workspace_file("/workspace/notes/plan.txt")).data == got.data
    assert (await as_a.workspace_file(a.file)).data == b"ann's page"

    for outside, words in (
        (f"../{bobs.name}/{b.file}", "cannot go up"),
        ("notes/../../../vault.key", "cannot go up"),
        (str(bobs / b.file), "only your workspace"),
        ("/etc/passwd", "only your workspace"),
        ("notes/plan.txt\x00", "NUL"),
    ):
        with pytest.raises(UsageError, match=words):
            await as_a.workspace_file(outside)
    for hidden in (
        b.file,  # bob's file by its path: not in ann's workspace
        f"to-bob/{b.file}",  # through a linked folder
        "bobs-page",  # a link to it
        "key",  # a link to the vault's key
        "bobs.txt",  # a hard link to it
        "notes",  # a folder
        "notes/gone.txt",
        "",
    ):
        with pytest.raises(NotFound):
            await as_a.workspace_file(hidden)
    with pytest.raises(NotFound, match=b.person.id):  # naming bob: as if bob did not exist
        await as_a.workspace_file(b.file, person_id=b.person.id)
    with pytest.raises(NotFound, match=b.person.id):
        await as_a.workspace_files(person_id=b.person.id)
    assert (await owner.workspace_file(b.file, person_id=b.person.id)).data == b"bob's page"


async def test_a_person_without_files_sees_none_and_nothing_is_made(
    store: Store, clock: SimulatedClock, tmp_path: Path
) -> None:
    owner = Service(store, clock, data_dir=tmp_path)
    person = await owner.ensure_person("cat")
    listing = await owner.workspace_files(person_id=person.id)
    assert (listing.files, listing.not_shown) == ([], 0)
    with pytest.raises(NotFound):
        await owner.workspace_file("notes.txt", person_id=person.id)
    assert not (tmp_path / "workspace").exists()
    with pytest.raises(UsageError, match="no data directory"):
        await Service(store, clock).workspace_files(person_id=person.id)
