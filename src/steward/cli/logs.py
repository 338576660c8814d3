"""``steward logs``: what ``steward up``, ``worker`` and ``scheduler`` wrote to their log file
(the rotated ones too, oldest first), as readable lines in this machine's time zone or the
one asked for. It reads no database: it works when the database is what went wrong."""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections import deque
from collections.abc import Iterator
from datetime import datetime, tzinfo
from pathlib import Path
from typing import IO, Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import typer

FOLLOW_POLL_SECONDS = 0.5
"""How often ``--follow`` looks for new lines (and for a rotation)."""
_LEVELS = ("debug", "info", "warning", "error", "critical")
_SHOWN_FIRST = ("timestamp", "level", "logger", "event", "exception")


def logs(
    follow: bool = typer.Option(False, "--follow", "-f", help="Keep printing new lines."),
    task: str | None = typer.Option(None, "--task", help="Only the lines about this task id."),
    lines: int = typer.Option(50, "--lines", "-n", min=0, help="How many recent lines first."),
    level: str = typer.Option("info", "--level", help="The least: debug, info, warning, error."),
    tz: str | None = typer.Option(
        None, "--tz", help="Show times in this zone (Europe/Paris); default: this machine's."
    ),
) -> None:
    """Show the log of the Steward processes on this data directory (`steward up`, `worker`,
    `scheduler`)."""
    from steward.config import Settings
    from steward.logs import log_file

    if level.lower() not in _LEVELS:
        raise typer.BadParameter(f"must be one of {', '.join(_LEVELS)}", param_hint="--level")
    least = _LEVELS.index(level.lower())
    try:
        zone = ZoneInfo(tz) if tz else None
    except (ZoneInfoNotFoundError, ValueError):
        raise typer.BadParameter(f"no time zone is called {tz!r}", param_hint="--tz") from None
    path = log_file(Settings().data_dir)

    def wanted(record: dict[str, Any]) -> bool:
        rank = _LEVELS.index(record["level"]) if record.get("level") in _LEVELS else 1
        return rank >= least and (
            task is None or task in (record.get("task_id"), record.get("task"))
        )

    if not path.exists() and not follow:
        typer.echo(f"no log yet at {path} (`steward up`, `worker` and `scheduler` write it)")
        return
    recent: deque[str] = deque(maxlen=lines)
    for generation in _generations(path):
        with generation.open(encoding="utf-8", errors="replace") as file:
            recent.extend(_shown(file, wanted, zone))
    for line in recent:
        typer.echo(line)
    if follow:
        with contextlib.suppress(KeyboardInterrupt):
            _follow(path, wanted, zone)


def _generations(path: Path) -> list[Path]:
    """The rotated files, oldest first (``steward.log.5`` ... ``.1``), then the current one."""
    rotated = [p for p in path.parent.glob(path.name + ".*") if p.suffix[1:].isdigit()]
    rotated.sort(key=lambda p: int(p.suffix[1:]), reverse=True)
    return [*rotated, path] if path.exists() else rotated


def _shown(file: IO[str], wanted: Any, zone: tzinfo | None) -> Iterator[str]:
    for raw in file:
        record = _record(raw)
        if record is not None and wanted(record):
            yield _readable(record, zone)


def _follow(path: Path, wanted: Any, zone: tzinfo | None) -> None:
    """Print lines added to ``path`` as they come; after a rotation, the rest of the old file
    and then the new one from its start."""
    file = path.open(encoding="utf-8", errors="replace") if path.exists() else None
    if file is not None:
        file.seek(0, os.SEEK_END)
    while True:
        if file is not None:
            for line in _shown(file, wanted, zone):
                typer.echo(line)
        try:
            rotated = file is None or os.stat(path).st_ino != os.fstat(file.fileno()).st_ino
        except FileNotFoundError:
            rotated = False
        if rotated:
            if file is not None:
                for line in _shown(file, wanted, zone):
                    typer.echo(line)
                file.close()
            file = path.open(encoding="utf-8", errors="replace")
            continue
        time.sleep(FOLLOW_POLL_SECONDS)


def _record(raw: str) -> dict[str, Any] | None:
    """A JSON line as written by :mod:`steward.logs`; None for a partial or foreign line."""
    try:
        record = json.loads(raw)
    except ValueError:
        return None
    return record if isinstance(record, dict) else None


def _readable(record: dict[str, Any], zone: tzinfo | None) -> str:
    """``2026-12-05 06:04:12  warning  activation abandoned  task_id=tsk_... (steward...)``
    with a failure's traceback indented below."""
    when = str(record.get("timestamp", ""))
    with contextlib.suppress(ValueError):
        when = datetime.fromisoformat(when).astimezone(zone).strftime("%Y-%m-%d %H:%M:%S")
    rest = "  ".join(f"{k}={v}" for k, v in record.items() if k not in _SHOWN_FIRST)
    line = f"{when}  {record.get('level', ''):<8} {record.get('event', '')}"
    line += f"  {rest}" if rest else ""
    line += f"  ({record['logger']})" if record.get("logger") else ""
    if record.get("exception"):
        line += "\n" + "\n".join("    " + row for row in str(record["exception"]).splitlines())
    return line
