"""Backup and restore (:mod:`steward.service.backup`): a backup taken while a runtime runs
tasks restores into a fresh place with nothing lost and nothing run twice, on both backends;
what a restore must refuse, it refuses, changing nothing."""

from __future__ import annotations

import asyncio
import io
import json
import tarfile
from pathlib import Path

import pytest

from steward.domain import Approval, ApprovalStatus, Person, TaskSpec, TaskStatus
from steward.domain.clock import Clock
from steward.errors import UsageError
from steward.runtime.builtin import builtin_harness
from steward.runtime.runtime import Runtime, RuntimeConfig
from steward.sentinel.vault import KEY_ENV, KEY_FILE, Vault, VaultKeys
from steward.service import Service
from steward.service.backup import MANIFEST, read_manifest, restore_backup, take_backup
from steward.store import Fence, Store
from support.approvals import record_approval
from support.databases import fresh_postgres_url
from support.startup import scaled
from support.waiting import eventually

TASKS = 8
STEPS = 6


def _target(request: pytest.FixtureRequest, db_url: str, tmp_path: Path) -> str:
    if db_url.startswith("sqlite"):
        return f"sqlite:///{tmp_path / 'restored' / 'steward.db'}"
    fresh = fresh_postgres_url()
    url = next(fresh)
    request.addfinalizer(lambda: next(fresh, None))  # drops it
    return url


async def _finished(store: Store) -> set[str]:
    tasks = await store.tasks.list_tasks(status=[TaskStatus.SUCCEEDED], limit=1000)
    return {task.id for task in tasks}


async def test_a_backup_under_load_restores_with_nothing_lost_or_run_twice(
    request: pytest.FixtureRequest, db_url: str, tmp_path: Path
) -> None:
    data_dir = tmp_path / "data"
    (data_dir / "workspace").mkdir(parents=True)
    (data_dir / "workspace" / "notes.txt").write_text("the person's file")
    store = await Store.open(db_url)
    clock = Clock()
    runtime = Runtime(
        store,
        builtin_harness(),
        clock,
        RuntimeConfig(lease_seconds=3.0, poll_seconds=0.2, concurrency=4),
    )
    svc = Service(store, clock, runtime, data_dir=data_dir)
    person: Person = await svc.ensure_person("me")
    await svc.put_secret(person_id=person.id, name="mail", value="hunter2", hosts=["mail.example"])
    goal = await svc.create_goal(person_id=person.id, title="follow the settlement bugs")
    await svc.remember(person_id=person.id, content="My sister Ana lives in Porto")
    approval = await _pending_approval(store, clock, person, goal.id)
    for n in range(TASKS):
        await svc.create_task(
            person_id=person.id,
            spec=TaskSpec(kind="noop", input={"steps": STEPS}, title=f"t{n}"),
            goal_id=goal.id,
        )
    running = asyncio.create_task(runtime.run())
    try:
        await eventually(
            lambda: _some_done(store), "a few tasks finished", seconds=scaled(60), every=0.02
        )
        before = await _finished(store)
        activations_before = {
            task_id: len(await store.activations.list_activations(task_id=task_id))
            for task_id in before
        }
        made = await asyncio.to_thread(
            take_backup,
            url=db_url,
            data_dir=data_dir,
            dest=tmp_path / "steward.tar.gz",
            now=clock.now(),
        )
    finally:
        runtime.stop()
        await running
        await store.close()
    assert made.manifest.vault_key
    assert made.manifest.secrets == 1
    assert made.manifest.tasks == TASKS + 1
    assert made.manifest.memories == 1
    assert len(before) < TASKS, "the backup was to be taken while tasks still ran"

    target_url = _target(request, db_url, tmp_path)
    restored_dir = tmp_path / "restored"
    restore_backup(source=made.path, url=target_url, data_dir=restored_dir, environ={})
    assert (restored_dir / "workspace" / "notes.txt").read_text() == "the person's file"

    store = await Store.open(target_url)
    runtime = Runtime(store, builtin_harness(), clock, RuntimeConfig(poll_seconds=0.2))
    svc = Service(store, clock, runtime, data_dir=restored_dir)
    # nothing lost: what was finished still is, and the memory, goal and secret are there
    assert before <= await _finished(store)
    hits = await svc.search_memories(person_id=person.id, query="Ana")
    assert [hit.memory.content for hit in hits] == ["My sister Ana lives in Porto"]
    assert (await svc.goal_detail(goal.id))["goal"].title == goal.title
    assert (await svc.get_approval(approval.id)).status is ApprovalStatus.PENDING
    _, ciphertext = await store.secrets.secret_ciphertext(person.id, "mail")
    assert Vault(VaultKeys.load(restored_dir, environ={})).decrypt(ciphertext) == "hunter2"
    running = asyncio.create_task(runtime.run())
    try:
        # the tasks in flight at the backup are taken up again once their old leases expire
        await eventually(
            lambda: _all_done(store), "every task finished", seconds=scaled(120), every=0.1
        )
    finally:
        runtime.stop()
        await running
    try:
        for task in await store.tasks.list_tasks(limit=1000):
            if task.id != approval.task_id:
                assert task.result == {"steps": STEPS}, task
        # nothing run twice: a task finished before the backup had no activation since
        for task_id, count in activations_before.items():
            assert len(await store.activations.list_activations(task_id=task_id)) == count
    finally:
        await store.close()


async def _pending_approval(store: Store, clock: Clock, person: Person, goal_id: str) -> Approval:
    """A pending approval, recorded as a running task records one (under its short lease,
    which then runs out: a worker finishes that task later)."""
    await store.tasks.create_task(
        TaskSpec(kind="noop", title="write to Ana"),
        person_id=person.id,
        goal_id=goal_id,
        now=clock.now(),
    )
    [claim] = await store.tasks.claim_tasks(worker="w-1", limit=1, lease_seconds=3, now=clock.now())
    return await record_approval(
        store,
        clock,
        Fence.of(claim),
        person_id=person.id,
        goal_id=goal_id,
        args={"to": "ana@example.com", "body": "hello"},
        title="may I email Ana?",
    )


async def _some_done(store: Store) -> bool:
    return len(await _finished(store)) >= 3


async def _all_done(store: Store) -> bool:
    return len(await _finished(store)) == TASKS + 1  # and the approval's task


@pytest.fixture
async def backed_up(tmp_path: Path) -> tuple[Path, Path]:
    """A SQLite Steward with one secret, and its data directory."""
    data_dir = tmp_path / "data"
    url = f"sqlite:///{data_dir / 'steward.db'}"
    store = await Store.open(url)
    try:
        svc = Service(store, Clock(), data_dir=data_dir)
        person = await svc.ensure_person("me")
        await svc.put_secret(person_id=person.id, name="mail", value="hunter2", hosts=["m.example"])
    finally:
        await store.close()
    return data_dir, tmp_path


def test_a_sealed_backup_opens_only_with_its_passphrase(backed_up: tuple[Path, Path]) -> None:
    data_dir, tmp = backed_up
    url = f"sqlite:///{data_dir / 'steward.db'}"
    made = take_backup(
        url=url, data_dir=data_dir, dest=tmp / "b.sealed", now=Clock().now(), passphrase="pass"
    )
    assert made.sealed
    with pytest.raises(tarfile.ReadError), tarfile.open(made.path):  # sealed: no tar.gz
        pass
    target = tmp / "new"
    with pytest.raises(UsageError, match="sealed with a passphrase"):
        restore_backup(source=made.path, url=f"sqlite:///{target / 's.db'}", data_dir=target)
    with pytest.raises(UsageError, match="wrong passphrase"):
        restore_backup(
            source=made.path, url=f"sqlite:///{target / 's.db'}", data_dir=target, passphrase="x"
        )
    cut = tmp / "cut.sealed"
    cut.write_bytes(made.path.read_bytes()[:-20])
    with pytest.raises(UsageError, match=r"cut short|damaged"):
        restore_backup(
            source=cut, url=f"sqlite:///{target / 's.db'}", data_dir=target, passphrase="pass"
        )
    assert not target.exists(), "a refused restore changes nothing"
    restore_backup(
        source=made.path, url=f"sqlite:///{target / 's.db'}", data_dir=target, passphrase="pass"
    )
    assert (target / KEY_FILE).read_text() == (data_dir / KEY_FILE).read_text()


def test_a_restore_refuses_what_it_cannot_do_well(
    backed_up: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    data_dir, tmp = backed_up
    url = f"sqlite:///{data_dir / 'steward.db'}"
    target = tmp / "new"
    target_url = f"sqlite:///{target / 'steward.db'}"
    # into a place that is not empty: refused, saying what would be replaced; then forced
    made = take_backup(url=url, data_dir=data_dir, dest=tmp / "b.tar.gz", now=Clock().now())
    with pytest.raises(UsageError, match=r"would replace the database .* 1 secrets\); .*vault.key"):
        restore_backup(source=made.path, url=url, data_dir=data_dir)
    done = restore_backup(source=made.path, url=url, data_dir=data_dir, force=True)
    assert done.replaced
    assert (data_dir / KEY_FILE).exists()

    # a backup without the vault key while secrets are stored: refused unless the key is given
    key = (data_dir / KEY_FILE).read_text().strip()
    (data_dir / KEY_FILE).rename(tmp / "key.aside")
    keyless = take_backup(url=url, data_dir=data_dir, dest=tmp / "k.tar.gz", now=Clock().now())
    assert not keyless.manifest.vault_key
    with pytest.raises(UsageError, match="not the vault key"):
        restore_backup(source=keyless.path, url=target_url, data_dir=target, environ={})
    assert not target.exists()
    restore_backup(source=keyless.path, url=target_url, data_dir=target, environ={KEY_ENV: key})

    # made by a newer Steward (a schema revision this one does not know): refused by name
    newer = tmp / "newer.tar.gz"
    with tarfile.open(made.path) as src, tarfile.open(newer, "w:gz") as out:
        for member in src.getmembers():
            raw = src.extractfile(member) if member.isfile() else None
            if member.name == MANIFEST and raw is not None:
                manifest = json.loads(raw.read())
                manifest |= {"schema_revision": "9999", "steward_version": "9.0.0"}
                body = json.dumps(manifest).encode()
                member.size = len(body)
                out.addfile(member, io.BytesIO(body))
            else:
                out.addfile(member, raw)
    assert read_manifest(newer).steward_version == "9.0.0"
    for bad in (b"not a backup at all", made.path.read_bytes()[:30]):
        (tmp / "bad.tar.gz").write_bytes(bad)
        with pytest.raises(UsageError, match="damaged or not a Steward backup"):
            read_manifest(tmp / "bad.tar.gz")
    elsewhere = tmp / "elsewhere"
    with pytest.raises(UsageError, match=r"made by Steward 9\.0\.0, whose .* schema is newer"):
        restore_backup(source=newer, url=f"sqlite:///{elsewhere / 's.db'}", data_dir=elsewhere)
    assert not elsewhere.exists()
