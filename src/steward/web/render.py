"""Pages from Jinja2 templates: autoescaped, with what every page shows (navigation, the
one-time message of the last change, the CSRF token its forms post back)."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from fastapi import Request
from fastapi.responses import HTMLResponse
from jinja2 import (
    Environment,
    FileSystemLoader,
    StrictUndefined,
    pass_context,
    select_autoescape,
)
from jinja2.runtime import Context
from markupsafe import Markup, escape

from steward.domain.task import Task
from steward.domain.wording import reason_in_words
from steward.service.encode import to_jsonable
from steward.web import words
from steward.web.forms import FLASH_COOKIE
from steward.web.session import csrf_token, session_token
from steward.web.steps import task_status

_env = Environment(
    loader=FileSystemLoader(Path(__file__).parent / "templates"),
    autoescape=select_autoescape(["html"]),
    undefined=StrictUndefined,  # a misspelt name fails the page's test, not silently
    trim_blocks=True,
    lstrip_blocks=True,
)


@pass_context
def _when(context: Context, value: datetime | None) -> Markup:
    """A time in the person's zone, relative where natural, the exact time in its tooltip."""
    tz, now = context["tz"], context["now"]
    if value is None:
        return Markup("—")
    # escape() and an f-string: Markup.format's string.Formatter costs several times more,
    # and the first page shows this once per report
    return Markup(
        f'<time datetime="{value.isoformat()}" title="{escape(words.exact(value, tz))}">'
        f"{escape(words.when(value, tz, now))}</time>"
    )


@pass_context
def _waits(context: Context, task: Task) -> str:
    return words.waits_for(task.wait, task.status, context["tz"], context["now"])


def _as_json(value: Any) -> str:
    return json.dumps(to_jsonable(value), indent=1, sort_keys=True, ensure_ascii=False)


_env.filters.update(
    when=_when,
    waits=_waits,
    as_json=_as_json,
    masked=words.masked,
    masked_text=words.masked_text,
    reason_words=reason_in_words,
    money=words.money,
    cut=words.cut,
    actor=words.actor,
    status_words=words.status_words,
    status_class=words.status_class,
    task_status=task_status,
    timeline_kind=words.timeline_kind,
)


SECURITY_HEADERS = {
    # only this site's own script and style run; no page of another site may frame these
    # (a framed approve button could be clicked by trickery)
    "Content-Security-Policy": "default-src 'self'; frame-ancestors 'none'; form-action 'self'",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",
}


def _timeline_text(entry: Any, said_no: bool) -> str:
    return words.timeline_text(entry.kind, entry.summary, entry.data, said_no=said_no)


_env.filters["timeline_text"] = _timeline_text


def page(request: Request, template: str, code: int = 200, **context: Any) -> HTMLResponse:
    """``template`` rendered with ``context``, answered with status ``code``."""
    flash = unquote(request.cookies.get(FLASH_COOKIE, ""))
    context.setdefault("csrf", csrf_token(request))
    context.setdefault("logged_in", bool(session_token(request)))
    # the viewer's zone and scopes (set by :func:`~steward.web.session.viewer`); the time from
    # the service's clock
    context.setdefault("tz", getattr(request.state, "tz", None) or words.zone("UTC"))
    context.setdefault("now", request.app.state.service.clock.now())
    context.setdefault("can_control", getattr(request.state, "can_control", False))
    context.setdefault("no_model", request.app.state.service.no_model)
    html = _env.get_template(template).render(path=request.url.path, flash=flash, **context)
    response = HTMLResponse(html, status_code=code)
    if flash:
        response.delete_cookie(FLASH_COOKIE, path="/")
    # pages show private data: never kept by shared caches, nor shown from history after logout
    response.headers["Cache-Control"] = "no-store"
    response.headers.update(SECURITY_HEADERS)
    return response
