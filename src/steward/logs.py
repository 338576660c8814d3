"""How every Steward process logs: one readable line per record on the terminal and, for the
long-running ones (``steward up``, ``worker``, ``scheduler``), a JSON line per record in a
rotating file under the data directory (:func:`log_file`). Steward's own records (structlog)
and every library's (uvicorn, starlette, httpx, asyncio: stdlib ``logging``) take the same
path, so all of them are bounded and redacted the same way: for a failure a short traceback
of frames — never the frames' local variables (rendering them took seconds to minutes for a
large or deeply nested value, and showed tokens and secrets), never an API token, a webhook
secret, a bearer credential or a configured API key, and never more than :data:`MAX_CHARS`
characters per value."""

from __future__ import annotations

import logging
import logging.handlers
import os
import re
import reprlib
import sys
import traceback
from collections.abc import Iterable, MutableMapping
from pathlib import Path
from typing import Any, Protocol

import structlog

from steward.filemodes import PRIVATE_FILE, private_dir, private_file

MAX_FRAMES = 12
"""Frames of a traceback kept (the innermost ones, where it failed)."""
MAX_CHARS = 4000
"""Characters of one logged value (a traceback included)."""
FILE_LEVEL = logging.INFO
"""The file keeps records at this level even when the terminal shows fewer (a worker's
terminal shows warnings only): ``steward logs`` is where a person looks afterwards."""

_SECRET = re.compile(r"(stw_|whsec_|Bearer\s+)[A-Za-z0-9+/=_.~-]+", re.IGNORECASE)
"""API tokens, webhook secrets and bearer credentials, wherever they appear in a message."""
_REPR = reprlib.Repr()
"""Shows a value that is not text briefly, at any size or depth."""
_REPR.maxlevel, _REPR.maxstring, _REPR.maxother = 4, 200, 200
_QUIET = {"alembic": logging.WARNING, "httpx": logging.WARNING, "httpcore": logging.WARNING}
"""Libraries whose info records are noise here: one per migration step, one per HTTP request
(whose address may carry a credential in its query)."""


def _not_noise(record: logging.LogRecord) -> bool:
    """A handler filter: drops what :data:`_QUIET` names, except at debug. A filter on our
    own handlers, not a level set on the libraries' loggers, so that nothing else in the
    process (a test's log capture, an embedding application) loses their records."""
    quiet = _QUIET.get(record.name.partition(".")[0])
    return quiet is None or _State.level <= logging.DEBUG or record.levelno >= quiet


_MIN_SECRET = 6
"""A configured secret shorter than this is not searched for (it would match ordinary words)."""


class FileSettings(Protocol):
    """What :func:`configure` reads from :class:`steward.config.Settings` for the file."""

    @property
    def data_dir(self) -> Path: ...
    @property
    def log_file_max_mb(self) -> int: ...
    @property
    def log_file_backups(self) -> int: ...
    def secret_values(self) -> Iterable[str]: ...


class _State:
    """The process's logging as last configured."""

    level = logging.INFO
    """The terminal's level."""
    secrets: tuple[str, ...] = ()
    """The configured secret values (API keys), redacted wherever they appear."""


def log_file(data_dir: Path) -> Path:
    """Where the long-running processes on ``data_dir`` log (rotated files beside it:
    ``steward.log.1`` the newest, up to ``steward.log.<log_file_backups>``)."""
    return data_dir / "logs" / "steward.log"


def redact(text: str) -> str:
    """``text`` cut to :data:`MAX_CHARS`, with every credential in it replaced by its kind."""
    if len(text) > MAX_CHARS:
        text = text[:MAX_CHARS] + f"... ({len(text) - MAX_CHARS} more characters)"
    for secret in _State.secrets:
        text = text.replace(secret, "<redacted>")
    return _SECRET.sub(lambda m: m.group(1) + "<redacted>", text)


def short_traceback(exc: BaseException) -> str:
    """``exc`` with the innermost :data:`MAX_FRAMES` frames of each exception in its chain (file,
    line, code: no locals), redacted and bounded."""
    return redact("".join(traceback.format_exception(exc, limit=-MAX_FRAMES)).rstrip())


def _bounded(_logger: Any, _method: str, event: MutableMapping[str, Any]) -> Any:
    """A structlog processor: ``exc_info`` becomes a short traceback, every value bounded and
    redacted text."""
    exc_info = event.pop("exc_info", None)
    event.pop("stack_info", None)  # a stack dump is as unbounded as a traceback's locals
    if exc_info:
        exc = sys.exc_info()[1] if exc_info is True else exc_info
        if isinstance(exc, tuple):
            exc = exc[1]
        if isinstance(exc, BaseException):
            event["exception"] = short_traceback(exc)
    for key, value in event.items():
        event[key] = redact(value if isinstance(value, str) else _REPR.repr(value))
    return event


_ADDED: list[structlog.typing.Processor] = [
    structlog.stdlib.add_log_level,
    structlog.stdlib.add_logger_name,
    structlog.processors.TimeStamper(fmt="iso", utc=True),
]
"""What every record gets, Steward's and the libraries' alike."""


def _formatter(renderer: Any) -> logging.Formatter:
    return structlog.stdlib.ProcessorFormatter(
        processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, _bounded, renderer],
        foreign_pre_chain=[structlog.contextvars.merge_contextvars, *_ADDED],
    )


class _Ours:
    """Marks the handlers :func:`configure` installed (replaced when it is called again)."""


class _Terminal(_Ours, logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to whatever ``sys.stderr`` is at write time (test runners swap and close it).
    A library's record needs one level more than Steward's own (a warning where Steward shows
    info, an error where it shows warnings), except at debug: a library's deprecation notes
    and a test server's remarks are not for the person at the terminal; the file keeps them."""

    def __init__(self) -> None:
        super().__init__()
        self.addFilter(self._ours_or_louder)

    def _ours_or_louder(self, record: logging.LogRecord) -> bool:
        if record.name.partition(".")[0] == "steward" or self.level <= logging.DEBUG:
            return True
        return record.levelno >= self.level + 10

    @property
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, _value: Any) -> None:
        pass


class _File(_Ours, logging.handlers.RotatingFileHandler):
    """A rotating file whose every generation is created private (mode 0600)."""

    def _open(self) -> Any:
        return open(
            self.baseFilename,
            self.mode,
            encoding=self.encoding,
            opener=lambda path, flags: os.open(path, flags, PRIVATE_FILE),
        )


def configure(level: str | None = None, *, to_file: FileSettings | None = None) -> None:
    """Log records at ``level`` and above (None: the level already configured, else info) to
    whatever ``sys.stderr`` is at write time and, with ``to_file``, also at info and above to
    the rotating :func:`log_file` of its data directory, as JSON lines. Both Steward's records
    and the libraries' (the root logger's) go there."""
    if level is not None:
        _State.level = logging.getLevelNamesMapping()[level.upper()]
    root = logging.getLogger()
    for old in [h for h in root.handlers if isinstance(h, _Ours)]:
        root.removeHandler(old)
        old.close()
    terminal = _Terminal()
    terminal.addFilter(_not_noise)
    terminal.setLevel(_State.level)
    terminal.setFormatter(_formatter(structlog.dev.ConsoleRenderer(colors=False)))
    root.addHandler(terminal)
    lowest = _State.level
    if to_file is not None:
        _State.secrets = tuple(s for s in to_file.secret_values() if len(s) >= _MIN_SECRET)
        path = log_file(to_file.data_dir)
        private_file(private_dir(path.parent) / path.name)
        file = _File(
            path,
            maxBytes=to_file.log_file_max_mb * 1024 * 1024,
            backupCount=to_file.log_file_backups,
            encoding="utf-8",
        )
        file.addFilter(_not_noise)
        file.setLevel(min(_State.level, FILE_LEVEL))
        file.setFormatter(_formatter(structlog.processors.JSONRenderer()))
        root.addHandler(file)
        lowest = min(lowest, FILE_LEVEL)
    root.setLevel(lowest)
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.dev.set_exc_info,
            *_ADDED,
            structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(lowest),
        logger_factory=structlog.stdlib.LoggerFactory(),
        cache_logger_on_first_use=False,
    )
