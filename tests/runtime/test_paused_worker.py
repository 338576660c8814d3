"""A worker paused inside a transaction on PostgreSQL (SIGSTOP, a hung host) neither blocks the
takeover of its task nor commits after its lease expired.

To pause worker A *inside* a transaction, the test holds the person's feed lock (the last lock a
checkpoint takes, after it has locked the task row), freezes A while its checkpoint waits on it,
and lets go: A's session is then idle in transaction, holding the task's row lock, which the
scheduler's reaper (``SKIP LOCKED``) cannot take. The server ends such a session after
``idle_in_transaction_session_timeout``; and a transaction that is let go on after its lease
expired fails the lease check that runs right before COMMIT.
"""

from __future__ import annotations

import signal
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import psycopg
import pytest

from steward.domain import TaskSpec, TaskStatus
from steward.store import Store
from support.processes import log_tails, spawn, start_deadline, stop_all, until
from support.startup import scaled

pytestmark = [pytest.mark.slow, pytest.mark.postgres]

A_WENT_ON = ("database available again", "activation abandoned: lease lost")
"""What a worker thawed after its session ended may log first; both mean it went on."""
LEASE_SECONDS = 3.0
"""Worker A's lease on a quiet machine (scaled for this one)."""
IDLE_SECONDS = 2.0
FENCE_LINES = ("activation rejected by fence", "activation abandoned: lease lost")


class PausedWorker:
    """Worker A, frozen with its checkpoint transaction open on the server."""

    def __init__(self, proc: subprocess.Popen[bytes], backend: int, activation_id: str) -> None:
        self.proc = proc
        self.backend = backend
        """Its server process, idle in transaction."""
        self.activation_id = activation_id


async def pause_in_transaction(
    store: Store,
    db_url: str,
    person_id: str,
    task_id: str,
    procs: dict[str, subprocess.Popen[bytes]],
    logs: Path,
    env: dict[str, str],
) -> PausedWorker:
    feed_lock = f"feed:{person_id}"
    with psycopg.connect(db_url, autocommit=True) as admin:
        admin.execute("SELECT pg_advisory_lock(hashtext(%s))", (feed_lock,))
        a = procs["a"] = spawn(
            "worker", db_url, logs / "a.log", "--lease-seconds", str(scaled(LEASE_SECONDS)), env=env
        )

        async def waiting() -> bool:
            row = admin.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                " AND wait_event_type = 'Lock' AND wait_event = 'advisory'"
            ).fetchone()
            return row is not None and row[0] > 0

        await until(waiting, "A's checkpoint to wait for the lock", procs, logs, start_deadline())
        a.send_signal(signal.SIGSTOP)
        row = admin.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database()"
            " AND wait_event_type = 'Lock' AND wait_event = 'advisory'"
        ).fetchone()
        assert row is not None
        backend: int = row[0]
        admin.execute("SELECT pg_advisory_unlock(hashtext(%s))", (feed_lock,))

        async def idle_in_transaction() -> bool:
            found = admin.execute(
                "SELECT state FROM pg_stat_activity WHERE pid = %s", (backend,)
            ).fetchone()
            return found is not None and found[0] == "idle in transaction"

        await until(idle_in_transaction, "A to be idle in transaction", procs, logs, 30)
    (activation,) = await store.activations.list_activations(task_id=task_id)
    return PausedWorker(a, backend, activation.id)


@pytest.mark.parametrize("db_url", ["postgres"], indirect=True)
async def test_a_paused_worker_loses_its_row_lock_and_its_task_is_taken_over(
    db_url: str, tmp_path: Path
) -> None:
    """Measured: the time from A's pause to worker B's claim of the task (never, while A is
    paused, without a bound on idle transactions)."""
    store = await Store.open(db_url)
    procs: dict[str, subprocess.Popen[bytes]] = {}
    try:
        now = datetime.now(UTC)
        person = await store.persons.create_person(name="paused", now=now)
        task = await store.tasks.create_task(
            TaskSpec(kind="noop", input={"steps": 3}), person_id=person.id, now=now
        )
        env = {"STEWARD_DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_SECONDS": str(IDLE_SECONDS)}
        paused = await pause_in_transaction(store, db_url, person.id, task.id, procs, tmp_path, env)
        procs["scheduler"] = spawn("scheduler", db_url, tmp_path / "scheduler.log")
        procs["b"] = spawn("worker", db_url, tmp_path / "b.log")

        async def taken_over() -> bool:
            return (await store.tasks.get_task(task.id)).epoch >= 2

        took = await until(
            taken_over,
            "worker B to take the paused worker's task over",
            procs,
            tmp_path,
            start_deadline(scaled(LEASE_SECONDS) + 2 * IDLE_SECONDS),
        )

        async def finished() -> bool:
            return (await store.tasks.get_task(task.id)).status.terminal

        await until(finished, "worker B to finish the task", procs, tmp_path, start_deadline())
        paused.proc.send_signal(signal.SIGCONT)

        async def a_went_on() -> bool:
            # its session was ended under it: it sees either the outage end, or (the lease
            # checked first) that the task is no longer its own; either way it stays up
            said = (tmp_path / "a.log").read_text()
            return any(line in said for line in A_WENT_ON)

        await until(a_went_on, "A to shrug off its ended session", procs, tmp_path, scaled(60))
        done = await store.tasks.get_task(task.id)
        assert done.status is TaskStatus.SUCCEEDED, done.error
        steps = await store.activations.list_steps(task.id)
        assert [s.seq for s in steps] == [1, 2, 3]
        assert paused.activation_id not in {s.activation_id for s in steps}
        assert paused.proc.poll() is None, "worker A exited"
        assert "Traceback" not in (tmp_path / "a.log").read_text(), log_tails(tmp_path)
    finally:
        stop_all(procs)
        await store.close()
    print(f"\npaused worker's task taken over {took:.1f}s after the pause")
    print(f"(lease {scaled(LEASE_SECONDS):g}s, idle-in-transaction timeout {IDLE_SECONDS:g}s)")


@pytest.mark.parametrize("db_url", ["postgres"], indirect=True)
async def test_a_transaction_let_go_after_its_lease_expired_does_not_commit(
    db_url: str, tmp_path: Path
) -> None:
    """No idle limit here: A stays paused, its checkpoint open, past the end of its lease, and
    is let go. The fence was checked when the statement ran, in time; it is checked again by
    database time before COMMIT, and the step is not committed."""
    store = await Store.open(db_url)
    procs: dict[str, subprocess.Popen[bytes]] = {}
    try:
        now = datetime.now(UTC)
        person = await store.persons.create_person(name="late", now=now)
        task = await store.tasks.create_task(
            TaskSpec(kind="noop", input={"steps": 3}), person_id=person.id, now=now
        )
        env = {"STEWARD_DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_SECONDS": "0"}
        paused = await pause_in_transaction(store, db_url, person.id, task.id, procs, tmp_path, env)

        with psycopg.connect(db_url, autocommit=True) as admin:

            async def lease_over() -> bool:
                row = admin.execute(
                    "SELECT lease_expires_at < extract(epoch from clock_timestamp()) - 0.5"
                    " FROM tasks WHERE id = %s",
                    (task.id,),
                ).fetchone()
                return row is not None and bool(row[0])

            await until(lease_over, "A's lease to expire", procs, tmp_path, 30)
        paused.proc.send_signal(signal.SIGCONT)

        async def a_gave_up() -> bool:
            # its checkpoint's lease check, or its heartbeat, whichever answers first
            text = (tmp_path / "a.log").read_text()
            return any(line in text for line in FENCE_LINES)

        await until(a_gave_up, "A to find its lease gone", procs, tmp_path, 60)
        procs["scheduler"] = spawn("scheduler", db_url, tmp_path / "scheduler.log")
        procs["b"] = spawn("worker", db_url, tmp_path / "b.log")

        async def finished() -> bool:
            return (await store.tasks.get_task(task.id)).status.terminal

        await until(finished, "worker B to finish the task", procs, tmp_path, start_deadline())
        done = await store.tasks.get_task(task.id)
        assert done.status is TaskStatus.SUCCEEDED, done.error
        steps = await store.activations.list_steps(task.id)
        assert [s.seq for s in steps] == [1, 2, 3]
        assert paused.activation_id not in {s.activation_id for s in steps}, "A committed late"
        assert paused.proc.poll() is None, "worker A exited"
    finally:
        stop_all(procs)
        await store.close()
