"""Posted forms: parsed, checked against the session's CSRF token, answered by a redirect that
carries a one-line message to the next page (post/redirect/get, so a reload never posts
twice)."""

from __future__ import annotations

import hmac
from collections.abc import Mapping
from typing import TypeVar
from urllib.parse import parse_qs, quote

from fastapi import Request
from fastapi.responses import RedirectResponse

from steward.errors import Forbidden, UsageError
from steward.web.session import csrf_token, set_cookie

FLASH_COOKIE = "steward_flash"
MOST_BYTES = 256 * 1024
"""The largest form accepted (a memory's text is the longest field)."""

T = TypeVar("T")
DECISIONS = {"approve": True, "reject": False}
"""What an approve-or-reject form's ``decision`` answers."""


class Form:
    """A posted ``application/x-www-form-urlencoded`` form (the only kind the pages send; read
    here, so no multipart parser is needed)."""

    def __init__(self, fields: dict[str, str]) -> None:
        self.fields = fields

    def text(self, name: str, default: str | None = None) -> str:
        value = self.fields.get(name, default)
        if value is None:
            raise UsageError(f"the form has no field {name!r}")
        return value

    def number(self, name: str) -> float:
        text = self.text(name, "").strip()
        try:
            return float(text)
        except ValueError:
            raise UsageError(f"{name} must be a number, not {text!r}") from None

    def choice(self, name: str, choices: Mapping[str, T]) -> T:
        """What the field's answer stands for in ``choices``; any other answer is refused (a
        mistyped decision must not pass for one of them)."""
        answer = self.text(name, "")
        if answer not in choices:
            raise UsageError(f"{name} must be one of {', '.join(choices)}, not {answer!r}")
        return choices[answer]

    def integer(self, name: str) -> int:
        text = self.text(name, "").strip()
        try:
            return int(text)
        except ValueError:
            raise UsageError(f"{name} must be a whole number, not {text!r}") from None


async def posted(request: Request, *, basis: str | None = None) -> Form:
    """The request's form, refused (403) unless it carries this session's CSRF token (see
    :func:`~steward.web.session.csrf_token` for ``basis``)."""
    body = await request.body()
    if len(body) > MOST_BYTES:
        raise UsageError(f"the form is larger than {MOST_BYTES // 1024} KiB")
    parsed = parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True)
    fields = {name: values[-1] for name, values in parsed.items()}
    expected = csrf_token(request, basis)
    if not expected or not hmac.compare_digest(fields.get("csrf", ""), expected):
        raise Forbidden("this form is out of date or came from another site: reload the page")
    return Form(fields)


def done(request: Request, url: str, message: str) -> RedirectResponse:
    """Go to ``url`` (a path of this site), which shows ``message`` once."""
    response = RedirectResponse(url, status_code=303)
    set_cookie(request, response, FLASH_COOKIE, quote(message[:300]), max_age=60)
    return response


def back(form: Form, default: str) -> str:
    """Where the form asks to go afterwards: a path of this site only (never another site's
    address, so a form cannot be made to redirect away)."""
    target = form.text("back", default)
    return target if target.startswith("/") and not target.startswith("//") else default
