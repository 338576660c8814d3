"""Secrets as everyone but the vault sees them: a name, the hosts it may go to, a placeholder.

The model and tools only ever see ``{{secret:<name>}}``; the egress broker substitutes the value
at the boundary (see :mod:`steward.sentinel.vault`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from steward.errors import ConfigError

NOWHERE = "webhook.invalid"
"""The one host a secret that is only ever checked, never sent (a webhook's), is bound to: a
vault secret must name where it may be sent, and ``.invalid`` names no host there can ever be
(RFC 2606), so egress never sends it."""

_NAME = r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,199}"
_NAME_RE = re.compile(rf"{_NAME}\Z")
_PLACEHOLDER_RE = re.compile(r"\{\{secret:(" + _NAME + r")\}\}")


@dataclass(kw_only=True, frozen=True)
class SecretInfo:
    """What may be known about a stored secret: everything except its value."""

    id: str
    """Stable id, ``sec_…``."""
    person_id: str
    """Owner; a secret is only ever used for its owner's tasks."""
    name: str
    """Handle used in placeholders: ``{{secret:<name>}}``."""
    hosts: tuple[str, ...]
    """Exact hosts the value may be sent to (no wildcards)."""
    created_at: datetime
    """When it was first stored."""
    rotated_at: datetime | None = None
    """When its ciphertext last changed: a new value, a refreshed token or a key rotation."""


def placeholder(name: str) -> str:
    """The text that stands for secret ``name`` wherever a model or a tool can see it."""
    return "{{secret:" + check_secret_name(name) + "}}"


def placeholders_in(text: str) -> set[str]:
    """Names of the secrets whose placeholders occur in ``text``."""
    return set(_PLACEHOLDER_RE.findall(text))


def substitute(text: str, values: Mapping[str, str]) -> str:
    """``text`` with each placeholder of a secret in ``values`` replaced by its value."""
    return _PLACEHOLDER_RE.sub(lambda m: values.get(m.group(1), m.group(0)), text)


def check_secret_name(name: str) -> str:
    """``name`` if it is a valid secret name (letters, digits, ``_.-``; up to 200)."""
    if not _NAME_RE.match(name):
        raise ConfigError(
            f"invalid secret name {name!r}: use letters, digits, '_', '.' and '-' "
            "(starting with a letter or digit), at most 200 characters"
        )
    return name
