"""``/security``: connected accounts (their forms are :mod:`~steward.web.pages.accounts`),
grants (revoke), rules (add, delete), secrets in the vault (names and hosts, never values;
delete), API tokens and the audit log — what the agent may do, and everything decided about
it."""

from __future__ import annotations

from fastapi import Request, Response

from steward.domain import RuleMode
from steward.web.forms import done, posted
from steward.web.pages.accounts import PROVIDERS
from steward.web.render import page
from steward.web.routing import pages
from steward.web.session import Viewer

router = pages()

AUDIT_SHOWN = 200
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
        audit=await svc.recent_audit(person_id="", limit=AUDIT_SHOWN),
    )


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
