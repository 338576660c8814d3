"""Wake-ups as the store keeps them read back as the same JSON, and what a retry carries over
stays visible to the next activation."""

from __future__ import annotations

from typing import Any

import pytest

from steward.domain.wake import (
    Again,
    Answered,
    ApprovalDecided,
    ChildrenEnded,
    EffectSettled,
    EventArrived,
    NotWoken,
    TimeUp,
    answer_of,
    event_of,
    wake_from_json,
)

EVENT = {"id": "evt_1", "type": "pr.updated", "payload": {"n": 7}, "received_at": 1.5}


@pytest.mark.parametrize(
    ("stored", "typed"),
    [
        ({}, NotWoken()),
        ({"reason": "timer"}, TimeUp(reason="timer")),
        ({"reason": "timeout"}, TimeUp(reason="timeout")),
        ({"reason": "event", "event": EVENT}, EventArrived(event=EVENT)),
        ({"reason": "input", "answer": "yes"}, Answered(answer="yes")),
        ({"reason": "approval", "ref": "apr.t.3"}, ApprovalDecided(ref="apr.t.3")),
        ({"reason": "children"}, ChildrenEnded()),
        ({"reason": "effect", "effect_id": "eff_1"}, EffectSettled(effect_id="eff_1")),
        ({"reason": "retry"}, Again(reason="retry")),
        ({"reason": "event"}, Again(reason="event")),
        (
            {"reason": "database unavailable", "cut_offs": 2, "answer": "yes"},
            Again(reason="database unavailable", carried=Answered(answer="yes"), cut_offs=2),
        ),
        (
            {"reason": "recovered", "event": EVENT},
            Again(reason="recovered", carried=EventArrived(event=EVENT)),
        ),
    ],
)
def test_a_stored_wake_reads_as_its_variant_and_back(stored: dict[str, Any], typed: Any) -> None:
    assert wake_from_json(stored) == typed
    assert typed.to_json() == stored


def test_a_retry_still_brings_the_answer_and_the_event() -> None:
    retried = wake_from_json({"reason": "retry", "answer": "Tuesday"})
    assert (retried.reason, answer_of(retried), event_of(retried)) == ("retry", "Tuesday", None)
    recovered = wake_from_json({"reason": "recovered", "event": EVENT})
    assert (answer_of(recovered), event_of(recovered)) == (None, EVENT)
