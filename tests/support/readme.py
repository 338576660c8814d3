"""The README's command blocks, and a ``steward`` on the PATH that runs each command in one
long-lived process.

Every ``steward`` command starts a Python process that imports most of Steward (seconds each,
more on a busy machine), and the README has a few dozen: the blocks run in ``bash`` as written,
but the ``steward`` they find is a small client that hands its arguments, working directory,
``STEWARD_*`` environment and standard input to this test process over a Unix socket, which
runs them through the real Typer app (``CliRunner``) and sends back the exit code and output.
"""

from __future__ import annotations

import json
import os
import re
import socket
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

from typer.testing import CliRunner

from steward.cli.main import app

MARKER = re.compile(r"<!--\s*readme-test:\s*(?P<what>[\w-]+)\s*(?:\((?P<why>[^)]*)\))?\s*-->")
FENCE = re.compile(r"^```(?P<lang>[\w-]*)\n(?P<body>.*?)^```", re.M | re.S)
RUN_LANGS = {"bash", "console", "sh"}
PASSED_ENV = ("HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "COLUMNS")
"""Besides ``STEWARD_*``: what decides where a command finds its files, and how wide it prints."""

CLIENT = """#!{python}
import json, os, socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect({path!r})
env = {{k: v for k, v in os.environ.items() if k.startswith("STEWARD_") or k in {passed!r}}}
data = "" if sys.stdin.isatty() else sys.stdin.read()
s.sendall(json.dumps({{"argv": sys.argv[1:], "cwd": os.getcwd(), "env": env, "stdin": data}})
          .encode())
s.shutdown(socket.SHUT_WR)
reply = json.loads(s.makefile().read())
sys.stdout.write(reply["stdout"])
sys.stderr.write(reply["stderr"])
sys.exit(reply["code"])
"""


@dataclass(kw_only=True, frozen=True)
class Block:
    """One fenced block of the README."""

    line: int
    """Where it starts, for messages."""
    lang: str
    """``sh``, ``bash``, ``console``..."""
    body: str
    """Its text."""
    marker: str | None
    """``skip`` or ``after-merge`` from the HTML comment right before it, if any."""
    why: str
    """The reason the marker gives (empty if none)."""

    @property
    def script(self) -> str:
        """What bash runs: a ``console`` block's ``$ `` lines, another block whole."""
        if self.lang != "console":
            return self.body
        return "\n".join(ln[2:] for ln in self.body.splitlines() if ln.startswith("$ "))

    @property
    def commands(self) -> list[str]:
        """The ``steward`` subcommands it uses (``service`` of ``steward service install``)."""
        return sorted(set(re.findall(r"\bsteward\s+([a-z][\w-]*)", self.script)))


def blocks(readme: Path) -> list[Block]:
    """The README's command blocks, in order."""
    text = readme.read_text()
    found = []
    for fence in FENCE.finditer(text):
        if fence.group("lang") not in RUN_LANGS:
            continue
        before = text[: fence.start()].rstrip().splitlines()
        marker = MARKER.fullmatch(before[-1].strip()) if before else None
        found.append(
            Block(
                line=text.count("\n", 0, fence.start()) + 1,
                lang=fence.group("lang"),
                body=fence.group("body"),
                marker=marker.group("what") if marker else None,
                why=(marker.group("why") or "").strip() if marker else "",
            )
        )
    return found


def _serve(listener: socket.socket) -> None:
    runner = CliRunner()
    while True:
        try:
            conn, _ = listener.accept()
        except OSError:  # closed: the tests are over
            return
        with conn:
            request = json.loads(conn.makefile("rb").read())
            here = os.getcwd()
            os.chdir(request["cwd"])
            try:
                env = {k: None for k in os.environ if k.startswith("STEWARD_")}
                result = runner.invoke(
                    app, request["argv"], input=request["stdin"], env=env | request["env"]
                )
            finally:
                os.chdir(here)
            stderr = result.stderr
            if result.exception is not None and not isinstance(result.exception, SystemExit):
                stderr += f"uncaught {type(result.exception).__name__}: {result.exception}\n"
            reply = {"code": result.exit_code, "stdout": result.stdout, "stderr": stderr}
            conn.sendall(json.dumps(reply).encode())


@contextmanager
def steward_on_path(into: Path) -> Iterator[Path]:
    """A directory holding a ``steward`` that runs its commands in this process."""
    into.mkdir(parents=True, exist_ok=True)
    path = into / "steward.sock"
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(path))
    listener.listen()
    client = into / "steward"
    client.write_text(CLIENT.format(python=sys.executable, path=str(path), passed=PASSED_ENV))
    client.chmod(0o755)
    thread = threading.Thread(target=_serve, args=(listener,), daemon=True)
    thread.start()
    try:
        yield into
    finally:
        with suppress(OSError):  # wakes the accept() (Linux); the close alone may not
            listener.shutdown(socket.SHUT_RDWR)
        listener.close()
        thread.join(timeout=30)
