"""A real HTTP service for crash tests of the effect journal: it applies effects and remembers.

Run it as ``python -m steward.testing.effect_service --port 0 [--state FILE] [--allow-kill]``;
the first line it prints is the port it bound (``--port 0`` picks a free one).

It receives what the built-in ``http_post`` task kind sends (a JSON body, an
``Idempotency-Key`` header, ``X-Steward-Fence: <task>:<epoch>`` and ``X-Steward-Worker: <pid>``):

* ``POST /effect`` — a service that honours idempotency keys: the first request with a key is
  applied, a repeat gets the stored first answer and is not applied again.
* ``POST /effect/unkeyed`` — a service that ignores keys: every request is applied (it still
  counts by key, so a test can see a non-idempotent effect that was sent twice).

Both answer ``{"key": ..., "applied_count": n, "seq": s}``: how often this key has been applied
and the service-wide number of the application. Every request is counted on arrival.

* ``GET /stats`` — ``{key: {"requests": n, "applied": m, "senders": [pid, ...]}}``.
* ``GET /applied?key=K`` — ``{"key": K, "applied": bool, "count": m, "response": first answer}``,
  what a reconciler asks after a crash.
* ``POST /control`` — JSON settings, all optional; answers the current settings and ``kills``:

  - ``hold`` (bool): received requests wait, unanswered, until it is set back to false;
  - ``kill_after_answer_ratio`` (float): for that share of requests, SIGKILL the requesting
    worker (its pid from ``X-Steward-Worker``) right after the answer was written and flushed —
    the service acted and answered, the worker never got to record it;
  - ``kill_after_answer_keys`` (list): always do so after the first request with these keys;
  - ``max_kills`` (int or null): stop the random kills after that many; ``seed`` (int): seeds
    the draw;
  - ``check_fence`` (bool): act as a service that checks fencing tokens: it remembers the
    highest epoch it saw per task and answers 409, applying nothing, to a request carrying a
    lower one (a worker that lost the task and came back late).

  Killing is refused unless the service was started with ``--allow-kill``.

``--state FILE`` keeps the ledger in a JSON file (rewritten atomically after each change), so a
restarted service still remembers which keys it applied.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, TypedDict
from urllib.parse import parse_qs, urlsplit

import httpx


class KeyStats(TypedDict):
    requests: int
    """Requests received with this key."""
    applied: int
    """Times it was applied (at most 1 on ``/effect``)."""
    senders: list[int]
    """Worker pid of each request, in arrival order (0 if the header was missing)."""


class AppliedAnswer(TypedDict):
    key: str
    applied: bool
    count: int
    response: dict[str, Any] | None
    """The answer to the first applied request."""


@dataclass
class _Entry:
    requests: int = 0
    applied: int = 0
    senders: list[int] = field(default_factory=list)
    response: dict[str, Any] | None = None


class Ledger:
    """What the service saw and did, per key; thread-safe (one lock for everything)."""

    def __init__(self, state_file: Path | None = None, *, allow_kill: bool = False) -> None:
        self._lock = threading.Lock()
        self._released = threading.Condition(self._lock)
        self._rng = random.Random()
        self.entries: dict[str, _Entry] = {}
        self.seq = 0
        self.allow_kill = allow_kill
        self.hold = False
        self.kill_ratio = 0.0
        self.kill_keys: set[str] = set()
        self.max_kills: int | None = None
        self.check_fence = False
        self.epochs: dict[str, int] = {}
        self.random_kills = 0
        self.killed: list[int] = []
        self.state_file = state_file
        if state_file is not None and state_file.exists():
            data = json.loads(state_file.read_text())
            self.seq = int(data["seq"])
            self.entries = {k: _Entry(**v) for k, v in data["entries"].items()}

    def stale(self, fence: str | None) -> bool:
        """Note a request's fencing token; whether it is older than one seen for its task."""
        task, _, epoch = (fence or "").rpartition(":")
        if not task or not epoch.isdigit():
            return False
        with self._lock:
            highest = self.epochs.get(task, 0)
            self.epochs[task] = max(highest, int(epoch))
            return self.check_fence and int(epoch) < highest

    def receive(self, key: str, sender: int) -> int:
        """Count a request on arrival; returns how many requests this key has had."""
        with self._lock:
            entry = self.entries.setdefault(key, _Entry())
            entry.requests += 1
            entry.senders.append(sender)
            self._save()
            return entry.requests

    def wait_released(self) -> None:
        with self._released:
            self._released.wait_for(lambda: not self.hold)

    def apply(self, key: str, *, honour_key: bool) -> dict[str, Any]:
        """Apply the effect (or, for a repeated honoured key, return the first answer)."""
        with self._lock:
            entry = self.entries[key]
            if honour_key and entry.response is not None:
                return entry.response
            self.seq += 1
            entry.applied += 1
            answer = {"key": key, "applied_count": entry.applied, "seq": self.seq}
            if entry.response is None:
                entry.response = answer
            self._save()
            return answer

    def kill_decision(self, key: str, sender: int, ordinal: int) -> bool:
        """Whether to kill ``sender`` after answering its ``ordinal``-th request for ``key``."""
        with self._lock:
            if not self.allow_kill or sender <= 1 or sender == os.getpid():
                return False
            chosen = key in self.kill_keys and ordinal == 1
            if not chosen and (self.max_kills is None or self.random_kills < self.max_kills):
                chosen = self._rng.random() < self.kill_ratio
                self.random_kills += chosen
            if chosen:
                self.killed.append(sender)
            return chosen

    def control(self, settings: dict[str, Any]) -> dict[str, Any]:
        with self._released:
            wants_kill = settings.get("kill_after_answer_ratio") or settings.get(
                "kill_after_answer_keys"
            )
            if wants_kill and not self.allow_kill:
                raise PermissionError("killing requesters needs --allow-kill")
            if "hold" in settings:
                self.hold = bool(settings["hold"])
                self._released.notify_all()
            if "kill_after_answer_ratio" in settings:
                self.kill_ratio = float(settings["kill_after_answer_ratio"])
            if "kill_after_answer_keys" in settings:
                self.kill_keys = {str(k) for k in settings["kill_after_answer_keys"]}
            if "max_kills" in settings:
                limit = settings["max_kills"]
                self.max_kills = None if limit is None else int(limit)
            if "seed" in settings:
                self._rng.seed(settings["seed"])
            if "check_fence" in settings:
                self.check_fence = bool(settings["check_fence"])
            return {
                "hold": self.hold,
                "check_fence": self.check_fence,
                "kill_after_answer_ratio": self.kill_ratio,
                "kill_after_answer_keys": sorted(self.kill_keys),
                "max_kills": self.max_kills,
                "kills": len(self.killed),
                "random_kills": self.random_kills,
                "killed": list(self.killed),
            }

    def stats(self) -> dict[str, KeyStats]:
        with self._lock:
            return {
                k: {"requests": e.requests, "applied": e.applied, "senders": list(e.senders)}
                for k, e in self.entries.items()
            }

    def applied(self, key: str) -> AppliedAnswer:
        with self._lock:
            entry = self.entries.get(key, _Entry())
            return {
                "key": key,
                "applied": entry.applied > 0,
                "count": entry.applied,
                "response": entry.response,
            }

    def _save(self) -> None:
        """Persist (caller holds the lock): write a temp file, then rename over the old one."""
        if self.state_file is None:
            return
        data = {"seq": self.seq, "entries": {k: vars(e) for k, e in self.entries.items()}}
        tmp = self.state_file.with_suffix(".tmp")
        tmp.write_text(json.dumps(data))
        os.replace(tmp, self.state_file)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], ledger: Ledger) -> None:
        super().__init__(address, _Handler)
        self.ledger = ledger


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    # one request per connection: a killed worker's socket is never reused
    protocol_version = "HTTP/1.0"

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        ledger = self.server.ledger
        if url.path == "/stats":
            self._answer(200, ledger.stats())
        elif url.path == "/applied":
            key = parse_qs(url.query).get("key", [""])[0]
            self._answer(200, ledger.applied(key))
        else:
            self._answer(404, {"error": f"no such endpoint {url.path}"})

    def do_POST(self) -> None:
        path = urlsplit(self.path).path
        ledger = self.server.ledger
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if path == "/control":
            try:
                self._answer(200, ledger.control(json.loads(body or b"{}")))
            except (ValueError, TypeError, PermissionError) as exc:
                self._answer(400, {"error": str(exc)})
            return
        if path not in ("/effect", "/effect/unkeyed"):
            self._answer(404, {"error": f"no such endpoint {path}"})
            return
        key = self.headers.get("Idempotency-Key")
        if not key:
            self._answer(400, {"error": "Idempotency-Key header required"})
            return
        sender = _pid(self.headers.get("X-Steward-Worker"))
        ordinal = ledger.receive(key, sender)
        if ledger.stale(self.headers.get("X-Steward-Fence")):
            self._answer(409, {"error": "stale fence: a newer epoch of this task was seen"})
            return
        ledger.wait_released()
        answer = ledger.apply(key, honour_key=path == "/effect")
        kill = ledger.kill_decision(key, sender, ordinal)
        try:
            self._answer(200, answer)
        except OSError:
            return  # the requester is gone already (killed meanwhile)
        if kill:
            # The answer is on the wire; the worker dies before it can journal it.
            with suppress(ProcessLookupError, PermissionError):
                os.kill(sender, signal.SIGKILL)

    def _answer(self, status: int, payload: Any) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: tests read the ledger, not an access log."""


def _pid(header: str | None) -> int:
    try:
        return int(header or 0)
    except ValueError:
        return 0


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m steward.testing.effect_service",
        description="An HTTP service that applies effects at most once per idempotency key.",
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--state", type=Path, help="keep the ledger in this JSON file")
    parser.add_argument(
        "--allow-kill",
        action="store_true",
        help="let POST /control make the service SIGKILL the processes that call it",
    )
    args = parser.parse_args(argv)
    server = _Server((args.host, args.port), Ledger(args.state, allow_kill=args.allow_kill))
    print(server.server_address[1], flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


# --- for tests: start it as a process, talk to it ---------------------------------------------


@dataclass(frozen=True)
class RunningService:
    url: str
    """Base URL, e.g. ``http://127.0.0.1:43123``."""
    process: subprocess.Popen[str]


@contextmanager
def run_effect_service(
    *, allow_kill: bool = False, state: Path | None = None
) -> Iterator[RunningService]:
    """Start the service in its own process for the duration of the block."""
    cmd = [sys.executable, "-m", "steward.testing.effect_service", "--port", "0"]
    if allow_kill:
        cmd.append("--allow-kill")
    if state is not None:
        cmd += ["--state", str(state)]
    process = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        port = process.stdout.readline().strip()
        if not port.isdigit():
            raise RuntimeError(f"effect service did not start (said {port!r})")
        yield RunningService(url=f"http://127.0.0.1:{port}", process=process)
    finally:
        process.kill()
        process.wait()
        if process.stdout is not None:
            process.stdout.close()


class EffectServiceClient:
    """Async access to a running service's ledger and controls."""

    def __init__(self, url: str) -> None:
        self.url = url.rstrip("/")

    async def _request(self, method: str, path: str, **kwargs: Any) -> Any:
        async with httpx.AsyncClient(timeout=10.0) as client:
            response = await client.request(method, f"{self.url}{path}", **kwargs)
        response.raise_for_status()
        return response.json()

    async def stats(self) -> dict[str, KeyStats]:
        result: dict[str, KeyStats] = await self._request("GET", "/stats")
        return result

    async def applied(self, key: str) -> AppliedAnswer:
        result: AppliedAnswer = await self._request("GET", "/applied", params={"key": key})
        return result

    async def control(self, **settings: Any) -> dict[str, Any]:
        result: dict[str, Any] = await self._request("POST", "/control", json=settings)
        return result


if __name__ == "__main__":
    main()
