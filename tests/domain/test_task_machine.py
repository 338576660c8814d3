"""The task and effect status machines: the pure rules, and the real store driven against a model.

The stateful test drives a real SQLite store through random sequences of everything that can
happen to a task (create, claim, checkpoint, renew, finish with each outcome, cancel/pause/resume,
wake, timed wake-ups, lease reaping on a simulated clock, effect planning and settlement) and
checks after every step that the store agrees with a small model, that every observed status
change is one the domain allows, that terminal tasks never change again, and that only the fence
of the latest claim can write.
"""

from __future__ import annotations

import asyncio
import itertools
import shutil
import tempfile
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    initialize,
    invariant,
    multiple,
    rule,
    run_state_machine_as_test,
)

from steward.domain import EffectStatus, GoalStatus, TaskSpec, TaskStatus, WaitCondition
from steward.domain.clock import SimulatedClock
from steward.domain.goal import check_goal_transition
from steward.domain.ids import effect_key
from steward.domain.journal import EFFECT_TRANSITIONS, check_effect_transition
from steward.domain.outcome import Fail, Outcome, Requeue, Retry, Stop, Succeed, Wait
from steward.domain.task import (
    TASK_TRANSITIONS,
    TERMINAL_TASK_STATUSES,
    can_transition,
    check_task_transition,
)
from steward.errors import EffectMaybeInFlight, InvalidTransition, LeaseLost
from steward.store import Fence, Store

# --- the pure rules -------------------------------------------------------------------------

S = TaskStatus
ALL_TASK_PAIRS = [(a, b) for a in TaskStatus for b in TaskStatus]


@pytest.mark.parametrize(("current", "new"), ALL_TASK_PAIRS)
def test_check_task_transition_agrees_with_table(current: TaskStatus, new: TaskStatus) -> None:
    """check_task_transition accepts exactly the moves in TASK_TRANSITIONS and raises
    InvalidTransition (naming both statuses) for every other pair."""
    allowed = new in TASK_TRANSITIONS.get(current, frozenset())
    assert can_transition(current, new) is allowed
    if allowed:
        check_task_transition(current, new)
    else:
        with pytest.raises(InvalidTransition, match=f"{current}.*{new}"):
            check_task_transition(current, new)


def test_task_machine_shape() -> None:
    """Terminal statuses have no way out; every live status can reach cancellation; only a
    pending task can start running; no status moves to itself."""
    for status in TERMINAL_TASK_STATUSES:
        assert status.terminal
        assert status not in TASK_TRANSITIONS
        assert not any(can_transition(status, other) for other in TaskStatus)
    for status in set(TaskStatus) - TERMINAL_TASK_STATUSES:
        assert not status.terminal
        assert can_transition(status, S.CANCELLED)
        assert not can_transition(status, status)
    assert {s for s in TaskStatus if can_transition(s, S.RUNNING)} == {S.PENDING}
    # a waiting or paused task never finishes without running first
    for idle in (S.PENDING, S.WAITING, S.PAUSED):
        assert not can_transition(idle, S.SUCCEEDED)
        assert not can_transition(idle, S.FAILED)
        assert not can_transition(idle, S.DEAD_LETTERED)


@pytest.mark.parametrize(("current", "new"), [(a, b) for a in GoalStatus for b in GoalStatus])
def test_check_goal_transition(current: GoalStatus, new: GoalStatus) -> None:
    """Goals: active ⇄ paused, either may end (cancelled/expired), only an active goal
    completes, and an ended goal never changes again."""
    live = {GoalStatus.ACTIVE, GoalStatus.PAUSED}
    allowed = (
        current in live
        and new != current
        and not (current is GoalStatus.PAUSED and new is GoalStatus.COMPLETED)
    )
    assert current.terminal is (current not in live)
    if allowed:
        check_goal_transition(current, new)
    else:
        with pytest.raises(InvalidTransition):
            check_goal_transition(current, new)


E = EffectStatus
EFFECT_ALLOWED = {
    (E.PLANNED, E.SENT),
    (E.SENT, E.SUCCEEDED),
    (E.SENT, E.FAILED),
    (E.SENT, E.IN_DOUBT),
    (E.IN_DOUBT, E.SUCCEEDED),
    (E.IN_DOUBT, E.FAILED),
    (E.IN_DOUBT, E.SENT),
    (E.IN_DOUBT, E.PLANNED),
    # its task ended first; its sender knew it had not started the request; decided not
    # applied after its task ended
    (E.PLANNED, E.ABANDONED),
    (E.SENT, E.PLANNED),
    (E.IN_DOUBT, E.ABANDONED),
}


@pytest.mark.parametrize(("current", "new"), [(a, b) for a in EffectStatus for b in EffectStatus])
def test_check_effect_transition(current: EffectStatus, new: EffectStatus) -> None:
    """Effects: intent → sent → settled or in doubt; in doubt may be settled, re-sent with the
    same key, or put back to planned by the person. Settled effects never move, and nothing
    reaches succeeded/failed without having been sent (or decided while in doubt)."""
    assert ((current, new) in EFFECT_ALLOWED) is (new in EFFECT_TRANSITIONS.get(current, ()))
    if (current, new) in EFFECT_ALLOWED:
        check_effect_transition(current, new)
    else:
        with pytest.raises(InvalidTransition):
            check_effect_transition(current, new)
    assert current.settled is (current in (E.SUCCEEDED, E.FAILED, E.ABANDONED))


# --- the store against a model --------------------------------------------------------------

LEASE = 30.0
CALL_TIMEOUT = 30.0
START = datetime(2026, 1, 5, 8, 0, tzinfo=UTC)


@dataclass
class TaskModel:
    id: str
    max_attempts: int
    run_at: datetime
    status: TaskStatus = S.PENDING
    attempts: int = 0
    epoch: int = 0
    step_seq: int = 0
    lease_expires: datetime | None = None
    control: str | None = None
    paused_from: TaskStatus | None = None
    wait_until: datetime | None = None
    wait_ref: str | None = None
    fences: list[Fence] = field(default_factory=list)
    steps: dict[int, str] = field(default_factory=dict)
    """seq → activation id that committed it."""


@dataclass
class EffectModel:
    id: str
    key: str
    task_id: str
    idempotent: bool = False
    status: EffectStatus = E.PLANNED
    attempts: int = 0
    send_deadline: datetime | None = None
    """The lease's expiry when it was last marked sent."""
    history: list[EffectStatus] = field(default_factory=lambda: [E.PLANNED])


# Everything that can happen to a task. The operations are one rule's argument rather than
# rules of their own: hypothesis strongly favours rules with few arguments, and this keeps every
# outcome kind about as likely as a claim or a checkpoint.
OPS = (
    # the first is what hypothesis tries most and shrinks towards: make it a useful move
    3 * ["checkpoint"]
    + 4 * ["create"]
    + 4 * ["claim"]
    + 2 * ["tick"]
    + ["cancel", "pause", "resume", "wake", "replay_step", "renew"]
    + ["succeed", "fail", "retry", "requeue", "stop_cancel", "stop_pause"]
    + ["wait_until", "wait_event", "wait_children", "wait_effect"]
)
FENCES = ["current", "current", "current", "stale", "forged"]
EFFECT_OPS = 4 * ["plan_effect"] + 10 * ["set_effect"] + 3 * ["resolve_effect"]
effect_op_args = st.tuples(
    st.sampled_from(OPS + EFFECT_OPS),
    st.sampled_from(FENCES),
    st.integers(0, 7),
    st.sampled_from([0, 5, 100]),
)
TICKS = [1, 10, 29, 30, 31, 100, 3600, 1]
"""Seconds the clock may move by: around the lease length, and far past it."""
op_args = st.tuples(
    st.sampled_from(OPS),
    st.sampled_from(FENCES),
    st.integers(0, 7),
    st.sampled_from([0, 5, 100]),
)


class TaskLifecycle(RuleBasedStateMachine):
    """Random operations on the real store; the model says what each must do."""

    tasks = Bundle("tasks")

    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        self.tmp = tempfile.mkdtemp(prefix="steward-machine-")
        self.clock = SimulatedClock(START)
        self.store: Store = self.run(Store.open(f"sqlite:///{self.tmp}/machine.db"))
        self.model: dict[str, TaskModel] = {}
        self.effect_model: dict[str, EffectModel] = {}
        self.observed: dict[str, TaskStatus] = {}
        self.terminal_snapshot: dict[str, tuple[Any, ...]] = {}
        self.person_id = ""

    def run(self, coro: Any) -> Any:
        # a hung store call is a failure to report, not a test run that never ends
        return self.loop.run_until_complete(asyncio.wait_for(coro, timeout=CALL_TIMEOUT))

    def teardown(self) -> None:
        try:
            self.run(self.store.close())
            self.run(self.loop.shutdown_default_executor())
        finally:
            self.loop.close()
            shutil.rmtree(self.tmp, ignore_errors=True)

    # --- helpers ----------------------------------------------------------------------------

    @property
    def now(self) -> datetime:
        return self.clock.now()

    def choose(self, drawn: str, pick: int, *statuses: TaskStatus) -> TaskModel:
        """Usually a task in one of ``statuses`` (where the interesting moves are), sometimes
        whatever task was drawn."""

        def in_statuses() -> list[TaskModel]:
            return sorted(
                (m for m in self.model.values() if m.status in statuses), key=lambda m: m.id
            )

        candidates = in_statuses()
        if not candidates and S.RUNNING in statuses and pick % 4:
            self.claim()  # nothing runs: let a worker claim what is due first
            candidates = in_statuses()
        if candidates and pick % 4:
            return candidates[pick % len(candidates)]
        return self.model[drawn]

    def fence_for(self, m: TaskModel, which: str, pick: int) -> Fence:
        if which == "current" and m.fences:
            return m.fences[-1]
        if which == "stale" and len(m.fences) > 1:
            return m.fences[pick % (len(m.fences) - 1)]
        # a token nobody was ever given: the next epoch, or the pre-claim one
        return Fence(m.id, m.epoch + 1 if pick % 2 else 0, "act_forged")

    def holds(self, m: TaskModel, fence: Fence) -> bool:
        """Whether ``fence`` may write: the task runs at that epoch under an unexpired lease."""
        return (
            m.status is S.RUNNING
            and bool(m.fences)
            and fence is m.fences[-1]
            and m.lease_expires is not None
            and self.now <= m.lease_expires
        )

    def settle_control(self, m: TaskModel, expected: TaskStatus) -> None:
        """Apply the status an ending activation (or a reaped lease) leads to, then release.
        A cancel or pause asked for while it ran and not yet honoured at a step boundary is
        honoured now: it is never lost."""
        if m.control == "cancel" and not expected.terminal:
            expected = S.CANCELLED
        elif m.control == "pause" and expected in (S.PENDING, S.WAITING):
            m.paused_from = expected
            expected = S.PAUSED
        m.status = expected
        m.lease_expires = None
        m.control = None

    # --- rules ------------------------------------------------------------------------------

    @initialize(target=tasks)
    def first_tasks(self) -> Any:
        person = self.run(
            self.store.persons.create_person(name="p", now=self.now, max_concurrency=1000)
        )
        self.person_id = person.id
        return multiple(*(self.create(max_attempts=n) for n in (1, 2, 3)))

    def create(self, max_attempts: int) -> str:
        task = self.run(
            self.store.tasks.create_task(
                TaskSpec(kind="k", max_attempts=max_attempts),
                person_id=self.person_id,
                now=self.now,
            )
        )
        assert task.status is S.PENDING
        self.model[task.id] = TaskModel(id=task.id, max_attempts=max_attempts, run_at=task.run_at)
        self.observed[task.id] = S.PENDING
        return task.id

    def claim(self) -> None:
        due = {m.id for m in self.model.values() if m.status is S.PENDING and m.run_at <= self.now}
        claims = self.run(
            self.store.tasks.claim_tasks(
                worker="w",
                limit=100,
                lease_seconds=LEASE,
                now=self.now,
                lease_now=self.clock.lease_now(),
            )
        )
        assert {c.task.id for c in claims} == due
        for claim in claims:
            m = self.model[claim.task.id]
            m.epoch += 1
            assert claim.epoch == m.epoch
            assert claim.activation.epoch == m.epoch
            assert claim.task.step_seq == m.step_seq
            assert claim.task.status is S.RUNNING
            assert can_transition(self.observed[m.id], S.RUNNING)
            # observed here, as a claim may precede another move within one rule
            self.observed[m.id] = S.RUNNING
            m.status = S.RUNNING
            m.lease_expires = self.now + timedelta(seconds=LEASE)
            m.control = None
            m.fences.append(Fence.of(claim))

    @rule(target=tasks, task=tasks, args=op_args)
    def act(self, task: str, args: tuple[str, str, int, int]) -> Any:
        op, which, pick, delay = args
        if op == "create":
            return self.create(max_attempts=pick % 3 + 1)
        if op == "claim":
            self.claim()
        elif op == "tick":
            self.advance(TICKS[pick], sweep=bool(delay))
        elif op in ("cancel", "pause", "resume"):
            self.control(task, op, pick)
        elif op == "wake":
            self.wake(task, pick)
        else:
            self.work(task, op, which, pick, delay)
        return multiple()

    def work(self, task: str, op: str, which: str, pick: int, delay: int) -> None:
        m = self.choose(task, pick, S.RUNNING)
        fence = self.fence_for(m, which, pick)
        if op in ("checkpoint", "replay_step"):
            self.checkpoint(m, fence, replay=op == "replay_step", pick=pick)
        elif op == "renew":
            call = self.store.tasks.renew_lease(
                fence, lease_seconds=LEASE, lease_now=self.clock.lease_now()
            )
            if self.holds(m, fence):
                assert self.run(call) == m.control
                m.lease_expires = self.now + timedelta(seconds=LEASE)
            else:
                with pytest.raises(LeaseLost):
                    self.run(call)
        else:
            self.finish(m, fence, op, delay)

    def checkpoint(self, m: TaskModel, fence: Fence, *, replay: bool, pick: int) -> None:
        # a replay re-commits an old step number (or skips one): refused even under the fence
        seq = m.step_seq + 1 + ((-1 if pick % 2 else 1) if replay else 0)
        call = self.store.activations.checkpoint(
            fence,
            seq=seq,
            kind="step",
            output={"seq": seq},
            state={"seq": seq},
            now=self.now,
            lease_now=self.clock.lease_now(),
        )
        if self.holds(m, fence) and not replay:
            assert self.run(call) == m.control
            m.step_seq = seq
            m.steps[seq] = fence.activation_id
        else:
            with pytest.raises(LeaseLost):
                self.run(call)
        journal = self.run(self.store.activations.list_steps(m.id))
        assert [(s.seq, s.activation_id) for s in journal] == sorted(m.steps.items())

    def finish(self, m: TaskModel, fence: Fence, kind: str, delay: int) -> None:
        ref = next((e.id for e in self.effect_model.values() if e.task_id == m.id), "eff_none")
        outcome: Outcome = {
            "succeed": Succeed(result={"ok": True}),
            "fail": Fail(reason="no"),
            "retry": Retry(reason="flaky", delay_seconds=float(delay)),
            "wait_until": Wait(
                condition=WaitCondition(kind="until", until=self.now + timedelta(seconds=delay))
            ),
            "wait_event": Wait(condition=WaitCondition(kind="event", event_type="ping")),
            "wait_children": Wait(condition=WaitCondition(kind="children")),
            "wait_effect": Wait(condition=WaitCondition(kind="effect", ref=ref)),
            "requeue": Requeue(),
            "stop_cancel": Stop(control="cancel"),
            "stop_pause": Stop(control="pause"),
        }[kind]
        call = self.store.activations.finish_activation(
            fence, outcome, now=self.now, steps_taken=0, lease_now=self.clock.lease_now()
        )
        if not self.holds(m, fence):
            with pytest.raises(LeaseLost):
                self.run(call)
            return
        after = self.run(call)
        assert after.lease_owner is None
        assert after.lease_expires_at is None
        m.wait_until = None
        m.wait_ref = None
        expected: TaskStatus
        if kind == "succeed":
            expected = S.SUCCEEDED
        elif kind == "fail":
            expected = S.FAILED
        elif kind == "retry":
            m.attempts += 1
            expected = S.DEAD_LETTERED if m.attempts >= m.max_attempts else S.PENDING
            m.run_at = self.now + timedelta(seconds=delay)
        elif kind == "wait_until":
            expected = S.WAITING
            m.wait_until = self.now + timedelta(seconds=delay)
        elif kind == "wait_effect" and any(
            e.id == ref and e.status is not E.IN_DOUBT for e in self.effect_model.values()
        ):
            # settled (or never in doubt) before the task sleeps: nothing would wake it later,
            # so the wait is satisfied as it is registered
            expected = S.PENDING
            m.run_at = self.now
        elif kind in ("wait_event", "wait_effect"):
            expected = S.WAITING
            m.wait_ref = ref if kind == "wait_effect" else None
        elif kind in ("wait_children", "requeue"):
            # no children: the wait is satisfied as it is registered
            expected = S.PENDING
            m.run_at = self.now
        elif kind == "stop_cancel":
            expected = S.CANCELLED
        else:
            expected = S.PAUSED
            m.paused_from = S.PENDING
        self.settle_control(m, expected)
        activations = self.run(self.store.activations.list_activations(task_id=m.id))
        assert [a.ended_at is not None for a in activations if a.epoch == fence.epoch] == [True]

    def control(self, task: str, action: str, pick: int) -> None:
        m = self.choose(task, pick, S.RUNNING, S.PAUSED, S.WAITING, S.PENDING)
        call = self.store.tasks.request_control(m.id, action, now=self.now)
        status = m.status
        ok = True
        if action == "cancel":
            if status.terminal:
                ok = False
            elif status is S.RUNNING:
                m.control = "cancel"
            else:
                m.status = S.CANCELLED
        elif action == "pause":
            if status in (S.PENDING, S.WAITING):
                m.paused_from = status
                m.status = S.PAUSED
            elif status is S.RUNNING:
                m.control = "pause"
            else:
                ok = False
        elif status is S.PAUSED:
            back = m.paused_from or S.PENDING
            m.status = back
            m.paused_from = None
            if back is S.PENDING:
                m.run_at = self.now
        elif status is S.RUNNING:
            m.control = None
        else:
            ok = False
        if ok:
            assert self.run(call).status is m.status
        else:
            with pytest.raises(InvalidTransition):
                self.run(call)

    def wake(self, task: str, pick: int) -> None:
        m = self.choose(task, pick, S.WAITING)
        woken = self.run(self.store.tasks.wake_task(m.id, {"reason": "test"}, now=self.now))
        assert woken is (m.status is S.WAITING)
        if woken:
            m.status = S.PENDING
            m.run_at = self.now
            m.wait_until = None
            m.wait_ref = None

    def advance(self, seconds: int, sweep: bool) -> None:
        """Time passes; a scheduler sweep (timed wake-ups, lease reaping) may follow."""
        self.clock.advance(timedelta(seconds=seconds))
        if not sweep:
            return
        due = [
            m
            for m in self.model.values()
            if m.status is S.WAITING and m.wait_until is not None and m.wait_until <= self.now
        ]
        assert self.run(self.store.tasks.wake_due_waits(now=self.now)) == len(due)
        for m in due:
            m.status = S.PENDING
            m.run_at = self.now
            m.wait_until = None
        expired = [
            m
            for m in self.model.values()
            if m.status is S.RUNNING and m.lease_expires is not None and m.lease_expires < self.now
        ]
        reaped = self.run(
            self.store.tasks.reap_expired_leases(now=self.now, lease_now=self.clock.lease_now())
        )
        assert sorted(reaped) == sorted(m.id for m in expired)
        for m in expired:
            m.attempts += 1
            m.run_at = self.now
            self.settle_control(m, S.DEAD_LETTERED if m.attempts >= m.max_attempts else S.PENDING)

    # --- invariants -------------------------------------------------------------------------

    @invariant()
    def store_agrees_with_model(self) -> None:
        stored = {t.id: t for t in self.run(self.store.tasks.list_tasks(limit=1000))}
        assert set(stored) == set(self.model)
        for task_id, m in self.model.items():
            task = stored[task_id]
            before = self.observed[task_id]
            # every status change the store shows is one the domain allows
            assert task.status is before or can_transition(before, task.status), (
                before,
                task.status,
            )
            self.observed[task_id] = task.status
            assert task.status is m.status
            assert task.epoch == m.epoch
            assert task.step_seq == m.step_seq
            assert task.attempts == m.attempts
            assert (task.lease_owner is not None) is (task.status is S.RUNNING)
            if task.status is S.PENDING:
                assert task.run_at == m.run_at
            if task.status.terminal:
                assert task.finished_at is not None
                snapshot = (task.status, task.updated_at, task.step_seq, task.result, task.error)
                # terminal is for good: nothing about the task changes again
                assert self.terminal_snapshot.setdefault(task_id, snapshot) == snapshot
            else:
                assert task.finished_at is None


class EffectLifecycle(TaskLifecycle):
    """The same, plus the effect journal: plan under a fence, move along the effect machine,
    resolve in-doubt effects as the person would."""

    @rule(target=TaskLifecycle.tasks, task=TaskLifecycle.tasks, args=effect_op_args)
    def act(self, task: str, args: tuple[str, str, int, int]) -> Any:
        op, which, pick, delay = args
        if op == "plan_effect":
            self.plan_effect(task, which, pick, index=delay % 2)
        elif op == "set_effect" and self.effect_model:
            self.set_effect(which, pick, delay)
        elif op == "resolve_effect" and self.effect_model:
            self.resolve_effect(pick, applied=bool(delay))
        elif op not in EFFECT_OPS:
            super().act(task, args)
        self.close_effects_of_ended_tasks()
        return multiple()

    def close_effects_of_ended_tasks(self) -> None:
        """A task that ended leaves no effect sent without an answer (it goes in doubt) nor
        an intent it never sent (abandoned)."""
        for e in self.effect_model.values():
            if self.model[e.task_id].status.terminal:
                if e.status is E.SENT:
                    e.status = E.IN_DOUBT
                    e.history.append(e.status)
                elif e.status is E.PLANNED:
                    e.status = E.ABANDONED
                    e.history.append(e.status)

    def pick_effect(self, pick: int) -> EffectModel:
        """Usually an effect whose task runs (where it can still move), else a recent one."""
        effects = list(self.effect_model.values())
        live = [e for e in effects if self.model[e.task_id].status is S.RUNNING]
        if live and pick % 4:
            return live[pick % len(live)]
        return effects[-1 - pick % min(3, len(effects))]

    def plan_effect(self, task: str, which: str, pick: int, index: int) -> None:
        m = self.choose(task, pick, S.RUNNING)
        fence = self.fence_for(m, which, pick)
        key = effect_key(m.id, m.step_seq + 1, index)
        call = self.store.effects.plan_effect(
            fence,
            key=key,
            step_seq=m.step_seq + 1,
            tool="t",
            args={"i": index},
            idempotent=bool(index),
            now=self.now,
            lease_now=self.clock.lease_now(),
        )
        if not self.holds(m, fence):
            with pytest.raises(LeaseLost):
                self.run(call)
            return
        effect = self.run(call)
        if key in self.effect_model:
            # planning the same key again (a replayed step) finds the first intent
            known = self.effect_model[key]
            assert effect.id == known.id
            assert effect.status is known.status
            return
        assert effect.status is E.PLANNED
        assert effect.attempts == 0
        self.effect_model[key] = EffectModel(
            id=effect.id, key=key, task_id=m.id, idempotent=bool(index)
        )

    def set_effect(self, which: str, pick: int, delay: int) -> None:
        e = self.pick_effect(pick)
        # mostly a move the machine allows, sometimes any status at all
        allowed = sorted(EFFECT_TRANSITIONS.get(e.status, frozenset()))
        new = list(EffectStatus)[(pick + delay // 5) % 5]
        if allowed and pick % 4:
            new = allowed[(pick + delay // 5) % len(allowed)]
        m = self.model[e.task_id]
        fence = self.fence_for(m, which, pick)
        call = self.store.effects.set_effect_status(
            fence, e.id, new, now=self.now, result={"r": 1}, lease_now=self.clock.lease_now()
        )
        if not self.holds(m, fence):
            with pytest.raises(LeaseLost):
                self.run(call)
        elif new not in EFFECT_TRANSITIONS.get(e.status, frozenset()):
            with pytest.raises(InvalidTransition):
                self.run(call)
        elif (
            new is E.SENT
            and e.status is E.IN_DOUBT
            and self.maybe_in_flight(e)
            and not e.idempotent
        ):
            # its last sender may still be sending it: not sent again without a key. A planned
            # one was put back by its own sender, which knew it had not started: sent afresh
            with pytest.raises(EffectMaybeInFlight):
                self.run(call)
        else:
            effect = self.run(call)
            if new is E.SENT:
                e.attempts += 1
                e.send_deadline = m.lease_expires
            e.status = new
            e.history.append(new)
            assert effect.status is new
            assert effect.attempts == e.attempts

    def resolve_effect(self, pick: int, applied: bool) -> None:
        e = self.pick_effect(pick)
        call = self.store.effects.resolve_effect(
            e.id, applied=applied, now=self.now, lease_now=self.clock.lease_now()
        )
        if e.status is not E.IN_DOUBT:
            # only an in-doubt effect is the person's to decide; a sent one is in flight
            with pytest.raises(InvalidTransition):
                self.run(call)
            return
        m = self.model[e.task_id]
        if not applied and self.maybe_in_flight(e):
            with pytest.raises(EffectMaybeInFlight):
                self.run(call)
            return
        effect = self.run(call)
        if applied:
            e.status = E.SUCCEEDED
        else:
            e.status = E.ABANDONED if m.status.terminal else E.PLANNED
        e.history.append(e.status)
        assert effect.status is e.status
        if m.status is S.WAITING and m.wait_ref == e.id:
            m.status = S.PENDING
            m.run_at = self.now
            m.wait_ref = None

    def maybe_in_flight(self, e: EffectModel) -> bool:
        return e.send_deadline is not None and self.now <= e.send_deadline

    @invariant()
    def effects_follow_their_machine(self) -> None:
        stored = {e.key: e for e in self.run(self.store.effects.list_effects())}
        assert set(stored) == set(self.effect_model)
        for key, e in self.effect_model.items():
            effect = stored[key]
            assert effect.status is e.status
            assert effect.attempts == e.attempts
            # born planned, and every later status reached by an allowed move, so nothing is
            # ever sent before it was planned
            assert e.history[0] is E.PLANNED
            for a, b in itertools.pairwise(e.history):
                assert b in EFFECT_TRANSITIONS[a]


MACHINE_SETTINGS = settings(
    max_examples=40,
    stateful_step_count=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


def test_task_lifecycle() -> None:
    """Random claim/checkpoint/finish/control/wake/reap sequences on a real SQLite store: the
    store matches the model, every status change is allowed by TASK_TRANSITIONS, terminal tasks
    never change, and only the latest claim's fence writes (stale, forged and expired fences,
    and replayed step numbers, are all rejected with LeaseLost and change nothing)."""
    run_state_machine_as_test(TaskLifecycle, settings=MACHINE_SETTINGS)


def test_task_and_effect_lifecycle() -> None:
    """The same with the effect journal: an effect is only planned under a live fence, is never
    sent before it was planned, moves only along EFFECT_TRANSITIONS (sent counts attempts), and
    an in-doubt effect resolved by the person wakes the task waiting on it."""
    run_state_machine_as_test(EffectLifecycle, settings=MACHINE_SETTINGS)


# --- pending control requests survive the end of an activation ------------------------------


@pytest.fixture
async def running_task(store: Store, clock: SimulatedClock) -> tuple[str, Fence]:
    person = await store.persons.create_person(name="p", now=clock.now())
    task = await store.tasks.create_task(TaskSpec(kind="k"), person_id=person.id, now=clock.now())
    [claim] = await store.tasks.claim_tasks(
        worker="w", limit=1, lease_seconds=LEASE, now=clock.now(), lease_now=clock.lease_now()
    )
    return task.id, Fence.of(claim)


@pytest.mark.parametrize(("control", "expected"), [("cancel", S.CANCELLED), ("pause", S.PAUSED)])
async def test_pending_control_survives_lease_reap(
    store: Store,
    clock: SimulatedClock,
    running_task: tuple[str, Fence],
    control: str,
    expected: TaskStatus,
) -> None:
    """A cancel/pause requested while a task runs is not forgotten when its worker dies: the
    reaper ends the task cancelled (or parks it paused) instead of re-queueing it for the next
    claim to run on."""
    task_id, _ = running_task
    await store.tasks.request_control(task_id, control, now=clock.now())
    clock.advance(timedelta(seconds=LEASE + 1))
    assert await store.tasks.reap_expired_leases(now=clock.now(), lease_now=clock.lease_now()) == [
        task_id
    ]
    task = await store.tasks.get_task(task_id)
    assert task.status is expected
    assert task.lease_owner is None
    assert (task.finished_at is not None) is expected.terminal
    claims = await store.tasks.claim_tasks(
        worker="w2", limit=1, lease_seconds=LEASE, now=clock.now(), lease_now=clock.lease_now()
    )
    assert claims == []


@pytest.mark.parametrize(
    "outcome",
    [
        Wait(condition=WaitCondition(kind="event", event_type="ping")),
        Retry(reason="flaky", delay_seconds=5.0),
        Requeue(),
        Stop(control="pause"),
    ],
    ids=["wait", "retry", "requeue", "stop-pause"],
)
async def test_pending_cancel_survives_non_terminal_outcome(
    store: Store, clock: SimulatedClock, running_task: tuple[str, Fence], outcome: Outcome
) -> None:
    """A cancel requested after the last checkpoint of an activation that then ends without
    finishing (it waits, retries, yields or pauses) is honoured as the lease is released."""
    task_id, fence = running_task
    await store.tasks.request_control(task_id, "cancel", now=clock.now())
    await store.activations.finish_activation(
        fence, outcome, now=clock.now(), steps_taken=0, lease_now=clock.lease_now()
    )
    task = await store.tasks.get_task(task_id)
    assert task.status is S.CANCELLED
    assert task.finished_at is not None


async def test_pending_pause_parks_a_waiting_task_and_resume_restores_the_wait(
    store: Store, clock: SimulatedClock, running_task: tuple[str, Fence]
) -> None:
    """A pause that arrives while an activation is about to go to sleep parks the task paused;
    resuming puts it back to sleep on the same condition (it is not run early)."""
    task_id, fence = running_task
    await store.tasks.request_control(task_id, "pause", now=clock.now())
    until = clock.now() + timedelta(hours=1)
    await store.activations.finish_activation(
        fence,
        Wait(condition=WaitCondition(kind="until", until=until)),
        now=clock.now(),
        steps_taken=0,
        lease_now=clock.lease_now(),
    )
    assert (await store.tasks.get_task(task_id)).status is S.PAUSED
    resumed = await store.tasks.request_control(task_id, "resume", now=clock.now())
    assert resumed.status is S.WAITING
    assert resumed.wait is not None
    assert resumed.wait.until == until
    assert await store.tasks.wake_due_waits(now=clock.now()) == 0
    assert await store.tasks.wake_due_waits(now=until) == 1


# --- resolving effects ------------------------------------------------------------------------


async def test_resolve_refuses_an_effect_not_in_doubt(
    store: Store, clock: SimulatedClock, running_task: tuple[str, Fence]
) -> None:
    """Only an in-doubt effect can be resolved by the person: an effect still being sent by a
    live worker is refused with InvalidTransition and left as it is."""
    task_id, fence = running_task
    effect = await store.effects.plan_effect(
        fence,
        key=effect_key(task_id, 1, 0),
        step_seq=1,
        tool="t",
        args={},
        idempotent=False,
        now=clock.now(),
        lease_now=clock.lease_now(),
    )
    await store.effects.set_effect_status(
        fence, effect.id, E.SENT, now=clock.now(), lease_now=clock.lease_now()
    )
    for applied in (True, False):
        with pytest.raises(InvalidTransition):
            await store.effects.resolve_effect(effect.id, applied=applied, now=clock.now())
    stored = await store.effects.get_effect_by_key(effect.key)
    assert stored is not None
    assert stored.status is E.SENT
