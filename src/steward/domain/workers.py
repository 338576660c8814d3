"""The runtime processes working on one database, as each one registers itself.

Every ``steward up``/``worker``/``scheduler`` process (and ``steward ask`` when it runs its own)
writes a row saying who it is and what it can run, beats while it runs and marks itself stopped
when it exits; a process that stopped beating (killed, its host gone) is shown as gone.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum


class ProcessState(StrEnum):
    RUNNING = "running"
    STOPPED = "stopped"
    GONE = "gone"


STALE_LEASES = 3
"""A process whose heartbeat is older than this many leases is gone (killed, host down)."""


@dataclass(kw_only=True, frozen=True)
class WorkerProcess:
    """One runtime process, as registered in the store."""

    id: str
    """Its name (host:pid:random); its scheduler leases and task claims are made under it."""
    host: str
    """The host it runs on."""
    pid: int
    """Its process id on that host."""
    version: str
    """The Steward version it runs."""
    fingerprint: str
    """A short hash of the settings that decide what it can run (model provider, name and
    base URL, embeddings; never a secret): processes that differ here behave differently."""
    model: str | None
    """The model it uses, or None: it runs no agent task."""
    roles: tuple[str, ...]
    """What it does: ``scheduler``, ``worker``, ``http``; ``cli``: a command's own runtime
    (``steward ask``), gone when the command ends."""
    cannot_run: tuple[str, ...]
    """Task kinds it leaves to others (an agent task when it has no model)."""
    lease_seconds: float
    """Its task lease; it beats every third of it."""
    started_at: datetime
    """When it started."""
    heartbeat_at: datetime
    """Its last heartbeat."""
    stopped_at: datetime | None = None
    """When it exited gracefully, or None."""

    def state(self, now: datetime) -> ProcessState:
        if self.stopped_at is not None:
            return ProcessState.STOPPED
        stale = timedelta(seconds=self.lease_seconds * STALE_LEASES)
        return ProcessState.GONE if now - self.heartbeat_at > stale else ProcessState.RUNNING

    def runs(self, kind: str) -> bool:
        """Whether work of ``kind`` may be left to it: it works tasks of that kind, and is not a
        command's own runtime (which stops with its command)."""
        return "worker" in self.roles and "cli" not in self.roles and kind not in self.cannot_run


@dataclass(kw_only=True, frozen=True)
class ProcessStatus:
    """A registered process as of now."""

    process: WorkerProcess
    """Its registration."""
    state: ProcessState
    """Running, stopped gracefully, or gone (no heartbeat for several leases)."""
    leader: bool
    """It holds the scheduler's lease (the one scheduler at work)."""


@dataclass(kw_only=True, frozen=True)
class SystemStatus:
    """What runs where, and what waits: ``steward status``."""

    at: datetime
    """When it was read."""
    processes: tuple[ProcessStatus, ...]
    """Every registered process, the most recently started first."""
    tasks: dict[str, int]
    """Tasks by status (the queue: pending, running, waiting...)."""
    active_goals: int
    """Goals still being worked on."""
    pending_approvals: int
    """Approvals waiting for the person's decision."""
    in_doubt_effects: int
    """Effects nobody knows happened (the person must say)."""
    next_trigger_at: datetime | None
    """The next trigger firing, or None."""
    next_wait_at: datetime | None
    """The next timed wait ending, or None."""

    def next_wake(self) -> datetime | None:
        times = [t for t in (self.next_trigger_at, self.next_wait_at) if t is not None]
        return min(times) if times else None

    def can_run(self, kind: str) -> bool:
        """Whether a running process works tasks of ``kind``."""
        return any(p.state is ProcessState.RUNNING and p.process.runs(kind) for p in self.processes)
