"""A dispatcher process killed while a channel is taking a message: nothing is delivered twice.
The message being sent becomes "in doubt" (it did arrive here), the rest are sent once by the
next dispatcher. Real processes, a real local receiver over HTTP."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from steward.domain.channel import Channel, ChannelKind
from steward.domain.delivery import DeliveryStatus
from steward.domain.ids import new_id
from steward.domain.report import Report, report_id
from steward.store import Store
from support.startup import scaled
from support.waiting import eventually

CHILD = Path(__file__).parents[2] / "support" / "notify_child.py"


class Receiver:
    """Records every message POSTed to it; the one titled "hang" is recorded and then never
    answered (until the test ends)."""

    def __init__(self) -> None:
        self.got: list[str] = []
        self.titles: list[str] = []
        self.release = threading.Event()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                receiver.got.append(body["key"])
                receiver.titles.append(body["title"])
                if body["title"] == "hang":
                    receiver.release.wait(120)
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/notify"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    try:
        yield r
    finally:
        r.close()


def _start(db_url: str, endpoint: str, holder: str, log: Path) -> subprocess.Popen[bytes]:
    with log.open("ab") as err:
        return subprocess.Popen(
            [sys.executable, str(CHILD), db_url, endpoint, holder],
            stdout=subprocess.DEVNULL,
            stderr=err,
            env=os.environ | {"PYTHONPATH": str(CHILD.parents[1])},
        )


async def test_a_dispatcher_killed_while_sending_delivers_nothing_twice(
    store: Store, db_url: str, receiver: Receiver, tmp_path: Path
) -> None:
    now = datetime.now().astimezone()
    person = await store.persons.create_person(name="Ada", now=now)
    await store.channels.add(
        Channel(
            id=new_id("chn"), person_id=person.id, kind=ChannelKind.APPRISE, name="phone",
            created_at=now,
        )
    )  # fmt: skip
    made = []
    for what in ("one", "hang", "two", "three"):
        report = Report(
            id=report_id(f"kill:{what}"),
            person_id=person.id,
            origin="runtime",
            what=what,
            importance="urgent",
            created_at=now,
        )
        made.append(await store.reports.add(report))
    log = tmp_path / "dispatch.log"
    first = _start(db_url, receiver.url, "first", log)
    second: subprocess.Popen[bytes] | None = None
    try:

        async def hanging() -> bool:
            return "hang" in receiver.titles

        await eventually(hanging, "the first dispatcher to send 'hang'", seconds=scaled(60),
                         details=log.read_text)  # fmt: skip
        first.send_signal(signal.SIGKILL)
        first.wait(30)
        second = _start(db_url, receiver.url, "second", log)

        async def settled() -> bool:
            found = await store.deliveries.list_for(person_id=person.id)
            return len(found) == 4 and all(
                d.status in (DeliveryStatus.DELIVERED, DeliveryStatus.IN_DOUBT) for d in found
            )

        await eventually(settled, "every delivery settled", seconds=scaled(60),
                         details=log.read_text)  # fmt: skip
    finally:
        for proc in (first, second):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait(30)
    # each message reached the receiver once; the one being sent when killed is in doubt
    assert sorted(receiver.titles) == ["hang", "one", "three", "two"]
    assert len(set(receiver.got)) == 4
    found = {d.message.title: d for d in await store.deliveries.list_for(person_id=person.id)}
    assert found["hang"].status == DeliveryStatus.IN_DOUBT
    assert {found[t].status for t in ("one", "two", "three")} == {DeliveryStatus.DELIVERED}
