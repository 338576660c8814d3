"""Event filters (an event trigger's or a wait's ``match``) are evaluated without a model:
equality, or contains / one of / ends with, and a list in the payload holds when one item
does."""

from __future__ import annotations

from typing import Any

import pytest

from steward.domain.task import payload_matches

MAIL = {
    "from": "dana@example.com",
    "to": ["me@home.test", "team@example.com"],
    "subject": "Invoice 42 for November",
    "folder": "INBOX",
    "has_attachment": True,
}


@pytest.mark.parametrize(
    ("match", "holds"),
    [
        ({}, True),
        ({"folder": "INBOX"}, True),
        ({"folder": "inbox"}, False),  # equality is exact
        ({"has_attachment": True}, True),
        ({"has_attachment": False}, False),
        ({"subject": {"contains": "INVOICE"}}, True),  # contains ignores case
        ({"subject": {"contains": "receipt"}}, False),
        ({"from": {"endswith": "@EXAMPLE.com"}}, True),
        ({"from": {"endswith": "@example.org"}}, False),
        ({"from": {"in": ["bob@x.test", "dana@example.com"]}}, True),
        ({"from": {"in": ["bob@x.test"]}}, False),
        ({"to": "team@example.com"}, True),  # one of the recipients
        ({"to": {"endswith": "@home.test"}}, True),
        ({"to": {"contains": "nobody"}}, False),
        ({"to": ["me@home.test", "team@example.com"]}, True),  # a list compares as a whole
        ({"missing": {"contains": "x"}}, False),
        ({"subject": {"contains": 4}}, False),  # a test that cannot apply does not hold
        ({"from": {"in": "dana@example.com"}}, False),
        ({"folder": "INBOX", "subject": {"contains": "invoice"}}, True),
        ({"folder": "INBOX", "subject": {"contains": "receipt"}}, False),
        # a dict that is not exactly one operator compares by equality
        ({"subject": {"contains": "Invoice", "in": []}}, False),
    ],
)
def test_filters(match: dict[str, Any], holds: bool) -> None:
    assert payload_matches(match, MAIL) is holds
