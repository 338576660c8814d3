"""``/security``: connected accounts (connect with a password, test, disconnect, disconnect and
forget), grants (revoke), rules (add, delete), secrets
in the vault (names and hosts, never values; delete), API tokens and the audit log — what the
agent may do, and everything decided about it."""

from __future__ import annotations

from typing import Any

from fastapi import Request, Response

from steward.domain import RuleMode
from steward.web.forms import done, posted
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

ACCOUNT_FIELDS = (
    ("url", "CalDAV URL (calendar)", False),
    ("imap_host", "IMAP server (mail)", False),
    ("imap_port", "IMAP port (mail)", True),
    ("smtp_host", "SMTP server (mail)", False),
    ("smtp_port", "SMTP port (mail)", True),
    ("username", "User name", False),
    ("email", "Your address, when the user name is not it", False),
    ("time_zone", "Your time zone (Europe/Paris)", False),
)
"""The connect form's settings: name, label, whole number. Empty ones are left out (each
connector has its own defaults, and refuses what it does not take)."""


@router.get("/security")
async def security(request: Request, svc: Viewer) -> Response:
    return page(
        request,
        "security.html",
        title="Security",
        accounts=await svc.connection_status(person_id=""),
        kinds=svc.account_kinds(),
        fields=ACCOUNT_FIELDS,
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


@router.post("/accounts")
async def connect_account(request: Request, svc: Viewer) -> Response:
    form = await posted(request)
    settings: dict[str, Any] = {}
    for name, _, numeric in ACCOUNT_FIELDS:
        value = form.text(name, "").strip()
        if value:
            settings[name] = form.integer(name) if numeric else value
    bounds = {
        key: values
        for key in ("recipients", "domains", "calendars")
        if (values := [v.strip() for v in form.text(key, "").split(",") if v.strip()])
    }
    done = await svc.connect(
        person_id="",
        kind=form.text("kind"),
        name=form.text("name"),
        settings=settings,
        credential=form.text("password", "") or None,
        read_only=form.text("read_only", "") == "yes",
        bounds=bounds,
    )
    return _back(request, f"Connected {done.connection.name}. {done.check}.")


@router.post("/accounts/{connection_id}/test")
async def check_account(request: Request, svc: Viewer, connection_id: str) -> Response:
    await posted(request)
    checked = await svc.test_connection(connection_id, person_id="")
    name = checked.connection.name
    said = (
        f"{name} works. {checked.said}." if checked.ok else f"{name} does not work: {checked.said}"
    )
    return _back(request, said)


@router.post("/connections/{connection_id}/disconnect")
async def disconnect(request: Request, svc: Viewer, connection_id: str) -> Response:
    form = await posted(request)
    forget = form.text("forget", "") == "yes"
    result = await svc.disconnect_account(connection_id, person_id="", forget=forget)
    said = [f"{result.connection.name} disconnected: nothing goes through it any more."]
    if result.revoked:
        said.append(f"{len(result.revoked)} grant(s) it covered revoked.")
    if result.forgotten is not None:
        count = result.forgotten
        said.append(f"Forgot {count} memor{'y' if count == 1 else 'ies'} learned through it.")
    return _back(request, " ".join(said))


def _back(request: Request, message: str) -> Response:
    return done(request, "/security", message)


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
