"""The web dashboard: server-rendered pages over the service facade, served by the API's
process.

A person logs in by pasting an API token; every page then acts through the facade bound to
that token (:mod:`steward.web.session`), so tenancy and scopes are decided where they are for
the API and the CLI. Changes are plain HTML forms posted to the dashboard's own routes, each
carrying a CSRF token (:mod:`steward.web.forms`); live views re-read their page when the API's
event stream reports a change (``static/live.js``).
"""

from __future__ import annotations

import secrets
from pathlib import Path

from fastapi import FastAPI
from starlette.staticfiles import StaticFiles

from steward.web.logincodes import LoginCodes
from steward.web.pages import (
    accounts,
    auth,
    browser,
    channels,
    chat,
    files,
    goals,
    home,
    inbox,
    memory,
    security,
    skills,
    triggers,
    watches,
)

__all__ = ["mount"]

_STATIC = Path(__file__).parent / "static"


def mount(app: FastAPI) -> None:
    """Add the dashboard's pages (``/``, ``/login``, ``/inbox``, ``/goals/{id}``...) and its
    static files (``/static``) to ``app``, an app made by :func:`steward.api.create_app`."""
    # per process: a restart only makes open forms stale, and no key is stored anywhere
    app.state.csrf_key = secrets.token_bytes(32)
    # OAuth authorizations started here, by state, until the provider answers
    app.state.oauth_authorizing = {}
    # one-time login links printed by `steward up` (by hash, in this process)
    app.state.login_codes = LoginCodes(lambda: app.state.service.clock.now())
    for module in (
        *(auth, home, inbox, goals, chat, triggers, watches),
        *(memory, skills, files, browser, security, accounts, channels),
    ):
        app.include_router(module.router)
    app.mount("/static", StaticFiles(directory=_STATIC), name="static")
