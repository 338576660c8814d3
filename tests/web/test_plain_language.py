"""The dashboard over a real socket, in the person's terms: times in their zone, the audit
log paged (each entry exactly once) and filtered, one-time login links, and a skill that waits
for the person decidable where it is announced."""

from __future__ import annotations

import re
from datetime import timedelta
from zoneinfo import ZoneInfo

import httpx

from steward.api import create_app
from steward.cli.serve import _login_link
from steward.domain import ApprovalStatus, TaskSpec
from steward.domain.clock import SimulatedClock
from steward.domain.skill import SkillContent
from steward.domain.tokens import CONTROL
from steward.memory.skills import SkillLibrary
from steward.testing.http_server import serving
from support.web import Session, Site, csrf_of

_SEQ = re.compile(r'data-seq="(\d+)"')
_OLDER = re.compile(r'href="(/security\?[^"]*)" rel="next"')


async def _audit_pages(me: Session, first: str) -> tuple[list[int], int]:
    """Every audit seq shown, following "Older" from ``first``, and how many pages."""
    seen: list[int] = []
    path: str | None = first
    pages = 0
    while path is not None:
        page = (await me.get(path.replace("&amp;", "&"))).text
        pages += 1
        shown = [int(s) for s in _SEQ.findall(page.split('class="feed audit"', 1)[1])]
        assert len(shown) <= 50
        seen += shown
        older = _OLDER.search(page)
        path = older.group(1) if older else None
    return seen, pages


async def test_times_are_shown_in_the_persons_zone(site: Site) -> None:
    tokyo = await site.store.persons.create_person(
        name="kei", now=site.clock.now(), timezone="Asia/Tokyo"
    )
    deadline = site.clock.now() + timedelta(days=20)
    goal = await site.owner.create_goal(person_id=tokyo.id, title="Book", deadline=deadline)
    _, token = await site.owner.create_token(person_id=tokyo.id, name="t", scopes=[CONTROL])
    me = await site.session(token)
    page = (await me.get(f"/goals/{goal.id}")).text
    local = deadline.astimezone(ZoneInfo("Asia/Tokyo"))
    assert f'title="{local:%Y-%m-%d %H:%M} JST"' in page
    assert f"{local.day} {local:%b} {local:%H:%M}" in page or f"{local:%H:%M}" in page
    assert " UTC" not in page


async def test_the_audit_log_is_paged_and_each_entry_shown_exactly_once(site: Site) -> None:
    a = site.a
    for n in range(120):  # rules are audited: well over two pages
        await site.owner.add_rule(person_id=a.person.id, pattern=f"tool.{n}", mode="deny")
    me = await site.session(a.control)
    entries = await site.owner.recent_audit(person_id=a.person.id, limit=1000)
    seen, pages = await _audit_pages(me, "/security")
    assert pages >= 3
    assert seen == [e.seq for e in entries]  # newest first, each once, none missing
    assert len(set(seen)) == len(seen)

    # filtered by kind: each matching entry once, and only those
    rules = [e.seq for e in entries if e.kind == "rule"]
    seen, _ = await _audit_pages(me, "/security?kind=rule")
    assert seen == rules
    # by goal (what its agents did), by day in the person's zone: no entry of another kind
    page = (await me.get(f"/security?goal={a.goal.id}")).text
    assert "Nothing recorded that matches" in page or _SEQ.search(page)
    today = site.clock.now().date().isoformat()
    seen, _ = await _audit_pages(me, f"/security?kind=rule&day={today}")
    assert seen == rules


async def test_the_audit_filters_refuse_bad_input_and_another_persons_goal(site: Site) -> None:
    me = await site.session(site.a.control)
    assert (await me.get(f"/security?goal={site.b.goal.id}")).status_code == 404
    assert (await me.get("/security?day=yesterday")).status_code == 400
    assert (await me.get("/security?before=-3")).status_code == 400


async def test_a_login_link_signs_in_once_with_a_control_token(
    site: Site, clock: SimulatedClock
) -> None:
    app = create_app(site.owner)
    async with (
        serving(app) as url,
        httpx.AsyncClient(base_url=url, timeout=30, follow_redirects=False) as browser,
        httpx.AsyncClient(base_url=url, timeout=30, follow_redirects=False) as other,
    ):
        person = await site.store.persons.create_person(name="new", now=clock.now())
        link = await _login_link(site.owner, app, person, url)  # what `steward up` prints
        assert link is not None
        assert link.startswith(f"{url}/login?code=")
        answer = await browser.get(link.removeprefix(url))
        assert answer.status_code == 303
        assert answer.headers["location"] == "/"
        tokens = await site.owner.list_tokens(person_id=person.id)
        assert [t.scopes for t in tokens] == [(CONTROL,)]
        assert "Log out" in (await browser.get("/inbox")).text
        # single use: the same link again signs nobody in
        again = await other.get(link.removeprefix(url))
        assert again.status_code == 401
        assert "already used or has expired" in again.text
        # once a control token exists, `steward up` prints no link
        assert await _login_link(site.owner, app, person, url) is None
        # an unused link stops working after 15 minutes
        later = await site.store.persons.create_person(name="later", now=clock.now())
        stale = await _login_link(site.owner, app, later, url)
        assert stale is not None
        clock.advance(timedelta(minutes=16))
        assert (await other.get(stale.removeprefix(url))).status_code == 401
        assert await site.owner.list_tokens(person_id=later.id) == []
        assert (await other.get("/login?code=forged")).status_code == 401


async def test_a_proposed_skill_is_decidable_in_the_inbox_and_on_its_page(site: Site) -> None:
    me = await site.session(site.a.control)
    learned = await SkillLibrary(site.store, site.clock).propose(
        person_id=site.a.person.id,
        name="answer-meeting-requests",
        content=SkillContent(description="Answer a meeting request", procedure="Check first"),
        actor=f"agent:{site.a.task.id}",
        trusted=False,  # learned after reading others' text: it waits for the person
    )
    skill = learned.skill
    assert skill.status == "proposed"
    inbox = (await me.get("/inbox")).text
    assert f'action="/skills/{skill.id}/proposal"' in inbox
    page = (await me.get(f"/skills/{skill.id}")).text
    assert f'action="/skills/{skill.id}/proposal"' in page
    answer = await me.post(f"/skills/{skill.id}/proposal", decision="approve", back="/inbox")
    assert answer.status_code == 303
    assert answer.headers["location"] == "/inbox"
    decided = await site.owner.get_skill(skill.id)
    assert decided.pending is None
    assert decided.status == "active"
    assert f'action="/skills/{skill.id}/proposal"' not in (await me.get("/inbox")).text


async def test_a_cancelled_task_does_not_say_it_waits(site: Site) -> None:
    a = site.a
    task = await site.owner.create_task(
        person_id=a.person.id,
        spec=TaskSpec(kind="wait_event", input={"type": "email.received", "match": {}}),
        goal_id=a.goal.id,
    )
    await site.owner.control_task(task.id, "cancel")
    me = await site.session(a.control)
    page = (await me.get(f"/goals/{a.goal.id}")).text
    panel = page.split(f'id="{task.id}"', 1)[1].split("</details>", 1)[0]
    assert "waits for" not in panel


async def test_a_denied_approval_reads_as_denied_not_succeeded(site: Site) -> None:
    me = await site.session(site.a.control)
    answer = await me.post(f"/approvals/{site.a.approval.id}", decision="deny")
    assert answer.status_code == 303
    decided = await site.owner.get_approval(site.a.approval.id)
    assert decided.status is ApprovalStatus.DENIED
    assert csrf_of((await me.get("/inbox")).text)
