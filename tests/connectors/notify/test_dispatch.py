"""The dispatcher over a simulated week (policies, quiet hours, digests) and against channels
that are unavailable or refuse; a real sender class records what reached the person."""

from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import dataclass
from datetime import time, timedelta
from zoneinfo import ZoneInfo

from steward.connectors.notify.dispatch import Dispatcher
from steward.domain import Notification, WaitCondition
from steward.domain.channel import (
    Channel,
    ChannelKind,
    DeliveryReceipt,
    Importance,
    OutboundMessage,
)
from steward.domain.clock import SimulatedClock
from steward.domain.delivery import DeliveryStatus
from steward.domain.ids import new_id
from steward.domain.outcome import Wait
from steward.domain.report import Reach, Report, ReportOrigin, in_quiet_hours, report_id
from steward.service import Service
from steward.store import Fence, Store
from steward.testing.store_conformance.helpers import checkpoint, claim_one, finish, new_task
from support.notify_recording import RecordingSender

PARIS = ZoneInfo("Europe/Paris")


async def _setup(
    store: Store, clock: SimulatedClock, sender: RecordingSender
) -> tuple[str, Dispatcher]:
    person = await store.persons.create_person(name="Ada", now=clock.now(), timezone="Europe/Paris")
    await store.persons.set_reach(
        person.id, quiet_start=time(22), quiet_end=time(7), digest_at=time(18)
    )
    await store.channels.add(
        Channel(
            id=new_id("chn"),
            person_id=person.id,
            kind=ChannelKind.APPRISE,
            name="phone",
            created_at=clock.now(),
        )
    )
    dispatcher = Dispatcher(store=store, senders={sender.kind: sender}, clock=clock, holder="d1")
    return person.id, dispatcher


async def _drain(dispatcher: Dispatcher) -> None:
    while await dispatcher.run_once():
        pass


def _report(
    person: str,
    goal: str | None,
    what: str,
    importance: Importance,
    clock: SimulatedClock,
    origin: ReportOrigin = "agent",
) -> Report:
    return Report(
        id=report_id(what),
        person_id=person,
        goal_id=goal,
        origin=origin,
        what=what,
        why="Because.",
        todo="Look." if importance != "info" else None,
        importance=importance,
        created_at=clock.now(),
    )


async def test_a_simulated_week_follows_policy_quiet_hours_and_the_digest(
    store: Store, clock: SimulatedClock
) -> None:
    sender = RecordingSender(clock=clock)
    person, dispatcher = await _setup(store, clock, sender)
    goals = {}
    for policy in ("all", "actionable", "none"):
        goal = await store.goals.create_goal(
            person_id=person, title=f"Goal {policy}", now=clock.now(), report_policy=policy
        )
        goals[policy] = goal.id
    made: dict[str, Report] = {}
    # Monday 09:00 in Paris, for seven days, every half hour
    for _ in range(7 * 48):
        local = clock.now().astimezone(PARIS)
        if (local.hour, local.minute) in ((9, 0), (13, 0), (23, 0)):
            for policy, goal_id in goals.items():
                for importance in ("info", "actionable"):
                    what = f"{policy} {importance} {local:%a %H:%M}"
                    made[what] = await store.reports.add(
                        _report(person, goal_id, what, importance, clock)
                    )
            if (local.weekday(), local.hour) == (2, 23):
                # an effect in doubt (the runtime's), and the agent pleading: only one goes
                what = f"none urgent {local:%a %H:%M}"
                made[what] = await store.reports.add(
                    _report(person, goals["none"], what, "urgent", clock, "runtime")
                )
                what = f"none pleading {local:%a %H:%M}"
                made[what] = await store.reports.add(
                    _report(person, goals["none"], what, "urgent", clock)
                )
        await _drain(dispatcher)
        clock.advance(timedelta(minutes=30))

    # never the same message twice
    keys = Counter(s.message.key for s in sender.sent)
    assert max(keys.values()) == 1
    reach = Reach(zone=PARIS, quiet_start=time(22), quiet_end=time(7))
    reports = [s for s in sender.sent if s.message.kind == "report"]
    digests = [s for s in sender.sent if s.message.kind == "digest"]
    sent_titles = {s.message.title for s in reports}
    # all: every report, each once; none in quiet hours (23:00 ones at 07:00 next morning)
    all_made = {w for w in made if w.startswith("all ")}
    assert {w for w in sent_titles if w.startswith("all ")} == all_made
    for s in reports:
        if s.message.importance != "urgent":
            assert not in_quiet_hours(reach, s.at), (s.message.title, s.at)
    late = [s for s in reports if s.message.title == "all info Mon 23:00"]
    assert [s.at.astimezone(PARIS).strftime("%a %H:%M") for s in late] == ["Tue 07:00"]
    # actionable: actionable ones individually, information only in the daily digest
    assert {w for w in sent_titles if w.startswith("actionable ")} == {
        w for w in made if w.startswith("actionable actionable")
    }
    digest_lines = [line for s in digests for line in s.message.body.splitlines()]
    infos = {w for w in made if w.startswith("actionable info")}
    # the last day's 23:00 information waits for the next digest, after the week
    assert {line.removeprefix("- ") for line in digest_lines if line.startswith("- ")} == infos - {
        "actionable info Sun 23:00"
    }
    assert {line for line in digest_lines if not line.startswith("- ")} == {"Goal actionable:"}
    # one digest a day, at 18:00 in Paris
    days = [s.at.astimezone(PARIS).strftime("%a %H:%M") for s in digests]
    assert days == [f"{d} 18:00" for d in ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")]
    assert digests[1].message.title == "Your digest for Tuesday 6 January: 3 updates"
    # none: nothing but the runtime's urgent one, at once in the night
    assert {w for w in sent_titles if w.startswith("none ")} == {"none urgent Wed 23:00"}
    [urgent] = [s for s in reports if s.message.title == "none urgent Wed 23:00"]
    assert urgent.at.astimezone(PARIS).strftime("%a %H:%M") == "Wed 23:00"


async def test_an_unavailable_channel_is_retried_then_the_person_is_told(
    store: Store, clock: SimulatedClock
) -> None:
    sender = RecordingSender(clock=clock, unavailable=2)
    person, dispatcher = await _setup(store, clock, sender)
    clock.advance(timedelta(hours=1))  # 10:00 in Paris: not quiet
    first = await store.reports.add(_report(person, None, "Twice down", "actionable", clock))
    await _drain(dispatcher)
    assert sender.sent == []
    clock.advance(timedelta(seconds=dispatcher.backoff_seconds))
    await _drain(dispatcher)
    assert sender.sent == []  # the second wait is longer
    clock.advance(timedelta(seconds=2 * dispatcher.backoff_seconds))
    await _drain(dispatcher)
    assert [s.message.ref for s in sender.sent] == [first.id]
    [delivery] = await store.deliveries.list_for(ref=first.id)
    assert (delivery.status, delivery.attempts) == (DeliveryStatus.DELIVERED, 3)

    # always down: after the last try, failed, and a notice in words
    sender.unavailable = 100
    down = await store.reports.add(_report(person, None, "Always down", "actionable", clock))
    for _ in range(dispatcher.max_attempts + 2):
        await _drain(dispatcher)
        clock.advance(timedelta(seconds=dispatcher.max_backoff_seconds))
    [failed] = await store.deliveries.list_for(ref=down.id)
    assert (failed.status, failed.attempts) == (DeliveryStatus.FAILED, dispatcher.max_attempts)
    titles = [n.title for n in await store.inbox.list_notifications(person_id=person)]
    assert "Your channel 'phone': it could not be reached: the service is down" in titles


async def test_a_refusal_fails_at_once_with_a_notice(store: Store, clock: SimulatedClock) -> None:
    sender = RecordingSender(clock=clock, refuse="unknown topic")
    person, dispatcher = await _setup(store, clock, sender)
    report = await store.reports.add(_report(person, None, "Refused", "urgent", clock))
    await _drain(dispatcher)
    clock.advance(timedelta(hours=2))
    await _drain(dispatcher)
    assert sender.calls == 1
    [delivery] = await store.deliveries.list_for(ref=report.id)
    assert delivery.status == DeliveryStatus.FAILED
    [notice] = [
        n for n in await store.inbox.list_notifications(person_id=person) if n.kind == "channel"
    ]
    assert notice.title == "Your channel 'phone': it refused a message: unknown topic"
    assert notice.body == "The message was: Refused. It is still on your dashboard."


async def test_a_question_answered_in_quiet_hours_is_never_sent(
    store: Store, clock: SimulatedClock
) -> None:
    sender = RecordingSender(clock=clock)
    person, dispatcher = await _setup(store, clock, sender)
    local = clock.now().astimezone(PARIS)
    clock.advance(local.replace(hour=23, minute=0) - local)  # 23:00 in Paris: quiet until 07:00
    refs = {}
    for title in ("Which laptop?", "Which colour?"):
        task = await new_task(store, clock, person, title=title)
        c = await claim_one(store, clock)
        refs[title] = f"q.{task.id}.1"
        await store.inbox.notify(
            Notification(
                id=new_id("ntf"),
                person_id=person,
                kind="question",
                title=title,
                body="",
                task_id=task.id,
                ref=refs[title],
                created_at=clock.now(),
            )
        )
        await checkpoint(store, clock, Fence.of(c), 1, {})
        await finish(store, clock, c, Wait(condition=WaitCondition(kind="input", ref=refs[title])))
        await _drain(dispatcher)
    assert sender.sent == []  # quiet hours
    # the person answers one on the dashboard at midnight
    clock.advance(timedelta(hours=1))
    await Service(store, clock).answer_task(refs["Which laptop?"].split(".")[1], "The lighter one")
    clock.advance(timedelta(hours=7))  # 08:00: quiet hours are over
    await _drain(dispatcher)
    assert [s.message.title for s in sender.sent] == ["Which colour?"]
    [withdrawn] = await store.deliveries.list_for(ref=refs["Which laptop?"])
    assert withdrawn.status == DeliveryStatus.WITHDRAWN


@dataclass(kw_only=True)
class ReportingWhileSent(RecordingSender):
    """A sender during whose first send another report is stored and the dispatcher nudged,
    as the runtime does while an earlier delivery is still going out."""

    store: Store
    person: str
    dispatcher: Dispatcher | None = None

    async def send(self, channel: Channel, message: OutboundMessage) -> DeliveryReceipt:
        if self.calls == 0:
            clock = self.clock
            await self.store.reports.add(_report(self.person, None, "second", "urgent", clock))
            assert self.dispatcher is not None
            self.dispatcher.notify()
        return await super().send(channel, message)


async def test_a_nudge_during_a_round_is_not_lost(store: Store, clock: SimulatedClock) -> None:
    person, _ = await _setup(store, clock, RecordingSender(clock=clock))
    sender = ReportingWhileSent(clock=clock, store=store, person=person)
    dispatcher = Dispatcher(store=store, senders={sender.kind: sender}, clock=clock, holder="d1")
    sender.dispatcher = dispatcher
    await store.reports.add(_report(person, None, "first", "urgent", clock))
    stop = asyncio.Event()
    running = asyncio.create_task(dispatcher.run(stop))
    try:
        for _ in range(3000):  # a generous bound in real time, not a measurement
            if len(sender.sent) == 2:
                break
            await asyncio.sleep(0.01)
    finally:
        stop.set()
        await running
    first, second = sender.sent
    assert (first.message.title, second.message.title) == ("first", "second")
    # the second went out in the same instant of simulated time: no pause, no sleep
    assert second.at == first.at


async def test_a_report_stored_in_this_process_wakes_the_dispatcher(
    store: Store, clock: SimulatedClock
) -> None:
    """No nudge by hand and no time passing: the commit that planned the delivery wakes the
    sleeping dispatcher (what ``steward up`` relies on to send a report at once)."""
    sender = RecordingSender(clock=clock)
    person, _ = await _setup(store, clock, sender)
    dispatcher = Dispatcher(store=store, senders={sender.kind: sender}, clock=clock, holder="d1")
    stop = asyncio.Event()
    clock.register()  # a participant that never sleeps: simulated time stands still
    running = asyncio.create_task(dispatcher.run(stop))
    try:
        for _ in range(3000):
            if clock._asleep() == 1:  # the dispatcher looked, found nothing, and sleeps
                break
            await asyncio.sleep(0.01)
        await store.reports.add(_report(person, None, "now", "urgent", clock))
        for _ in range(3000):  # a generous bound in real time, not a measurement
            if sender.sent:
                break
            await asyncio.sleep(0.01)
    finally:
        stop.set()
        await running
        clock.unregister()
    assert [s.message.title for s in sender.sent] == ["now"]
