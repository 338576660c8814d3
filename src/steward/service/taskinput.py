"""What each built-in task kind needs, checked when the task is created: a task whose input
its handler cannot read, or that writes into a goal it does not have, is refused at the door
(:class:`UsageError`) instead of failing every attempt on a worker and ending dead-lettered.

The kinds and what their handlers read: :mod:`steward.runtime.builtin` (``noop``, ``note``,
``wait_event``); ``http_post`` is checked in :func:`steward.service.work.checked_task`. The
agent and the memory pass read what they are given leniently (their defaults cover the rest).
"""

from __future__ import annotations

from typing import Any

from steward.errors import UsageError

NEEDS_GOAL = frozenset({"note"})
"""Kinds whose handler writes into the task's goal (a note), so a task of them needs one."""


def check_input(kind: str, given: dict[str, Any], goal_id: str | None) -> None:
    """Refuse a task of ``kind`` with input ``given`` under ``goal_id`` (if any) that its
    handler could not run."""
    if kind in NEEDS_GOAL and goal_id is None:
        raise UsageError(f"a {kind} task writes into its goal, so it needs one: name the goal")
    if kind == "noop":
        steps = given.get("steps", 1)
        if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
            raise UsageError("a noop task's input.steps must be a whole number, 1 or more")
    elif kind == "note":
        text = given.get("text")
        if not isinstance(text, str) or not text.strip():
            raise UsageError('a note task needs input.text, the note to write: {"text": "…"}')
    elif kind == "wait_event":
        event_type = given.get("type")
        if not isinstance(event_type, str) or not event_type.strip():
            raise UsageError(
                'a wait_event task needs input.type, the event type to wait for: {"type": "…"}'
            )
        if not isinstance(given.get("match", {}), dict):
            raise UsageError("a wait_event task's input.match must be a JSON object")
        timeout = given.get("timeout_seconds")
        if timeout is not None and (
            isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0
        ):
            raise UsageError("a wait_event task's input.timeout_seconds must be above 0")
