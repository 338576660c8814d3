"""A durable engine rides through a database restart, and through a write lock held too long.

PostgreSQL: a throwaway server started by the test is restarted several times (fast and
immediate shutdowns) while two ``steward worker`` processes and a ``steward scheduler`` run tasks
against it. SQLite: another process holds the write lock (``BEGIN IMMEDIATE``) for longer than
the busy timeout, while a worker runs a task and a new worker opens the store. Either way no
process exits, each logs one plain line per outage and no traceback, and every task finishes.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import sqlite3
import subprocess
import tempfile
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import psycopg
import pytest

from steward.domain import TaskSpec, TaskStatus
from steward.store import Store
from support.processes import (
    all_back,
    log_tails,
    outage_lines,
    spawn,
    start_deadline,
    stop_all,
    until,
)
from support.startup import scaled

pytestmark = pytest.mark.slow

PG_BIN = Path(os.environ.get("STEWARD_TEST_PG_BIN", "/usr/lib/postgresql/15/bin"))
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")
RESTARTS = 4
DOWN_SECONDS = 3.0
"""How long the server stays down each time: longer than any process's idle poll, so every
process meets the outage (scaled: a starved process polls late, and must still meet it)."""
PEOPLE = 4
"""Each runs up to 4 tasks at once: enough for both workers to be busy."""
WAVE = 16
"""Tasks created before each restart..."""
STEPS = 150
"""...each this many checkpoints long, so that tasks are running when the server goes down."""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class Cluster:
    """A throwaway PostgreSQL server in a temporary directory, on a free port, its socket in
    that directory. initdb refuses to run as root: then every server tool runs as the
    ``postgres`` OS user, in a directory it owns."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="steward-pg-"))
        self.data = self.root / "data"
        self.log = self.root / "server.log"
        self.port = _free_port()
        self.as_owner: list[str] = []
        if os.geteuid() == 0:
            shutil.chown(self.root, "postgres", "postgres")
            self.as_owner = ["runuser", "-u", "postgres", "--"]
        self._tool("initdb", "-D", self.data, "-U", "postgres", "--auth=trust", "--no-sync")

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def _tool(self, name: str, *args: object) -> None:
        if name == "pg_ctl":  # wait for the server as long as a busy machine needs
            args = ("-t", 300, *args)
        cmd = [*self.as_owner, str(PG_BIN / name), *map(str, args)]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        if done.returncode != 0:
            raise RuntimeError(f"{name} failed: {done.stdout}{done.stderr}")

    def start(self) -> None:
        options = f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off"
        self._tool(
            "pg_ctl", "-D", self.data, "-l", self.log, "-o", options, "-w", "-t", 300, "start"
        )

    def stop(self, mode: str) -> None:
        """``fast``: end every session and shut down cleanly; ``immediate``: as a crash (the
        next start recovers from the log)."""
        self._tool("pg_ctl", "-D", self.data, "-m", mode, "-w", "stop")

    def remove(self) -> None:
        try:
            self._tool("pg_ctl", "-D", self.data, "-m", "immediate", "-w", "stop")
        finally:
            shutil.rmtree(self.root, ignore_errors=True)


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    missing = [n for n in ("initdb", "pg_ctl", "postgres") if not (PG_BIN / n).exists()]
    if missing:
        message = f"PostgreSQL server binaries {missing} not in {PG_BIN}; set STEWARD_TEST_PG_BIN"
        if IN_CI:
            pytest.fail(message)
        pytest.skip(message)
    made = Cluster()
    try:
        made.start()
        yield made
    finally:
        made.remove()


def _scalar(url: str, sql: str) -> int | None:
    """One number from the server, or None while it is down."""
    try:
        with psycopg.connect(url, connect_timeout=5) as conn:
            row = conn.execute(sql).fetchone()
            return None if row is None else int(row[0])
    except psycopg.OperationalError:
        return None


@pytest.mark.postgres
async def test_workers_and_scheduler_ride_through_postgres_restarts(
    cluster: Cluster, tmp_path: Path
) -> None:
    url = cluster.url
    store = await Store.open(url)
    procs: dict[str, subprocess.Popen[bytes]] = {}
    env = {"STEWARD_DATA_DIR": str(tmp_path / "data")}
    task_ids: list[str] = []
    resumed: list[tuple[str, float, float]] = []
    try:
        now = datetime.now(UTC)
        people = [await store.persons.create_person(name=f"p{i}", now=now) for i in range(PEOPLE)]

        async def wave() -> list[str]:
            made = [
                await store.tasks.create_task(
                    TaskSpec(kind="noop", input={"steps": STEPS}),
                    person_id=people[i % PEOPLE].id,
                    now=datetime.now(UTC),
                )
                for i in range(WAVE)
            ]
            task_ids.extend(t.id for t in made)
            return [t.id for t in made]

        async def all_done() -> bool:
            return all([(await store.tasks.get_task(t)).status.terminal for t in task_ids])

        for name in ("worker1", "worker2"):
            procs[name] = spawn("worker", url, tmp_path / f"{name}.log", env=env)
        procs["scheduler"] = spawn("scheduler", url, tmp_path / "scheduler.log", env=env)
        await wave()
        await until(all_done, "the first tasks to finish", procs, tmp_path, start_deadline())

        down = scaled(DOWN_SECONDS)
        for restart in range(RESTARTS):
            ids = await wave()

            async def running(ids: list[str] = ids) -> bool:
                return any(
                    [(await store.tasks.get_task(t)).status is TaskStatus.RUNNING for t in ids]
                )

            await until(running, "tasks to be running", procs, tmp_path, start_deadline())
            mode = "immediate" if restart % 2 else "fast"
            cluster.stop(mode)
            await asyncio.sleep(down)
            cluster.start()
            steps_at_up = _scalar(url, "SELECT count(*) FROM steps")
            assert steps_at_up is not None

            async def progressed(at: int = steps_at_up) -> bool:
                steps = _scalar(url, "SELECT count(*) FROM steps")
                return steps is not None and (steps > at or await all_done())

            after = await until(progressed, "work to resume", procs, tmp_path, start_deadline())
            resumed.append((mode, after))

        await until(all_done, "every task to finish", procs, tmp_path, start_deadline(60))
        await all_back(procs, tmp_path, start_deadline())
        tasks = [await store.tasks.get_task(t) for t in task_ids]
        unfinished = {t.id: (t.status, t.error) for t in tasks if t.status != TaskStatus.SUCCEEDED}
        assert not unfinished
        assert {n: p.poll() for n, p in procs.items()} == dict.fromkeys(procs)
    finally:
        stop_all(procs)
        await store.close()
    print(f"\n{RESTARTS} restarts, {len(task_ids)} tasks of {STEPS} steps, 0 process exits")
    for mode, after in resumed:
        print(f"  stop -m {mode}, {down:g}s down, start: work resumed {after:.1f}s later")
    for name in procs:
        log = tmp_path / f"{name}.log"
        outages, ends = outage_lines(log)
        print(f"  {name}: {outages} outage lines, {ends} back lines")
        text = log.read_text()
        assert "Traceback" not in text, log_tails(tmp_path)
        # one line per outage it noticed: a restart may be seen as two (the shutdown, then
        # start-up), two restarts as one (still backing off from the first when the second
        # came), or none (an idle pooled connection replaced before it was next used)
        assert 1 <= outages <= 2 * RESTARTS, log_tails(tmp_path)
        assert ends == outages, log_tails(tmp_path)


async def test_sqlite_write_lock_held_past_the_busy_timeout_is_ridden_through(
    tmp_path: Path,
) -> None:
    """Another process holds ``BEGIN IMMEDIATE`` for longer than any busy timeout (the 30 s
    default included; the processes here wait 2 s at a time): the worker that was running a task,
    the scheduler and a ``steward up`` started meanwhile (opening a current store takes no write
    lock) all stay up and finish every task once the lock is released."""
    path = tmp_path / "steward.db"
    url = f"sqlite:///{path}"
    store = await Store.open(url)
    procs: dict[str, subprocess.Popen[bytes]] = {}
    env = {"STEWARD_DATA_DIR": str(tmp_path / "data"), "STEWARD_DATABASE_BUSY_TIMEOUT_SECONDS": "2"}
    task_ids: list[str] = []
    try:
        person = await store.persons.create_person(name="p", now=datetime.now(UTC))

        async def create(steps: int, count: int) -> None:
            for _ in range(count):
                spec = TaskSpec(kind="noop", input={"steps": steps})
                task = await store.tasks.create_task(
                    spec, person_id=person.id, now=datetime.now(UTC)
                )
                task_ids.append(task.id)

        async def all_done() -> bool:
            return all([(await store.tasks.get_task(t)).status.terminal for t in task_ids])

        procs["worker1"] = spawn("worker", url, tmp_path / "worker1.log", env=env)
        procs["scheduler"] = spawn("scheduler", url, tmp_path / "scheduler.log", env=env)
        await create(steps=1, count=2)
        await until(all_done, "the first tasks to finish", procs, tmp_path, start_deadline())
        await create(steps=100_000, count=1)  # still running when the lock is taken
        long_task = task_ids[-1]

        async def steps_done() -> bool:
            return (await store.tasks.get_task(long_task)).step_seq > 0

        await until(steps_done, "the long task to run", procs, tmp_path, start_deadline())

        holder = sqlite3.connect(path, isolation_level=None, timeout=60)
        holder.execute("BEGIN IMMEDIATE")
        try:
            held_at = (await store.tasks.get_task(long_task)).step_seq
            # a new process opens the store meanwhile: `steward up`, scheduler and worker in one
            procs["up"] = spawn("up", url, tmp_path / "up.log", "--no-http", env=env)
            await asyncio.sleep(35)
            assert (await store.tasks.get_task(long_task)).step_seq == held_at
        finally:
            holder.execute("COMMIT")
            holder.close()

        async def moving() -> bool:
            return (await store.tasks.get_task(long_task)).step_seq > held_at

        resumed = await until(moving, "the task to go on", procs, tmp_path, start_deadline())
        await store.tasks.request_control(long_task, "cancel", now=datetime.now(UTC))
        await create(steps=3, count=8)
        await until(all_done, "every task to finish", procs, tmp_path, start_deadline(30))
        await all_back(procs, tmp_path, start_deadline())
        ends = {t: (await store.tasks.get_task(t)).status for t in task_ids}
        assert ends.pop(long_task) is TaskStatus.CANCELLED
        assert set(ends.values()) == {TaskStatus.SUCCEEDED}
        assert {n: p.poll() for n, p in procs.items()} == dict.fromkeys(procs)
    finally:
        stop_all(procs)
        await store.close()
    for name in procs:
        log = tmp_path / f"{name}.log"
        text = log.read_text()
        assert "Traceback" not in text, log_tails(tmp_path)
        outages, ends_logged = outage_lines(log)
        print(f"\n{name}: {outages} outage line(s), {ends_logged} back")
        if name != "up":  # it may have got going only after the lock was released
            assert outages == ends_logged == 1, log_tails(tmp_path)
    print(f"lock held 35s; the running task went on {resumed:.1f}s after it was released")
