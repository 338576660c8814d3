"""What an action's arguments say, read one way for everything that decides on them.

The policy's constraints and index keys, the connection bound and the grant builder (approve →
lasting) all read recipients, URLs, hosts and amounts here. A tool that declares argument roles
(:class:`~steward.domain.roles.Role`) is read by its roles only; a tool that declares none (an
MCP tool nobody classified) by the conventional argument names. A value that cannot be read
unambiguously reads as None, and every caller treats that as "does not hold".
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from decimal import Decimal
from functools import lru_cache
from typing import Any

from steward.domain.roles import Role
from steward.errors import UsageError
from steward.sentinel.urls import Url, UrlRefused, parse_url, recipient_key

RECIPIENT_ARGS = ("to", "cc", "bcc", "recipient", "recipients")
"""Recipient arguments of a tool without roles."""
URL_ARGS = ("url", "endpoint")
"""URL arguments of a tool without roles."""
_PINNED_ROLES = (None, Role.IDENTIFIER, Role.ACCOUNT, Role.CALENDAR)
"""A lasting grant holds these arguments to their exact value (None: no role declared): an
"always" for one calendar or account covers no other."""


def domains_of(args: dict[str, Any], roles: Mapping[str, Role] | None = None) -> list[str] | None:
    """Domains of the action's recipients and URLs (normalised like hosts); None if one
    cannot be read."""
    recipients, urls = recipients_of(args, roles), urls_of(args, roles)
    if recipients is None or urls is None:
        return None
    return [r.rpartition("@")[2] for r in recipients] + [u.host for u in urls]


def _values(args: dict[str, Any], keys: Sequence[str]) -> list[str] | None:
    """Every string under ``keys`` (a string or a list of them); None if any is something
    else."""
    out: list[str] = []
    for key in keys:
        if key not in args or args[key] is None:
            continue
        value = args[key]
        items = value if isinstance(value, list | tuple) else [value]
        if not all(isinstance(item, str) for item in items):
            return None
        out.extend(items)
    return out


def _keys(
    roles: Mapping[str, Role] | None, wanted: tuple[Role, ...], names: Sequence[str]
) -> Sequence[str]:
    """The arguments in ``wanted`` roles; by name only for a tool that declares no roles."""
    if roles is None:
        return names
    return [name for name, role in roles.items() if role in wanted]


def recipients_of(
    args: dict[str, Any], roles: Mapping[str, Role] | None = None
) -> list[str] | None:
    """The action's recipients, each one plain address, stripped and lower-cased with its
    domain normalised like a host; None if one cannot be read that way (not a string, a
    display name, a list in one string, a domain that is not a host name)."""
    found = _values(args, _keys(roles, (Role.RECIPIENT, Role.PAYEE), RECIPIENT_ARGS))
    if found is None:
        return None
    out = [recipient_key(value) for value in found]
    return None if "" in out else out


def urls_of(args: dict[str, Any], roles: Mapping[str, Role] | None = None) -> list[Url] | None:
    """The action's URLs, read by :func:`~steward.sentinel.urls.parse_url`; None if one is
    not a string or cannot be read unambiguously."""
    found = _values(args, _keys(roles, (Role.HOST,), URL_ARGS))
    if found is None:
        return None
    try:
        return [_read_url(text) for text in found]
    except UrlRefused:
        return None


_read_url = lru_cache(maxsize=4096)(parse_url)
"""The policy reads the same URL for several constraints and the index keys."""


def has_urls(args: dict[str, Any], roles: Mapping[str, Role] | None = None) -> bool:
    """The action gives a value to a URL argument (a HOST role, for a tool with roles)."""
    return any(args.get(key) is not None for key in _keys(roles, (Role.HOST,), URL_ARGS))


def pinned_constraints(
    args: dict[str, Any], roles: Mapping[str, Role] | None = None
) -> dict[str, Any]:
    """The constraints that hold a lasting grant to exactly what an action touches: its
    recipients, its URLs (origin, path and query: :func:`url_key`) and at most its ``amount``;
    for a tool that declares roles, also every argument with an identifier role or no role at
    all, to its exact value (``same``). Content, free text and times stay free.
    :class:`~steward.errors.UsageError`, saying why, when that cannot be done: the action has
    no recipient or URL argument (nothing to bind the grant to, so it would cover the tool for
    anyone and anywhere), or one of them, or its amount, cannot be read unambiguously."""
    recipient_keys = _keys(roles, (Role.RECIPIENT, Role.PAYEE), RECIPIENT_ARGS)
    has_recipients = any(args.get(key) is not None for key in recipient_keys)
    if not has_recipients and not has_urls(args, roles):
        raise UsageError(
            "this action names no recipient or URL that a lasting approval could be bound to; "
            "approve it once instead"
        )
    pinned: dict[str, Any] = {}
    amounts = [number(given) for given in amounts_of(args, roles)]
    if amounts:
        if any(amount is None for amount in amounts):
            raise UsageError(
                "the amount of this action is not a plain number, so a lasting approval cannot "
                "be bound to it; approve it once instead"
            )
        pinned["max_amount"] = max(amount for amount in amounts if amount is not None)
    if has_recipients:
        recipients = recipients_of(args, roles)
        if not recipients:
            raise UsageError(
                "a recipient of this action is not one plain address, so a lasting approval "
                "cannot be bound to it; approve it once instead"
            )
        pinned["recipients"] = sorted(set(recipients))
    if has_urls(args, roles):
        values = _values(args, _keys(roles, (Role.HOST,), URL_ARGS))
        if not values:
            raise UsageError("the URL of this action cannot be read; approve it once instead")
        try:
            urls = {text: parse_url(text) for text in values}
        except UrlRefused as exc:
            raise UsageError(
                f"{exc}; a lasting approval cannot be bound to its host: approve it once instead"
            ) from None
        pinned["hosts"] = sorted({url.host for url in urls.values()})
        pinned["urls"] = sorted({url_key(url, text) for text, url in urls.items()})
    if roles is not None:
        # what the tool did not say is harmless is held to the value the person saw; pinned
        # even when there is none, so one given later (a method left to its default now) is
        # refused
        pinned["same"] = {n: v for n, v in args.items() if roles.get(n) in _PINNED_ROLES}
    return pinned


def url_key(url: Url, text: str) -> str:
    """A URL as a lasting grant names it: scheme, host, port, path and query (no fragment, which
    is never sent), so a grant for ``https://h/a`` covers neither ``http://h:6379/a`` nor
    ``https://h/a/b`` nor ``https://h/a?to=x``."""
    import httpx  # as in :mod:`steward.sentinel.urls`

    query = httpx.URL(text.strip()).query.decode("ascii", "replace")
    return f"{url.scheme}://{url.host}:{url.port}{url.path}" + (f"?{query}" if query else "")


def url_keys(args: dict[str, Any], roles: Mapping[str, Role] | None = None) -> list[str] | None:
    """:func:`url_key` of each of the action's URLs; None if one cannot be read."""
    values = _values(args, _keys(roles, (Role.HOST,), URL_ARGS))
    if values is None:
        return None
    try:
        return [url_key(_read_url(text), text) for text in values]
    except UrlRefused:
        return None


def same_holds(pinned: Any, args: dict[str, Any], roles: Mapping[str, Role] | None) -> bool:
    """Each pinned argument has exactly its pinned value (absent pins absent), and, for a tool
    that declares roles, every argument given with no role or an identifier role is one of the
    pinned."""
    if not isinstance(pinned, dict):
        return False
    if any(_canonical(args.get(name)) != _canonical(value) for name, value in pinned.items()):
        return False
    unpinned = [n for n, v in args.items() if v is not None and n not in pinned]
    return roles is None or all(roles.get(n) not in _PINNED_ROLES for n in unpinned)


def _canonical(value: Any) -> str:
    """A value compared as JSON text: ``1``, ``1.0`` and ``true`` differ."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


def calendars_of(args: dict[str, Any], roles: Mapping[str, Role] | None = None) -> list[str] | None:
    """The calendars the action names (CALENDAR arguments), case-folded; None if one is not
    text. A tool without roles names none."""
    found = _values(args, _keys(roles, (Role.CALENDAR,), ()))
    return None if found is None else [name.strip().casefold() for name in found]


def amounts_of(args: dict[str, Any], roles: Mapping[str, Role] | None = None) -> list[Any]:
    """The action's amounts as given: its AMOUNT arguments (``amount`` for a tool that declares
    no roles)."""
    keys = _keys(roles, (Role.AMOUNT,), ("amount",))
    return [args[key] for key in keys if key in args and args[key] is not None]


def number(value: Any) -> float | None:
    """A finite amount, or None (booleans, text that is not a plain number, NaN, infinity)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float | Decimal):
        amount = float(value)
    elif isinstance(value, str):
        try:
            amount = float(value.strip())
        except ValueError:
            return None
    else:
        return None
    return amount if math.isfinite(amount) else None
