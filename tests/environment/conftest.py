"""The sandbox's tests need bubblewrap: skipped without it (saying so), failed under ``CI=true``."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from steward.environment import sandbox
from steward.environment.sandbox import Limits, Sandbox

QUICK = Limits(wall_seconds=20.0, cpu_seconds=2, memory_bytes=256 << 20, processes=32)
"""Small limits, so that reaching one is quick; the deadline stays generous for a busy machine."""


def require_bwrap() -> None:
    """Skip without bubblewrap, with a message; under ``CI=true``, fail instead."""
    if not sandbox.available():
        message = (
            f"{sandbox.BWRAP} (or {sandbox.PRLIMIT}) is missing: install Debian's bubblewrap "
            "to run the sandbox tests"
        )
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(message)
        pytest.skip(message)


@pytest.fixture
def box() -> Sandbox:
    require_bwrap()
    return Sandbox(QUICK)


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    """A data directory as Steward keeps it: the database and the vault key beside the
    workspace of each person."""
    data = tmp_path / "data"
    (data / "workspace").mkdir(parents=True)
    (data / "steward.db").write_text("the database: every person's mail and memories")
    (data / "vault.key").write_text("the vault key: opens every stored password")
    return data
