"""Two tenants with one of everything, for the tenant-isolation tests of the service facade and
the CLI: a goal, a task (claimed, as a worker would), a trigger, an event, an effect in doubt,
an approval with its notification, a connection, a grant, a rule, a memory (derived from the
task), a skill with two versions and two API tokens."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

from steward.domain import (
    ApiToken,
    Approval,
    ApprovalPreview,
    ApprovalStatus,
    Artifact,
    Connection,
    Effect,
    EffectStatus,
    Event,
    Goal,
    Grant,
    Notification,
    Person,
    Rule,
    Task,
    TaskSpec,
    Trigger,
    TriggerKind,
)
from steward.domain.approval import args_hash
from steward.domain.channel import Channel, ChannelKind
from steward.domain.clock import Clock
from steward.domain.ids import new_id
from steward.domain.memory import Memory, MemoryKind, Source, SourceKind
from steward.domain.memory_pass import MemoryPass, PassStatus
from steward.domain.outcome import Retry
from steward.domain.report import Report, report_id
from steward.domain.skill import Skill, SkillContent
from steward.domain.webwatch import Condition, ConditionKind, Extract, Extractor, WebWatch
from steward.harness.workspace import Workspace
from steward.memory.skills import SkillLibrary
from steward.service import Service
from steward.service.channels import ChannelInfo, channel_info
from steward.service.encode import to_jsonable
from steward.store import Fence, Store
from support.pictures import png

PICTURE = "previews/shot.png"
"""Where the picture shown with a tenant's approval is, in its workspace."""


@dataclass
class Tenant:
    person: Person
    goal: Goal
    task: Task
    trigger: Trigger
    event: Event
    effect: Effect
    approval: Approval
    """Pending, with a preview: a fact, and a picture put in the workspace by
    :func:`take_picture`."""
    notification: str
    connection: Connection
    grant: Grant
    rule: Rule
    skill: Skill
    memory: Memory
    memory_pass: MemoryPass
    """A consolidation pass held for review."""
    watch: WebWatch
    channel: ChannelInfo
    """A web watch waking the goal."""
    report: Report
    """What the agent told the person about the goal."""
    file: str
    """A file in the person's workspace: the task's stored tool output."""
    token: ApiToken
    control: str
    """Plain text of a ``control`` token."""
    read: str
    """Plain text of a ``read`` token."""


async def make_tenant(store: Store, clock: Clock, name: str, data_dir: Path) -> Tenant:
    admin = Service(store, clock, data_dir=data_dir)
    now = clock.now()
    person = await store.persons.create_person(name=name, now=now)
    pid = person.id
    goal = await admin.create_goal(person_id=pid, title=f"{name}'s goal")
    task = await admin.create_task(person_id=pid, spec=TaskSpec(kind="noop"), goal_id=goal.id)
    trigger = await admin.add_trigger(
        person_id=pid,
        kind=TriggerKind.CRON,
        spec="0 9 1 1 *",  # not due while a test runs
        task=TaskSpec(kind="noop"),
        goal_id=goal.id,
        name=f"{name}'s morning",
    )
    event, _ = await admin.send_event(person_id=pid, type="ping", payload={"who": name})
    await store.schedule.route_events(now=clock.now())  # as a running scheduler would have
    connection = await admin.add_connection(
        person_id=pid, kind="email", name=f"{name}'s mail", scopes=["email.send"]
    )
    grant = await admin.add_grant(person_id=pid, scopes=["email.send"], reason=name)
    rule = await admin.add_rule(person_id=pid, pattern="email.*", mode="ask")
    await admin.put_secret(person_id=pid, name="mail", value=f"pw-{name}", hosts=["mail.x.io"])
    library = SkillLibrary(store, clock)
    for procedure in ("Call the restaurant", "Use the booking page"):  # two versions
        learned = await library.propose(
            person_id=pid,
            name=f"{name}-booking",
            content=SkillContent(description=f"{name}'s way to book", procedure=procedure),
            actor="agent:setup",
        )
    assert learned.skill is not None
    written = await admin.memory.write(
        person_id=pid,
        content=f"{name} lives in Lisbon",
        kind=MemoryKind.FACT,
        slot="home_city",
        source=Source(kind=SourceKind.TASK, ref=task.id, trusted=True),
        actor=f"agent:{task.id}",
    )
    assert written.memory is not None
    held = await store.memory_passes.add_memory_pass(
        MemoryPass(
            id=new_id("mps"),
            person_id=pid,
            task_id=None,
            status=PassStatus.HELD,
            operations=(),
            active=1,
            share=0.5,
            created_at=clock.now(),
        )
    )
    watch = await admin.add_watch(
        person_id=pid,
        url=f"https://shop.example/{name}",
        extract=Extract(how=Extractor.CSS, expr=".price"),
        conditions=[Condition(kind=ConditionKind.BELOW, threshold=Decimal(1000))],
        name=f"{name}'s laptop",
        goal_id=goal.id,
    )
    report = await store.reports.add(
        Report(
            id=report_id(f"tenant:{name}"),
            person_id=pid,
            goal_id=goal.id,
            task_id=task.id,
            origin="agent",
            what=f"{name}'s laptop is cheaper",
            importance="actionable",
            created_at=now,
        )
    )
    workspace = Workspace(data_dir / "workspace")
    file = workspace.artifact_path(pid, task.id, 1, "web_fetch")
    size, sha256 = await workspace.write_text(pid, file, f"{name}'s page")
    await store.inbox.add_artifact(
        Artifact(
            id=new_id("art"),
            person_id=pid,
            task_id=task.id,
            name="web_fetch",
            path=file,
            size=size,
            sha256=sha256,
            media_type="text/plain",
            created_at=now,
        )
    )
    token, control = await admin.create_token(person_id=pid, name="phone", scopes=["control"])
    _, read = await admin.create_token(person_id=pid, name="dashboard", scopes=["read"])
    # what workers running the task write: an effect whose request failed, left in doubt
    # (its send deadline, the lease's expiry judged by ``then``, has passed since: the person
    # may decide it either way), and, in the retry running now, an approval
    then = now - timedelta(hours=2)
    [first] = await store.tasks.claim_tasks(
        worker=f"w-{name}", limit=1, lease_seconds=3600, now=clock.now(), lease_now=then
    )
    assert first.task.id == task.id
    planned = await store.effects.plan_effect(
        Fence.of(first),
        key=f"{task.id}.1.0",
        step_seq=1,
        tool="send_email",
        args={"to": f"{name}@example.com"},
        idempotent=False,
        now=now,
        lease_now=then,
    )
    for status in (EffectStatus.SENT, EffectStatus.IN_DOUBT):
        effect = await store.effects.set_effect_status(
            Fence.of(first), planned.id, status, now=now, lease_now=then
        )
    await store.activations.finish_activation(
        Fence.of(first),
        Retry(reason="send_email: connection reset", delay_seconds=0),
        now=now,
        steps_taken=0,
        lease_now=then,
    )
    [claim] = await store.tasks.claim_tasks(
        worker=f"w-{name}", limit=1, lease_seconds=3600, now=clock.now()
    )
    assert claim.task.id == task.id
    fence = Fence.of(claim)
    args = {"to": f"friend-of-{name}@example.com"}
    # its tool's picture is not in the workspace yet (listings of it stay as they were):
    # :func:`take_picture` puts it there
    preview = ApprovalPreview(
        picture=PICTURE,
        picture_sha256=hashlib.sha256(png()).hexdigest(),
        facts=(("To", args["to"]),),
    )
    approval_id = new_id("apr")
    notification = new_id("ntf")
    approval = await store.inbox.request_approval(
        fence,
        Approval(
            id=approval_id,
            person_id=pid,
            task_id=task.id,
            goal_id=goal.id,
            step_seq=2,
            tool="send_email",
            args=args,
            args_hash=args_hash("send_email", args),
            reason="external action",
            scopes=("email.send",),
            status=ApprovalStatus.PENDING,
            created_at=now,
            preview=preview,
        ),
        Notification(
            id=notification,
            person_id=pid,
            kind="approval",
            title="may I send?",
            body="",
            task_id=task.id,
            ref=approval_id,
            created_at=now,
        ),
    )
    # a channel without its secret (so the vault holds only what the tests above sealed): a
    # test message through it is refused, saying the address is missing
    channel = channel_info(
        await store.channels.add(
            Channel(
                id=new_id("chn"),
                person_id=pid,
                kind=ChannelKind.APPRISE,
                name="phone",
                config={"service": "ntfy", "masked": "ntfys://…"},
                created_at=now,
            )
        )
    )
    # the person's own mail and Matrix channels, with ids the mail and Matrix cases find them by
    for kind, channel_id, name, config in (
        (
            ChannelKind.EMAIL,
            f"chn_{pid}",
            "mail",
            {"connection": connection.id, "address": "me@x.io"},
        ),
        (
            ChannelKind.MATRIX,
            f"chn_mx_{pid}",
            "chat",
            {"user": "@bot:x.io", "person": "@me:x.io", "room": "!dm:x.io"},
        ),
    ):
        await store.channels.add(
            Channel(
                id=channel_id,
                person_id=pid,
                kind=kind,
                name=name,
                config=config,
                created_at=now,
            )
        )
    return Tenant(
        person=person,
        goal=goal,
        task=task,
        trigger=trigger,
        event=event,
        effect=effect,
        approval=approval,
        notification=notification,
        connection=connection,
        grant=grant,
        rule=rule,
        skill=learned.skill,
        memory=written.memory,
        memory_pass=held,
        watch=watch,
        channel=channel,
        report=report,
        file=file,
        token=token,
        control=control,
        read=read,
    )


def take_picture(data_dir: Path, t: Tenant) -> Path:
    """Write the picture shown with the tenant's approval (:func:`~support.pictures.png`, as
    its preview's hash says) where the preview says it is; its path."""
    shot = Workspace(data_dir / "workspace").person_dir(t.person.id) / PICTURE
    shot.parent.mkdir(exist_ok=True)
    shot.write_bytes(png())
    return shot


async def state_of(store: Store, clock: Clock, t: Tenant) -> Any:
    """Everything of the tenant's, as plain data, through the owner's facade."""
    admin = Service(store, clock)
    secrets = await store.secrets.list_secrets(t.person.id)
    pid = t.person.id
    audit = await admin.audit_log(person_id=pid, limit=10_000)
    return to_jsonable(
        {
            "person": await admin.person(pid),
            "goals": [await admin.goal_detail(g.id) for g in await admin.list_goals(person_id=pid)],
            "tasks": await admin.list_tasks(person_id=pid),
            "triggers": await admin.list_triggers(person_id=pid),
            "events": await admin.list_events(person_id=pid),
            "effects": await admin.list_effects(task_id=t.task.id),
            "approvals": await admin.list_approvals(person_id=pid, status=None),
            "notifications": await admin.list_notifications(person_id=pid),
            "connections": await admin.list_connections(person_id=pid),
            "grants": await admin.list_grants(person_id=pid, live=False),
            "rules": await admin.list_rules(person_id=pid),
            "secrets": [(x, await store.secrets.secret_ciphertext(pid, x.name)) for x in secrets],
            "tokens": [
                {**to_jsonable(x), "last_used_at": None}
                for x in await admin.list_tokens(person_id=pid)
            ],
            "memories": [
                await admin.memory_detail(m.id)
                for m in await store.memory.list_memories(person_id=pid, limit=10_000)
            ],
            "tombstones": await admin.list_tombstones(person_id=pid),
            "passes": await admin.list_memory_passes(person_id=pid),
            "skills": [
                (x, await admin.skill_history(x.id)) for x in await admin.list_skills(person_id=pid)
            ],
            "watches": [
                (w, await admin.watch_history(w.id))
                for w in await admin.list_watches(person_id=pid)
            ],
            "channels": await admin.list_channels(person_id=pid),
            "reports": await admin.list_reports(person_id=pid, limit=200),
            "audit": [e.hash for e in audit],
        }
    )


def ids_of(t: Tenant) -> set[str]:
    """Ids that must never show up in another tenant's answers."""
    return {
        t.person.id,
        t.goal.id,
        t.task.id,
        t.trigger.id,
        t.event.id,
        t.effect.id,
        t.approval.id,
        t.notification,
        t.connection.id,
        t.grant.id,
        t.rule.id,
        t.skill.id,
        t.memory.id,
        t.memory_pass.id,
        t.watch.id,
        t.channel.id,
        t.report.id,
        t.file,
        t.token.id,
    }
