"""The page as the agent reads it: Playwright's aria snapshot (``mode="ai"``, each element
the agent can act on marked ``[ref=eN]``), made safe to show.

* A password field's value never appears: Chromium's accessibility tree gives a filled
  password box its value, so every textbox line whose value is one of the page's password
  values is masked (and any longer password value is masked wherever else it appears).
* Text written by the page cannot pass for a reference: ``[ref=`` inside a name or a text is
  rewritten, so the only ``[ref=…]`` the agent sees are Playwright's own. (A ref is in any case
  accepted only when Playwright resolves it on the page.)
* It is capped (:data:`SNAPSHOT_CHARS`), and says where it was cut.
"""

from __future__ import annotations

import json
import re

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Page

SNAPSHOT_CHARS = 20_000
"""At most this many characters of a page reach the model."""
MASK = "••••••"
"""What a password's value reads as."""
REF = re.compile(r"^(?:f\d+)?e\d+$")
"""A reference as Playwright writes it (``e12``; ``f1e3`` inside a frame)."""

_LINE = re.compile(
    r"^(?P<head>\s*- (?P<role>[\w/-]+)(?: \"(?:[^\"\\]|\\.)*\")?(?: \[[^\]\[]*\])*)"
    r"(?P<rest>:.*)?$"
)
"""One snapshot line: indentation, ``- role``, an optional quoted name, attributes in
brackets, then ``: text`` (the value or the text content)."""
_QUOTED = re.compile(r"^(?P<indent>\s*- )'(?P<inner>(?:[^']|'')*)'(?P<rest>:.*)?$")
_NAME = re.compile(r"\"(?:[^\"\\]|\\.)*\"")
_FAKE_REF = re.compile(r"\[ref=", re.IGNORECASE)
_VALUE_ROLES = frozenset({"textbox", "searchbox", "combobox", "spinbutton"})


async def password_values(page: Page) -> set[str]:
    """The values typed into the page's password fields, in every frame."""
    found: set[str] = set()
    for frame in page.frames:
        try:
            values = await frame.eval_on_selector_all(
                "input[type=password]", "els => els.map(e => e.value)"
            )
        except PlaywrightError:
            continue  # a frame that went away while we asked
        found.update(v for v in values if isinstance(v, str) and v)
    return found


def clean(text: str, passwords: set[str]) -> str:
    """The snapshot with password values masked and page-written ``[ref=`` defused, capped."""
    lines = [_clean_line(line, passwords) for line in text.splitlines()]
    out = "\n".join(lines)
    for secret in sorted(passwords, key=len, reverse=True):
        if len(secret) >= 4:
            out = out.replace(secret, MASK)
    if len(out) > SNAPSHOT_CHARS:
        cut = out.rfind("\n", 0, SNAPSHOT_CHARS)
        cut = cut if cut > 0 else SNAPSHOT_CHARS
        shown = out[:cut]
        out = (
            f"{shown}\n[the page goes on: {len(out) - cut} more characters not shown; "
            "scroll or wait for a shorter page to see the rest]"
        )
    return out


def _clean_line(line: str, passwords: set[str]) -> str:
    quoted = _QUOTED.match(line)
    if quoted is not None:
        # YAML single-quotes a line whose name holds a colon or a quote: clean what is inside
        inner = quoted.group("inner").replace("''", "'")
        cleaned = _clean_line(quoted.group("indent") + inner, passwords)
        body = cleaned[len(quoted.group("indent")) :]
        return f"{quoted.group('indent')}'{body.replace(chr(39), chr(39) * 2)}'" + _defuse(
            quoted.group("rest") or ""
        )
    match = _LINE.match(line)
    if match is None:
        return _defuse(line)
    head, rest = match.group("head"), match.group("rest") or ""
    head = _NAME.sub(lambda m: _defuse(m.group(0)), head, count=1)
    value = rest[2:] if rest.startswith(": ") else None
    if match.group("role") in _VALUE_ROLES and value is not None and _unquote(value) in passwords:
        rest = f": {MASK}"
    return head + _defuse(rest)


def _defuse(text: str) -> str:
    # a zero-width joiner keeps the text readable but unlike any reference Playwright writes
    return _FAKE_REF.sub(lambda m: m.group(0)[:-1] + "\u200d=", text)


def _unquote(value: str) -> str:
    if value.startswith('"'):
        try:
            loaded = json.loads(value)
        except ValueError:
            return value
        return loaded if isinstance(loaded, str) else value
    return value
