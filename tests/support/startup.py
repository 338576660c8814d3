"""Bounds of multi-process tests, scaled by how long a ``steward`` process takes to start here.

A deadline in a test with real processes (a worker started, an effect sent, a task settled, a
lease renewed) is tuned on a quiet machine, where importing what a ``steward up`` or
``steward worker`` process imports (the command line, the API, the harness and connectors of
``steward.app``) takes about :data:`REST_SECONDS`. On a busy machine everything takes longer:
the same import took 10 s with a load average of 11-16 on 2 cores. So a bound is stretched by
how many times longer than at rest a process takes to start in this session (never shrunk),
measured once, the first time a test asks (``tests/conftest.py`` reports it at the end of the
session).
"""

from __future__ import annotations

import functools
import subprocess
import sys
import time

REST_SECONDS = 3.0
"""Start-up of a ``steward`` process on a quiet machine, which the tests' bounds are tuned for."""


@functools.cache
def startup_seconds() -> float:
    """How long a fresh interpreter takes to import what a serving ``steward`` process does,
    now (``steward.cli.main`` alone is kept light, for ``--help``: not a measure of that)."""
    began = time.monotonic()
    subprocess.run(
        [sys.executable, "-c", "import steward.cli.main, steward.api, steward.app"],
        check=True,
        stdin=subprocess.DEVNULL,
    )
    return time.monotonic() - began


def slowness() -> float:
    """How many times slower than at rest processes start here (at least 1)."""
    return max(1.0, startup_seconds() / REST_SECONDS)


def scaled(seconds: float) -> float:
    """``seconds``, a bound that holds on a quiet machine, stretched for this one."""
    return seconds * slowness()


def measured() -> float | None:
    """The start-up time if a test measured it in this session, else None."""
    return startup_seconds() if startup_seconds.cache_info().currsize else None
