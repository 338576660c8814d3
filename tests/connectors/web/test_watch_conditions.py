"""Conditions without a model: each kind, their combination, and the edge-triggered rule
(properties over any sequence of checks)."""

from __future__ import annotations

import itertools
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from steward.connectors.web.condition import evaluate, holds
from steward.domain.webwatch import MISSING, Condition, ConditionKind, Value

K = ConditionKind
BELOW_1000 = Condition(kind=K.BELOW, threshold=Decimal(1000))
IN_STOCK = Condition(kind=K.CONTAINS, text="In stock")


def price(amount: int | str | None) -> Value:
    if amount is None:
        return MISSING
    return Value(text=f"€{amount}", number=Decimal(amount), currency="€")


@pytest.mark.parametrize(
    ("condition", "value", "page", "expected"),
    [
        (BELOW_1000, price(999), "", True),
        (BELOW_1000, price(1000), "", False),
        (BELOW_1000, price(1001), "", False),
        (BELOW_1000, MISSING, "", False),
        (BELOW_1000, Value(text="Sold out"), "", False),
        (Condition(kind=K.ABOVE, threshold=Decimal("9.5")), price("9.51"), "", True),
        (Condition(kind=K.ABOVE, threshold=Decimal("9.5")), price("9.5"), "", False),
        (IN_STOCK, MISSING, "Laptop — in  STOCK now", True),
        (IN_STOCK, price(1), "Laptop — out of stock", False),
        (Condition(kind=K.LACKS, text="Sold out"), MISSING, "Available", True),
        (Condition(kind=K.LACKS, text="Sold out"), MISSING, "SOLD OUT", False),
        (Condition(kind=K.PRESENT), price(1), "", True),
        (Condition(kind=K.PRESENT), MISSING, "", False),
        (Condition(kind=K.ABSENT), MISSING, "", True),
        (Condition(kind=K.ABSENT), Value(text=""), "", False),
    ],
)
def test_each_state_condition(
    condition: Condition, value: Value, page: str, expected: bool
) -> None:
    assert holds(condition, value, page) is expected


def test_below_1000_and_in_stock_fires_once_when_both_become_true() -> None:
    conditions = (BELOW_1000, IN_STOCK)
    checks = [
        (price(1049), "In stock"),  # not below
        (price(999), "Out of stock"),  # below, not in stock
        (price(989), "In stock"),  # both: fires
        (price(979), "In stock"),  # still both: quiet
        (price(1100), "In stock"),  # re-armed
        (price(950), "In stock"),  # fires again
    ]
    fired = []
    old, matched = None, False
    for value, page in checks:
        verdict = evaluate(conditions, old=old, old_matched=matched, new=value, page=page)
        fired.append(verdict.fire)
        old, matched = value, verdict.matched
    assert fired == [False, False, True, False, False, True]


def test_the_first_check_fires_when_the_conditions_already_hold() -> None:
    verdict = evaluate((BELOW_1000,), old=None, old_matched=False, new=price(900), page="")
    assert verdict.fire
    assert verdict.reasons == ("below 1,000",)


def test_changed_fires_on_each_new_value_never_on_the_first() -> None:
    changed = (Condition(kind=K.CHANGED),)
    first = evaluate(changed, old=None, old_matched=False, new=price(1), page="")
    assert not first.fire
    same = evaluate(changed, old=price(1), old_matched=True, new=price(1), page="")
    assert not same.fire
    new = evaluate(changed, old=price(1), old_matched=True, new=price(2), page="")
    assert new.fire
    assert new.reasons == ("changed from €1 to €2",)
    gone = evaluate((), old=price(2), old_matched=True, new=MISSING, page="")
    assert gone.fire
    assert gone.reasons == ("changed from €2 to nothing",)


def test_changed_with_a_state_fires_only_while_the_state_holds() -> None:
    conditions = (Condition(kind=K.CHANGED), BELOW_1000)
    above = evaluate(conditions, old=price(1200), old_matched=False, new=price(1100), page="")
    assert not above.fire
    below = evaluate(conditions, old=price(990), old_matched=True, new=price(980), page="")
    assert below.fire


states = st.sampled_from(
    [
        BELOW_1000,
        IN_STOCK,
        Condition(kind=K.LACKS, text="sold out"),
        Condition(kind=K.PRESENT),
        Condition(kind=K.ABSENT),
        Condition(kind=K.ABOVE, threshold=Decimal(500)),
    ]
)
observations = st.tuples(
    st.one_of(st.none(), st.integers(min_value=0, max_value=2000)),
    st.sampled_from(["In stock", "Sold out", "", "in stock, sold out soon"]),
)


def _run(conditions: tuple[Condition, ...], seen: list[tuple[int | None, str]]) -> list[bool]:
    fired, old, matched = [], None, False
    for amount, page in seen:
        verdict = evaluate(conditions, old=old, old_matched=matched, new=price(amount), page=page)
        assert not verdict.fire or verdict.matched
        fired.append(verdict.fire)
        old, matched = price(amount), verdict.matched
    return fired


@given(st.lists(states, min_size=1, max_size=3), st.lists(observations, max_size=30))
def test_state_watches_fire_exactly_on_rising_edges(
    conditions: list[Condition], seen: list[tuple[int | None, str]]
) -> None:
    """A state watch fires once per false→true edge of its conditions (starting armed), so
    a condition that keeps holding never fires twice in a row."""
    fired = _run(tuple(conditions), seen)
    levels = [all(holds(c, price(a), p) for c in conditions) for a, p in seen]
    edges = [now and not before for before, now in itertools.pairwise([False, *levels])]
    assert fired == edges
    assert not any(a and b for a, b in itertools.pairwise(fired))


@given(st.lists(observations, max_size=30))
def test_change_watches_fire_exactly_when_the_value_differs(
    seen: list[tuple[int | None, str]],
) -> None:
    fired = _run((), seen)
    values = [price(a).text for a, _ in seen]
    assert fired == [i > 0 and values[i] != values[i - 1] for i in range(len(values))]


@given(st.lists(observations, min_size=1, max_size=10), st.integers(min_value=1, max_value=5))
def test_a_page_that_stays_the_same_fires_at_most_once(
    seen: list[tuple[int | None, str]], repeat: int
) -> None:
    for conditions in [(BELOW_1000, IN_STOCK), (Condition(kind=K.PRESENT),), ()]:
        fired = _run(conditions, [seen[0]] * (repeat + 1))
        assert sum(fired) <= 1
