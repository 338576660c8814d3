"""Why the sentinel decided as it did, in the person's words.

The sentinel records its reasons for the audit log and the agent ("rule 'api.call'
(do_if_preapproved): …; no grant covers it"); the person reads them as sentences ("You asked me
to check with you before calling web services with your accounts"). Stored reasons stay as
they are, so older approvals read the same way."""

from __future__ import annotations

import re

ACTIONS = {
    "mail.send": "sending mail",
    "email.send": "sending e-mail",
    "email.*": "doing anything with your e-mail",
    "send_email": "sending e-mail",
    "mail.*": "doing anything with your mail",
    "mail.draft": "writing mail drafts",
    "mail.modify": "changing your mailbox",
    "calendar.*": "changing your calendar",
    "calendar.write": "changing your calendar",
    "api.call": "calling web services with your accounts",
    "http_fetch": "calling web services",
    "payment.*": "paying anything",
    "payments.pay": "paying anything",
    "files.write": "changing your files",
    "browser.submit": "sending forms in your browser",
    "browser_submit": "sending forms in your browser",
    "browser.*": "using your browser",
    "*": "doing anything outside Steward",
}
"""What a rule's pattern covers, as an activity (a pattern not listed reads as its name)."""

_RULE = re.compile(
    r"^rule '(?P<pattern>[^']*)' \((?P<mode>[a-z_]+)\)(?:: (?P<why>.*?))?"
    r"(?P<tail>; no grant covers it|; pre-approved by grant \S+)?$",
    re.DOTALL,
)
_DEFAULT = re.compile(r"^(?P<tool>\S+) acts on the world and no grant covers it$")


def activity(pattern: str) -> str:
    """``mail.send`` → "sending mail"; an unknown pattern → "using mcp__x__y" (a wildcard
    one: "using any mcp__github__ tool")."""
    if pattern in ACTIONS:
        return ACTIONS[pattern]
    if pattern.endswith("*"):
        return f"using any {pattern.rstrip('*')} tool"
    return f"using {pattern}"


def reason_in_words(reason: str) -> str:
    """A sentinel reason as a sentence for the person; a reason it does not know is returned
    with its first letter capitalised (the sentinel's other reasons are already sentences)."""
    reason = reason.strip()
    found = _RULE.match(reason)
    if found is not None:
        what = activity(found["pattern"])
        why = f" (you said: “{found['why']}”)" if found["why"] else ""
        mode = found["mode"]
        if mode == "ask":
            return f"You asked me to check with you before {what}{why}."
        if mode == "do_if_preapproved":
            tail = found["tail"] or ""
            if tail.startswith("; pre-approved"):
                covered = ", and you had approved this in advance"
            elif tail:
                covered = ", and nothing you approved covers this"
            else:
                covered = ""
            return (
                f"You asked me to check with you before {what}, unless you approved it in "
                f"advance{covered}{why}."
            )
        if mode == "handoff":
            return f"You asked to do {what} yourself{why}."
        if mode == "deny":
            return f"You told me never to do this ({what}){why}."
        return f"You allowed {what}{why}."
    default = _DEFAULT.match(reason)
    if default is not None:
        return (
            "This acts outside Steward on your behalf, and you have not approved anything "
            "like it in advance."
        )
    return reason[:1].upper() + reason[1:] if reason else reason
