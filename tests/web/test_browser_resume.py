"""The product issue's scenario in a real browser: log in with a token, see a pending approval
appear live, approve it, and watch the task resume and finish; and approve "always", revoke
the grant that made, and see the next send held again.

Unlike test_browser.py, a real runtime runs next to the dashboard, in the same event loop, as
``steward up`` runs them. Its worker drives the agent harness ``steward up`` builds; the model
is a scripted one served over a socket (the OpenAI-compatible adapter talks to it), and the
agent's ``http_fetch`` goes through the person's policy and the egress broker to the demo's
fake mail service. No grant covers sending, so the sentinel asks; the approval, decided in the
browser, nudges the in-process runtime, which resumes the task at the held step. On both
backends; the screenshots go where test_browser.py puts its own.
"""

from __future__ import annotations

import asyncio
import json
import secrets
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from playwright.async_api import Browser, expect
from pydantic import SecretStr

from steward.app import build_harness
from steward.config import Settings
from steward.connectors.http import API_CALL
from steward.demo.office import DANA, SEND_PATH, FakeOffice
from steward.domain import ApprovalStatus, Goal, Person, TaskStatus
from steward.domain.clock import Clock
from steward.domain.secrets import placeholder
from steward.domain.tokens import CONTROL
from steward.models.base import ModelResponse
from steward.models.scripted import ScriptedModel, call_tool
from steward.runtime.runtime import Runtime, RuntimeConfig
from steward.service import Service
from steward.store import Store
from steward.testing.http_server import serving
from steward.testing.model_server import ModelServer, run_model_server
from support.startup import scaled
from support.waiting import eventually
from support.web import chromium, dashboard

LOOPBACK = "127.0.0.1"
SECRET = "mail"
MAIL = {"to": DANA, "subject": "Re: Thursday?", "text": "Thursday at 10:00 works."}
INSTRUCTIONS = f"Tell {DANA} that Thursday at 10:00 works."
LIVE = 10_000
"""Milliseconds to wait for what the runtime does in the background (it takes well under one)
on a quiet machine; :func:`live` stretches it for this one."""


def live() -> float:
    return scaled(LIVE)


def script(office: str) -> list[ModelResponse]:
    """The agent: send the mail (which the sentinel holds), then finish once it went out."""
    return [
        call_tool(
            "http_fetch",
            url=f"{office}{SEND_PATH}",
            method="POST",
            headers={
                "Authorization": f"Bearer {placeholder(SECRET)}",
                "Content-Type": "application/json",
            },
            body=json.dumps(MAIL),
        ),
        call_tool("finish", result="Sent Dana the reply."),
    ]


@dataclass(kw_only=True)
class World:
    url: str
    """The dashboard's base URL."""
    owner: Service
    """The machine owner's facade, with the runtime to nudge."""
    store: Store
    office: FakeOffice
    model: ModelServer
    person: Person
    goal: Goal
    token: str
    """A ``control`` token in plain text: what the person logs in with."""


@pytest.fixture
async def world(store: Store, tmp_path: Path) -> AsyncIterator[World]:
    # the real clock, as `steward up` runs: the runtime works while the browser waits, and
    # nothing here needs time to jump ahead
    clock = Clock()
    office = FakeOffice(secret=secrets.token_urlsafe(16), every=3600, clock=clock)
    async with serving(office.app()) as office_url:
        # the same agent for every task a test asks (each takes two model calls)
        with run_model_server(ScriptedModel(script(office_url) * 3)) as model:
            settings = Settings(
                data_dir=tmp_path,
                model=model.model.name,
                model_base_url=model.url,
                model_api_key=SecretStr(model.api_key),
            )
            harness = await build_harness(settings, store, clock)
            # no polling: the runtime moves only when nudged, so the task resumes only if the
            # dashboard's decision wakes it
            runtime = Runtime(store, harness, clock, RuntimeConfig(poll_seconds=None))
            owner = Service(store, clock, runtime, data_dir=tmp_path)
            person = await owner.ensure_person("ann")
            _, token = await owner.create_token(person_id=person.id, name="web", scopes=[CONTROL])
            # authority to call the mail service (a connection, its secret) but no grant, so
            # the sentinel asks before anything is sent
            await owner.add_connection(
                person_id=person.id, kind="email", name="mail", scopes=[API_CALL], hosts=[LOOPBACK]
            )
            await owner.put_secret(
                person_id=person.id, name=SECRET, value=office.secret, hosts=[LOOPBACK]
            )
            goal = await owner.create_goal(person_id=person.id, title="Answer Dana")
            async with serving(dashboard(owner)) as url:
                running = asyncio.create_task(runtime.run())
                try:
                    yield World(
                        url=url,
                        owner=owner,
                        store=store,
                        office=office,
                        model=model,
                        person=person,
                        goal=goal,
                        token=token,
                    )
                finally:
                    runtime.stop()
                    await running


@pytest.fixture
async def browser(world: World) -> AsyncIterator[Browser]:
    """Chromium, closed before the dashboard stops (its open event streams would keep the
    server waiting)."""
    async with chromium() as launched:
        yield launched


async def test_an_approval_appears_live_and_the_task_resumes_and_finishes(
    browser: Browser, world: World, shots: Path
) -> None:
    context = await browser.new_context(base_url=world.url)
    inbox = await context.new_page()
    await inbox.goto("/login")
    await inbox.fill("#token", world.token)
    await inbox.click("button.primary")
    await expect(inbox).to_have_url(world.url + "/")
    await inbox.goto("/inbox")
    await expect(inbox.locator("body.live")).to_have_count(1)  # listening to the stream
    await expect(inbox.locator("article.approval")).to_have_count(0)
    # the goal in a second tab, to watch the task there as it happens
    goal = await context.new_page()
    await goal.goto(f"/goals/{world.goal.id}")
    await expect(goal.locator("body.live")).to_have_count(1)

    task = await world.owner.ask_agent(
        person_id=world.person.id, instructions=INSTRUCTIONS, goal_id=world.goal.id
    )
    card = inbox.locator("article.approval")
    await expect(card).to_contain_text(SEND_PATH, timeout=live())
    await expect(card).to_contain_text(f"with your secret {SECRET}")  # by name only
    await expect(card).not_to_contain_text(placeholder(SECRET))
    await expect(card).not_to_contain_text(world.office.secret)
    panel = goal.locator(f"details[id='{task.id}']")
    await expect(panel).to_contain_text("waits for your approval", timeout=live())
    assert world.office.sent == []  # held: nothing went out yet
    await inbox.screenshot(path=shots / "resume-approval.png")

    await card.locator("button[value='once']").click()
    await expect(inbox.locator(".flash")).to_have_text("Approved this once.")
    await expect(panel.locator(".badge")).to_have_text("done", timeout=live())
    await expect(goal.locator("ul.feed")).to_contain_text(
        "worked after your answer: done", timeout=live()
    )
    await goal.screenshot(path=shots / "resume-finished.png")

    assert world.office.sent == [MAIL]
    [sent] = [r for r in world.office.requests if r.path == SEND_PATH]
    assert sent.authorized  # the broker put the secret on the wire
    done = await world.store.tasks.get_task(task.id)
    assert done.status is TaskStatus.SUCCEEDED
    assert done.result == {
        "text": "Sent Dana the reply.",
        "untrusted_sources": ["http_fetch (step 3)"],  # the API's answer is others' text
    }
    [approval] = await world.owner.list_approvals(person_id=world.person.id, status=None)
    assert approval.status is ApprovalStatus.APPROVED
    assert approval.task_id == task.id
    activations = await world.store.activations.list_activations(task_id=task.id)
    assert [a.reason for a in activations][1:] == ["approval"]  # resumed by the decision
    assert world.model.requests == 2  # the held call was not asked again


async def _until_done(world: World, task_id: str) -> None:
    async def finished() -> bool:
        return (await world.store.tasks.get_task(task_id)).status.terminal

    await eventually(finished, f"task {task_id} to finish", seconds=live() / 1000)


async def test_approved_always_then_the_grant_revoked_and_the_next_send_is_held_again(
    browser: Browser, world: World
) -> None:
    page = await (await browser.new_context(base_url=world.url)).new_page()
    await page.goto("/login")
    await page.fill("#token", world.token)
    await page.click("button.primary")
    await page.goto("/inbox")
    await expect(page.locator("body.live")).to_have_count(1)

    first = await world.owner.ask_agent(
        person_id=world.person.id, instructions=INSTRUCTIONS, goal_id=world.goal.id
    )
    await page.locator("article.approval button[value='always']").click(timeout=live())
    await expect(page.locator(".flash")).to_have_text(
        "Approved always, for the same recipients and sites."
    )
    await _until_done(world, first.id)
    [grant] = await world.owner.list_grants(person_id=world.person.id)

    # standing permission: the next send goes out without asking
    second = await world.owner.ask_agent(
        person_id=world.person.id, instructions=INSTRUCTIONS, goal_id=world.goal.id
    )
    await _until_done(world, second.id)
    assert (await world.store.tasks.get_task(second.id)).status is TaskStatus.SUCCEEDED
    assert world.office.sent == [MAIL, MAIL]

    await page.goto("/security")
    await page.locator(f"li[id='{grant.id}'] button", has_text="Revoke").click()
    await expect(page.locator(".flash")).to_contain_text("Grant revoked")

    # revoked: the same send is held for the person again, and nothing goes out
    await page.goto("/inbox")
    await expect(page.locator("body.live")).to_have_count(1)
    third = await world.owner.ask_agent(
        person_id=world.person.id, instructions=INSTRUCTIONS, goal_id=world.goal.id
    )
    await expect(page.locator("article.approval")).to_contain_text(SEND_PATH, timeout=live())
    assert (await world.store.tasks.get_task(third.id)).status is TaskStatus.WAITING
    assert world.office.sent == [MAIL, MAIL]
