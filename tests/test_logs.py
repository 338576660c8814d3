"""Logging to the terminal and the rotating file: JSON lines in a private file, every library's
records through the same bounding and redaction, rotation by size."""

from __future__ import annotations

import json
import logging
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
import structlog

from steward import logs
from steward.config import Settings

KEY = "sk-live-" + "k3y" * 8
"""A model API key as a person configures it."""


@pytest.fixture
def settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Settings]:
    monkeypatch.setenv("STEWARD_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("STEWARD_MODEL_API_KEY", KEY)
    monkeypatch.setenv("STEWARD_LOG_FILE_MAX_MB", "1")
    monkeypatch.setenv("STEWARD_LOG_FILE_BACKUPS", "2")
    saved = structlog.get_config()
    root = logging.getLogger()
    level, handlers = root.level, list(root.handlers)
    yield Settings()
    structlog.configure(**saved)
    for handler in root.handlers:
        if handler not in handlers:
            root.removeHandler(handler)
            handler.close()
    root.setLevel(level)
    logs._State.secrets = ()


def records(path: Path) -> list[dict[str, str]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_the_file_gets_json_lines_the_terminal_readable_ones(
    settings: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    logs.configure("warning")  # as `steward worker` does, then its _serve
    logs.configure(to_file=settings)
    structlog.contextvars.bind_contextvars(task_id="tsk_1")
    try:
        structlog.get_logger("steward.test").info("started", key=KEY)
        structlog.get_logger("steward.test").warning("slow", seconds=3)
        logging.getLogger("alembic.runtime.migration").info("Running upgrade")  # noise, dropped
    finally:
        structlog.contextvars.clear_contextvars()
    path = logs.log_file(settings.data_dir)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    started, slow = records(path)  # the file keeps info although the terminal shows warnings
    assert started["event"] == "started"
    assert started["level"] == "info"
    assert started["key"] == "<redacted>"  # the configured API key, wherever it appears
    assert started["task_id"] == "tsk_1"
    assert started["logger"] == "steward.test"
    assert slow["seconds"] == "3"
    terminal = capsys.readouterr().err
    assert "started" not in terminal
    [line] = terminal.splitlines()
    assert "slow" in line
    assert "seconds=3" in line
    assert "{" not in line


def test_a_librarys_failure_is_bounded_with_no_locals_or_secrets(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    # as in `steward up` (uvicorn started with log_config=None): other tests of this process
    # start uvicorn with its own logging config, which stops its loggers propagating
    for name in ("uvicorn", "uvicorn.error", "asyncio"):
        logger = logging.getLogger(name)
        monkeypatch.setattr(logger, "propagate", True)
        monkeypatch.setattr(logger, "handlers", [])
        monkeypatch.setattr(logger, "disabled", False)
        monkeypatch.setattr(logger, "level", logging.NOTSET)
    logging.getLogger().manager._clear_cache()
    logs.configure("info", to_file=settings)

    def fail(depth: int) -> None:
        credential = f"Bearer stw_{'s3cret' * 6}"  # a local no log may show
        if depth:
            fail(depth - 1)
        raise ValueError(f"refused {credential} {KEY} " + "x" * 100_000)

    try:
        fail(200)
    except ValueError:  # as uvicorn logs a failed request, and asyncio a lost task
        logging.getLogger("uvicorn.error").exception("Exception in ASGI application")
        logging.getLogger("asyncio").error("Task exception was never retrieved", exc_info=True)
    written = logs.log_file(settings.data_dir).read_text()
    uvicorn, lost = records(logs.log_file(settings.data_dir))
    assert uvicorn["logger"] == "uvicorn.error"
    assert lost["logger"] == "asyncio"
    assert "ValueError" in uvicorn["exception"]
    assert uvicorn["exception"].count("in fail") <= logs.MAX_FRAMES
    assert "s3cret" not in written
    assert KEY not in written
    assert "credential =" not in written
    assert "depth =" not in written
    assert len(written) < 3 * logs.MAX_CHARS


def test_the_file_is_rotated_by_size_and_each_generation_is_private(settings: Settings) -> None:
    logs.configure("info", to_file=settings)
    log = structlog.get_logger("steward.test")
    for n in range(1100):  # about 4 MiB through a 1 MiB file kept with 2 backups
        log.info("filler", n=n, text="y" * 3600)
    path = logs.log_file(settings.data_dir)
    kept = sorted(p.name for p in path.parent.iterdir())
    assert kept == ["steward.log", "steward.log.1", "steward.log.2"]
    for generation in path.parent.iterdir():
        assert stat.S_IMODE(generation.stat().st_mode) == 0o600
        assert generation.stat().st_size <= 1024 * 1024
    oldest, newest = records(path.with_name("steward.log.2")), records(path)
    assert int(oldest[-1]["n"]) < int(newest[0]["n"])
    assert newest[-1]["n"] == "1099"
