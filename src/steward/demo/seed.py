"""What the demo sets up in its fresh database, all through the service facade: a person and a
token to log in with, the authority the agent works within, weeks' worth of memories and a
learned skill, and the goals that keep the runtime busy.

Authority, as a person would set it up for a mail account:

* connections to the fake mail and calendar, exposing ``api.call`` on the loopback host (and
  ``mail.send`` on the mail one, for the office's mail tool: :mod:`steward.demo.mail`);
* a vault secret bound to that host (the agent only ever writes its placeholder);
* a rule: calls to connected services run only when pre-approved (``do_if_preapproved``);
* grants pre-approving reads: the inbox and the calendar paths, nothing else;
* a rule: sending mail asks the person first.

So the inbox check runs unattended, and sending mail becomes an approval that waits in the
person's inbox, worded as the mail it sends.

The inbox goal reports what needs the person at once and the rest in the daily digest
(policy ``actionable``); the reply goal reports everything at once (``all``).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from steward.connectors.http import API_CALL
from steward.demo.mail import SEND
from steward.demo.office import CALENDAR_PATH, DANA, INBOX_PATH
from steward.demo.script import (
    CHECK_TITLE,
    REPLY_TITLE,
    SECRET_NAME,
    SKILL,
    check_instructions,
    reply_instructions,
)
from steward.domain import Goal, Person, TaskSpec, TriggerKind
from steward.domain.audience import PRIVATE
from steward.domain.memory import MemoryKind, Source, SourceKind
from steward.domain.skill import SkillContent
from steward.domain.tokens import CONTROL
from steward.memory.skills import SkillLibrary
from steward.service import Service

HOST = "127.0.0.1"
PERSON = "Alex"


@dataclass(kw_only=True, frozen=True)
class Seeded:
    """What the demo created, for its banner and its test."""

    person: Person
    token: str
    """A ``control`` API token, in plain text (the dashboard login)."""
    inbox_goal: Goal
    """The recurring goal: an interval trigger runs the inbox check."""
    reply_goal: Goal
    """The goal whose task waits for the person's approval."""


async def seed(svc: Service, *, office: str, secret: str, every: float) -> Seeded:
    """Set everything up; ``office`` is the fake service's base URL, ``secret`` its token,
    ``every`` the inbox check's period in seconds."""
    person = await svc.ensure_person(PERSON)
    _, token = await svc.create_token(person_id=person.id, name="demo dashboard", scopes=[CONTROL])
    mail = await _authority(svc, person.id, secret)
    await _memories(svc, person.id, mail_connection=mail)
    await _skill(svc, person.id)
    inbox_goal = await _inbox_goal(svc, person.id, office=office, every=every)
    reply_goal = await svc.create_goal(
        person_id=person.id,
        title=REPLY_TITLE,
        instructions="Answer Dana's meeting request; I approve what goes out.",
        report_policy="all",
    )
    await svc.create_task(
        person_id=person.id,
        spec=_agent_task(reply_instructions(), REPLY_TITLE),
        goal_id=reply_goal.id,
    )
    return Seeded(person=person, token=token, inbox_goal=inbox_goal, reply_goal=reply_goal)


async def _authority(svc: Service, person_id: str, secret: str) -> str:
    """Connections, the secret, the rule and the grants; returns the mail connection's id."""
    mail = await svc.add_connection(
        person_id=person_id,
        kind="email",
        name="Demo mail",
        scopes=[API_CALL, SEND],
        hosts=[HOST],
    )
    await svc.add_connection(
        person_id=person_id, kind="calendar", name="Demo calendar", scopes=[API_CALL], hosts=[HOST]
    )
    await svc.put_secret(person_id=person_id, name=SECRET_NAME, value=secret, hosts=[HOST])
    await svc.add_rule(
        person_id=person_id,
        pattern=API_CALL,
        mode="do_if_preapproved",
        priority=10,
        reason="calls to my accounts run only if I pre-approved them",
    )
    await svc.add_rule(
        person_id=person_id,
        pattern=SEND,
        mode="ask",
        priority=20,
        reason="I read every mail before it goes out",
    )
    for path, why in ((INBOX_PATH, "reading the shared inbox"), (CALENDAR_PATH, "reading my day")):
        await svc.add_grant(
            person_id=person_id,
            scopes=[API_CALL],
            constraints={"hosts": [HOST], "path_prefix": path},
            reason=why,
        )
    return mail.id


async def _memories(svc: Service, person_id: str, *, mail_connection: str) -> None:
    """The person's own statements (one superseded: they moved), and one candidate a mail
    suggested; the agent adds its own while the demo runs."""
    now = svc.clock.now()
    await svc.remember(
        person_id=person_id,
        content="Prefers aisle seats on flights",
        kind="preference",
        slot="seat",
    )
    await svc.remember(
        person_id=person_id,
        content=f"Dana Park ({DANA}) is my account manager at Acme",
        kind="relationship",
        subjects=["Dana Park", "Acme"],
    )
    await svc.remember(
        person_id=person_id,
        content="Lives in Berlin",
        kind="fact",
        slot="home_city",
        valid_from=now - timedelta(days=6 * 365),
    )
    # the same slot, later: Berlin stays in history, no longer current
    await svc.remember(
        person_id=person_id,
        content="Moved to Lisbon and lives there now",
        kind="fact",
        slot="home_city",
        valid_from=now - timedelta(days=60),
    )
    # from others' text: kept as a candidate until the person confirms it
    await svc.memory.write(
        person_id=person_id,
        content="The quarterly SLA report is due to Acme on Friday",
        kind=MemoryKind.FACT,
        source=Source(
            kind=SourceKind.CONNECTOR,
            ref=f"{mail_connection}/msg-5",
            trusted=False,
            detail=f"a mail from {DANA}",
        ),
        actor=f"connector:{mail_connection}",
    )


async def _skill(svc: Service, person_id: str) -> None:
    """A skill with a history: learned, then improved (version 2 adds the calendar)."""
    library = SkillLibrary(svc.store, svc.clock)
    first = SkillContent(
        description="Check the shared inbox and summarise what is new",
        procedure=f"1. GET {INBOX_PATH} with the mail secret.\n2. List new messages.",
        when_to_use="A scheduled inbox check",
    )
    better = SkillContent(
        description="Check the shared inbox and the calendar; flag what needs the person",
        procedure=f"1. GET {INBOX_PATH} with the mail secret.\n2. GET {CALENDAR_PATH}.\n"
        "3. List new messages; flag requests from people the person works with.",
        when_to_use="A scheduled inbox check",
        checks=("Every new message is listed once",),
    )
    for content in (first, better):
        await library.propose(person_id=person_id, name=SKILL, content=content, actor="demo")


async def _inbox_goal(svc: Service, person_id: str, *, office: str, every: float) -> Goal:
    goal = await svc.create_goal(
        person_id=person_id,
        title="Keep an eye on the shared inbox",
        instructions="Check the inbox regularly; tell me at once what needs me, the rest "
        "in the evening digest.",
        sources=[f"{office}{INBOX_PATH}"],
        report_policy="actionable",
    )
    check = _agent_task(check_instructions(office), CHECK_TITLE)
    await svc.add_trigger(
        person_id=person_id,
        goal_id=goal.id,
        name=f"every {every:g} s",
        kind=TriggerKind.INTERVAL,
        spec=f"{every:g}",
        task=check,
    )
    # the first check at once, so there is something to see before the timer fires
    await svc.create_task(person_id=person_id, spec=check, goal_id=goal.id)
    return goal


def _agent_task(instructions: str, title: str) -> TaskSpec:
    """An agent task with a short title (the instructions name URLs and headers)."""
    return TaskSpec(
        kind="agent", input={"instructions": instructions, "audience": str(PRIVATE)}, title=title
    )
