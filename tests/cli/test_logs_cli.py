"""`steward logs`, and the log file of a real `steward up` whose live-stream (SSE) clients are
killed mid-stream."""

from __future__ import annotations

import logging
import os
import queue
import re
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
import structlog

from steward import logs
from steward.cli.main import app
from steward.config import Settings
from support.cli import runner
from support.startup import scaled

STEWARD = [sys.executable, "-m", "steward.cli.main"]


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("STEWARD_DATA_DIR", str(tmp_path / "data"))
    saved = structlog.get_config()
    root = logging.getLogger()
    level, handlers = root.level, list(root.handlers)
    yield tmp_path / "data"
    structlog.configure(**saved)
    for handler in root.handlers:
        if handler not in handlers:
            root.removeHandler(handler)
            handler.close()
    root.setLevel(level)


def rollover() -> None:
    """Rotate the log file now, as its handler does when it is full."""
    [handler] = [h for h in logging.getLogger().handlers if isinstance(h, logs._File)]
    handler.doRollover()


@contextmanager
def lines_of(proc: subprocess.Popen[str], stop: signal.Signals) -> Iterator[queue.Queue[str]]:
    """``proc``'s output lines as they come; ``proc`` is sent ``stop`` when the block ends."""
    got: queue.Queue[str] = queue.Queue()

    def pump() -> None:
        for line in proc.stdout:  # type: ignore[union-attr]
            got.put(line)

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    try:
        yield got
    finally:
        proc.send_signal(stop)
        proc.wait(timeout=scaled(60))
        reader.join(timeout=scaled(30))
        proc.stdout.close()  # type: ignore[union-attr]


def wait_for(got: queue.Queue[str], text: str) -> str:
    seen = ""
    deadline = time.monotonic() + scaled(30)
    while text not in seen:
        seen += got.get(timeout=max(0.1, deadline - time.monotonic()))
    return seen


def test_logs_shows_every_generation_filtered_and_follows_across_a_rotation(
    data_dir: Path,
) -> None:
    logs.configure("info", to_file=Settings())
    log = structlog.get_logger("steward.runtime.worker")
    log.info("oldest line")
    rollover()
    structlog.contextvars.bind_contextvars(task_id="tsk_one")
    try:
        log.warning("activation abandoned: lease lost")
        try:
            raise RuntimeError("the model went away")
        except RuntimeError:
            log.exception("step failed")
    finally:
        structlog.contextvars.clear_contextvars()
    log.warning("another task's line", task_id="tsk_two")
    shown = runner.invoke(app, ["logs"]).output
    order = [shown.index(e) for e in ("oldest line", "lease lost", "another task's")]
    assert order == sorted(order), shown  # the rotated file first
    assert "{" not in shown
    filtered = runner.invoke(app, ["logs", "--task", "tsk_one", "--level", "error"]).output
    assert filtered.splitlines()[0].endswith(
        "step failed  task_id=tsk_one  (steward.runtime.worker)"
    )
    assert "    RuntimeError: the model went away" in filtered
    assert "lease lost" not in filtered
    assert "tsk_two" not in filtered
    in_tokyo = runner.invoke(app, ["logs", "--tz", "Asia/Tokyo", "-n", "1"]).output
    utc = runner.invoke(app, ["logs", "--tz", "UTC", "-n", "1"]).output
    assert (int(in_tokyo[11:13]) - int(utc[11:13])) % 24 == 9
    assert "no time zone is called" in runner.invoke(app, ["logs", "--tz", "Mars/Base"]).output
    refused = runner.invoke(app, ["logs", "--level", "loud"])
    assert refused.exit_code == 2
    assert "must be one of debug" in refused.output

    follower = subprocess.Popen(
        [*STEWARD, "logs", "-f", "-n", "1"],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "STEWARD_DATA_DIR": str(data_dir)},
    )
    with lines_of(follower, signal.SIGINT) as got:
        wait_for(got, "another task's line")
        log.info("before the rotation")
        rollover()
        log.info("after the rotation")
        seen = wait_for(got, "after the rotation")
        assert "before the rotation" in seen
    assert follower.returncode == 0


def kill_mid_stream(address: str, cookie: str, *, reset: bool) -> None:
    """A browser tab closed (or its machine gone) while the live stream is open."""
    host, port = address.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=scaled(30)) as client:
        client.sendall(
            f"GET /api/v1/stream HTTP/1.1\r\nHost: {host}\r\nCookie: {cookie}\r\n"
            "Accept: text/event-stream\r\n\r\n".encode()
        )
        assert client.recv(4096).startswith(b"HTTP/1.1 200"), "the stream did not open"
        if reset:  # closed with a reset, not a goodbye
            client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


def test_killing_live_stream_clients_keeps_the_log_small_and_free_of_locals(
    tmp_path: Path,
) -> None:
    data_dir = tmp_path / "data"
    env = {**os.environ, "STEWARD_DATA_DIR": str(data_dir)}
    up = subprocess.Popen(
        [*STEWARD, "up", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    with lines_of(up, signal.SIGTERM) as got:
        banner = wait_for(got, "stop:")
        [link] = re.findall(r"open:\s+(http://\S+/login\?code=\S+)", banner)
        address = link.split("/login")[0]
        signed_in = httpx.get(link)
        cookie = signed_in.headers["set-cookie"].split(";")[0]
        for n in range(12):
            kill_mid_stream(address, cookie, reset=bool(n % 2))
        # it still answers (and has had a request's time to notice the last one gone)
        deadline = time.monotonic() + scaled(30)
        while True:
            with httpx.Client(headers={"Cookie": cookie}) as client:
                if client.get(f"{address}/api/v1/goals").status_code == 200:
                    break
            assert time.monotonic() < deadline
    assert up.returncode == 0
    written = logs.log_file(data_dir).read_text()
    assert "scheduler lease acquired" in written
    assert len(written) < 20_000, written[:4000]
    assert "Traceback" not in written, written[:4000]
    assert not re.search(r"^\s+\w+ = ", written, re.MULTILINE)  # no frame's locals
