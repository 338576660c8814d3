"""A form as the person is shown it before it is sent: the fields of the form a button
belongs to (its form owner), each with its label, kind, the value as it would be sent (a
password masked) and, when the page's snapshot shows it, its reference."""

from __future__ import annotations

import contextlib
import re
from typing import Any

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import JSHandle, Locator, Page

from steward.environment.browser.snapshot import MASK
from steward.environment.browser.views import FormField
from steward.harness.tools import ToolError

KIND = """e => {
  const tag = e.tagName.toLowerCase();
  if (tag === 'input') return (e.getAttribute('type') || 'text').toLowerCase();
  if (tag === 'select' || tag === 'textarea' || tag === 'button' || tag === 'a') return tag;
  return e.isContentEditable ? 'textarea' : (e.getAttribute('role') || tag);
}"""
_FIELDS = """e => {
  const form = e.form || e.closest('form');
  if (!form) return null;
  const kinds = ['input', 'select', 'textarea'];
  return Array.from(form.elements).filter(f => kinds.includes(f.tagName.toLowerCase()));
}"""
_DESCRIBE = """(fields, mask) => fields.filter(f => !f.disabled).map(f => {
  const tag = f.tagName.toLowerCase();
  const kind = tag === 'input' ? (f.getAttribute('type') || 'text').toLowerCase() : tag;
  const label = ((f.labels && f.labels[0] && f.labels[0].innerText)
    || f.getAttribute('aria-label') || f.getAttribute('placeholder') || f.name || '').trim();
  let value = f.value;
  if (kind === 'password') value = f.value ? mask : '';
  else if (kind === 'checkbox' || kind === 'radio') value = f.checked ? (f.value || 'on') : '';
  else if (tag === 'select') value = Array.from(f.selectedOptions).map(o => o.text).join(', ');
  return {label, kind, value};
}).map((d, i) => ({...d, index: i}))"""
_NOT_BUTTONS = ("submit", "button", "reset", "image")
_FIELD_ROLES = re.compile(
    r"- (?:textbox|searchbox|combobox|checkbox|radio|spinbutton|listbox|slider|switch)\b.*?"
    r"\[ref=((?:f\d+)?e\d+)\]"
)


async def field_kind(target: Locator) -> str:
    """``password``, ``text``, ``select``, ``button``…"""
    kind: str = await target.evaluate(KIND)
    return kind


async def form_fields(page: Page, target: Locator) -> list[FormField]:
    """The enabled fields of the form ``target`` belongs to (buttons left out)."""
    fields = await target.evaluate_handle(_FIELDS)
    try:
        described: list[dict[str, Any]] | None = await fields.evaluate(
            "(fs, mask) => fs === null ? null : (" + _DESCRIBE + ")(fs, mask)", MASK
        )
        if described is None:
            raise ToolError("that element is not part of a form")
        refs = await _field_refs(page, fields)
    finally:
        with contextlib.suppress(PlaywrightError):  # the page went away meanwhile
            await fields.dispose()
    return [
        FormField(ref=refs.get(d["index"], ""), label=d["label"], kind=d["kind"], value=d["value"])
        for d in described
        if d["kind"] not in _NOT_BUTTONS
    ]


async def _field_refs(page: Page, fields: JSHandle) -> dict[int, str]:
    """Which of the page's references names each (enabled) field of the form."""
    snapshot = await page.aria_snapshot(mode="ai")
    found: dict[int, str] = {}
    for ref in _FIELD_ROLES.findall(snapshot):
        try:
            index: int = await page.locator(f"aria-ref={ref}").evaluate(
                "(e, fs) => fs.filter(f => !f.disabled).indexOf(e)", fields
            )
        except PlaywrightError:
            continue
        if index >= 0:
            found.setdefault(index, ref)
    return found
