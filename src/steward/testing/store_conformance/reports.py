"""Store conformance: reports placed by policy with their deliveries in one transaction, the
runtime's own reports, digests, and deliveries claimed, sent once, retried, failed or in doubt."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, time, timedelta

from steward.domain import (
    Approval,
    ApprovalStatus,
    EffectStatus,
    GoalStatus,
    Notification,
    WaitCondition,
    args_hash,
)
from steward.domain.channel import Channel, ChannelKind, Importance
from steward.domain.clock import SimulatedClock
from steward.domain.delivery import DeliveryStatus
from steward.domain.ids import new_id
from steward.domain.outcome import Fail, Wait
from steward.domain.report import Report, ReportState, report_id
from steward.store import Fence, Store
from steward.store.deliveries import Claimed
from steward.testing.store_conformance.helpers import (
    LEASE,
    checkpoint,
    claim_one,
    finish,
    new_goal,
    new_person,
    new_task,
)


async def _channel(store: Store, clock: SimulatedClock, person_id: str, name: str) -> Channel:
    return await store.channels.add(
        Channel(
            id=new_id("chn"),
            person_id=person_id,
            kind=ChannelKind.APPRISE,
            name=name,
            created_at=clock.now(),
        )
    )


async def _due(
    store: Store, clock: SimulatedClock, holder: str, now: datetime | None = None
) -> list[Claimed]:
    return await store.deliveries.claim_due(
        holder=holder,
        now=now or clock.now(),
        limit=10,
        lease_seconds=LEASE,
        lease_now=clock.lease_now(),
    )


def _report(
    person_id: str,
    clock: SimulatedClock,
    cause: str,
    importance: Importance = "actionable",
    goal_id: str | None = None,
) -> Report:
    return Report(
        id=report_id(cause),
        person_id=person_id,
        goal_id=goal_id,
        origin="agent",
        what=f"Found {cause}",
        why="It is cheaper than last week.",
        todo="Decide by Friday.",
        importance=importance,
        created_at=clock.now(),
    )


async def test_a_report_goes_to_every_enabled_channel_once_even_when_replayed(
    store: Store, clock: SimulatedClock
) -> None:
    person = (await new_person(store, clock)).id
    phone = await _channel(store, clock, person, "phone")
    mail = await _channel(store, clock, person, "mail")
    off = await _channel(store, clock, person, "old")
    await store.channels.set_enabled(off.id, enabled=False)
    goal = await new_goal(store, clock, person, report_policy="all")
    await new_task(store, clock, person, goal_id=goal.id)
    fence = Fence.of(await claim_one(store, clock))
    report = _report(person, clock, "a laptop at 899", "info", goal.id)
    first = await store.reports.add(report, fence=fence, lease_now=clock.lease_now())
    again = await store.reports.add(report, fence=fence, lease_now=clock.lease_now())
    assert first == again
    assert first.state == ReportState.PENDING
    planned = await store.deliveries.list_for(ref=report.id)
    assert sorted(d.channel_id for d in planned) == sorted([phone.id, mail.id])
    assert {d.status for d in planned} == {DeliveryStatus.PLANNED}
    [message] = {d.message for d in planned}
    assert message.title == "Found a laptop at 899"
    assert "What to do: Decide by Friday." in message.body
    assert [r.id for r in await store.reports.list_for(person)] == [report.id]


async def test_policy_decides_what_goes_out(store: Store, clock: SimulatedClock) -> None:
    person = (await new_person(store, clock)).id
    await _channel(store, clock, person, "phone")
    quiet = await new_goal(store, clock, person, report_policy="none")
    usual = await new_goal(store, clock, person, report_policy="actionable")
    dropped = await store.reports.add(_report(person, clock, "dropped", "actionable", quiet.id))
    # the agent calling its report urgent does not break "none"; the runtime's urgent does
    pleading = await store.reports.add(_report(person, clock, "pleading", "urgent", quiet.id))
    runtime = replace(_report(person, clock, "urgent", "urgent", quiet.id), origin="runtime")
    urgent = await store.reports.add(runtime)
    info = await store.reports.add(_report(person, clock, "info", "info", usual.id))
    loose = await store.reports.add(_report(person, clock, "no goal", "info"))
    assert dropped.state == ReportState.DROPPED
    assert pleading.state == ReportState.DROPPED
    assert urgent.state == ReportState.PENDING
    assert (info.state, loose.state) == (ReportState.DIGEST, ReportState.DIGEST)
    # the person's digest is at 18:00 (UTC here): today's
    assert info.hold_until == clock.now().replace(hour=18, minute=0, second=0, microsecond=0)
    refs = {d.ref for d in await store.deliveries.list_for(person_id=person)}
    assert refs == {urgent.id}


async def test_quiet_hours_hold_until_they_end(store: Store, clock: SimulatedClock) -> None:
    person = (await new_person(store, clock)).id
    await _channel(store, clock, person, "phone")
    # 08:00 now: quiet from 07:00 to 09:30
    await store.persons.set_reach(
        person, quiet_start=time(7), quiet_end=time(9, 30), digest_at=time(18)
    )
    held = await store.reports.add(_report(person, clock, "held"))
    assert held.state == ReportState.HELD
    end = clock.now().replace(hour=9, minute=30)
    assert held.hold_until == end
    [delivery] = await store.deliveries.list_for(ref=held.id)
    assert delivery.next_attempt_at == end
    assert await _due(store, clock, "d1") == []
    [due] = await _due(store, clock, "d1", end)
    assert due.delivery.id == delivery.id


async def test_a_delivery_is_sent_once_and_in_doubt_when_its_sender_died(
    store: Store, clock: SimulatedClock
) -> None:
    person = (await new_person(store, clock)).id
    await _channel(store, clock, person, "phone")
    report = await store.reports.add(_report(person, clock, "three", "urgent"))

    async def claim(holder: str) -> list[str]:
        found = await store.deliveries.claim_due(
            holder=holder, now=clock.now(), limit=5, lease_seconds=LEASE,
            lease_now=clock.lease_now(),
        )  # fmt: skip
        return [c.delivery.id for c in found]

    [first] = await claim("d1")
    assert await claim("d2") == []  # leased
    # d1 died before calling the channel: the lease lapses and d2 sends it
    clock.advance(timedelta(seconds=LEASE + 1))
    assert await claim("d2") == [first]
    assert not await store.deliveries.mark_sent(first, holder="d1", now=clock.now())
    assert await store.deliveries.mark_sent(first, holder="d2", now=clock.now())
    # d2 died while the channel was called: never sent again, in doubt
    clock.advance(timedelta(seconds=LEASE + 1))
    assert await claim("d3") == []
    [doubt] = await store.deliveries.list_for(ref=report.id)
    assert (doubt.status, doubt.attempts) == (DeliveryStatus.IN_DOUBT, 2)
    assert "may have arrived" in (doubt.error or "")
    # ...unless d2 comes back with the channel's answer
    assert await store.deliveries.mark_delivered(first, holder="d2", detail="", now=clock.now())
    assert (await store.reports.get(report.id)).state == ReportState.DELIVERED


async def test_retries_then_failure_tells_the_person(store: Store, clock: SimulatedClock) -> None:
    person = (await new_person(store, clock)).id
    await _channel(store, clock, person, "phone")
    await store.reports.add(_report(person, clock, "x", "urgent"))
    [c] = await _due(store, clock, "d1")
    did = c.delivery.id
    assert await store.deliveries.mark_sent(did, holder="d1", now=clock.now())
    later = clock.now() + timedelta(minutes=1)
    assert await store.deliveries.retry(
        did, holder="d1", error="service down", at=later, now=clock.now()
    )
    assert await _due(store, clock, "d1") == []
    [c] = await _due(store, clock, "d1", later)
    assert c.delivery.attempts == 2
    assert await store.deliveries.mark_sent(did, holder="d1", now=later)
    notice = Notification(
        id=f"ntf_{did}",
        person_id=person,
        kind="channel",
        title="Your channel 'phone' refused a message: bad topic",
        body="",
        created_at=later,
    )
    assert await store.deliveries.fail(
        did, holder="d1", error="bad topic", notice=notice, now=later
    )
    [failed] = await store.deliveries.list_for(person_id=person)
    assert (failed.status, failed.error) == (DeliveryStatus.FAILED, "bad topic")
    titles = [n.title for n in await store.inbox.list_notifications(person_id=person)]
    assert notice.title in titles


async def test_digests_bundle_the_days_information_once(
    store: Store, clock: SimulatedClock
) -> None:
    person = (await new_person(store, clock)).id
    await _channel(store, clock, person, "phone")
    goal = await new_goal(store, clock, person, report_policy="actionable")
    for n in range(3):
        await store.reports.add(_report(person, clock, f"item {n}", "info", goal.id))
    assert await store.reports.release_digests(now=clock.now()) == []
    at = await store.reports.next_digest_at()
    assert at is not None
    [digest] = await store.reports.release_digests(now=at)
    assert await store.reports.release_digests(now=at) == []
    [delivery] = await store.deliveries.list_for(ref=digest)
    assert delivery.message.kind == "digest"
    assert delivery.message.title.endswith(": 3 updates")
    assert delivery.message.body.splitlines()[0] == f"{goal.title}:"
    states = {r.state for r in await store.reports.list_for(person)}
    assert states == {ReportState.DIGESTED}


async def test_runtime_reports_come_with_their_cause(store: Store, clock: SimulatedClock) -> None:
    person = (await new_person(store, clock)).id
    goal = await store.goals.create_goal(person_id=person, title="Laptop price", now=clock.now())
    await store.goals.set_goal_status(goal.id, GoalStatus.EXPIRED, now=clock.now())
    await new_task(store, clock, person, title="Compare prices")
    c = await claim_one(store, clock)
    await finish(store, clock, c, Fail(reason="the shop's page was gone"))
    expired, failed = sorted(
        await store.reports.list_for(person), key=lambda r: r.what.startswith("The task")
    )
    assert expired.what == "Your goal 'Laptop price' expired on Monday 5 January"
    assert expired.origin == "runtime"
    assert failed.what == "The task 'Compare prices' stopped: the shop's page was gone"
    # no channel: on the dashboard only
    assert failed.state == ReportState.DROPPED


async def test_approvals_go_to_the_channel_last_used(store: Store, clock: SimulatedClock) -> None:
    person = (await new_person(store, clock)).id
    phone = await _channel(store, clock, person, "phone")
    mail = await _channel(store, clock, person, "mail")

    async def ask(n: int) -> set[str]:
        item = Notification(
            id=f"ntf_q{n}",
            person_id=person,
            kind="question",
            title="Which laptop?",
            body="",
            ref=f"q{n}",
            created_at=clock.now(),
        )
        await store.inbox.notify(item)
        return {d.channel_id for d in await store.deliveries.list_for(ref=f"q{n}")}

    assert await ask(1) == {phone.id, mail.id}  # none used yet: all
    await store.channels.touch_last_used(mail.id, clock.now())
    assert await ask(2) == {mail.id}
    [delivery] = await store.deliveries.list_for(ref="q2")
    assert (delivery.message.kind, delivery.message.title) == ("question", "Which laptop?")


async def test_reports_are_paged_and_read_one_by_one(store: Store, clock: SimulatedClock) -> None:
    person = (await new_person(store, clock)).id
    other = (await new_person(store, clock)).id
    made = []
    for n in range(5):
        clock.advance(timedelta(seconds=1))
        made.append(await store.reports.add(_report(person, clock, f"r{n}")))
    page = await store.reports.list_for(person, limit=2, offset=1)
    assert [r.id for r in page] == [made[3].id, made[2].id]
    assert await store.reports.mark_read(other, [made[0].id], now=clock.now()) == 0
    assert await store.reports.mark_read(person, [made[0].id], now=clock.now()) == 1
    assert await store.reports.count_unread(person) == 4
    assert [r.id for r in await store.reports.list_for(person, unread=True)][-1] == made[1].id


async def test_an_effect_in_doubt_is_reported_at_once(store: Store, clock: SimulatedClock) -> None:
    person = (await new_person(store, clock)).id
    phone = await _channel(store, clock, person, "phone")
    # quiet hours now: urgent goes anyway
    await store.persons.set_reach(
        person, quiet_start=time(7), quiet_end=time(9, 30), digest_at=time(18)
    )
    await new_task(store, clock, person)
    fence = Fence.of(await claim_one(store, clock))
    lease = clock.lease_now()
    effect = await store.effects.plan_effect(
        fence, key="k1", step_seq=1, tool="send_email", args={}, idempotent=False,
        now=clock.now(), lease_now=lease,
    )  # fmt: skip
    await store.effects.mark_effect_sent(fence, effect.id, now=clock.now(), lease_now=lease)
    await store.effects.set_effect_status(
        fence, effect.id, EffectStatus.IN_DOUBT, now=clock.now(), lease_now=lease
    )
    [report] = await store.reports.list_for(person)
    assert report.what == "I am not sure whether 'send email' went through"
    assert (report.importance, report.state) == ("urgent", ReportState.PENDING)
    [delivery] = await store.deliveries.list_for(ref=report.id)
    assert (delivery.channel_id, delivery.next_attempt_at) == (phone.id, clock.now())


async def test_an_approval_decided_before_it_went_out_is_not_sent(
    store: Store, clock: SimulatedClock
) -> None:
    person = (await new_person(store, clock)).id
    await _channel(store, clock, person, "phone")
    # 08:00 now: quiet until 09:30, so the approval's delivery waits for then
    await store.persons.set_reach(
        person, quiet_start=time(7), quiet_end=time(9, 30), digest_at=time(18)
    )
    await new_task(store, clock, person, title="Send the invoice")
    c = await claim_one(store, clock)
    approval_id = new_id("apr")
    approval = await store.inbox.request_approval(
        Fence.of(c),
        Approval(
            id=approval_id,
            person_id=person,
            task_id=c.task.id,
            goal_id=None,
            step_seq=1,
            tool="send_email",
            args={"to": "dana@example.test"},
            args_hash=args_hash("send_email", {"to": "dana@example.test"}),
            reason="external action",
            scopes=("email.send",),
            status=ApprovalStatus.PENDING,
            created_at=clock.now(),
        ),
        Notification(
            id=new_id("ntf"),
            person_id=person,
            kind="approval",
            title="Send it?",
            body="",
            task_id=c.task.id,
            ref=approval_id,
            created_at=clock.now(),
        ),
        lease_now=clock.lease_now(),
    )
    [planned] = await store.deliveries.list_for(ref=approval.id)
    # answered on the dashboard during quiet hours: the phone must not ask again at 09:30
    await store.inbox.decide_approval(
        approval.id, approve=True, decided_by="person", now=clock.now()
    )
    end = clock.now().replace(hour=9, minute=30)
    assert await _due(store, clock, "d1", end) == []
    [withdrawn] = await store.deliveries.list_for(ref=approval.id)
    assert withdrawn.id == planned.id
    assert withdrawn.status == DeliveryStatus.WITHDRAWN
    assert await store.deliveries.next_due() is None


async def test_a_question_of_an_ended_task_is_not_sent(store: Store, clock: SimulatedClock) -> None:
    person = (await new_person(store, clock)).id
    await _channel(store, clock, person, "phone")
    task = await new_task(store, clock, person, title="Pick a laptop")
    c = await claim_one(store, clock)
    ref = f"q.{task.id}.1"
    await store.inbox.notify(
        Notification(
            id=new_id("ntf"),
            person_id=person,
            kind="question",
            title="Which laptop?",
            body="",
            task_id=task.id,
            ref=ref,
            created_at=clock.now(),
        )
    )
    # still running (the question is asked before the task is put to sleep): it goes
    assert [d.delivery.ref for d in await _due(store, clock, "d1")] == [ref]
    [asked] = await store.deliveries.list_for(ref=ref)
    assert await store.deliveries.mark_sent(asked.id, holder="d1", now=clock.now())
    assert await store.deliveries.retry(
        asked.id, holder="d1", error="later", at=clock.now(), now=clock.now()
    )
    await finish(store, clock, c, Fail(reason="the person cancelled it"))
    # only the report that the task stopped goes out
    [stopped] = await _due(store, clock, "d2")
    assert stopped.delivery.message.kind == "report"
    [withdrawn] = await store.deliveries.list_for(ref=ref)
    assert withdrawn.status == DeliveryStatus.WITHDRAWN


async def test_a_report_recorded_late_for_a_digest_already_sent_gets_its_own(
    store: Store, clock: SimulatedClock
) -> None:
    person = (await new_person(store, clock)).id
    await _channel(store, clock, person, "phone")
    goal = await new_goal(store, clock, person, report_policy="actionable")
    made_at = clock.now()
    await store.reports.add(_report(person, clock, "early", "info", goal.id))
    at = await store.reports.next_digest_at()
    assert at is not None
    [first] = await store.reports.release_digests(now=at)
    # a report made before the digest time whose transaction ended after the digest went
    # (another worker): same digest time, yet it must reach the person
    late = replace(_report(person, clock, "late", "info", goal.id), created_at=made_at)
    await store.reports.add(late)
    [second] = await store.reports.release_digests(now=at)
    assert second != first
    [delivery] = await store.deliveries.list_for(ref=second)
    assert delivery.message.title.endswith(": 1 update")
    assert "Found late" in delivery.message.body


async def test_a_question_answered_before_it_went_out_is_not_sent(
    store: Store, clock: SimulatedClock
) -> None:
    person = (await new_person(store, clock)).id
    await _channel(store, clock, person, "phone")
    # 08:00 now: quiet until 09:30, so the questions wait for then
    await store.persons.set_reach(
        person, quiet_start=time(7), quiet_end=time(9, 30), digest_at=time(18)
    )
    asked: dict[str, str] = {}
    for title in ("Which laptop?", "Which colour?"):
        task = await new_task(store, clock, person, title=title)
        c = await claim_one(store, clock)
        ref = asked[title] = f"q.{task.id}.1"
        await store.inbox.notify(
            Notification(
                id=new_id("ntf"),
                person_id=person,
                kind="question",
                title=title,
                body="",
                task_id=task.id,
                ref=ref,
                created_at=clock.now(),
            )
        )
        # the task records the step that waits for the answer, and sleeps on it
        await checkpoint(store, clock, Fence.of(c), 1, {})
        await finish(store, clock, c, Wait(condition=WaitCondition(kind="input", ref=ref)))
    laptop = asked["Which laptop?"].split(".")[1]
    # answered on the dashboard during quiet hours: the phone must not ask at 09:30
    await store.inbox.answer_input(laptop, "The lighter one", now=clock.now())
    end = clock.now().replace(hour=9, minute=30)
    [due] = await _due(store, clock, "d1", end)
    assert due.delivery.ref == asked["Which colour?"]  # still waiting for its answer: it goes
    [withdrawn] = await store.deliveries.list_for(ref=asked["Which laptop?"])
    assert withdrawn.status == DeliveryStatus.WITHDRAWN


async def test_the_agents_urgent_reports_are_bounded_by_the_day_and_quiet_hours(
    store: Store, clock: SimulatedClock
) -> None:
    person = (await new_person(store, clock)).id
    await _channel(store, clock, person, "phone")
    # 08:00 now: quiet from 07:00 to 09:30
    await store.persons.set_reach(
        person, quiet_start=time(7), quiet_end=time(9, 30), digest_at=time(18)
    )
    usual = await new_goal(store, clock, person, report_policy="actionable")
    everything = await new_goal(store, clock, person, report_policy="all")
    held = await store.reports.add(_report(person, clock, "night", "urgent", usual.id))
    assert (held.state, held.importance) == (ReportState.HELD, "urgent")
    woke = [
        await store.reports.add(_report(person, clock, f"wake {n}", "urgent", everything.id))
        for n in range(4)
    ]
    # "all" may wake the person, three times a day; the fourth waits like an actionable one
    assert [(r.state, r.importance) for r in woke] == [(ReportState.PENDING, "urgent")] * 3 + [
        (ReportState.HELD, "actionable")
    ]
    # the next day, the allowance is whole again
    clock.advance(timedelta(days=1))
    again = await store.reports.add(_report(person, clock, "next day", "urgent", everything.id))
    assert (again.state, again.importance) == (ReportState.PENDING, "urgent")
