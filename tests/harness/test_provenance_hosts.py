"""A host read in others' text stays tainted however the model respells it: provenance reads
hosts the one way the sentinel and the broker do (IDNA A-labels, no trailing dot)."""

from __future__ import annotations

import pytest

from steward.domain.roles import Role
from steward.domain.trail import Trail
from steward.sentinel import provenance

ROLES = {"url": Role.HOST}


@pytest.mark.parametrize(
    ("untrusted", "url"),
    [
        ("book at bücher.example today", "https://xn--bcher-kva.example./x"),
        ("book at https://bücher.example/shop", "https://xn--bcher-kva.example/pay"),
        ("book at https://xn--bcher-kva.example/shop", "https://BÜCHER.example./pay"),
        ("book at https://user@bücher.example/shop", "https://bücher.example/pay"),
    ],
)
def test_a_host_from_untrusted_text_is_tainted_in_any_spelling(untrusted: str, url: str) -> None:
    state = Trail()
    provenance.remember(state, untrusted, source="read_email", step=2)
    flagged = provenance.untrusted_arguments({"url": url}, state, "buy me a book", ROLES)
    assert set(flagged) == {"url"}
    assert flagged["url"].source == "read_email"


def test_a_host_the_person_named_is_theirs_in_any_spelling() -> None:
    state = Trail()
    provenance.remember(state, "book at bücher.example today", source="read_email", step=2)
    args = {"url": "https://xn--bcher-kva.example./x"}
    assert not provenance.untrusted_arguments(args, state, "order from bücher.example", ROLES)
