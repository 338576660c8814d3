"""The dashboard over HTTP: logging in and out, every page, CSRF, errors as pages, and the
changes its forms make."""

from __future__ import annotations

import html
import re

import pytest

from steward.domain import ApprovalStatus
from steward.domain.memory_pass import MemoryPass, OperationKind, PassOperation, PassStatus
from steward.web.session import SESSION_COOKIE
from support.web import Session, Site, ask_approval, csrf_of

PAGES = (
    *("/", "/inbox", "/goals", "/chat", "/triggers", "/watches", "/memory", "/skills"),
    "/security",
)


def own_pages(site: Site) -> list[str]:
    a = site.a
    return [
        *PAGES,
        f"/goals/{a.goal.id}",
        f"/inbox/{a.approval.id}",
        f"/chat/{a.task.id}",
        f"/memory/{a.memory.id}",
        "/memory?q=Lisbon",
        "/memory?status=deleted",
        f"/skills/{a.skill.id}",
        f"/skills/{a.skill.id}?from_version=1&to_version=2",
        "/?since=0",
        "/browser/clear",
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
    assert "External action" in inbox  # why it asks
    assert "Approve once" in inbox
    home = (await me.get("/")).text
    # the tenant's own report and the runtime's about its effect in doubt
    assert "2 unread reports." in home
    assert "ann&#39;s laptop is cheaper" in home  # the tenant's report, in words
    assert "I am not sure whether" in home
    assert "Waiting for you" in home
    assert "$0.0000" not in home
    # what the goal cost, with sensible precision
    assert re.search(r'class="cost"[^>]*>(\$\d[\d,]*(\.\d\d)?|less than \$0\.01) ·', home), home
    security = (await me.get("/security")).text
    assert a.grant.id in security
    assert "ann&#39;s mail" in security
    memory = (await me.get(f"/memory/{a.memory.id}")).text
    assert f"task:{a.task.id}" in memory  # where it came from
    assert "private" in memory  # who may hear it
    again = (await me.get("/")).text
    assert "2 unread reports." in again  # a reload empties nothing
    assert "Waiting for you" in again  # what waits is shown until it is decided
    read = await me.post(f"/reports/{a.report.id}/read")
    assert read.status_code == 303, read.text
    after = (await me.get("/")).text
    assert "1 unread report." in after
    assert "ann&#39;s laptop is cheaper" in after  # read, still there


async def test_every_form_post_needs_the_csrf_token(site: Site) -> None:
    me = await site.session(site.a.control)
    a = site.a
    posts = [
        f"/approvals/{a.approval.id}",
        f"/reports/{a.report.id}/read",
        f"/grants/{a.grant.id}/revoke",
        f"/connections/{a.connection.id}/disconnect",
        f"/triggers/{a.trigger.id}",
        "/watches",
        f"/watches/{a.watch.id}",
        f"/tasks/{a.task.id}/control",
        f"/memory/{a.memory.id}/status",
        f"/memory/{a.memory.id}/edit",
        f"/memory/{a.memory.id}/versions/1",
        "/memory/forget",
        f"/skills/{a.skill.id}/versions/1",
        f"/notifications/{a.notification}/read",
        f"/effects/{a.effect.id}/resolve",
        f"/passes/{a.memory_pass.id}",
        "/rules",
        f"/rules/{a.rule.id}/delete",
        "/secrets/mail/delete",
        "/chat",
        "/browser/clear",
        "/logout",
    ]
    before = await _state(site)
    for path in posts:
        for csrf in (None, "0" * 64, me.csrf[:-1]):
            fields = {"decision": "once", "action": "delete", "enabled": "false"}
            fields |= {"applied": "yes", "pattern": "x.*", "mode": "deny"}
            if csrf is not None:
                fields["csrf"] = csrf
            answer = await me.client.post(path, data=fields)
            assert answer.status_code == 403, path
            assert "reload the page" in answer.text
    assert await _state(site) == before


async def _state(site: Site) -> object:
    from support.tenancy import state_of

    return [await state_of(site.store, site.clock, t) for t in (site.a, site.b)]


async def test_anothers_objects_are_not_found_and_unchanged(site: Site) -> None:
    me = await site.session(site.a.control)
    b = site.b
    for path in (
        f"/goals/{b.goal.id}",
        f"/inbox/{b.approval.id}",
        f"/approvals/{b.approval.id}/picture",
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
        (f"/watches/{b.watch.id}", {"action": "pause"}),
        (f"/watches/{b.watch.id}", {"action": "remove"}),
        (f"/tasks/{b.task.id}/control", {"action": "cancel"}),
        (f"/memory/{b.memory.id}/status", {"action": "delete"}),
        (f"/memory/{b.memory.id}/edit", {"version": "1", "content": "x", "audience": "public"}),
        (f"/memory/{b.memory.id}/versions/1", {}),
        (f"/skills/{b.skill.id}/versions/1", {}),
        (f"/chat/{b.task.id}", {"message": "hi"}),
        (f"/notifications/{b.notification}/read", {}),
        (f"/effects/{b.effect.id}/resolve", {"applied": "yes"}),
        (f"/passes/{b.memory_pass.id}", {"decision": "approve"}),
        (f"/rules/{b.rule.id}/delete", {}),
    ]:
        answer = await me.post(path, **fields)
        assert answer.status_code == 404, (path, answer.text)
    assert await _state(site) == before
    for path in PAGES:
        text = (await me.get(path)).text
        for ident in (
            b.goal.id,
            b.approval.id,
            b.grant.id,
            b.memory.id,
            b.skill.id,
            b.effect.id,
            b.memory_pass.id,
            b.rule.id,
            b.notification,
            b.watch.id,
        ):
            assert ident not in text, (path, ident)
        assert "bob" not in text, path


async def test_approving_from_the_inbox_records_the_decision(site: Site) -> None:
    me = await site.session(site.a.control)
    answer = await me.post(f"/approvals/{site.a.approval.id}", decision="task", note="ok")
    assert answer.status_code == 303
    assert answer.headers["location"] == "/inbox"
    inbox = await me.get("/inbox")
    assert "Approved for the rest of this task, for the same recipients and sites." in inbox.text
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
    off = await site.store.schedule.get_trigger(site.a.trigger.id)
    assert not off.enabled
    assert off.next_fire_at is None
    await me.post(f"/triggers/{site.a.trigger.id}", enabled="true")
    on = await site.store.schedule.get_trigger(site.a.trigger.id)
    assert on.enabled
    assert on.next_fire_at is not None
    page = (await me.get("/triggers")).text
    assert 'Next fire: <time datetime="2027-01-01' in page
    assert f"<code>{on.spec}</code>" not in page  # said once, in words, not raw


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


async def _same_as_missing(
    me: Session, theirs: str, missing: str, path: str, **fields: str
) -> None:
    """Posting with another person's id answers exactly as with an id that does not exist."""
    answers = []
    for ident in (theirs, missing):
        answer = await me.post(path.format(ident), **fields)
        answers.append((answer.status_code, answer.text.replace(ident, "<id>")))
    assert answers[0] == answers[1], path
    assert answers[0][0] == 404, answers[0]
    assert "Not found" in answers[0][1]


async def test_anothers_ids_answer_as_missing_ones(site: Site) -> None:
    me = await site.session(site.a.control)
    b = site.b
    await site.owner.put_secret(person_id=b.person.id, name="bank", value="pw", hosts=["b.io"])
    before = await _state(site)
    await _same_as_missing(me, b.notification, "ntf_missing", "/notifications/{}/read")
    await _same_as_missing(me, b.effect.id, "eff_missing", "/effects/{}/resolve", applied="yes")
    await _same_as_missing(me, b.memory_pass.id, "mps_missing", "/passes/{}", decision="reject")
    await _same_as_missing(me, b.rule.id, "rul_missing", "/rules/{}/delete")
    await _same_as_missing(me, "bank", "nothing-so-named", "/secrets/{}/delete")
    assert await _state(site) == before


async def test_marking_a_notification_read(site: Site) -> None:
    me = await site.session(site.a.read)  # a reader may: it is the dashboard's bookkeeping
    path = f"/notifications/{site.a.notification}/read"
    assert "Mark read" in (await me.get("/inbox")).text
    answer = await me.post(path)
    assert answer.status_code == 303
    inbox = (await me.get(answer.headers["location"])).text
    assert "Marked read." in inbox
    assert "Mark read" not in inbox
    [read] = await site.owner.list_notifications(person_id=site.a.person.id)
    assert read.read_at is not None
    assert (await me.post(path)).status_code == 303  # already read: nothing to do
    assert (await site.owner.list_notifications(person_id=site.a.person.id)) == [read]


@pytest.mark.parametrize(("applied", "status"), [("yes", "succeeded"), ("no", "planned")])
async def test_resolving_an_effect_in_doubt(site: Site, applied: str, status: str) -> None:
    me = await site.session(site.a.control)
    effect = site.a.effect
    inbox = (await me.get("/inbox")).text
    assert "Did this happen?" in inbox
    assert f'id="{effect.id}"' in inbox
    assert "ann@example.com" in inbox  # the exact arguments
    bad = await me.post(f"/effects/{effect.id}/resolve", applied="maybe")
    assert bad.status_code == 400
    assert "applied must be one of yes, no" in bad.text
    assert [e.status for e in await site.owner.in_doubt_effects(site.a.person.id)] == [
        effect.status
    ]
    answer = await me.post(f"/effects/{effect.id}/resolve", applied=applied)
    assert answer.status_code == 303
    assert answer.headers["location"] == "/inbox"
    inbox = (await me.get("/inbox")).text
    said = "send_email happened" if applied == "yes" else "send_email did not happen"
    assert said in inbox
    assert f'id="{effect.id}"' not in inbox
    [resolved] = await site.owner.list_effects(task_id=site.a.task.id)
    assert resolved.status == status
    again = await me.post(f"/effects/{effect.id}/resolve", applied="yes")
    assert again.status_code == 409  # no longer in doubt: said on a page
    assert "It changed meanwhile" in again.text


async def test_held_memory_passes_are_applied_or_rejected(site: Site) -> None:
    me = await site.session(site.a.control)
    inbox = (await me.get("/inbox")).text
    assert "Memory changes to review" in inbox
    assert f'id="{site.a.memory_pass.id}"' in inbox
    bad = await me.post(f"/passes/{site.a.memory_pass.id}", decision="later")
    assert bad.status_code == 400
    assert "decision must be one of approve, reject" in bad.text
    rejected = await me.post(f"/passes/{site.a.memory_pass.id}", decision="reject")
    assert rejected.status_code == 303
    inbox = (await me.get("/inbox")).text
    assert "Rejected: your memories are unchanged." in inbox
    assert "Memory changes to review" not in inbox
    memory = site.a.memory
    held = await site.store.memory_passes.add_memory_pass(
        MemoryPass(
            id="mps_stale",
            person_id=site.a.person.id,
            task_id=None,
            status=PassStatus.HELD,
            operations=(
                PassOperation(
                    kind=OperationKind.ARCHIVE,
                    memory_ids=(memory.id,),
                    versions={memory.id: memory.version},
                    before={memory.id: "ann lives in Lisbon"},
                    after={memory.id: "ann lives in Lisbon (archived)"},
                    reason="not recalled for a year",
                ),
            ),
            active=1,
            share=1.0,
            created_at=site.clock.now(),
        )
    )
    inbox = (await me.get("/inbox")).text
    assert f'id="{held.id}"' in inbox
    assert "archive: not recalled for a year" in inbox  # the diff, in words
    assert "→ ann lives in Lisbon (archived)" in inbox
    assert "1 of 1 active memories" in inbox
    applied = await me.post(f"/passes/{held.id}", decision="approve")
    assert applied.status_code == 303
    assert "Applied 1 change(s)." in (await me.get("/inbox")).text
    assert (await site.owner.memory_detail(memory.id)).memory.status == "archived"
    passes = await site.owner.list_memory_passes(person_id=site.a.person.id)
    assert {p.id: p.status for p in passes} == {
        held.id: PassStatus.APPLIED,
        site.a.memory_pass.id: PassStatus.REJECTED,
    }
    again = await me.post(f"/passes/{held.id}", decision="reject")
    assert again.status_code == 409
    assert "It changed meanwhile" in again.text


async def test_security_rules_add_and_delete(site: Site) -> None:
    me = await site.session(site.a.control)
    page = (await me.get("/security")).text
    assert f'id="{site.a.rule.id}"' in page
    assert "email.*" in page
    assert 'action="/rules"' in page
    answer = await me.post(
        "/rules", pattern="web.fetch", mode="deny", priority="5", reason="no browsing"
    )
    assert answer.status_code == 303
    page = (await me.get("/security")).text
    assert "Rule added: web.fetch → deny." in page
    rules = {r.pattern: r for r in await site.owner.list_rules(person_id=site.a.person.id)}
    added = rules["web.fetch"]
    assert (added.mode, added.priority, added.reason) == ("deny", 5, "no browsing")
    assert f'id="{added.id}"' in page
    plain = await me.post("/rules", pattern="calendar.*", mode="ask", priority="")
    assert plain.status_code == 303  # the priority may be left empty
    before = await _state(site)
    for fields, said in [
        ({"pattern": "web.*", "mode": "sometimes"}, "unknown rule mode"),
        ({"pattern": "no spaces here", "mode": "deny"}, "bad pattern"),
        ({"pattern": "web.*", "mode": "deny", "priority": "high"}, "priority must be a whole"),
        ({"pattern": "  ", "mode": "deny"}, "bad pattern"),
        ({"mode": "deny"}, "no field 'pattern'"),
    ]:
        bad = await me.post("/rules", **fields)
        assert bad.status_code == 400, fields
        assert said in html.unescape(bad.text), (fields, bad.text)
    assert await _state(site) == before
    deleted = await me.post(f"/rules/{added.id}/delete")
    assert deleted.status_code == 303
    page = (await me.get("/security")).text
    assert "Rule deleted." in page
    assert f'id="{added.id}"' not in page
    assert (await me.post(f"/rules/{added.id}/delete")).status_code == 404


async def test_security_secrets_show_names_never_values(site: Site) -> None:
    me = await site.session(site.a.control)
    stored, ciphertext = await site.store.secrets.secret_ciphertext(site.a.person.id, "mail")
    page = (await me.get("/security")).text
    assert f'id="{stored.id}"' in page
    assert "mail.x.io" in page  # where it may be sent
    assert "pw-ann" not in page
    assert ciphertext not in page
    answer = await me.post("/secrets/mail/delete")
    assert answer.status_code == 303
    page = (await me.get("/security")).text
    assert "Secret mail deleted" in page
    assert f'id="{stored.id}"' not in page
    assert await site.owner.list_secrets(person_id=site.a.person.id) == []
    assert [s.name for s in await site.owner.list_secrets(person_id=site.b.person.id)] == ["mail"]
    assert (await me.post("/secrets/mail/delete")).status_code == 404


async def test_security_audit_log_is_newest_first(site: Site) -> None:
    me = await site.session(site.a.control)
    await me.post("/rules", pattern="web.fetch", mode="deny")
    page = (await me.get("/security")).text
    audit = page.split('class="feed audit"', 1)[1]
    entries = await site.owner.audit_log(person_id=site.a.person.id, limit=10_000)
    kinds = re.findall(r'<span class="kind">([^<]*)</span>', audit)
    assert kinds == [e.kind for e in reversed(entries)][: len(kinds)]
    assert kinds[0] == "rule"
    assert len(kinds) == len(entries)  # fewer than the most shown


async def test_a_read_token_sees_no_buttons_it_cannot_use_and_posting_is_refused(
    site: Site,
) -> None:
    me = await site.session(site.a.read)
    a = site.a
    inbox = (await me.get("/inbox")).text
    assert a.approval.id in inbox  # it sees what waits
    assert f'action="/approvals/{a.approval.id}"' not in inbox
    assert "Approve once" not in inbox
    assert "read-only token" in inbox  # and why it cannot decide
    assert f'action="/effects/{a.effect.id}/resolve"' not in inbox
    assert f'action="/passes/{a.memory_pass.id}"' not in inbox
    assert "Mark read" in inbox  # the dashboard's bookkeeping is the reader's
    security = (await me.get("/security")).text
    assert 'action="/rules"' not in security
    assert f'action="/rules/{a.rule.id}/delete"' not in security
    assert 'action="/secrets/mail/delete"' not in security
    goal = (await me.get(f"/goals/{a.goal.id}")).text
    assert "/control" not in goal
    control = await site.session(a.control)  # a control token sees them all
    assert f'action="/approvals/{a.approval.id}"' in (await control.get("/inbox")).text
    assert 'action="/rules"' in (await control.get("/security")).text
    before = await _state(site)
    for path, fields in [
        (f"/effects/{a.effect.id}/resolve", {"applied": "yes"}),
        (f"/passes/{a.memory_pass.id}", {"decision": "approve"}),
        ("/rules", {"pattern": "web.*", "mode": "deny"}),
        (f"/rules/{a.rule.id}/delete", {}),
        ("/secrets/mail/delete", {}),
    ]:
        answer = await me.post(path, **fields)
        assert answer.status_code == 403, (path, answer.text)
        assert "Not allowed" in answer.text
        assert "does not have the 'control' scope" in html.unescape(answer.text)
    assert await _state(site) == before


async def test_chat_lists_only_conversations(site: Site) -> None:
    me = await site.session(site.a.control)
    await me.post("/chat", message="Find me a table for two")
    page = (await me.get("/chat")).text
    assert "Find me a table for two" in page
    assert site.a.task.id not in page  # a noop task is no conversation


async def test_live_pages_listen_from_the_persons_newest_entry(site: Site) -> None:
    me = await site.session(site.a.control)
    await site.owner.ask_agent(person_id=site.b.person.id, instructions="bob's, later")
    head = await site.owner.feed_head(person_id=site.a.person.id)
    assert head > 0
    for path in ("/inbox", f"/goals/{site.a.goal.id}", f"/chat/{site.a.task.id}"):
        assert f'data-after="{head}"' in (await me.get(path)).text, path


async def test_a_mistyped_choice_is_refused_and_changes_nothing(site: Site) -> None:
    me = await site.session(site.a.control)
    before = await _state(site)
    for path, fields, said in [
        (
            f"/triggers/{site.a.trigger.id}",
            {"enabled": "yes"},
            "enabled must be one of true, false",
        ),
        (f"/skills/{site.a.skill.id}/proposal", {"decision": "maybe"}, "decision must be one of"),
        (f"/effects/{site.a.effect.id}/resolve", {}, "applied must be one of yes, no, not ''"),
    ]:
        answer = await me.post(path, **fields)
        assert answer.status_code == 400, path
        assert said in html.unescape(answer.text), (path, answer.text)
    assert await _state(site) == before
