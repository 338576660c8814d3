"""The dashboard over HTTP: logging in and out, every page, CSRF, errors as pages, and the
changes its forms make."""

from __future__ import annotations

import pytest

from steward.api.common import SESSION_COOKIE
from steward.domain import ApprovalStatus
from web.web_support import Site, ask_approval, csrf_of

PAGES = ("/", "/inbox", "/goals", "/chat", "/triggers", "/memory", "/skills", "/security")


def own_pages(site: Site) -> list[str]:
    a = site.a
    return [
        *PAGES,
        f"/goals/{a.goal.id}",
        f"/chat/{a.task.id}",
        f"/memory/{a.memory.id}",
        "/memory?q=Lisbon",
        "/memory?status=deleted",
        f"/skills/{a.skill.id}",
        f"/skills/{a.skill.id}?from_version=1&to_version=2",
        "/?since=0",
    ]


async def test_logged_out_pages_redirect_to_login(site: Site) -> None:
    async with site.client() as client:
        for path in [*own_pages(site), "/login"]:
            answer = await client.get(path)
            if path == "/login":
                assert answer.status_code == 200
            else:
                assert answer.status_code == 303, path
                assert answer.headers["location"] == "/login"


async def test_login_with_a_good_token_sets_a_strict_session_cookie(site: Site) -> None:
    async with site.client() as client:
        form = await client.get("/login")
        answer = await client.post(
            "/login", data={"csrf": csrf_of(form.text), "token": site.a.control}
        )
        assert answer.status_code == 303
        assert answer.headers["location"] == "/"
        cookie = next(
            c for c in answer.headers.get_list("set-cookie") if c.startswith(SESSION_COOKIE)
        )
        assert "HttpOnly" in cookie
        assert "SameSite=strict" in cookie or "samesite=strict" in cookie.lower()
        assert "Path=/" in cookie
        assert "Secure" not in cookie  # plain http on loopback
        home = await client.get("/")
        assert home.status_code == 200
        assert "ann&#39;s goal" in home.text


async def test_login_with_a_bad_token_is_refused(site: Site) -> None:
    async with site.client() as client:
        form = await client.get("/login")
        answer = await client.post("/login", data={"csrf": csrf_of(form.text), "token": "nope"})
        assert answer.status_code == 401
        assert "not valid" in answer.text
        assert SESSION_COOKIE not in client.cookies
        assert (await client.get("/")).status_code == 303


async def test_login_without_csrf_is_refused(site: Site) -> None:
    async with site.client() as client:
        await client.get("/login")
        answer = await client.post("/login", data={"token": site.a.control})
        assert answer.status_code == 403
        assert SESSION_COOKIE not in client.cookies


async def test_a_revoked_token_ends_the_session(site: Site) -> None:
    me = await site.session(site.a.control)
    await site.owner.revoke_token(site.a.token.id, person_id=site.a.person.id)
    answer = await me.get("/inbox")
    assert answer.status_code == 303
    assert answer.headers["location"] == "/login"


async def test_logout_clears_the_session(site: Site) -> None:
    me = await site.session(site.a.control)
    answer = await me.post("/logout")
    assert answer.status_code == 303
    assert SESSION_COOKIE not in me.client.cookies
    assert (await me.get("/")).status_code == 303


async def test_every_page_renders_for_a_logged_in_person(site: Site) -> None:
    me = await site.session(site.a.control)
    for path in own_pages(site):
        answer = await me.get(path)
        assert answer.status_code == 200, (path, answer.text)
        assert answer.headers["content-type"].startswith("text/html")
        assert "frame-ancestors 'none'" in answer.headers["content-security-policy"]
        assert answer.headers["cache-control"] == "no-store"


async def test_pages_show_what_the_person_must_see(site: Site) -> None:
    me = await site.session(site.a.control)
    a = site.a
    inbox = (await me.get("/inbox")).text
    assert a.approval.id in inbox
    assert "friend-of-ann@example.com" in inbox  # the exact arguments
    assert "external action" in inbox  # why it asks
    assert "Approve once" in inbox
    home = (await me.get("/")).text
    assert "happened since your last visit" in home
    assert "Waiting for you" in home
    assert "$0.0000" in home  # what the goal cost
    security = (await me.get("/security")).text
    assert a.grant.id in security
    assert "ann&#39;s mail" in security
    memory = (await me.get(f"/memory/{a.memory.id}")).text
    assert f"task:{a.task.id}" in memory  # where it came from
    assert "private" in memory  # who may hear it
    again = (await me.get("/")).text
    assert "Nothing new since your last visit" in again
    assert "Waiting for you" in again  # what waits is shown until it is decided


async def test_every_form_post_needs_the_csrf_token(site: Site) -> None:
    me = await site.session(site.a.control)
    a = site.a
    posts = [
        f"/approvals/{a.approval.id}",
        f"/grants/{a.grant.id}/revoke",
        f"/connections/{a.connection.id}/disconnect",
        f"/triggers/{a.trigger.id}",
        f"/tasks/{a.task.id}/control",
        f"/memory/{a.memory.id}/status",
        f"/memory/{a.memory.id}/edit",
        f"/memory/{a.memory.id}/versions/1",
        "/memory/forget",
        f"/skills/{a.skill.id}/versions/1",
        f"/notifications/{a.notification}/read",
        "/chat",
        "/logout",
    ]
    before = await _state(site)
    for path in posts:
        for csrf in (None, "0" * 64, me.csrf[:-1]):
            fields = {"decision": "once", "action": "delete", "enabled": "false"}
            if csrf is not None:
                fields["csrf"] = csrf
            answer = await me.client.post(path, data=fields)
            assert answer.status_code == 403, path
            assert "reload the page" in answer.text
    assert await _state(site) == before


async def _state(site: Site) -> object:
    from tenancy_support import state_of

    return [await state_of(site.store, site.clock, t) for t in (site.a, site.b)]


async def test_anothers_objects_are_not_found_and_unchanged(site: Site) -> None:
    me = await site.session(site.a.control)
    b = site.b
    for path in (
        f"/goals/{b.goal.id}",
        f"/chat/{b.task.id}",
        f"/memory/{b.memory.id}",
        f"/skills/{b.skill.id}",
        f"/skills/{b.skill.name}",
    ):
        answer = await me.get(path)
        assert answer.status_code == 404, path
        assert "Not found" in answer.text
    before = await _state(site)
    for path, fields in [
        (f"/approvals/{b.approval.id}", {"decision": "once"}),
        (f"/approvals/{b.approval.id}", {"decision": "deny"}),
        (f"/grants/{b.grant.id}/revoke", {}),
        (f"/connections/{b.connection.id}/disconnect", {}),
        (f"/triggers/{b.trigger.id}", {"enabled": "false"}),
        (f"/tasks/{b.task.id}/control", {"action": "cancel"}),
        (f"/memory/{b.memory.id}/status", {"action": "delete"}),
        (f"/memory/{b.memory.id}/edit", {"version": "1", "content": "x", "audience": "public"}),
        (f"/memory/{b.memory.id}/versions/1", {}),
        (f"/skills/{b.skill.id}/versions/1", {}),
        (f"/chat/{b.task.id}", {"message": "hi"}),
    ]:
        answer = await me.post(path, **fields)
        assert answer.status_code == 404, (path, answer.text)
    assert await _state(site) == before
    for path in PAGES:
        text = (await me.get(path)).text
        for ident in (b.goal.id, b.approval.id, b.grant.id, b.memory.id, b.skill.id):
            assert ident not in text, (path, ident)
        assert "bob" not in text, path


async def test_approving_from_the_inbox_records_the_decision(site: Site) -> None:
    me = await site.session(site.a.control)
    answer = await me.post(f"/approvals/{site.a.approval.id}", decision="task", note="ok")
    assert answer.status_code == 303
    assert answer.headers["location"] == "/inbox"
    inbox = await me.get("/inbox")
    assert "Approved for the rest of this task." in inbox.text
    decided = await site.owner.get_approval(site.a.approval.id)
    assert decided.status is ApprovalStatus.APPROVED
    assert decided.decided_by == f"token:{site.a.token.id}"
    grants = await site.owner.list_grants(person_id=site.a.person.id)
    assert any(g.task_id == site.a.task.id for g in grants)


async def test_denying_and_approving_for_hours(site: Site) -> None:
    me = await site.session(site.a.control)
    later = await ask_approval(site.store, site.clock, site.a, to="x@example.com")
    bad = await me.post(f"/approvals/{later.id}", decision="hours", hours="soon")
    assert bad.status_code == 400
    assert "hours must be a number" in bad.text
    assert (await me.post(f"/approvals/{later.id}", decision="hours", hours="2")).status_code == 303
    assert (await site.owner.get_approval(later.id)).status is ApprovalStatus.APPROVED
    denied = await me.post(f"/approvals/{site.a.approval.id}", decision="deny", note="no")
    assert denied.status_code == 303
    assert (await site.owner.get_approval(site.a.approval.id)).status is ApprovalStatus.DENIED
    again = await me.post(f"/approvals/{site.a.approval.id}", decision="once")
    assert again.status_code == 409  # already decided: said on a page, not a 500


async def test_a_read_token_can_look_but_not_change(site: Site) -> None:
    me = await site.session(site.a.read)
    assert (await me.get("/inbox")).status_code == 200
    answer = await me.post(f"/grants/{site.a.grant.id}/revoke")
    assert answer.status_code == 403
    assert "Not allowed" in answer.text


async def test_security_revoke_and_disconnect(site: Site) -> None:
    me = await site.session(site.a.control)
    assert (await me.post(f"/grants/{site.a.grant.id}/revoke")).status_code == 303
    page = (await me.get("/security")).text
    assert "Grant revoked" in page
    assert f'id="{site.a.grant.id}"' not in page  # gone from the grants (kept in the audit)
    assert (await me.post(f"/connections/{site.a.connection.id}/disconnect")).status_code == 303
    assert "disconnected" in (await me.get("/security")).text


async def test_triggers_disable_and_enable(site: Site) -> None:
    me = await site.session(site.a.control)
    await me.post(f"/triggers/{site.a.trigger.id}", enabled="false")
    [off] = await site.owner.list_triggers(person_id=site.a.person.id)
    assert not off.enabled
    assert off.next_fire_at is None
    await me.post(f"/triggers/{site.a.trigger.id}", enabled="true")
    [on] = await site.owner.list_triggers(person_id=site.a.person.id)
    assert on.enabled
    assert on.next_fire_at is not None
    assert "Next fire: <time>2027-01-01" in (await me.get("/triggers")).text


async def test_task_panel_controls(site: Site) -> None:
    me = await site.session(site.a.control)
    answer = await me.post(f"/tasks/{site.a.task.id}/control", action="pause", back="/goals")
    assert answer.status_code == 303
    assert answer.headers["location"] == "/goals"
    nowhere = await me.post(f"/tasks/{site.a.task.id}/control", action="explode")
    assert nowhere.status_code == 400
    assert "unknown action" in nowhere.text
    away = await me.post(f"/tasks/{site.a.task.id}/control", action="cancel", back="//evil.io")
    assert away.headers["location"] == f"/goals/{site.a.goal.id}"


async def test_memory_edit_conflict_and_version_restore(site: Site) -> None:
    me = await site.session(site.a.control)
    mid = site.a.memory.id
    edited = await me.post(
        f"/memory/{mid}/edit", version="1", content="ann lives in Porto", audience="private"
    )
    assert edited.status_code == 303
    stale = await me.post(
        f"/memory/{mid}/edit", version="1", content="ann lives in Faro", audience="private"
    )
    assert stale.status_code == 409
    assert "It changed meanwhile" in stale.text
    assert (await me.post(f"/memory/{mid}/versions/1")).status_code == 303
    detail = await site.owner.memory_detail(mid)
    assert detail.memory.content == "ann lives in Lisbon"
    assert detail.memory.version == 3
    assert (await me.post(f"/memory/{mid}/status", action="archive")).status_code == 303
    assert (await me.post(f"/memory/{mid}/status", action="restore")).status_code == 303
    bad = await me.post(f"/memory/{mid}/edit", version="3", content="x", audience="everyone")
    assert bad.status_code == 400


async def test_forget_a_source(site: Site) -> None:
    me = await site.session(site.a.control)
    answer = await me.post("/memory/forget", source=f"task:{site.a.task.id}")
    assert answer.status_code == 303
    page = (await me.get("/memory")).text
    assert "1 memories purged" in page
    assert site.a.memory.id not in page
    assert (await me.post("/memory/forget", source="nonsense")).status_code == 400


async def test_skill_restore(site: Site) -> None:
    me = await site.session(site.a.control)
    answer = await me.post(f"/skills/{site.a.skill.id}/versions/1")
    assert answer.status_code == 303
    page = (await me.get(answer.headers["location"])).text
    assert "Version 1 restored" in page
    skill = await site.owner.get_skill(site.a.skill.id)
    assert skill.content.procedure == "Call the restaurant"


async def test_chat_creates_an_agent_task(site: Site) -> None:
    me = await site.session(site.a.control)
    answer = await me.post("/chat", message="Find me a table for two")
    assert answer.status_code == 303
    page = (await me.get(answer.headers["location"])).text
    assert "Find me a table for two" in page
    assert "Working…" in page
    [task] = [
        t for t in await site.owner.list_tasks(person_id=site.a.person.id) if t.kind == "agent"
    ]
    assert task.input["mode"] == "chat"
    empty = await me.post("/chat", message="   ")
    assert empty.status_code == 400


@pytest.mark.parametrize("path", ["/static/app.css", "/static/live.js"])
async def test_static_files_are_served(site: Site, path: str) -> None:
    async with site.client() as client:
        assert (await client.get(path)).status_code == 200
