"""`steward demo` end to end: it runs in-process on a temporary directory and a free port, and
everything a newcomer is promised is checked over HTTP with the token it prints."""

from __future__ import annotations

import asyncio
import socket
import time
from contextlib import suppress
from pathlib import Path
from typing import Any

import httpx
import pytest
import typer
from typer.testing import CliRunner

from steward.cli.demo import demo
from steward.demo import DemoOptions, RunningDemo, running_demo
from steward.demo.office import INBOX_PATH
from steward.demo.script import SKILL
from steward.demo.seed import HOST
from steward.store import Store
from support.startup import scaled
from support.waiting import eventually

Json = dict[str, Any]


async def items(api: httpx.AsyncClient, path: str, **params: Any) -> list[Json]:
    response = await api.get(path, params=params)
    response.raise_for_status()
    found: list[Json] = response.json()["items"]
    return found


def source_kinds(memory: Json) -> set[tuple[str, bool]]:
    return {(s["kind"], s["trusted"]) for s in memory["sources"]}


async def test_the_demo_shows_the_whole_system_working(tmp_path: Path) -> None:
    options = DemoOptions(data_dir=tmp_path / "demo", port=0, every=1.0)
    async with running_demo(options) as running:
        token = running.seeded.token
        headers = {"Authorization": f"Bearer {token}"}
        async with httpx.AsyncClient(base_url=f"{running.url}/api/v1", headers=headers) as api:
            await check_everything(api, running)
            await approving_sends_the_mail(api, running)
            await asking_anything_else_says_how_to_use_a_real_model(api)
            wrong = await api.get("/goals", headers={"Authorization": "Bearer stw_wrong"})
            assert wrong.status_code == 401
            assert (await api.get("/goals", headers={"Authorization": ""})).status_code == 401
        # an open dashboard keeps the live stream open: stopping must not wait for it
        connected = asyncio.Event()
        live = asyncio.create_task(listen(running, connected))
        await asyncio.wait_for(connected.wait(), scaled(20))
        leaving = time.monotonic()
    assert time.monotonic() - leaving < scaled(5)  # not held open by the stream
    live.cancel()
    with suppress(asyncio.CancelledError, httpx.HTTPError):
        await live


async def listen(running: RunningDemo, connected: asyncio.Event) -> None:
    """Follow the live stream, as the dashboard does, until the server goes away; ``connected``
    is set once the server has answered and streams (its headers are in)."""
    headers = {"Authorization": f"Bearer {running.seeded.token}"}
    async with (
        httpx.AsyncClient(timeout=None) as client,
        client.stream("GET", f"{running.url}/api/v1/stream", headers=headers) as stream,
    ):
        connected.set()
        assert stream.status_code == 200  # surfaces when the test awaits this task
        async for _ in stream.aiter_lines():
            pass


async def check_everything(api: httpx.AsyncClient, running: RunningDemo) -> None:
    inbox_goal = running.seeded.inbox_goal.id

    async def checked_twice() -> bool:
        done = await items(api, "/tasks", goal_id=inbox_goal, status="succeeded")
        candidates = await items(api, "/memories", status="candidate")
        proposed = await items(api, "/skills", status="proposed")
        return len(done) >= 2 and len(candidates) >= 2 and bool(proposed)

    await eventually(checked_twice, "two checks of the inbox", seconds=scaled(20), every=0.2)

    # (a) the recurring goal: several tasks, each with its own activation, by the timer
    checks = await items(api, "/tasks", goal_id=inbox_goal)
    for task in [t for t in checks if t["status"] == "succeeded"][:2]:  # a newer one may wait
        detail = (await api.get(f"/tasks/{task['id']}")).json()
        assert detail["activations"], task
    summaries = [t["result"] for t in checks if t["status"] == "succeeded"]
    assert any("dana.park@acme.example: Thursday? — needs you" in str(s) for s in summaries)
    # the agent's calls reached the fake office, with the vault's secret on the wire only
    reads = [r for r in running.office.requests if r.path == INBOX_PATH]
    assert len(reads) >= 2
    assert all(r.authorized for r in reads)

    # (b) the reply waits for the person: an approval bound to the send, nothing sent yet
    [approval] = await items(api, "/approvals")
    assert approval["goal_id"] == running.seeded.reply_goal.id
    assert approval["tool"] == "office_mail_send"
    assert approval["summary"] == (
        "Send Dana Park (dana.park@acme.example) an email: “Hi Dana, Thursday at 10:00 works. "
        "See you then!”"
    )
    assert approval["reason"] == "rule 'mail.send' (ask): I read every mail before it goes out"
    assert running.office.sent == []

    # (c) memories with provenance of each kind
    memories = await items(api, "/memories")
    by_content = {m["content"]: m for m in memories}
    assert source_kinds(by_content["Prefers aisle seats on flights"]) == {("person", True)}
    learned = by_content["Prefers short, direct email replies"]  # from the reply task
    assert (source_kinds(learned), learned["status"]) == ({("task", True)}, "active")
    from_mail = by_content["The quarterly SLA report is due to Acme on Friday"]
    assert (source_kinds(from_mail), from_mail["status"]) == ({("connector", False)}, "candidate")
    read_mail = by_content["Dana Park (Acme) is preparing the Q3 contract renewal with me"]
    assert (source_kinds(read_mail), read_mail["status"]) == ({("task", False)}, "candidate")
    # ...and a superseded fact: in history, not current
    berlin, lisbon = (
        by_content["Lives in Berlin"],
        by_content["Moved to Lisbon and lives there now"],
    )
    assert berlin["superseded_by"] == lisbon["id"]
    assert berlin["valid_to"] is not None
    found = await items(api, "/memories/search", q="lives")
    assert [m["memory"]["id"] for m in found] == [lisbon["id"]]

    # (d) a learned skill with two versions; the agent's own proposal waits for the person
    history = await items(api, f"/skills/{SKILL}/history")
    assert len(history) == 2
    [proposed] = await items(api, "/skills", status="proposed")
    assert proposed["name"] == "answer-meeting-requests"


async def approving_sends_the_mail(api: httpx.AsyncClient, running: RunningDemo) -> None:
    [approval] = await items(api, "/approvals")
    decided = await api.post(
        f"/approvals/{approval['id']}/decision", json={"approve": True, "scope": "once"}
    )
    assert decided.status_code == 200, decided.text

    async def sent() -> bool:
        task = (await api.get(f"/tasks/{approval['task_id']}")).json()["task"]
        return bool(task["status"] == "succeeded")

    await eventually(sent, "the approved mail to be sent", seconds=scaled(20), every=0.2)
    assert [m["to"] for m in running.office.sent] == ["dana.park@acme.example"]
    # what the agent told the person: Dana's request needs them, and the reply went out
    reports = {r["what"]: r for r in await items(api, "/reports", limit=100)}
    [asked] = [r for w, r in reports.items() if w.startswith("Dana Park wrote: “Thursday?”")]
    assert (asked["importance"], asked["goal_id"]) == ("actionable", running.seeded.inbox_goal.id)
    assert "waits for your approval" in asked["todo"]
    told = reports["Sent Dana your reply: Thursday at 10:00 works."]
    assert (told["importance"], told["goal_id"]) == ("info", running.seeded.reply_goal.id)


async def asking_anything_else_says_how_to_use_a_real_model(api: httpx.AsyncClient) -> None:
    asked = await api.post("/tasks", json={"instructions": "What is on my plate today?"})
    assert asked.status_code == 201, asked.text
    task_id = asked.json()["id"]

    async def answered() -> bool:
        task = (await api.get(f"/tasks/{task_id}")).json()["task"]
        return bool(task["status"] == "succeeded")

    await eventually(answered, "the question to be answered", seconds=scaled(20), every=0.2)
    task = (await api.get(f"/tasks/{task_id}")).json()["task"]
    assert "STEWARD_MODEL" in str(task["result"])


def command() -> typer.Typer:
    app = typer.Typer()
    app.command()(demo)
    return app


def test_the_command_prints_where_to_look_and_how_to_log_in(tmp_path: Path) -> None:
    where = tmp_path / "demo"
    args = ["--data-dir", str(where), "--port", "0", "--seconds", "0.5"]
    for _ in range(2):  # a second run starts afresh in the same directory
        result = CliRunner().invoke(command(), args)
        assert result.exit_code == 0, result.output
        out = result.output
        assert f"http://{HOST}:" in out
        assert "/login" in out
        assert "token:   stw_" in out
        assert "STEWARD_MODEL" in out
        assert "Ctrl-C" in out
    assert (where / "steward.db").exists()


def test_notify_makes_the_persons_channel_before_the_first_report(tmp_path: Path) -> None:
    where = tmp_path / "demo"
    hook = "json://127.0.0.1:9/hook"
    args = ["--data-dir", str(where), "--port", "0", "--seconds", "0.5", "--notify", hook]
    refused = CliRunner().invoke(command(), args)
    assert refused.exit_code == 1  # on this machine: the person must say so
    assert "private network" in refused.output
    result = CliRunner().invoke(command(), [*args, "--private-network"])
    assert result.exit_code == 0, result.output

    async def check() -> None:
        store = await Store.open(f"sqlite:///{where}/steward.db")
        try:
            [person] = await store.persons.list_persons()
            [channel] = await store.channels.list_for(person.id)
            assert (channel.name, channel.kind.value) == ("phone", "apprise")
            told = await store.reports.list_for(person.id, limit=50, offset=0, unread=False)
            assert all(r.created_at >= channel.created_at for r in told)
        finally:
            await store.close()

    asyncio.run(check())


def test_a_port_in_use_is_one_clear_line(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind((HOST, 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        result = CliRunner().invoke(command(), ["--data-dir", str(tmp_path), "--port", port])
    assert result.exit_code == 1
    assert f"port {port} on {HOST} is in use" in result.output


def test_it_never_takes_over_a_directory_that_is_not_its_own(tmp_path: Path) -> None:
    (tmp_path / "steward.db").write_text("the person's real data")
    result = CliRunner().invoke(
        command(), ["--data-dir", str(tmp_path), "--port", "0", "--seconds", "0.1"]
    )
    assert result.exit_code == 1
    assert "nor a Steward demo directory" in result.output
    assert (tmp_path / "steward.db").read_text() == "the person's real data"


@pytest.mark.parametrize("every", ["0", "-5"])
def test_a_period_must_be_positive(tmp_path: Path, every: str) -> None:
    result = CliRunner().invoke(
        command(), ["--data-dir", str(tmp_path / "d"), "--port", "0", "--every", every]
    )
    assert result.exit_code == 1
    assert "more than 0 seconds" in result.output
