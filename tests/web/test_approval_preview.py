"""What a tool showed of an action, on the dashboard: the facts as a labelled list and the
picture as an image wherever the approval is shown (inbox, its own page, home, its goal), the
picture served to its person only while it is the file taken — not another person's, not a
changed file, not through a link, not from outside the workspace — and, in a real browser at
phone width, drawn no wider than the screen."""

from __future__ import annotations

import hashlib
import html
import os
from pathlib import Path

from playwright.async_api import expect

from steward.domain import Approval, ApprovalPreview, ApprovalStatus, Notification, TaskSpec
from steward.domain.approval import args_hash
from steward.domain.ids import new_id
from steward.harness.workspace import Workspace
from steward.store import Fence
from support.pictures import png
from support.tenancy import Tenant, take_picture
from support.web import Site, chromium

PHONE = {"width": 375, "height": 812}


def data_dir(site: Site) -> Path:
    assert site.owner.data_dir is not None
    return site.owner.data_dir


def home_of(site: Site, t: Tenant) -> Path:
    return Workspace(data_dir(site) / "workspace").person_dir(t.person.id)


async def asked_with(site: Site, t: Tenant, preview: ApprovalPreview) -> Approval:
    """A pending approval with ``preview``, recorded as a running task records one."""
    store, clock = site.store, site.clock
    task = await store.tasks.create_task(
        TaskSpec(kind="noop", title="order the kettle"),
        person_id=t.person.id,
        goal_id=t.goal.id,
        now=clock.now(),
    )
    [claim] = await store.tasks.claim_tasks(
        worker="w-web", limit=1, lease_seconds=3600, now=clock.now()
    )
    assert claim.task.id == task.id
    args = {"shop": "shop.example"}
    approval_id = new_id("apr")
    return await store.inbox.request_approval(
        Fence.of(claim),
        Approval(
            id=approval_id,
            person_id=t.person.id,
            task_id=task.id,
            goal_id=t.goal.id,
            step_seq=1,
            tool="place_order",
            args=args,
            args_hash=args_hash("place_order", args),
            reason="external action",
            status=ApprovalStatus.PENDING,
            created_at=clock.now(),
            summary="Place the order on shop.example: 1 x Blue kettle, total 39.90",
            preview=preview,
        ),
        Notification(
            id=new_id("ntf"),
            person_id=t.person.id,
            kind="approval",
            title="Approve? Place the order",
            body="",
            task_id=task.id,
            ref=approval_id,
            created_at=clock.now(),
        ),
    )


async def test_every_page_showing_the_approval_shows_its_facts_and_picture(site: Site) -> None:
    me = await site.session(site.a.control)
    a = site.a.approval
    image = f'<img src="/approvals/{a.id}/picture"'
    for path in ("/inbox", f"/inbox/{a.id}", "/", f"/goals/{site.a.goal.id}"):
        page = (await me.get(path)).text
        assert image in page, path
        assert "<dt>To</dt><dd>friend-of-ann@example.com</dd>" in page, path
        assert "previews/shot.png" not in page, path  # the picture by its route, not its path
    alone = await me.get(f"/inbox/{a.id}")
    assert "Approve once" in alone.text
    assert alone.headers["cache-control"] == "no-store"
    # decided from its own page: back to it, saying how it was decided
    answer = await me.post(f"/approvals/{a.id}", decision="deny", back=f"/inbox/{a.id}")
    assert answer.headers["location"] == f"/inbox/{a.id}"
    after = (await me.get(f"/inbox/{a.id}")).text
    assert "Denied" in after
    assert "Approve once" not in after
    assert image in after  # what was decided on stays visible


async def test_the_picture_is_the_persons_own_png_as_taken(site: Site) -> None:
    take_picture(data_dir(site), site.a)
    take_picture(data_dir(site), site.b)
    me = await site.session(site.a.control)
    a = site.a.approval
    shown = await me.get(f"/approvals/{a.id}/picture")
    assert shown.status_code == 200
    assert shown.headers["content-type"] == "image/png"
    assert shown.headers["x-content-type-options"] == "nosniff"
    assert shown.content == (home_of(site, site.a) / "previews/shot.png").read_bytes()
    # another person's picture answers as a missing one; logged out, the login form
    theirs = await me.get(f"/approvals/{site.b.approval.id}/picture")
    assert theirs.status_code == 404
    assert "Not found" in theirs.text
    assert theirs.headers["content-type"].startswith("text/html")
    stranger = await site.client().get(f"/approvals/{a.id}/picture")
    assert stranger.status_code == 303
    assert stranger.headers["location"] == "/login"


async def test_a_changed_or_linked_picture_is_not_shown(site: Site) -> None:
    for t in (site.a, site.b):
        take_picture(data_dir(site), t)
    me = await site.session(site.a.control)
    a = site.a.approval
    shot = home_of(site, site.a) / "previews/shot.png"
    taken = shot.read_bytes()
    assert (await me.get(f"/approvals/{a.id}/picture")).content == taken

    shot.write_bytes(png(4, 3, (0, 0, 0)))  # the workspace's shell drew over it
    changed = await me.get(f"/approvals/{a.id}/picture")
    assert changed.status_code == 404
    assert "changed after it was taken" in html.unescape(changed.text)

    # the same bytes, reached through a link: not followed
    elsewhere = data_dir(site) / "elsewhere.png"
    elsewhere.write_bytes(taken)
    shot.unlink()
    os.symlink(elsewhere, shot)
    linked = await me.get(f"/approvals/{a.id}/picture")
    assert linked.status_code == 404
    assert "no longer in your workspace" in linked.text

    # a folder that became a link
    shot.unlink()
    folder = shot.parent
    folder.rmdir()
    real = data_dir(site) / "real"
    real.mkdir()
    (real / "shot.png").write_bytes(taken)
    os.symlink(real, folder)
    assert (await me.get(f"/approvals/{a.id}/picture")).status_code == 404

    # a picture named outside the workspace (another person's, with its true hash)
    bobs = home_of(site, site.b) / "previews/shot.png"
    outside = await asked_with(
        site,
        site.a,
        ApprovalPreview(
            picture=f"../{bobs.parent.parent.name}/previews/shot.png",
            picture_sha256=hashlib.sha256(bobs.read_bytes()).hexdigest(),
        ),
    )
    refused = await me.get(f"/approvals/{outside.id}/picture")
    assert refused.status_code == 404
    assert refused.content != bobs.read_bytes()


async def test_an_approval_without_a_picture_shows_its_facts_only(site: Site) -> None:
    me = await site.session(site.a.control)
    asked = await asked_with(site, site.a, ApprovalPreview(facts=(("Site", "shop.example"),)))
    page = (await me.get(f"/inbox/{asked.id}")).text
    assert "<dt>Site</dt><dd>shop.example</dd>" in page
    assert "<img" not in page
    missing = await me.get(f"/approvals/{asked.id}/picture")
    assert missing.status_code == 404
    assert "This approval has no picture." in missing.text


async def test_on_a_phone_the_picture_fits_the_screen(site: Site, shots: Path) -> None:
    wide = png(1200, 700, (30, 90, 200))
    shot = home_of(site, site.a) / "previews" / "wide.png"
    shot.parent.mkdir(exist_ok=True)
    shot.write_bytes(wide)
    asked = await asked_with(
        site,
        site.a,
        ApprovalPreview(
            picture="previews/wide.png",
            picture_sha256=hashlib.sha256(wide).hexdigest(),
            facts=(("Site", "shop.example"), ("Total", "39.90 EUR")),
        ),
    )
    async with chromium() as browser:
        context = await browser.new_context(base_url=site.url, viewport=PHONE)
        page = await context.new_page()
        await page.goto("/login")
        await page.fill("#token", site.a.control)
        await page.click("button.primary")
        await expect(page).to_have_url(site.url + "/")
        await page.goto(f"/inbox/{asked.id}")
        image = page.locator(f"[id='{asked.id}'] .preview img")
        await expect(image).to_be_visible()
        drawn = await image.evaluate(
            "i => ({natural: i.naturalWidth, width: i.getBoundingClientRect().width,"
            " page: document.documentElement.scrollWidth})"
        )
        assert drawn["natural"] == 1200  # the browser decoded the real picture
        assert drawn["width"] < PHONE["width"]
        assert drawn["page"] <= PHONE["width"]  # nothing scrolls sideways
        await expect(page.locator(".preview dl.facts")).to_contain_text("39.90 EUR")
        await page.screenshot(path=shots / "approval-phone.png", full_page=True)
        await context.close()
