"""How long ``steward`` takes to start: the median wall time of 20 runs of ``steward --help``
and of ``steward goal list`` (on a fresh SQLite database in a temporary data directory), beside
``python -c "import typer"`` (the floor: an interpreter and the CLI library), as a ratio.

Run: ``.venv/bin/python bench/cli_start.py [--runs 20]``. Also prints the machine's load
average: on a busy machine every figure grows, the ratios much less.

The commands run with their bytecode cached, as an installed Steward's is
(``PYTHONDONTWRITEBYTECODE`` is dropped: the uncounted first run writes the caches); with it
set, every run compiles Steward's ~200 modules from source again, ~0.2 s more.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _wall(argv: list[str], env: dict[str, str]) -> float:
    began = time.perf_counter()
    subprocess.run(argv, check=True, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    return time.perf_counter() - began


def _median(argv: list[str], env: dict[str, str], runs: int) -> float:
    _wall(argv, env)  # once to warm the file cache, not counted
    return statistics.median(_wall(argv, env) for _ in range(runs))


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
            "steward --help": _median([*steward, "--help"], env, runs),
            "steward goal list": _median([*steward, "goal", "list", "--db", db], env, runs),
        }
    print(f"load average {os.getloadavg()[0]:.1f}, {os.cpu_count()} cores; p50 of {runs} runs")
    print(f"  python -c 'import typer': {floor * 1000:6.0f} ms")
    for what, seconds in figures.items():
        print(f"  {what:24} {seconds * 1000:6.0f} ms  ({seconds / floor:.1f}x the floor)")


if __name__ == "__main__":
    main()
