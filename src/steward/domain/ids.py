"""Identifiers: sortable by creation time, readable by kind (``tsk_…``, ``gol_…``)."""

from __future__ import annotations

import os
import time


def new_id(prefix: str) -> str:
    """A 26-character id: 48 bits of milliseconds then 80 random bits, hex, after a prefix.

    Time-ordered ids keep B-tree inserts at the right edge of the index.
    """
    millis = time.time_ns() // 1_000_000
    return f"{prefix}_{millis:012x}{os.urandom(10).hex()}"


def firing_id(trigger_id: str, scheduled_for_epoch: float) -> str:
    """Deterministic id of one trigger firing, so firing twice stores once."""
    return f"fir_{trigger_id}_{round(scheduled_for_epoch * 1000)}"


def effect_key(task_id: str, step_seq: int, index: int) -> str:
    """Idempotency key of the ``index``-th effect of step ``step_seq`` of a task."""
    return f"{task_id}:{step_seq}:{index}"
