"""Sentinels without a policy: the conservative default and an allow-all for tests.

The default is conservative: reads and local writes run, anything external asks first.
"""

from __future__ import annotations

from steward.domain.actions import ActionRequest, Decision, EffectClass, Verdict


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
