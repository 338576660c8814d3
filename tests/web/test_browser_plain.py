"""A first-time person on a phone (390x844, real Chromium through Playwright, SQLite): they open
the login link `steward up` prints, read an approval as a sentence with its reason in words
(no JSON, no credential in view), approve it; costs read sensibly and the navigation is one
row. A read token's browser sees no button it cannot use.

Without /usr/bin/chromium these skip with a message, except under ``CI=true``, where they fail.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from fastapi import FastAPI
from playwright.async_api import Browser, Page, expect

from steward.api import create_app
from steward.cli.serve import _login_link
from steward.domain import (
    Approval,
    ApprovalStatus,
    Notification,
    Person,
    TaskSpec,
    args_hash,
)
from steward.domain.clock import SimulatedClock
from steward.domain.ids import new_id
from steward.domain.tokens import READ
from steward.service import Service
from steward.store import Fence, Store
from steward.testing.http_server import serving
from support.startup import scaled
from support.web import chromium

PHONE = {"width": 390, "height": 844}
SUMMARY = "Send an email to dana@acme.example — 'Re: Thursday?'"
ARGS = {
    "to": "dana@acme.example",
    "subject": "Re: Thursday?",
    "headers": {"Authorization": "Bearer {{secret:demo-mail}}"},
}
RULE_REASON = "rule 'mail.send' (ask): new people"


@dataclass
class FirstStart:
    url: str
    app: FastAPI
    owner: Service
    store: Store
    person: Person
    approval: Approval


@pytest.fixture
async def first(clock: SimulatedClock, tmp_path: Path) -> AsyncIterator[FirstStart]:
    store = await Store.open(f"sqlite:///{tmp_path}/steward.db")
    owner = Service(store, clock, data_dir=tmp_path)
    person = await owner.ensure_person("dana's friend")
    goal = await owner.create_goal(
        person_id=person.id,
        title="Reply to Dana about Thursday (dana@acme.example): Thursday at 10:00 works fine",
    )
    await store.tasks.create_task(
        TaskSpec(kind="noop", title="write to Dana"),
        person_id=person.id,
        goal_id=goal.id,
        now=clock.now(),
    )
    [claim] = await store.tasks.claim_tasks(
        worker="w-web", limit=1, lease_seconds=3600, now=clock.now()
    )
    approval_id = new_id("apr")
    approval = await store.inbox.request_approval(
        Fence.of(claim),
        Approval(
            id=approval_id,
            person_id=person.id,
            task_id=claim.task.id,
            goal_id=goal.id,
            step_seq=1,
            tool="send_email",
            args=ARGS,
            args_hash=args_hash("send_email", ARGS),
            reason=RULE_REASON,
            scopes=("email.send",),
            status=ApprovalStatus.PENDING,
            created_at=clock.now(),
            summary=SUMMARY,
        ),
        Notification(
            id=new_id("ntf"),
            person_id=person.id,
            kind="approval",
            title=f"Approve? {SUMMARY}",
            body=RULE_REASON,
            task_id=claim.task.id,
            ref=approval_id,
            created_at=clock.now(),
        ),
    )
    app = create_app(owner)
    try:
        async with serving(app) as url:
            yield FirstStart(
                url=url, app=app, owner=owner, store=store, person=person, approval=approval
            )
    finally:
        await store.close()


@pytest.fixture
async def browser(first: FirstStart) -> AsyncIterator[Browser]:
    async with chromium() as launched:
        yield launched


async def _phone(browser: Browser, first: FirstStart) -> Page:
    context = await browser.new_context(base_url=first.url, viewport=PHONE)
    return await context.new_page()


async def test_a_first_time_person_follows_the_link_reads_the_sentence_and_approves(
    browser: Browser, first: FirstStart, shots: Path
) -> None:
    link = await _login_link(first.owner, first.app, first.person, first.url)
    assert link is not None  # no control token yet: `steward up` prints this link
    page = await _phone(browser, first)
    await page.goto(link)
    await expect(page).to_have_url(first.url + "/")
    # the navigation is one row on a phone
    header = await page.locator("header.top").bounding_box()
    assert header is not None
    assert header["height"] < 60, header
    await page.goto("/inbox")
    card = page.locator("article.approval")
    await expect(card.locator("h3")).to_have_text(SUMMARY)
    await expect(card).to_contain_text(
        "You asked me to check with you before sending mail (you said: “new people”)."
    )
    shown = await card.inner_text()
    for internal in ("{", "rule '", "Bearer", "demo-mail", "ask)"):
        assert internal not in shown, internal  # the details stay folded
    await card.locator("summary").click()  # the details, one tap away: secrets still hidden
    await expect(card.locator("pre.args")).to_contain_text("(hidden)")
    await expect(card.locator("pre.args")).not_to_contain_text("demo-mail")
    await page.screenshot(path=str(shots / "phone-approval.png"), full_page=True)
    for path in ("/", "/goals", f"/goals/{first.approval.goal_id}", "/security"):
        await page.goto(path)
        assert "$0.0000" not in await page.content(), path
        assert " UTC<" not in await page.content(), path
    await page.goto("/inbox")
    await page.get_by_role("button", name="Approve once").click()
    await expect(page.locator(".flash")).to_contain_text("Approved", timeout=scaled(10) * 1000)
    decided = await first.owner.get_approval(first.approval.id)
    assert decided.status is ApprovalStatus.APPROVED
    # the link was used up: it signs nobody else in
    other = await _phone(browser, first)
    await other.goto(link)
    await expect(other.locator(".error")).to_contain_text("already used or has expired")


async def test_a_read_token_sees_no_approve_button(browser: Browser, first: FirstStart) -> None:
    _, token = await first.owner.create_token(
        person_id=first.person.id, name="phone", scopes=[READ]
    )
    page = await _phone(browser, first)
    await page.goto("/login")
    await page.fill("#token", token)
    await page.click("button.primary")
    await expect(page).to_have_url(first.url + "/")
    await page.goto("/inbox")
    await expect(page.locator("article.approval h3")).to_have_text(SUMMARY)
    await expect(page.get_by_role("button", name="Approve once")).to_have_count(0)
    await expect(page.get_by_role("button", name="Deny")).to_have_count(0)
    await expect(page.locator(".readonly")).to_contain_text("read-only")
