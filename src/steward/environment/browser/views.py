"""What the browser's actions return and raise: the page as the agent sees it, a form's
fields as the person is shown them, the files the browser made, and the refusals in words."""

from __future__ import annotations

from dataclasses import dataclass

from steward.harness.tools import ToolError


class NavigationRefused(ToolError):
    """The page (or the agent) tried to go to a host the browser connection does not allow."""


class SubmitBlocked(ToolError):
    """An action other than ``submit`` would have sent a form."""


class StaleRef(ToolError):
    """The reference is not on the page as it is now."""


@dataclass(kw_only=True, frozen=True)
class PageView:
    """What the agent sees of the page after an action."""

    url: str
    """The page's address."""
    host: str
    """Its normalised host ('' on a blank page)."""
    title: str
    """The page's title."""
    snapshot: str
    """Aria snapshot (refs ``[ref=eN]``), password values masked, capped (the cut said)."""
    note: str | None = None
    """Something the agent should know about this view (e.g. the browser restarted)."""


@dataclass(kw_only=True, frozen=True)
class FormField:
    """One field of a form, as the person is shown it before it is sent."""

    ref: str
    """Its reference on the page ('' for a field the snapshot does not show, e.g. hidden)."""
    label: str
    """Its label element, aria-label, placeholder or name, whichever comes first."""
    kind: str
    """text|password|email|select|checkbox|radio|textarea|hidden|..."""
    value: str
    """The value as it would be sent ("••••••" for a password; a select's chosen options'
    text; a checkbox or radio button's value when checked, '' when not)."""


@dataclass(kw_only=True, frozen=True)
class Shot:
    """A screenshot in the person's workspace."""

    path: str
    """Workspace-relative PNG (password fields masked)."""
    sha256: str
    """The file's sha256."""


@dataclass(kw_only=True, frozen=True)
class Saved:
    """A download saved in the person's workspace."""

    path: str
    """Workspace-relative path (``downloads/…``)."""
    size: int
    """Bytes."""
    sha256: str
    """The file's sha256."""
    name: str
    """The file's name as saved."""
