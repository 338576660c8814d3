"""`steward service install|uninstall`: a systemd unit systemd itself accepts."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from steward.cli.main import app
from support.cli import cli_json, runner
from support.startup import scaled

STEWARD = [sys.executable, "-m", "steward.cli.main"]


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("STEWARD_DATA_DIR", str(tmp_path / "my data"))  # a space, quoted right
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("STEWARD_MODEL", "llama3.1")  # in this shell only
    return tmp_path


def test_install_writes_a_unit_systemd_accepts_and_uninstall_removes_it(home: Path) -> None:
    installed = runner.invoke(app, ["service", "install"])
    assert installed.exit_code == 0, installed.output
    unit = home / "config" / "systemd" / "user" / "steward.service"
    assert f"wrote {unit}" in installed.output
    assert "systemctl --user daemon-reload && systemctl --user enable --now steward" in (
        installed.output
    )
    assert "journalctl --user -u steward" in installed.output
    assert "not passed to the service (set only in this shell): STEWARD_MODEL" in (installed.output)
    text = unit.read_text()
    data = str((home / "my data").resolve())
    assert f'Environment="STEWARD_DATA_DIR={data}"' in text
    assert f'ReadWritePaths="{data}"' in text  # SQLite, its WAL, the workspace, the log
    assert f"WorkingDirectory={data}\n" in text
    for line in ("ProtectSystem=strict", "NoNewPrivileges=yes", "PrivateTmp=yes"):
        assert line in text
    assert "KillSignal=SIGTERM" in text
    assert "Restart=on-failure" in text
    [start] = [line for line in text.splitlines() if line.startswith("ExecStart=")]
    steward = Path(start.removeprefix("ExecStart=").removesuffix(" up"))
    assert steward.is_absolute()
    assert os.access(steward, os.X_OK)
    assert "WantedBy=default.target" in text
    if shutil.which("systemd-analyze") is None:
        pytest.skip("systemd-analyze is not installed: the unit was not checked by systemd")
    for variant in (unit, _system_unit(home)):
        checked = subprocess.run(
            ["systemd-analyze", "verify", str(variant)], capture_output=True, text=True
        )
        assert checked.returncode == 0, checked.stderr
        assert checked.stderr == "", checked.stderr

    enabled = unit.parent / "default.target.wants" / "steward.service"
    enabled.parent.mkdir()
    enabled.symlink_to(unit)  # as `systemctl --user enable` leaves it
    refused = runner.invoke(app, ["service", "uninstall"])
    assert refused.exit_code == 1
    assert "first run: systemctl --user disable --now steward" in refused.output
    assert unit.exists()
    enabled.unlink()
    removed = runner.invoke(app, ["service", "uninstall"])
    assert removed.exit_code == 0, removed.output
    assert not unit.exists()


def _system_unit(home: Path) -> Path:
    printed = runner.invoke(app, ["service", "install", "--system", "--print"])
    assert printed.exit_code == 0, printed.output
    assert "User=" in printed.output
    assert "WantedBy=multi-user.target" in printed.output
    path = home / "system" / "steward.service"
    path.parent.mkdir()
    path.write_text(printed.output)
    return path


STEPS = 1500
"""Empty steps of each task: enough that a stop finds them part-way."""


def test_a_stop_by_sigterm_with_work_in_flight_loses_nothing(tmp_path: Path) -> None:
    """What systemd does on `systemctl stop` (SIGTERM) and at the next start: every task is
    handed back mid-way and resumed from its checkpoint, none lost, no step run twice. (A stop
    during a task's deciding step: tests/runtime/test_crash.py,
    test_graceful_stop_during_the_deciding_step_applies_the_decided_outcome.)"""
    db = f"sqlite:///{tmp_path / 'steward.db'}"
    env = {**os.environ, "STEWARD_DATA_DIR": str(tmp_path / "data")}
    ids = [
        cli_json(db, "task", "create", "noop", "--input", json.dumps({"steps": STEPS}))["id"]
        for _ in range(4)
    ]

    def steps() -> dict[str, tuple[str, int]]:
        shown = cli_json(db, "task", "list")
        return {t["id"]: (t["status"], t["step_seq"]) for t in shown if t["id"] in ids}

    up = [*STEWARD, "up", "--db", db, "--no-http"]
    first = subprocess.Popen(up, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    try:
        deadline = time.monotonic() + scaled(60)
        while not any(seq > 0 for _, seq in steps().values()):
            assert time.monotonic() < deadline, "no task started"
            time.sleep(0.1)
    finally:
        first.send_signal(signal.SIGTERM)
        first.wait(timeout=scaled(60))
    assert first.returncode == 0
    stopped = steps()
    assert any(status != "succeeded" for status, _ in stopped.values()), "nothing was in flight"
    assert all(status in ("pending", "succeeded") for status, _ in stopped.values()), stopped

    second = subprocess.Popen(up, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    try:
        deadline = time.monotonic() + scaled(120)
        while any(status != "succeeded" for status, _ in steps().values()):
            assert time.monotonic() < deadline, steps()
            time.sleep(0.2)
    finally:
        second.send_signal(signal.SIGTERM)
        second.wait(timeout=scaled(60))
    for task_id in ids:
        shown = cli_json(db, "task", "show", task_id)
        assert shown["result"] == {"steps": STEPS}, shown  # each step run once, in order
