"""Conditions, evaluated without a model: does a check matter?

:func:`evaluate` applies the edge-triggered rule of :mod:`steward.domain.webwatch` to one
check: state conditions fire when they *become* true together (re-armed when they stop
holding); ``changed`` fires on each new value while the other conditions hold.
"""

from __future__ import annotations

from collections.abc import Sequence

from steward.domain.webwatch import Condition, ConditionKind, Value, Verdict


def holds(condition: Condition, value: Value, page: str) -> bool:
    """Whether a state condition holds for ``value`` read off a page whose readable text is
    ``page``. ``changed`` is not a state: it always holds here (:func:`evaluate` tests it)."""
    match condition.kind:
        case ConditionKind.CHANGED:
            return True
        case ConditionKind.CONTAINS:
            return _folded(condition.text or "") in _folded(page)
        case ConditionKind.LACKS:
            return _folded(condition.text or "") not in _folded(page)
        case ConditionKind.BELOW:
            return _compare(value, condition) < 0
        case ConditionKind.ABOVE:
            return _compare(value, condition) > 0
        case ConditionKind.PRESENT:
            return value.text is not None
        case ConditionKind.ABSENT:
            return value.text is None


def evaluate(
    conditions: Sequence[Condition],
    *,
    old: Value | None,
    old_matched: bool,
    new: Value,
    page: str,
) -> Verdict:
    """The verdict on a check that read ``new`` (and the page text ``page``) after ``old``
    (None: the first check), when the state conditions held at the last check as
    ``old_matched`` says (False before the first check: a watch starts armed)."""
    matched = all(holds(c, new, page) for c in conditions)
    changed = old is not None and old.text != new.text
    changes = not conditions or any(c.kind is ConditionKind.CHANGED for c in conditions)
    fire = (changed and matched) if changes else (matched and not old_matched)
    reasons: tuple[str, ...] = ()
    if fire:
        reasons = tuple(
            _reason(c, old, new) for c in conditions or (Condition(kind=ConditionKind.CHANGED),)
        )
    return Verdict(matched=matched, changed=changed, fire=fire, reasons=reasons)


def _reason(condition: Condition, old: Value | None, new: Value) -> str:
    if condition.kind is ConditionKind.CHANGED:
        before = "nothing" if old is None else old.describe()
        return f"changed from {before} to {new.describe()}"
    return condition.describe()


def _compare(value: Value, condition: Condition) -> int:
    """-1, 0 or 1 comparing the value's number with the threshold; 0 (neither below nor
    above) when the value is not a number or there is none."""
    if value.number is None or condition.threshold is None:
        return 0
    return (value.number > condition.threshold) - (value.number < condition.threshold)


def _folded(text: str) -> str:
    """Case and spacing do not matter: ``In  Stock`` is found in ``in stock``."""
    return " ".join(text.casefold().split())
