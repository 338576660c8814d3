"""The agent's browser tools through the harness, on a real Chromium and a local site: a saved
login typed at its host only (its password in no step), a form sent only with the person's
approval (a picture, the host, the values) and once, a click that would send a form refused,
research mode kept read-only, a site the person did not name refused.

Without /usr/bin/chromium these skip with a message, except under ``CI=true``, where they fail.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from steward.app import build_harness
from steward.config import Settings
from steward.domain import ApprovalStatus, TaskSpec, TaskStatus
from steward.domain.clock import SimulatedClock
from steward.domain.skill import SkillContent, WorkflowStep
from steward.environment.browser import launcher
from steward.memory.skills import SkillLibrary
from steward.models import ScriptedModel
from steward.models.base import Message, ModelResponse, ToolSpec
from steward.models.scripted import ScriptItem, call_tool
from steward.service import Service
from steward.store import Store
from support.agents import agent_worker
from support.webserver import Site, serve_site

PASSWORD = "pw-Kettle-7731-secret"
LOGIN = b"""<html><head><title>Sign in</title></head><body>
<form method="post" action="/session">
<label>User name <input name="user"></label>
<label>Password <input type="password" name="pass"></label>
<button type="submit">Sign in</button></form></body></html>"""
CHECKOUT = b"""<html><head><title>Checkout</title></head><body>
<h1>Checkout</h1><p>Blue kettle, total 39.90</p><p>Cart reference C-4471</p>
<form method="post" action="/order">
<label>Full name <input name="name"></label>
<input type="hidden" name="cart" value="C-4471">
<button type="submit">Place order</button></form></body></html>"""


@pytest.fixture(autouse=True)
def chromium() -> None:
    if not launcher.available():
        message = f"{launcher.CHROMIUM} is missing: install Debian's chromium for the browser tests"
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(message)
        pytest.skip(message)


@pytest.fixture
def site() -> Any:
    with serve_site() as served:
        served.page("/login", LOGIN)
        served.page(
            "/session",
            b"<html><head><title>Welcome</title></head><body>Welcome back, Ana</body></html>",
            headers={"Set-Cookie": "sid=s3ss10n; Max-Age=2592000; Path=/; HttpOnly"},
        )
        served.page("/account", b"<html><head><title>Account</title></head><body>Ana</body>")
        served.page("/checkout", CHECKOUT)
        served.page("/order", b"<html><head><title>Thanks</title></head><body>Order 1 placed")
        served.page("/orders", b"<html><head><title>Orders</title></head><body>none yet")
        yield served


def last_page(messages: Sequence[Message]) -> str:
    for message in reversed(messages):
        if message.role == "tool":
            try:
                return str(json.loads(message.content or "{}").get("page", ""))
            except ValueError:
                return ""
    return ""


def ref(kind: str, name: str) -> Any:
    """The reference of the element ``kind "name"`` on the page the last tool call showed."""

    def find(messages: Sequence[Message]) -> str:
        found = re.search(rf'{kind} "{re.escape(name)}"[^\n]*\[ref=(e\d+)\]', last_page(messages))
        assert found, f'no {kind} "{name}" on the page: {last_page(messages)[:2000]}'
        return found.group(1)

    return find


def act(tool: str, **arguments: Any) -> ScriptItem:
    """A call whose arguments may be computed from the conversation (a reference)."""

    def answer(messages: Sequence[Message], _tools: Sequence[ToolSpec]) -> ModelResponse:
        given = {k: v(messages) if callable(v) else v for k, v in arguments.items()}
        return call_tool(tool, **given)

    return answer


async def person(svc: Service, site: Site, *, hosts: Sequence[str] = ("127.0.0.1",)) -> str:
    me = (await svc.ensure_person()).id
    await svc.add_connection(
        person_id=me,
        kind="browser",
        name="shop",
        scopes=["browser.read", "browser.act", "browser.submit"],
        hosts=list(hosts),
    )
    return me


async def run(
    store: Store,
    clock: SimulatedClock,
    data: Path,
    me: str,
    *script: ScriptItem,
    mode: str | None = None,
    more: dict[str, Any] | None = None,
) -> str:
    model = ScriptedModel([*script, call_tool("finish", result="done")])
    harness = await build_harness(Settings(data_dir=data), store, clock, model=model)
    task = await store.tasks.create_task(
        TaskSpec(
            kind="agent",
            title="shop",
            input={"instructions": "shop"} | ({"mode": mode} if mode else {}) | (more or {}),
        ),
        person_id=me,
        now=clock.now(),
    )
    await agent_worker(store, harness, clock).run_until_idle()
    return task.id


async def seen(svc: Service, task_id: str) -> list[tuple[str, str]]:
    return [
        (s.output["name"], s.output["observation"])
        for s in await svc.steps(task_id)
        if s.kind == "tool" and s.output["name"] != "finish"
    ]


async def test_a_saved_login_is_typed_on_its_host_only_and_the_next_task_is_still_signed_in(
    store: Store, clock: SimulatedClock, tmp_path: Path, site: Site
) -> None:
    data = tmp_path / "data"
    svc = Service(store, clock, data_dir=data)
    me = await person(svc, site)
    await svc.put_secret(
        person_id=me,
        name="shop-login",
        value=json.dumps({"username": "ana", "password": PASSWORD}),
        hosts=["127.0.0.1"],
    )
    first = await run(
        store,
        clock,
        data,
        me,
        call_tool("browser_open", url=f"{site.url}/login"),
        act(
            "browser_login",
            login="shop-login",
            username_ref=ref("textbox", "User name"),
            password_ref=ref("textbox", "Password"),
            submit_ref=ref("button", "Sign in"),
        ),
    )
    assert (await svc.get_task(first)).status is TaskStatus.SUCCEEDED
    steps = await seen(svc, first)
    assert "signed in with the saved login shop-login" in steps[1][1]
    assert "Welcome back" in steps[1][1]
    assert site.count("/session") == 1
    everything = json.dumps([s.output for s in await svc.steps(first)], default=str)
    assert PASSWORD not in everything

    # two days on, a new harness (a restart): the profile still holds the site's cookie
    clock.advance(timedelta(days=2))
    later = await run(store, clock, data, me, call_tool("browser_open", url=f"{site.url}/account"))
    assert (await svc.get_task(later)).status is TaskStatus.SUCCEEDED
    account = site.hits("/account")
    assert account
    assert "sid=s3ss10n" in account[-1].headers.get("cookie", "")
    assert site.count("/session") == 1  # not signed in again


async def test_a_login_is_not_typed_on_a_host_it_is_not_saved_for(
    store: Store, clock: SimulatedClock, tmp_path: Path, site: Site
) -> None:
    data = tmp_path / "data"
    svc = Service(store, clock, data_dir=data)
    me = await person(svc, site)
    await svc.put_secret(person_id=me, name="bank", value=PASSWORD, hosts=["bank.example"])
    task = await run(
        store,
        clock,
        data,
        me,
        call_tool("browser_open", url=f"{site.url}/login"),
        act(
            "browser_login",
            login="bank",
            username="ana",
            username_ref=ref("textbox", "User name"),
            password_ref=ref("textbox", "Password"),
            submit_ref=ref("button", "Sign in"),
        ),
    )
    [_, (_, refused)] = await seen(svc, task)
    assert refused.startswith("error:")
    assert "bank.example" in refused
    assert site.count("/session") == 0


async def test_a_form_is_sent_once_after_the_person_approves_what_they_saw(
    store: Store, clock: SimulatedClock, tmp_path: Path, site: Site
) -> None:
    data = tmp_path / "data"
    svc = Service(store, clock, data_dir=data)
    me = await person(svc, site)
    task = await run(
        store,
        clock,
        data,
        me,
        call_tool("browser_open", url=f"{site.url}/checkout"),
        act("browser_type", ref=ref("textbox", "Full name"), text="Ana Example"),
        act(
            "browser_submit",
            ref=ref("button", "Place order"),
            expect_url=f"{site.url}/orders",
            expect_text="C-4471",
        ),
    )
    assert (await svc.get_task(task)).status is TaskStatus.WAITING
    assert site.count("/order") == 0
    [asked] = await svc.list_approvals(person_id=me, status=ApprovalStatus.PENDING)
    assert asked.preview is not None
    facts = dict(asked.preview.facts)
    assert facts["Site"] == "127.0.0.1"
    assert facts["Button"] == "Place order"
    assert facts["Full name"] == "Ana Example"
    assert asked.preview.picture is not None
    picture = Settings(data_dir=data).workspace_dir / me / asked.preview.picture
    assert picture.read_bytes().startswith(b"\x89PNG")

    await svc.decide_approval(asked.id, approve=True)
    model = ScriptedModel([call_tool("finish", result="ordered")])
    harness = await build_harness(Settings(data_dir=data), store, clock, model=model)
    await agent_worker(store, harness, clock).run_until_idle()
    assert (await svc.get_task(task)).status is TaskStatus.SUCCEEDED
    assert site.count("/order") == 1
    [sent] = [said for name, said in await seen(svc, task) if name == "browser_submit"]
    assert "Order 1 placed" in sent


async def test_a_click_that_would_send_a_form_is_refused(
    store: Store, clock: SimulatedClock, tmp_path: Path, site: Site
) -> None:
    data = tmp_path / "data"
    svc = Service(store, clock, data_dir=data)
    me = await person(svc, site)
    task = await run(
        store,
        clock,
        data,
        me,
        call_tool("browser_open", url=f"{site.url}/checkout"),
        act("browser_click", ref=ref("button", "Place order")),
    )
    [_, (_, clicked)] = await seen(svc, task)
    assert clicked.startswith("error:")
    assert "browser_submit" in clicked
    assert site.count("/order") == 0


async def test_research_mode_reads_but_never_types_nor_sends(
    store: Store, clock: SimulatedClock, tmp_path: Path, site: Site
) -> None:
    data = tmp_path / "data"
    svc = Service(store, clock, data_dir=data)
    me = await person(svc, site)
    task = await run(
        store,
        clock,
        data,
        me,
        call_tool("browser_open", url=f"{site.url}/checkout"),
        act("browser_type", ref=ref("textbox", "Full name"), text="Ana"),
        act(
            "browser_submit",
            ref="e9",
            expect_url=f"{site.url}/orders",
            expect_text="C-4471",
        ),
        mode="research",
    )
    [(_, opened), (_, typed), (_, sent)] = await seen(svc, task)
    assert "Blue kettle" in opened
    assert typed.startswith("denied:")
    assert "read-only" in typed
    assert sent.startswith("denied:")
    assert site.count("/order") == 0


async def test_a_site_the_person_did_not_name_is_not_opened(
    store: Store, clock: SimulatedClock, tmp_path: Path, site: Site
) -> None:
    data = tmp_path / "data"
    svc = Service(store, clock, data_dir=data)
    me = await person(svc, site, hosts=["shop.example"])
    task = await run(store, clock, data, me, call_tool("browser_open", url=f"{site.url}/checkout"))
    [(_, opened)] = await seen(svc, task)
    assert opened.startswith("denied:")
    assert "127.0.0.1" in opened
    assert site.count("/checkout") == 0


async def test_a_learned_browser_procedure_replays_by_element_and_stops_when_the_page_changed(
    store: Store, clock: SimulatedClock, tmp_path: Path, site: Site
) -> None:
    data = tmp_path / "data"
    svc = Service(store, clock, data_dir=data)
    me = await person(svc, site)
    learned = await SkillLibrary(store, clock).propose(
        person_id=me,
        name="name-on-checkout",
        content=SkillContent(
            description="Put the person's name on the shop's checkout",
            procedure="Open the checkout and type the name into Full name.",
            inputs=("name: the name to ship to",),
            workflow=(
                WorkflowStep(tool="browser_open", arguments={"url": f"{site.url}/checkout"}),
                # a reference from another page load: the element says what it must be
                WorkflowStep(
                    tool="browser_type",
                    arguments={"ref": "e77", "element": 'textbox "Full name"', "text": "{name}"},
                ),
            ),
        ),
        actor="person",
    )
    assert learned.skill is not None
    replay = {"skill": "name-on-checkout", "inputs": {"name": "Ana Example"}}

    replayed = await run(store, clock, data, me, more=replay)
    done = await svc.get_task(replayed)
    assert done.status is TaskStatus.SUCCEEDED
    assert done.result is not None
    assert done.result["text"] == "ran the workflow of skill 'name-on-checkout': 2 steps"
    [(_, typed)] = [s for s in await seen(svc, replayed) if s[0] == "browser_type"]
    assert 'textbox \\"Full name\\"' in typed
    assert "Ana Example" in typed

    # the shop renamed the field: the replay stops there and the model takes over
    site.page("/checkout", CHECKOUT.replace(b"Full name", b"Recipient"))
    changed = await run(store, clock, data, me, more=replay)
    after = (await svc.get_task(changed)).result
    assert after is not None
    assert after["text"] == "done"
    [(_, refused)] = [s for s in await seen(svc, changed) if s[0] == "browser_type"]
    assert refused.startswith("error: the page changed")
