"""Sentinels without a policy: the conservative default and an allow-all for tests.

The default is conservative: reads and local writes run, anything external asks first.
"""

from __future__ import annotations

from steward.domain.actions import ActionRequest, Decision, EffectClass, Verdict

STANDING_WORK_TOOLS = frozenset(
    {"create_goal", "update_goal", "schedule_goal", "complete_goal", "watch_page"}
)
"""The agent's tools that set up or change the person's standing work (goals and their
schedules): by default the person is asked first, like an action on the world, and a rule of
theirs (``create_goal`` do) or a grant can allow it."""

STANDING_WORK_REASON = "I ask before setting up or changing work that runs on its own"
"""Why the default asks about a :data:`STANDING_WORK_TOOLS` call, in the person's words."""


def default_ask(request: ActionRequest) -> tuple[str, str]:
    """Why an action no rule or grant decided asks the person, and the basis recorded."""
    if request.tool in STANDING_WORK_TOOLS:
        return STANDING_WORK_REASON, "default:standing-work-asks"
    return f"{request.tool} acts on the world and no grant covers it", "default:external-asks"


class DefaultSentinel:
    """Reads and local writes are allowed; external effects (and unclassified tools) ask."""

    async def check(self, request: ActionRequest) -> Decision:
        if request.effect in (EffectClass.READ, EffectClass.LOCAL):
            return Decision(
                verdict=Verdict.ALLOW, reason=f"{request.effect} tool", rule="default:local"
            )
        if request.effect is EffectClass.UNKNOWN:
            reason = f"{request.tool} is not classified; it may act on the world"
        else:
            reason = f"{request.tool} acts on the world"
        return Decision(verdict=Verdict.ASK, reason=reason, rule="default:external-asks")


class AllowAll:
    """Allows everything. For tests and trusted demos only — never a default."""

    async def check(self, request: ActionRequest) -> Decision:
        return Decision(verdict=Verdict.ALLOW, reason="allow-all sentinel", rule="allow-all")
