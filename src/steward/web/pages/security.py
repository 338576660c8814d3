"""``/security``: connected accounts (their forms are :mod:`~steward.web.pages.accounts`),
grants (revoke), rules (add, delete), secrets in the vault (names and hosts, never values;
delete), API tokens and the audit log — what the agent may do, and everything decided about
it."""

from __future__ import annotations

from datetime import date, datetime, time, timedelta
from urllib.parse import urlencode

from fastapi import Request, Response

from steward.domain import RuleMode
from steward.errors import UsageError
from steward.web.forms import done, posted
from steward.web.pages.accounts import PROVIDERS
from steward.web.render import page
from steward.web.routing import pages
from steward.web.session import Viewer

router = pages()

AUDIT_PAGE = 50
"""Audit entries per page; the next page starts before the last one shown."""
AUDIT_KINDS = ("decision", "approval", "grant", "revocation", "effect", "credential_use")
"""The kinds offered by the audit filter (any kind can be asked for by name)."""
MODES = {
    RuleMode.DO: "do it",
    RuleMode.DO_IF_PREAPPROVED: "do it if a grant covers it, otherwise ask",
    RuleMode.ASK: "ask me first, every time",
    RuleMode.HANDOFF: "hand it to me: I do it myself",
    RuleMode.DENY: "never",
}
"""Each rule mode in words, as the add-rule form offers them."""


@router.get("/security")
async def security(request: Request, svc: Viewer) -> Response:
    asked = request.query_params
    before = _whole(asked.get("before"))
    day = asked.get("day", "").strip()
    since = until = None
    if day:
        try:  # a day in the person's own zone
            start = datetime.combine(date.fromisoformat(day), time(), tzinfo=request.state.tz)
        except ValueError:
            raise UsageError(f"{day!r} is not a day (YYYY-MM-DD)") from None
        since, until = start, start + timedelta(days=1)
    audit_filter = {
        "kind": asked.get("kind", "").strip(),
        "tool": asked.get("tool", "").strip(),
        "goal": asked.get("goal", "").strip(),
        "day": day,
    }
    audit = await svc.recent_audit(
        person_id="",
        before_seq=before,
        limit=AUDIT_PAGE + 1,
        kind=audit_filter["kind"] or None,
        tool=audit_filter["tool"] or None,
        goal_id=audit_filter["goal"] or None,
        since=since,
        until=until,
    )
    more = len(audit) > AUDIT_PAGE
    audit = audit[:AUDIT_PAGE]
    kept = {k: v for k, v in audit_filter.items() if v}
    older = urlencode({**kept, "before": audit[-1].seq}) if more else None
    return page(
        request,
        "security.html",
        title="Security",
        accounts=await svc.connection_status(person_id=""),
        kinds=await svc.account_kinds(),
        providers=PROVIDERS,
        callback=str(request.url_for("oauth_callback")),
        grants=await svc.list_grants(person_id=""),
        rules=await svc.list_rules(person_id=""),
        modes=MODES,
        secrets=await svc.list_secrets(person_id=""),
        tokens=await svc.list_tokens(person_id=""),
        audit=audit,
        audit_filter=audit_filter,
        audit_kinds=AUDIT_KINDS,
        audit_goals=await svc.list_goals(person_id=""),
        audit_older=older,
        audit_newest=urlencode(kept) if before is not None else None,
    )


def _whole(value: str | None) -> int | None:
    if not value:
        return None
    if not value.isdigit() or int(value) < 1:
        raise UsageError(f"{value!r} is not a page of the audit log")
    return int(value)


@router.post("/grants/{grant_id}/revoke")
async def revoke(request: Request, svc: Viewer, grant_id: str) -> Response:
    await posted(request)
    await svc.revoke_grant(grant_id, person_id="")
    return done(request, "/security", "Grant revoked: it no longer allows anything.")


@router.post("/rules")
async def add_rule(request: Request, svc: Viewer) -> Response:
    form = await posted(request)
    priority = form.text("priority", "").strip()
    rule = await svc.add_rule(
        person_id="",
        pattern=form.text("pattern").strip(),
        mode=form.text("mode"),
        priority=form.integer("priority") if priority else 0,
        reason=form.text("reason", "").strip(),
    )
    return done(request, "/security", f"Rule added: {rule.pattern} → {rule.mode}.")


@router.post("/rules/{rule_id}/delete")
async def delete_rule(request: Request, svc: Viewer, rule_id: str) -> Response:
    await posted(request)
    await svc.delete_rule(rule_id, person_id="")
    return done(request, "/security", "Rule deleted.")


@router.post("/secrets/{name}/delete")
async def delete_secret(request: Request, svc: Viewer, name: str) -> Response:
    await posted(request)
    await svc.delete_secret(name, person_id="")
    return done(request, "/security", f"Secret {name} deleted: no task can use it any more.")
