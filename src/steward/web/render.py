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
from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape

from steward.service.encode import to_jsonable
from steward.web.forms import FLASH_COOKIE
from steward.web.session import csrf_token, session_token

_env = Environment(
    loader=FileSystemLoader(Path(__file__).parent / "templates"),
    autoescape=select_autoescape(["html"]),
    undefined=StrictUndefined,  # a misspelt name fails the page's test, not silently
    trim_blocks=True,
    lstrip_blocks=True,
)


def _when(value: datetime | None) -> str:
    return "—" if value is None else value.strftime("%Y-%m-%d %H:%M UTC")


def _as_json(value: Any) -> str:
    return json.dumps(to_jsonable(value), indent=1, sort_keys=True, ensure_ascii=False)


def _money(value: float) -> str:
    return f"${value:.4f}" if value < 1 else f"${value:.2f}"


_env.filters.update(when=_when, as_json=_as_json, money=_money)


SECURITY_HEADERS = {
    # only this site's own script and style run; no page of another site may frame these
    # (a framed approve button could be clicked by trickery)
    "Content-Security-Policy": "default-src 'self'; frame-ancestors 'none'; form-action 'self'",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",
}


def page(request: Request, template: str, code: int = 200, **context: Any) -> HTMLResponse:
    """``template`` rendered with ``context``, answered with status ``code``."""
    flash = unquote(request.cookies.get(FLASH_COOKIE, ""))
    context.setdefault("csrf", csrf_token(request))
    context.setdefault("logged_in", bool(session_token(request)))
    html = _env.get_template(template).render(path=request.url.path, flash=flash, **context)
    response = HTMLResponse(html, status_code=code)
    if flash:
        response.delete_cookie(FLASH_COOKIE, path="/")
    # pages show private data: never kept by shared caches, nor shown from history after logout
    response.headers["Cache-Control"] = "no-store"
    response.headers.update(SECURITY_HEADERS)
    return response
