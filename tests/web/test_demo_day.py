"""A day of ``steward demo`` as the person lives it, on a phone (390x844, real Chromium
through Playwright): the demo runs for real (its runtime, office, dashboard and deliveries over
loopback sockets), its reports reach a local Apprise JSON receiver, and the clock is moved
through the day to the evening digest.

- A first-time person follows the one-time login link the demo's banner prints, reads the
  mail to Dana as a sentence (details folded behind a toggle), approves it, and the mail goes.
- Said no instead, the reply task reads "stopped: you said no", never "done".
- After a day of hourly inbox checks the home page lists the reports in words, grouped by goal,
  and the digest the receiver got at 18:00 reads as those reports.

Screenshots go to a temporary directory, or to ``$STEWARD_SCREENSHOTS`` (the committed ones in
docs/screenshots/ are made with ``STEWARD_SCREENSHOTS=docs/screenshots``). Without
/usr/bin/chromium these skip with a message, except under ``CI=true``, where they fail.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import Browser, Page, expect

from steward.demo import DemoOptions, RunningDemo, running_demo
from steward.demo.run import banner
from steward.domain import ApprovalStatus
from steward.domain.report import Report
from support.notifyservers import Receiver, receiving
from support.shifted_clock import ShiftedClock
from support.startup import scaled
from support.waiting import eventually
from support.web import chromium

PHONE = {"width": 390, "height": 844}
HOUR = 3600.0
SENTENCE = (
    "Send Dana Park (dana.park@acme.example) an email: “Hi Dana, Thursday at 10:00 works. "
    "See you then!”"
)
REASON = (
    "You asked me to check with you before sending mail (you said: “I read every mail before "
    "it goes out”)."
)
INTERNALS = re.compile(r"STEP|step \d|http_fetch|office_mail_send|\{|\}|(rep|tsk|gol|apr)_\w+")
"""What the person must never read: steps, tool names, JSON, ids."""


@dataclass
class Day:
    demo: RunningDemo
    clock: ShiftedClock
    receiver: Receiver
    browser: Browser


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with receiving() as rx:
        yield rx


@pytest.fixture
async def day(tmp_path: Path, receiver: Receiver) -> AsyncIterator[Day]:
    """The demo from 09:00 (UTC, the demo person's zone) of the day after today's, checking
    the inbox hourly, its reports also going to ``receiver``."""
    tomorrow = datetime.now(UTC).date() + timedelta(days=1)
    clock = ShiftedClock(datetime(tomorrow.year, tomorrow.month, tomorrow.day, 9, tzinfo=UTC))
    options = DemoOptions(
        data_dir=tmp_path / "demo",
        port=0,
        every=HOUR,
        notify=f"json://127.0.0.1:{receiver.port}/hook",
        notify_private_network=True,
    )
    async with AsyncExitStack() as stack:
        demo = await stack.enter_async_context(running_demo(options, clock=clock))
        # closed before the demo stops: open event streams would keep its server waiting
        launched = await stack.enter_async_context(chromium())
        yield Day(demo=demo, clock=clock, receiver=receiver, browser=launched)


async def phone(day: Day) -> Page:
    context = await day.browser.new_context(base_url=day.demo.url, viewport=PHONE)
    return await context.new_page()


async def follow_the_banner(day: Day) -> Page:
    """Open the login link exactly as the demo's banner prints it."""
    options = DemoOptions(data_dir=day.demo.data_dir, every=HOUR)
    [line] = [x for x in banner(day.demo, options) if "one-time login link" in x]
    link = line.split()[1]
    assert link == day.demo.login
    page = await phone(day)
    await page.goto(link)
    await expect(page).to_have_url(day.demo.url + "/")
    return page


async def approval_waits(day: Day) -> str:
    svc, person = day.demo.service, day.demo.seeded.person

    async def asked() -> bool:
        return bool(await svc.list_approvals(person_id=person.id))

    await eventually(asked, "the mail to Dana to wait for approval", seconds=scaled(30))
    [approval] = await svc.list_approvals(person_id=person.id)
    return approval.id


async def reply_task_ends(day: Day) -> None:
    svc, goal = day.demo.service, day.demo.seeded.reply_goal

    async def ended() -> bool:
        return all(t.status.terminal for t in await svc.list_tasks(goal_id=goal.id))

    await eventually(ended, "the reply task to end", seconds=scaled(30))


async def reports(day: Day) -> list[Report]:
    return await day.demo.service.list_reports(person_id=day.demo.seeded.person.id, limit=200)


async def test_a_first_time_person_follows_the_banner_reads_the_mail_and_approves(
    day: Day, shots: Path
) -> None:
    approval_id = await approval_waits(day)
    page = await follow_the_banner(day)
    await page.goto("/inbox")
    card = page.locator("article.approval")
    await expect(card.locator("h3")).to_have_text(SENTENCE)
    await expect(card).to_contain_text(REASON)
    shown = await card.inner_text()
    for internal in ("{", "office_mail_send", "Bearer", "rule '", "mail.send"):
        assert internal not in shown, internal  # the details stay folded
    await card.locator("summary").click()  # the details, one tap away
    await expect(card.locator("pre.args")).to_contain_text("dana.park@acme.example")
    await page.screenshot(path=str(shots / "demo-approval-phone.png"), full_page=True)
    await card.get_by_role("button", name="Approve once").click()
    await expect(page.locator(".flash")).to_contain_text("Approved", timeout=scaled(10) * 1000)
    decided = await day.demo.service.get_approval(approval_id)
    assert decided.status is ApprovalStatus.APPROVED
    await reply_task_ends(day)
    assert [m["text"] for m in day.demo.office.sent] == [
        "Hi Dana, Thursday at 10:00 works. See you then!"
    ]
    await page.goto(f"/goals/{day.demo.seeded.reply_goal.id}")
    task = page.locator("details.task").first
    await expect(task.locator("summary .badge")).to_have_text("done")


async def test_said_no_the_reply_reads_as_stopped_not_done(day: Day, shots: Path) -> None:
    approval_id = await approval_waits(day)
    await day.demo.service.decide_approval(approval_id, approve=False)
    await reply_task_ends(day)
    assert day.demo.office.sent == []
    page = await follow_the_banner(day)
    await page.goto(f"/goals/{day.demo.seeded.reply_goal.id}")
    badge = page.locator("details.task").first.locator("summary .badge")
    await expect(badge).to_have_text("stopped: you said no")
    await expect(badge).to_have_class(re.compile(r"\bbad\b"))
    timeline = page.locator("ul.feed")
    await expect(timeline).to_contain_text("worked after your answer: stopped: you said no")
    await expect(timeline).not_to_contain_text("succeeded")
    await page.goto("/")
    await expect(page.locator("#digest")).to_contain_text(
        "I did not send Dana the reply: you said no."
    )
    await page.goto(f"/goals/{day.demo.seeded.reply_goal.id}")
    await page.screenshot(path=str(shots / "demo-goal-said-no-phone.png"), full_page=True)


async def test_a_demo_day_reads_as_reports_at_home_and_in_the_evening_digest(
    day: Day, shots: Path
) -> None:
    svc, seeded = day.demo.service, day.demo.seeded
    page = await follow_the_banner(day)  # in the morning: the link lasts 15 minutes
    approval_id = await approval_waits(day)
    await svc.decide_approval(approval_id, approve=True)
    await reply_task_ends(day)
    # the day: a check every hour from 09:00, one new mail each until they run out
    for hour in range(1, 10):
        day.clock.advance(timedelta(hours=1))

        async def checked(done: int = hour + 1) -> bool:
            tasks = await svc.list_tasks(goal_id=seeded.inbox_goal.id, limit=100)
            return len(tasks) >= done and all(t.status.terminal for t in tasks)

        await eventually(checked, f"the check at {9 + hour}:00", seconds=scaled(30))
    told = await reports(day)
    by_goal: dict[str | None, list[str]] = {}
    for report in told:
        by_goal.setdefault(report.goal_id, []).append(report.what)
    inbox = by_goal[seeded.inbox_goal.id]
    assert "Sent Dana your reply: Thursday at 10:00 works." in by_goal[seeded.reply_goal.id]
    infos = [r for r in told if r.importance == "info" and r.goal_id == seeded.inbox_goal.id]
    actionable = [r for r in told if r.importance == "actionable"]
    assert [r.what for r in actionable] == [
        "Dana Park wrote: “Agenda for Thursday”",
        "Dana Park wrote: “Thursday?”",
    ]
    assert len(infos) == 4, inbox  # the invoice, CI, dinner and the newsletter

    # at once, on the phone: what needs the person, and the reply that went out
    def titles() -> list[str]:
        return [hit.json()["title"] for hit in day.receiver.hits]

    for report in [*actionable, *[r for r in told if r.goal_id == seeded.reply_goal.id]]:
        assert report.what in titles(), (report.what, titles())

    # 18:00: the digest, in the same words as the reports on the home page
    async def digested() -> bool:
        return any(t.startswith("Your digest for") for t in titles())

    await eventually(digested, "the evening digest", seconds=scaled(30))
    [digest] = [h.json() for h in day.receiver.hits if h.json()["title"].startswith("Your digest")]
    body: str = digest["message"]
    assert body.startswith("Keep an eye on the shared inbox:\n"), body
    for report in infos:
        assert f"- {report.what}" in body, (report.what, body)
    assert "4 updates" in digest["title"]
    for hit in day.receiver.hits:
        sent: dict[str, Any] = hit.json()
        said = f"{sent['title']}\n{sent['message']}"
        # a link opens the dashboard (ids in its address are one tap away, not read)
        links = re.findall(r"\S*/(?:inbox|goals)\b\S*", said)
        assert all(link.startswith(f"{day.demo.url}/") for link in links), links
        assert not INTERNALS.search(re.sub(r"https?://\S+", "", said)), said

    # the home page: the same reports, in words, grouped by goal
    await page.goto("/")
    sections = page.locator("#digest section")
    inbox_section = sections.filter(has_text="Keep an eye on the shared inbox")
    reply_section = sections.filter(has_text="Reply to Dana about Thursday")
    for report in told:
        where = inbox_section if report.goal_id == seeded.inbox_goal.id else reply_section
        await expect(where.locator("ul.reports")).to_contain_text(report.what)
    await expect(inbox_section.locator("li.report.actionable")).to_have_count(2)
    await expect(inbox_section).to_contain_text("What to do: Check the SLA numbers")
    text = await page.locator("main").inner_text()
    assert not INTERNALS.search(text), INTERNALS.search(text)
    width = await page.evaluate("document.documentElement.scrollWidth")
    assert width <= PHONE["width"], "the home page scrolls sideways"
    await page.screenshot(path=str(shots / "demo-home-phone.png"), full_page=True)
    await page.goto(f"/goals/{seeded.inbox_goal.id}")
    await page.screenshot(path=str(shots / "demo-goal-phone.png"), full_page=True)
    await page.goto(f"/goals/{seeded.reply_goal.id}")
    await expect(page.locator("details.task").first.locator("summary .badge")).to_have_text("done")
    await page.screenshot(path=str(shots / "demo-reply-goal-phone.png"), full_page=True)
    # what the phone got, in order (shown with -s; docs/demo-day.md quotes it)
    for hit in day.receiver.hits:
        print(f"--- {hit.json()['title']}\n{hit.json()['message']}")
