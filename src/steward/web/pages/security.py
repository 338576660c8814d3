"""``/security``: connected accounts (disconnect), grants (revoke), rules, API tokens and the
audit log — what the agent may do, and everything decided about it."""

from __future__ import annotations

from fastapi import Request, Response

from steward.domain.authority import AuditEntry
from steward.service import Service
from steward.web.forms import done, posted
from steward.web.render import page
from steward.web.routing import pages
from steward.web.session import Viewer

router = pages()

AUDIT_SHOWN = 200
AUDIT_PAGE = 500


@router.get("/security")
async def security(request: Request, svc: Viewer) -> Response:
    return page(
        request,
        "security.html",
        title="Security",
        connections=await svc.list_connections(person_id=""),
        grants=await svc.list_grants(person_id=""),
        rules=await svc.list_rules(person_id=""),
        tokens=await svc.list_tokens(person_id=""),
        audit=list(reversed(await _newest_audit(svc))),
    )


async def _newest_audit(svc: Service) -> list[AuditEntry]:
    """The newest entries, oldest first (the facade reads the log forward only)."""
    found: list[AuditEntry] = []
    after = 0
    while True:
        batch = await svc.audit_log(person_id="", after_seq=after, limit=AUDIT_PAGE)
        found = (found + batch)[-AUDIT_SHOWN:]
        if len(batch) < AUDIT_PAGE:
            return found
        after = batch[-1].seq


@router.post("/grants/{grant_id}/revoke")
async def revoke(request: Request, svc: Viewer, grant_id: str) -> Response:
    await posted(request)
    await svc.revoke_grant(grant_id, person_id="")
    return done(request, "/security", "Grant revoked: it no longer allows anything.")


@router.post("/connections/{connection_id}/disconnect")
async def disconnect(request: Request, svc: Viewer, connection_id: str) -> Response:
    await posted(request)
    result = await svc.disconnect(connection_id, person_id="")
    revoked = len(result.revoked)
    message = f"{result.connection.name} disconnected"
    return done(request, "/security", f"{message}; {revoked} grant(s) it covered revoked.")
