"""``steward status``: what runs where (servers, the scheduler at work, workers and the model
each uses), the queue, what waits for the person and when Steward next wakes."""

from __future__ import annotations

from datetime import datetime

from steward.cli.common import DbOption, JsonOption
from steward.domain.workers import ProcessState, ProcessStatus, SystemStatus

QUEUE_ORDER = ("pending", "running", "waiting", "paused", "succeeded", "failed", "cancelled")


def status(db: str | None = DbOption, as_json: bool = JsonOption) -> None:
    """What runs where, the queue, and what waits for you (on this database or a server)."""
    import json

    from steward.cli.common import run, service
    from steward.service.encode import to_jsonable

    async def main() -> None:
        async with service(db) as svc:
            found = await svc.status()
        if as_json:
            print(json.dumps(to_jsonable(found), indent=2))
        else:
            print("\n".join(describe(found)))

    run(main)


def describe(status: SystemStatus) -> list[str]:
    """``status`` as lines of plain text."""
    lines = ["Processes:"]
    shown = [p for p in status.processes if p.state is not ProcessState.STOPPED]
    stopped = len(status.processes) - len(shown)
    if not shown:
        lines.append("  none running: start one with 'steward up'")
    lines += [f"  {_process(p, status.at)}" for p in shown]
    if stopped:
        lines.append(f"  ({stopped} stopped in the last week not shown)")
    if not any(p.leader for p in status.processes):
        lines.append("  no scheduler is at work: triggers and timed waits are not firing")
    queue = ", ".join(
        f"{status.tasks[s]} {s}" for s in sorted(status.tasks, key=_queue_rank) if status.tasks[s]
    )
    lines.append(f"Tasks: {queue or 'none'}")
    lines.append(
        f"Goals at work: {status.active_goals}; approvals waiting for you: "
        f"{status.pending_approvals}; effects in doubt: {status.in_doubt_effects}"
    )
    if status.in_doubt_effects:
        lines.append("  say whether each happened: steward effect list --in-doubt")
    wake = status.next_wake()
    if wake is None:
        lines.append("Next wake-up: nothing scheduled")
    else:
        what = "a trigger fires" if wake == status.next_trigger_at else "a timed wait ends"
        lines.append(f"Next wake-up: {_when(wake)} ({what}, {_ago(wake, status.at)})")
    return lines


def _process(shown: ProcessStatus, now: datetime) -> str:
    p = shown.process
    roles = ", ".join(
        "scheduler (at work)" if r == "scheduler" and shown.leader else r for r in p.roles
    )
    model = p.model or "no model (leaves agent tasks to others)"
    state = "GONE (no heartbeat)" if shown.state is ProcessState.GONE else "running"
    return (
        f"{state}: {roles} - pid {p.pid} on {p.host}, steward {p.version}, model {model}, "
        f"settings {p.fingerprint}, last heartbeat {_ago(p.heartbeat_at, now)}"
    )


def _queue_rank(state: str) -> int:
    return QUEUE_ORDER.index(state) if state in QUEUE_ORDER else len(QUEUE_ORDER)


def _when(at: datetime) -> str:
    return at.strftime("%Y-%m-%d %H:%M:%S %Z")


def _ago(at: datetime, now: datetime) -> str:
    seconds = int((at - now).total_seconds())
    span = abs(seconds)
    amount = (
        f"{span} s"
        if span < 120
        else f"{span // 60} min"
        if span < 7200
        else f"{span // 3600} h"
        if span < 172800
        else f"{span // 86400} days"
    )
    return f"in {amount}" if seconds > 0 else f"{amount} ago"
