"""Compaction: when a task's recent steps outgrow their budget, the older ones are folded into
a bounded summary (by a model when one is configured, deterministically otherwise), and the
recent window starts after them. The summary is itself a journalled step, so a recovered
activation reuses it rather than summarising (and paying) again."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

import structlog

from steward.domain import Step
from steward.errors import StewardError
from steward.harness.context import estimate_tokens, message_tokens, steps_to_messages, truncate
from steward.models.base import Message, Model, Usage

log = structlog.get_logger(__name__)

SUMMARY_PROMPT = (
    "You maintain the running summary of an agent's work on a task. Merge the previous summary "
    "and the new steps into one concise summary: what was done, what was learned, what is "
    "decided, what is still open. Keep identifiers, numbers and names exactly. Plain text."
)


@dataclass(kw_only=True, frozen=True)
class Compaction:
    """A new summary replacing steps up to :attr:`through`."""

    summary: str
    """The summary of everything up to and including step :attr:`through`."""
    through: int
    """Last step folded in."""
    method: str
    """``model`` or ``deterministic``."""
    usage: Usage
    """What the summarising call cost (zero when deterministic)."""


def steps_tokens(steps: Sequence[Step]) -> int:
    return sum(message_tokens(m) for m in steps_to_messages(steps))


def choose_cut(steps: Sequence[Step], budget: int) -> int | None:
    """The last step to fold into the summary so that what stays fits in half the budget
    (room to grow before the next compaction). The recent window must start at a model step,
    so a tool observation is never separated from the call it answers. None: nothing to cut."""
    keep_tokens = 0
    start = len(steps)
    for index in range(len(steps) - 1, -1, -1):
        keep_tokens += steps_tokens([steps[index]])
        if keep_tokens > budget // 2:
            break
        start = index
    # move the boundary forward to the next model step
    while start < len(steps) and steps[start].kind != "model":
        start += 1
    if start == 0:
        return None
    return steps[start - 1].seq


def render_step(step: Step, width: int = 240) -> str:
    out = step.output if isinstance(step.output, dict) else {}
    if step.kind == "model":
        response = out.get("response", {})
        text = (response.get("content") or "").strip()
        calls = ", ".join(f"{c['name']}({c['arguments']})" for c in response.get("tool_calls", []))
        line = " ".join(p for p in (text, f"called {calls}" if calls else "") if p)
    elif step.kind == "tool":
        line = f"{out.get('name')} → {out.get('observation', '')}"
    elif step.kind == "user":
        line = f"person: {out.get('content', '')}"
    else:
        line = f"{step.kind}: {json.dumps(out, default=str, sort_keys=True)}"
    line = " ".join(line.split())
    return f"#{step.seq} {line[:width]}"


def deterministic_summary(previous: str, steps: Sequence[Step], max_tokens: int) -> str:
    """One line per step appended to the previous summary; the oldest lines drop off first."""
    lines = [ln for ln in previous.splitlines() if ln.strip()] + [render_step(s) for s in steps]
    while len(lines) > 1 and estimate_tokens("\n".join(lines)) > max_tokens:
        lines.pop(0)
    text, _ = truncate("\n".join(lines), max_tokens)
    return text


async def compact(
    steps: Sequence[Step],
    *,
    previous: str,
    through: int,
    max_tokens: int,
    model: Model | None,
) -> Compaction:
    """Fold ``steps`` (up to ``through``) into the summary."""
    folded = [s for s in steps if s.seq <= through]
    if model is not None:
        transcript = "\n".join(render_step(s, width=1000) for s in folded)
        prompt = [
            Message(role="system", content=SUMMARY_PROMPT),
            Message(
                role="user",
                content=f"Previous summary:\n{previous or '(none)'}\n\nNew steps:\n{transcript}\n\n"
                f"Answer with the merged summary in at most {max_tokens * 3 // 4} words.",
            ),
        ]
        try:
            response = await model.complete(prompt)
        except StewardError as exc:
            log.warning("model summary failed; using the deterministic one", error=str(exc))
        else:
            if response.content.strip():
                text, _ = truncate(response.content.strip(), max_tokens)
                return Compaction(
                    summary=text, through=through, method="model", usage=response.usage
                )
    return Compaction(
        summary=deterministic_summary(previous, folded, max_tokens),
        through=through,
        method="deterministic",
        usage=Usage(),
    )
