"""The outbound guard's cost where no send is guarded: the audit hook sees every audited event
of the process (every socket connect, every ``sys._getframe``…), so its common case must be
cheap.

Measured in one process, first without the hook, then with it installed and no guard set
(an audit hook cannot be removed, so the order is fixed; each figure is the median of several
rounds): a TCP connect to a listener on 127.0.0.1 and back (``socket.create_connection``,
closed at once), and ``sys._getframe()`` (an audited event that costs almost nothing itself,
so the hook's own cost per event shows). Then the same connect inside a guard that lets it
through (the person confirmed a private network), for the guarded path::

    .venv/bin/python bench/bench_outbound_guard.py [--rounds 7] [--connects 2000]
"""

import argparse
import json
import socket
import statistics
import sys
import threading
import time
from collections.abc import Callable

from steward.connectors.notify.guard import guarded, install


def listener() -> tuple[socket.socket, int]:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1024)

    def accept() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            conn.close()

    threading.Thread(target=accept, daemon=True).start()
    return server, server.getsockname()[1]


def per_call(action: Callable[[], object], count: int, rounds: int) -> float:
    """Median over ``rounds`` of the seconds one call takes."""
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(count):
            action()
        times.append((time.perf_counter() - start) / count)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--connects", type=int, default=2000)
    parser.add_argument("--frames", type=int, default=200_000)
    args = parser.parse_args()
    server, port = listener()

    def connect() -> None:
        socket.create_connection(("127.0.0.1", port)).close()

    def frame() -> None:
        sys._getframe()

    per_call(connect, 200, 1)  # warm up
    before = {
        "connect_us": per_call(connect, args.connects, args.rounds) * 1e6,
        "event_ns": per_call(frame, args.frames, args.rounds) * 1e9,
    }
    install()
    after = {
        "connect_us": per_call(connect, args.connects, args.rounds) * 1e6,
        "event_ns": per_call(frame, args.frames, args.rounds) * 1e9,
    }
    with guarded(private_network=True):
        guarded_connect = per_call(connect, args.connects, args.rounds) * 1e6
    server.close()
    print(
        json.dumps(
            {
                "connect_us_without_hook": round(before["connect_us"], 2),
                "connect_us_with_hook_unguarded": round(after["connect_us"], 2),
                "connect_us_guarded": round(guarded_connect, 2),
                "audited_event_ns_without_hook": round(before["event_ns"], 1),
                "audited_event_ns_with_hook": round(after["event_ns"], 1),
                "hook_ns_per_event": round(after["event_ns"] - before["event_ns"], 1),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
