"""How long ``steward`` takes to start: the median wall time of 20 runs of ``steward --help``
and of ``steward goal list`` (on a fresh SQLite database in a temporary data directory, and
through a server on that database: ``$STEWARD_SERVER``), beside ``python -c "import typer"``
(the floor: an interpreter and the CLI library), as a ratio, and beside the libraries a command
on a local database cannot do without (Typer, Rich, SQLAlchemy Core with its SQLite dialect,
pydantic-settings, structlog), imported and nothing else.

Run: ``.venv/bin/python bench/cli_start.py [--runs 20]``. Also prints the machine's load
average: on a busy machine every figure grows, the ratios much less.

The commands run with their bytecode cached, as an installed Steward's is
(``PYTHONDONTWRITEBYTECODE`` is dropped: the uncounted first run writes the caches); with it
set, every run compiles Steward's ~200 modules from source again, ~0.2 s more.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

LIBRARIES = "import typer, rich.table, sqlalchemy.dialects.sqlite, pydantic_settings, structlog"
"""What ``goal list`` on a local database needs of other people's code, at the least."""


def _wall(argv: list[str], env: dict[str, str]) -> float:
    began = time.perf_counter()
    subprocess.run(argv, check=True, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    return time.perf_counter() - began


def _median(argv: list[str], env: dict[str, str], runs: int) -> float:
    _wall(argv, env)  # once to warm the file cache, not counted
    return statistics.median(_wall(argv, env) for _ in range(runs))


@contextmanager
def _server(steward: list[str], db: str, env: dict[str, str]) -> Iterator[dict[str, str]]:
    """``steward up`` on ``db``; yields the environment of a command acting through it."""
    made = subprocess.run(
        [*steward, "token", "create", "bench", "--scope", "read", "--db", db],
        check=True,
        env=env,
        capture_output=True,
        text=True,
    )
    token = next(w for w in made.stdout.split() if w.startswith("stw_"))
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    up = subprocess.Popen(
        [*steward, "up", "--db", db, "--host", "127.0.0.1", "--port", str(port)],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    server = f"http://127.0.0.1:{port}"
    try:
        for _ in range(600):
            try:
                if httpx.get(f"{server}/readyz").status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        else:
            raise SystemExit("the server did not become ready in 60 s")
        yield {**env, "STEWARD_SERVER": server, "STEWARD_TOKEN": token}
    finally:
        up.terminate()
        up.wait(timeout=60)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=20)
    runs = parser.parse_args().runs
    steward = [sys.executable, "-m", "steward.cli.main"]
    with tempfile.TemporaryDirectory() as tmp:
        # with --db a command works on that database (never a saved login's server)
        env = {**os.environ, "STEWARD_DATA_DIR": str(Path(tmp) / "data")}
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        db = f"sqlite:///{Path(tmp) / 'bench.db'}"
        subprocess.run([*steward, "db", "upgrade", "--db", db], check=True, env=env)
        floor = _median([sys.executable, "-c", "import typer"], env, runs)
        figures = {
            "libraries alone": _median([sys.executable, "-c", LIBRARIES], env, runs),
            "steward --help": _median([*steward, "--help"], env, runs),
            "steward goal list": _median([*steward, "goal", "list", "--db", db], env, runs),
        }
        with _server(steward, db, env) as remote:
            figures["goal list, via server"] = _median([*steward, "goal", "list"], remote, runs)
    print(f"load average {os.getloadavg()[0]:.1f}, {os.cpu_count()} cores; p50 of {runs} runs")
    print(f"  python -c 'import typer': {floor * 1000:6.0f} ms")
    for what, seconds in figures.items():
        print(f"  {what:24} {seconds * 1000:6.0f} ms  ({seconds / floor:.1f}x the floor)")


if __name__ == "__main__":
    main()
