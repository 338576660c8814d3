"""The demo's model: a script that plays a plausible agent for the demo's tasks, offline.

It reads the conversation the harness sends (the task's instructions, the tool calls made so
far and their observations) and answers with the next step, so everything after the model —
the sentinel, approvals, the egress broker, the effect journal, memory and skill rules — runs
for real. It knows two tasks, recognised by their instructions:

* the inbox check: load the skill for it, fetch the inbox and the calendar, propose once (per
  demo run) a memory and a skill from what it read — both wait for the person, because they
  come from others' mail — then ``report`` what is new (actionable when a mail needs the
  person, information otherwise; nothing when nothing arrived) and finish with a summary;
* the reply: remember the person's stated preference, then send the mail through the office's
  mail tool, which the person's policy turns into an approval; when decided, ``report`` what
  happened (sent, or not sent because the person said no).

Anything else (a chat from the dashboard) gets a line saying how to switch to a real model.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from steward.demo.office import CALENDAR_PATH, CONTACTS, DANA, INBOX_PATH
from steward.domain.secrets import placeholder
from steward.models.base import Message, ModelResponse, ToolCall, ToolSpec
from steward.models.scripted import call_tool, say

SECRET_NAME = "demo-mail"
"""The vault secret the office accepts; the model writes only its placeholder."""
CHECK_TITLE = "Check the shared inbox"
REPLY_TITLE = "Reply to Dana about Thursday"
SEND_TOOL = "office_mail_send"
"""The office's mail tool (:mod:`steward.demo.mail`)."""
SKILL = "check-shared-inbox"
"""The skill the demo seeds (two versions) and the inbox check loads."""
REAL_MODEL_HINT = (
    "To talk to a real model, stop the demo, set STEWARD_MODEL (and STEWARD_MODEL_API_KEY, or "
    "STEWARD_MODEL_PROVIDER=anthropic) and run `steward up`; see the README, "
    '"Talking to the agent".'
)


def check_instructions(office: str) -> str:
    return (
        f"{CHECK_TITLE} ({office}{INBOX_PATH}) and today's calendar ({office}{CALENDAR_PATH}) "
        f"with the header 'Authorization: Bearer {placeholder(SECRET_NAME)}'. Summarise what "
        "is new and flag what needs me."
    )


def reply_instructions() -> str:
    return (
        f"{REPLY_TITLE} ({DANA}): Thursday at 10:00 works for me. Keep it short: I prefer "
        "short, direct replies."
    )


@dataclass(kw_only=True, frozen=True)
class _Done:
    """A tool call the conversation holds, with its observation (None: not observed yet)."""

    name: str
    args: dict[str, Any]
    observation: str | None


class DemoScript:
    """A :data:`~steward.models.scripted.ScriptFunction` for ``ScriptedModel``."""

    def __init__(self, office: str) -> None:
        self.office = office
        """The fake office's base URL."""
        self.auth = {"Authorization": f"Bearer {placeholder(SECRET_NAME)}"}
        # once per run, or every check would propose the same candidate and skill again
        self.proposed_memory = False
        self.proposed_skill = False

    def __call__(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> ModelResponse:
        # the harness sends the system prompt, then the task ("## Your task\n<instructions>")
        task = messages[1].content.removeprefix("## Your task\n") if len(messages) > 1 else ""
        done = _done(messages)
        if task.startswith(CHECK_TITLE):
            return self._check(messages[0].content, done)
        if task.startswith(REPLY_TITLE):
            return self._reply(done)
        return say(f"(This is the offline demo's scripted model.) {REAL_MODEL_HINT}")

    def _check(self, system: str, done: list[_Done]) -> ModelResponse:
        names = [d.name for d in done]
        fetched = [d.observation or "" for d in done if d.name == "http_fetch"]
        if f"[{SKILL}]" in system and "load_skill" not in names:
            return _thinking("I have a skill for this; reading it first.", "load_skill", name=SKILL)
        if not fetched:
            return _thinking(
                "Fetching the inbox.",
                "http_fetch",
                url=f"{self.office}{INBOX_PATH}",
                headers=self.auth,
            )
        if len(fetched) == 1:
            return _thinking(
                "Now today's calendar.",
                "http_fetch",
                url=f"{self.office}{CALENDAR_PATH}",
                headers=self.auth,
            )
        if _status(fetched[0]) != 200:
            return call_tool("finish", result=f"Could not read the inbox: {fetched[0][:300]}")
        mail = _body(fetched[0]).get("messages", [])
        if not self.proposed_memory and any(m.get("from") == DANA for m in mail):
            self.proposed_memory = True
            return _thinking(
                "Dana's mail says something worth remembering.",
                "propose_memory",
                content="Dana Park (Acme) is preparing the Q3 contract renewal with me",
                kind="fact",
                subjects=["Dana Park", "Acme"],
            )
        if mail and "report" not in names:
            return _thinking("Telling you what came in.", "report", **_mail_report(mail))
        if not self.proposed_skill:
            self.proposed_skill = True
            return _thinking(
                "Meeting requests keep coming up; proposing a procedure for them.",
                "propose_skill",
                name="answer-meeting-requests",
                description="Answer a mail that asks for a meeting, after checking the calendar",
                procedure="1. Read the request's proposed time.\n2. Fetch the calendar for that "
                "day.\n3. If it is free, draft a short acceptance; else propose the next free "
                "slot.\n4. Send only after the person approved the draft.",
                when_to_use="A mail asks to meet at a time",
                checks=["The reply names a time that is free in the calendar"],
            )
        return call_tool("finish", result=_summary(mail, _body(fetched[1]).get("events", [])))

    def _reply(self, done: list[_Done]) -> ModelResponse:
        names = [d.name for d in done]
        sends = [d.observation for d in done if d.name == SEND_TOOL]
        if "propose_memory" not in names:
            return _thinking(
                "You said how you like replies; remembering that.",
                "propose_memory",
                content="Prefers short, direct email replies",
                kind="preference",
                slot="email_style",
                subjects=["email"],
            )
        if not sends:
            mail = {
                "to": DANA,
                "subject": "Re: Thursday?",
                "text": "Hi Dana, Thursday at 10:00 works. See you then!",
            }
            return _thinking("Sending the reply.", SEND_TOOL, **mail)
        outcome = sends[0] or ""
        sent = _response(outcome).get("sent") is True
        if "report" not in names:
            if sent:
                return _thinking(
                    "Letting you know it went out.",
                    "report",
                    what="Sent Dana your reply: Thursday at 10:00 works.",
                    why="She asked to meet on Thursday about the Q3 contract renewal.",
                )
            return _thinking(
                "Telling you it did not go out.",
                "report",
                what="I did not send Dana the reply: you said no.",
                why="She is still waiting to hear whether Thursday at 10:00 works.",
                todo="Tell me what to answer Dana, or answer her yourself.",
                importance="actionable",
            )
        if sent:
            return call_tool("finish", result="Sent Dana a short reply: Thursday 10:00 works.")
        return call_tool("finish", result=f"Did not send the reply to Dana: {outcome[:300]}")


def _thinking(said: str, tool: str, **arguments: Any) -> ModelResponse:
    """A tool call with a line of what the model is doing (shown in the timeline)."""
    call = call_tool(tool, **arguments)
    return ModelResponse(content=said, tool_calls=call.tool_calls, finish_reason="tool_calls")


def _done(messages: Sequence[Message]) -> list[_Done]:
    calls: list[ToolCall] = [c for m in messages if m.role == "assistant" for c in m.tool_calls]
    observed = {m.tool_call_id: m.content for m in messages if m.role == "tool"}
    return [
        _Done(name=c.name, args=json.loads(c.arguments), observation=observed.get(c.id))
        for c in calls
    ]


def _response(observation: str) -> dict[str, Any]:
    """An ``http_fetch`` observation as data (empty when it is an error or a refusal)."""
    try:
        found = json.loads(observation)
    except ValueError:
        return {}
    return found if isinstance(found, dict) else {}


def _status(observation: str) -> int | None:
    status = _response(observation).get("status")
    return status if isinstance(status, int) else None


def _body(observation: str) -> dict[str, Any]:
    try:
        body = json.loads(str(_response(observation).get("body", "")))
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}


def _sender(message: dict[str, Any]) -> str:
    address = str(message.get("from", ""))
    return CONTACTS.get(address, address)


def _mail_report(mail: list[dict[str, Any]]) -> dict[str, str]:
    """The report of one check's new mail: what needs the person (a mail from Dana) as
    actionable, the rest as information."""
    asks = [m for m in mail if m.get("from") == DANA]
    if asks:
        said = " ".join(str(m.get("body", "")) for m in asks)
        others = len(mail) - len(asks)
        return {
            "what": f"Dana Park wrote: “{asks[0].get('subject')}”"
            + (f" (and {others} other new mail)" if others else ""),
            "why": f"She is your account manager at Acme. She says: {said}",
            "todo": "Say whether that works for you: my reply to her waits for your approval "
            "in the Inbox."
            if any("Thursday at 10" in str(m.get("body")) for m in asks)
            else "Check the SLA numbers before Thursday.",
            "importance": "actionable",
        }
    # a line on a lock screen: the first three, then how many more
    listed = "; ".join(f"{_sender(m)} wrote “{m.get('subject')}”" for m in mail[:3])
    if len(mail) > 3:
        listed += f"; and {len(mail) - 3} more"
    many = f"{len(mail)} new mails: " if len(mail) > 1 else ""
    return {
        "what": f"{many}{listed}. Nothing for you to do.",
        "why": "Nothing in it asks anything of you.",
        "importance": "info",
    }


def _summary(mail: list[dict[str, Any]], events: list[dict[str, Any]]) -> str:
    if mail:
        lines = [f"{len(mail)} new message(s):"]
        for m in mail:
            flag = " — needs you" if m.get("from") == DANA else ""
            lines.append(f"- {m.get('from')}: {m.get('subject')}{flag}")
    else:
        lines = ["No new mail since the last check."]
    if events:
        lines.append("Today: " + ", ".join(f"{e.get('time')} {e.get('title')}" for e in events))
    return "\n".join(lines)
