"""The policy engine: a deterministic verdict for every action the model proposes.

:func:`evaluate` is pure: a request, the person's :class:`~steward.sentinel.index.PolicySnapshot`
and the time in, a :class:`PolicyDecision` out. :class:`PolicySentinel` is the harness's
:class:`~steward.domain.actions.Sentinel`: before every decision it brings the person's
policy up to date from the store (so a revocation or a disconnection bites at the very next
action, inside a running task too; see :mod:`steward.sentinel.index`), evaluates the grants and
rules that could decide the action, and spends a ``once`` grant atomically when that grant is
what allowed the action.

Precedence — the first step that decides, decides:

1. **Hard limits** — nothing lifts them, not a ``do`` rule nor a standing grant: a tool whose
   scopes (or, for tools nobody gave scopes, whose name) fall in ``account.password``,
   ``account.2fa``, ``account.delete`` or ``credentials.share``, and a ``payment`` scope with an
   amount (an AMOUNT argument; ``amount`` for a tool without roles) above the ceiling (or one
   that is not a plain finite number) → **handoff**: the person does it themselves.
2. **Read-only modes** — a task whose input has ``mode: research`` (proactive research) may only
   read and keep private notes: a tool that is not READ/LOCAL, needs a scope that writes
   (``….send``, ``….write``, ``….delete``, ``….post``...), types into or sends a page's
   forms (a ``browser`` scope other than :data:`BROWSER_READ`), or drives a browser nobody
   classified → **deny**,
   whatever grants or rules exist.
3. **Connection bound** — every scope the tool needs (but those of the person's own workspace,
   :data:`OWN_SCOPES`) must be offered, exactly, by an active connection of the person
   (``email.read`` is not ``email.send``), and when every connection offering a scope names
   hosts, each URL host of the action must be one of them (a URL that cannot be read is not)
   → else **deny**, whatever rules or grants say. Tools with no scopes skip this step.
4. **Rules** whose pattern (``*`` matches anything) matches the tool name or one of its scopes:
   the highest priority wins, ties go to the stricter mode (deny > handoff > ask >
   do_if_preapproved > do), then to the smaller rule id. ``do`` allows; ``do_if_preapproved``
   allows if a live grant covers the action, else asks; the others are their verdicts.
5. **Default** — READ/LOCAL tools run; EXTERNAL/UNKNOWN ones run if a live grant covers them,
   else ask.
6. **Data flow** — an *allow* from the steps above becomes **ask** when a controlling argument's
   value first came from others' text (``request.tainted``) and no covering grant names that
   exact value (in its ``recipients`` or ``hosts``), or when the person's sensitive data would
   leave (``request.data_classes``) and no covering grant names each kind in its ``data``
   constraint. Deny and hand-off are never softened by it.

A grant *covers* an action as :mod:`steward.sentinel.grants` says.

What triggered the activation (``wake_reason``) is never consulted: a timer or an event cannot
add authority; the goal's person's rules and grants bound every activation alike.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from functools import lru_cache
from typing import Any, Protocol

from steward.domain.actions import ActionRequest, Decision, EffectClass, Verdict, provenance_reason
from steward.domain.authority import (
    Connection,
    Grant,
    Lifetime,
    Rule,
    RuleMode,
    choose_connection,
)
from steward.domain.clock import Clock
from steward.domain.roles import Role
from steward.sentinel.arguments import (
    amounts_of,
    calendars_of,
    domains_of,
    has_urls,
    number,
    recipients_of,
    url_key,
    urls_of,
)
from steward.sentinel.defaults import default_ask
from steward.sentinel.grants import covering_grant, covers
from steward.sentinel.index import ActionKeys, PolicyCache, PolicyReader, PolicySnapshot
from steward.sentinel.urls import UrlRefused, host_key, parse_url, recipient_key

OWN_SCOPES = ("workspace",)
"""Scopes of the person's own environment (their sandboxed workspace): no connection offers
them and none is needed (step 3 passes them); hard limits, read-only modes, rules and the data
flow step apply as to any other."""
BROWSER_READ = "browser.read"
"""The browser's scope that only looks (open, read, click, scroll): a read-only task keeps it,
because in such a task the browser itself blocks every request that could change something."""
HARD_PAYMENT_CEILING = 500.0
"""Payments above this amount (in the payment's own currency) are always handed back."""


@dataclass(kw_only=True, frozen=True)
class HardLimit:
    """A category of action only the person may take."""

    name: str
    """Category, shown in the audit log as ``hard-limit:<name>``."""
    scopes: tuple[str, ...]
    """Scopes in the category (the scope itself or anything under ``<scope>.``)."""
    tool_words: tuple[str, ...]
    """Words in a tool's name that put it in the category even without scopes (an MCP tool
    nobody classified), matched on the lower-cased name."""


HARD_LIMITS: tuple[HardLimit, ...] = (
    HardLimit(name="account.password", scopes=("account.password",), tool_words=("password",)),
    HardLimit(
        name="account.2fa",
        scopes=("account.2fa", "account.mfa"),
        tool_words=("2fa", "mfa", "two_factor", "totp"),
    ),
    HardLimit(
        name="account.delete",
        scopes=("account.delete",),
        tool_words=("delete_account", "close_account", "deactivate_account"),
    ),
    HardLimit(
        name="credentials.share",
        scopes=("credentials.share",),
        tool_words=("share_credential", "share_secret", "export_secret"),
    ),
)
WRITE_VERBS = frozenset(
    {
        "send",
        "write",
        "delete",
        "post",
        "create",
        "update",
        "modify",
        "publish",
        "share",
        # changes to the person's own accounts (their mailbox, their calendar answers)
        "organize",
        "draft",
        "respond",
    }
)
"""Last parts of a scope that change something outside (refused in read-only modes)."""
_STRICTNESS = {
    RuleMode.DO: 0,
    RuleMode.DO_IF_PREAPPROVED: 1,
    RuleMode.ASK: 2,
    RuleMode.HANDOFF: 3,
    RuleMode.DENY: 4,
}
_MODE_VERDICT = {
    RuleMode.DENY: Verdict.DENY,
    RuleMode.HANDOFF: Verdict.HANDOFF,
    RuleMode.ASK: Verdict.ASK,
}


@dataclass(kw_only=True, frozen=True)
class PolicyDecision:
    """The policy's answer for one action, with what decided it."""

    verdict: Verdict
    """What to do."""
    reason: str
    """Why, in words for the model and the person."""
    basis: str
    """What decided, for the audit log: ``hard-limit:<name>``, ``mode:research``,
    ``connection``, ``rule:<id>``, ``grant:<id>`` or ``default:<what>``."""
    rule_id: str | None = None
    """The rule that matched, if one did."""
    grant_id: str | None = None
    """The grant that allowed the action, if one did."""
    spend: str | None = None
    """A ``once`` grant to mark used before the action runs."""
    charge: float | None = None
    """An amount to count against the allowing grant's per-period ceiling before the action
    runs (when it would go over, the answer becomes ask)."""
    vouched: bool = False
    """The request's tainted values and sensitive data are each named by a covering grant."""

    def decision(self) -> Decision:
        return Decision(
            verdict=self.verdict, reason=self.reason, rule=self.basis, vouched=self.vouched
        )


def evaluate(
    request: ActionRequest,
    snapshot: PolicySnapshot,
    *,
    now: datetime,
    session_id: str | None,
    payment_ceiling: float = HARD_PAYMENT_CEILING,
) -> PolicyDecision:
    """Decide ``request`` on ``snapshot`` (see the module docstring for the order)."""
    decided = _decide(
        request, snapshot, now=now, session_id=session_id, payment_ceiling=payment_ceiling
    )
    return _data_flow(decided, request, snapshot, now=now, session_id=session_id)


def _decide(
    request: ActionRequest,
    snapshot: PolicySnapshot,
    *,
    now: datetime,
    session_id: str | None,
    payment_ceiling: float,
) -> PolicyDecision:
    if snapshot.person_id != request.person_id:
        return PolicyDecision(
            verdict=Verdict.DENY,
            reason="the policy read belongs to another person",
            basis="snapshot-mismatch",
        )
    limited = _hard_limit(request, payment_ceiling)
    if limited is not None:
        return limited
    if request.task_input.mode == "research":
        why = _writes(request)
        if why is not None:
            return PolicyDecision(
                verdict=Verdict.DENY,
                reason=f"{request.tool} {why}; proactive research is read-only",
                basis="mode:research",
            )
    bound = _connection_bound(request, snapshot.connections)
    if bound is not None:
        return bound
    rule = winning_rule(request, snapshot.rules)
    if rule is not None:
        return _by_rule(rule, request, snapshot, now=now, session_id=session_id)
    if request.effect in (EffectClass.READ, EffectClass.LOCAL):
        return PolicyDecision(
            verdict=Verdict.ALLOW, reason=f"{request.effect} tool", basis="default:local"
        )
    grant = covering_grant(request, snapshot.grants, now=now, session_id=session_id)
    if grant is not None:
        return _allowed_by(grant, request, f"{request.tool} is covered by grant {grant.id}")
    reason, basis = default_ask(request)
    return PolicyDecision(verdict=Verdict.ASK, reason=reason, basis=basis)


def _by_rule(
    rule: Rule,
    request: ActionRequest,
    snapshot: PolicySnapshot,
    *,
    now: datetime,
    session_id: str | None,
) -> PolicyDecision:
    said = f"rule {rule.pattern!r} ({rule.mode.value})" + (
        f": {rule.reason}" if rule.reason else ""
    )
    basis = f"rule:{rule.id}"
    if rule.mode is RuleMode.DO:
        return PolicyDecision(verdict=Verdict.ALLOW, reason=said, basis=basis, rule_id=rule.id)
    if rule.mode is RuleMode.DO_IF_PREAPPROVED:
        grant = covering_grant(request, snapshot.grants, now=now, session_id=session_id)
        if grant is not None:
            decided = _allowed_by(grant, request, f"{said}; pre-approved by grant {grant.id}")
            return replace(decided, rule_id=rule.id)
        return PolicyDecision(
            verdict=Verdict.ASK, reason=f"{said}; no grant covers it", basis=basis, rule_id=rule.id
        )
    return PolicyDecision(
        verdict=_MODE_VERDICT[rule.mode], reason=said, basis=basis, rule_id=rule.id
    )


def _allowed_by(grant: Grant, request: ActionRequest, reason: str) -> PolicyDecision:
    metered = "period_amount" in grant.constraints
    return PolicyDecision(
        verdict=Verdict.ALLOW,
        reason=reason,
        basis=f"grant:{grant.id}",
        grant_id=grant.id,
        spend=grant.id if grant.lifetime is Lifetime.ONCE else None,
        charge=_charge(request) if metered else None,
    )


# --- the steps ------------------------------------------------------------------------------


def _data_flow(
    decided: PolicyDecision,
    request: ActionRequest,
    snapshot: PolicySnapshot,
    *,
    now: datetime,
    session_id: str | None,
) -> PolicyDecision:
    """An allow stands for tainted values and sensitive data only when the person's grants name
    each of them (step 6)."""
    if decided.verdict is not Verdict.ALLOW or not (request.tainted or request.data_classes):
        return decided
    grants = [g for g in snapshot.grants if covers(g, request, now=now, session_id=session_id)]
    unnamed = {
        path: why
        for path, why in request.untrusted_args.items()
        if not any(_names(g, request.tainted.get(path, "")) for g in grants)
    }
    missing = tuple(
        kind
        for kind in request.data_classes
        if not any(str(kind) in g.constraints.get("data", ()) for g in grants)
    )
    if not unnamed and not missing:
        return replace(decided, vouched=True)
    left = replace(request, untrusted_args=unnamed, data_classes=missing)
    return PolicyDecision(
        verdict=Verdict.ASK,
        reason=provenance_reason(left),
        basis="provenance",
        rule_id=decided.rule_id,
    )


def _names(grant: Grant, value: str) -> bool:
    """The grant names ``value`` exactly: as a recipient or a host, or, for a URL, its whole
    origin, path and query (:func:`~steward.sentinel.arguments.url_key`): a grant for a host
    does not vouch for a method or path someone else's text chose on it."""
    try:
        url = parse_url(value)
    except UrlRefused:  # not a URL: compared as an address or a host only
        named = {recipient_key(r) for r in grant.constraints.get("recipients", ())}
        named |= {host_key(h) for h in grant.constraints.get("hosts", ())}
        return bool({recipient_key(value), host_key(value)} & named - {""})
    return url_key(url, value) in grant.constraints.get("urls", ())


def _in_category(scope: str, roots: Sequence[str]) -> bool:
    return any(scope == root or scope.startswith(root + ".") for root in roots)


def _hard_limit(request: ActionRequest, ceiling: float) -> PolicyDecision | None:
    name = request.tool.lower()
    for limit in HARD_LIMITS:
        by_scope = any(_in_category(s, limit.scopes) for s in request.scopes)
        if by_scope or any(word in name for word in limit.tool_words):
            return PolicyDecision(
                verdict=Verdict.HANDOFF,
                reason=f"{request.tool} is a {limit.name} action: only the person may do that",
                basis=f"hard-limit:{limit.name}",
            )
    pays = any(_in_category(s, ("payment",)) for s in request.scopes)
    for given in amounts_of(request.args, request.roles) if pays else []:
        amount = number(given)
        if amount is None or amount > ceiling:
            shown = given if amount is None else f"{amount:g}"
            return PolicyDecision(
                verdict=Verdict.HANDOFF,
                reason=f"a payment of {shown} is above the ceiling of {ceiling:g} (or not a "
                "plain amount): only the person may make it",
                basis="hard-limit:payment-ceiling",
            )
    return None


def _connection_bound(
    request: ActionRequest, connections: Sequence[Connection]
) -> PolicyDecision | None:
    """A connector's tool: :func:`_account_bound`. Any other: deny unless every scope the action
    needs is offered by an active connection of the person and, where every connection offering
    a scope names its hosts, each URL host of the action is one of them (a connection without
    hosts does not bound hosts)."""
    active = [c for c in connections if c.active and c.person_id == request.person_id]
    if request.connector is not None:
        return _account_bound(request, active)
    hosts: list[str] | None = None
    needed = [s for s in request.scopes if not _in_category(s, OWN_SCOPES)]
    for scope in needed:
        offering = [c for c in active if scope in c.scopes]
        if not offering:
            missing = [s for s in needed if not any(s in c.scopes for c in active)]
            return PolicyDecision(
                verdict=Verdict.DENY,
                reason=f"no connection allows {', '.join(missing)}",
                basis="connection",
            )
        if any(not c.hosts for c in offering) or not has_urls(request.args, request.roles):
            continue
        if hosts is None:
            urls = urls_of(request.args, request.roles)
            if urls is None:
                return PolicyDecision(
                    verdict=Verdict.DENY,
                    reason=f"the URL of {request.tool} cannot be read, so it cannot be held to "
                    f"the hosts the connections for {scope} allow",
                    basis="connection",
                )
            hosts = [u.host for u in urls]
        allowed = {host_key(h) for c in offering for h in c.hosts}
        outside = sorted({h for h in hosts if h not in allowed})
        if outside:
            return PolicyDecision(
                verdict=Verdict.DENY,
                reason=f"no connection for {scope} allows the host {', '.join(outside)} "
                f"(only {', '.join(sorted(h for h in allowed if h))})",
                basis="connection",
            )
    return None


def _account_bound(request: ActionRequest, active: Sequence[Connection]) -> PolicyDecision | None:
    """Deny unless the one connection the action goes through — of the tool's connector kind,
    named by its ACCOUNT argument (the only one of that kind, when none is named) — offers
    every scope it needs, and its recipients and calendars are within that connection's
    bounds."""
    named = _values_with(request, Role.ACCOUNT)
    if len(named) > 1:
        return PolicyDecision(
            verdict=Verdict.DENY, reason="an action goes through one account", basis="connection"
        )
    chosen = choose_connection(active, request.connector or "", named[0] if named else None)
    if isinstance(chosen, str):
        return PolicyDecision(verdict=Verdict.DENY, reason=chosen, basis="connection")
    missing = [s for s in request.scopes if s not in chosen.scopes]
    if missing:
        return PolicyDecision(
            verdict=Verdict.DENY,
            reason=f"your connection {chosen.name!r} does not allow {', '.join(missing)}",
            basis="connection",
        )
    bounds = chosen.bounds
    if bounds.recipients or bounds.domains:
        recipients = recipients_of(request.args, request.roles)
        if recipients is None:
            return PolicyDecision(
                verdict=Verdict.DENY,
                reason=f"a recipient of {request.tool} cannot be read as one plain address",
                basis="connection",
            )
        outside = [r for r in recipients if not _within(r, bounds.recipients, bounds.domains)]
        if outside:
            return PolicyDecision(
                verdict=Verdict.DENY,
                reason=f"your connection {chosen.name!r} may not reach {', '.join(outside)}",
                basis="connection",
            )
    if bounds.calendars and request.roles is not None and Role.CALENDAR in request.roles.values():
        calendars = calendars_of(request.args, request.roles)
        allowed = {c.casefold() for c in bounds.calendars}
        if not calendars or any(c not in allowed for c in calendars):
            shown = ", ".join(bounds.calendars)
            return PolicyDecision(
                verdict=Verdict.DENY,
                reason=f"your connection {chosen.name!r} only reaches the calendars {shown}; "
                "name one of them",
                basis="connection",
            )
    return None


def _values_with(request: ActionRequest, role: Role) -> list[str]:
    """The text values of the request's arguments in ``role``."""
    roles = request.roles or {}
    return [
        str(request.args[name])
        for name, given in roles.items()
        if given == role and request.args.get(name) not in (None, "")
    ]


def _within(recipient: str, addresses: Sequence[str], domains: Sequence[str]) -> bool:
    """A recipient admitted by a connection's bounds: one of its addresses, or at one of its
    domains or a subdomain of one."""
    if recipient in {recipient_key(a) for a in addresses}:
        return True
    domain = recipient.rpartition("@")[2]
    return any(domain == d or domain.endswith("." + d) for d in (host_key(x) for x in domains))


def _writes(request: ActionRequest) -> str | None:
    """How the action would change the world, or None if it only reads."""
    if request.effect not in (EffectClass.READ, EffectClass.LOCAL):
        return (
            f"is an {request.effect} action"
            if request.effect.value[0] in "aeiou"
            else f"is a {request.effect} action"
        )
    for scope in request.scopes:
        if _in_category(scope, ("browser",)) and scope != BROWSER_READ:
            return "drives a browser"
        if scope.rsplit(".", 1)[-1] in WRITE_VERBS:
            return f"needs {scope}"
    if not request.scopes and "browser" in request.tool.lower():
        return "drives a browser"  # one nobody classified (an MCP server's)
    return None


@lru_cache(maxsize=4096)
def _pattern(pattern: str) -> re.Pattern[str]:
    return re.compile(".*".join(re.escape(part) for part in pattern.split("*")))


def rule_matches(rule: Rule, request: ActionRequest) -> bool:
    """The rule's pattern matches the tool name or one of its scopes, whole."""
    compiled = _pattern(rule.pattern)
    return any(compiled.fullmatch(name) for name in (request.tool, *request.scopes))


def winning_rule(request: ActionRequest, rules: Sequence[Rule]) -> Rule | None:
    """Highest priority, then the stricter mode, then the smaller id."""
    matched = [r for r in rules if r.person_id == request.person_id and rule_matches(r, request)]
    if not matched:
        return None
    return min(matched, key=lambda r: (-r.priority, -_STRICTNESS[r.mode], r.id))


def _charge(request: ActionRequest) -> float | None:
    """What the action counts against a per-period allowance (its amounts together)."""
    found = [number(given) for given in amounts_of(request.args, request.roles)]
    if not found or any(a is None for a in found):
        return None
    return sum(a for a in found if a is not None)


# --- the sentinel ---------------------------------------------------------------------------


def session_of(request: ActionRequest) -> str | None:
    """The conversation an action runs in: the task input's ``session_id``, else a chat task
    is its own session (one chat conversation is one task)."""
    given = request.task_input.session_id
    if given is not None:
        return given
    return request.task_id if request.task_input.mode == "chat" else None


def action_keys(request: ActionRequest, session_id: str | None) -> ActionKeys:
    """How the policy indexes find the grants and rules that could decide ``request``."""
    recipients = recipients_of(request.args, request.roles) or []
    hosts = [u.host for u in urls_of(request.args, request.roles) or []]
    domains = domains_of(request.args, request.roles) or []
    parents: tuple[str, ...] = ()
    if domains:
        parts = domains[0].split(".")
        parents = tuple(".".join(parts[i:]) for i in range(len(parts)))
    binds = [f"task:{request.task_id}"]
    if session_id is not None:
        binds.append(f"session:{session_id}")
    return ActionKeys(
        scope=request.scopes[0] if request.scopes else f"pin:{request.tool}",
        binds=tuple(binds),
        recipient=recipients[0] if recipients else None,
        host=hosts[0] if hosts else None,
        domains=parents,
    )


class GrantLedger(PolicyReader, Protocol):
    """What the sentinel needs of the store's authority repository: the policy read the cache
    makes, and spending what grants allow."""

    async def spend_grant(self, grant_id: str, *, now: datetime) -> int | None: ...

    async def charge_grant(
        self,
        grant_id: str,
        *,
        person_id: str,
        amount: float,
        task_id: str | None,
        now: datetime,
    ) -> float | None: ...


class AuditAppender(Protocol):
    """What the sentinel needs of the store's audit log."""

    async def append_audit(
        self, *, person_id: str | None, kind: str, actor: str, data: dict[str, Any], now: datetime
    ) -> Any: ...


class PolicyStore(Protocol):
    """What the sentinel needs of the store."""

    @property
    def authority(self) -> GrantLedger: ...

    @property
    def audit(self) -> AuditAppender: ...


class PolicySentinel:
    """The harness's sentinel, deciding by the person's rules, grants and connections."""

    def __init__(
        self, store: PolicyStore, clock: Clock, *, payment_ceiling: float = HARD_PAYMENT_CEILING
    ) -> None:
        self.store = store
        self.clock = clock
        self.payment_ceiling = payment_ceiling
        self.policies = PolicyCache(store)

    async def decide(self, request: ActionRequest) -> PolicyDecision:
        """The full decision (with the rule and grant ids), after spending a ``once`` grant
        that allowed it; if another action spent it first, the answer is ask."""
        now = self.clock.now()
        session_id = session_of(request)
        policy = await self.policies.current(request.person_id, now=now)
        snapshot = policy.snapshot_for(
            action_keys(request, session_id), (request.tool, *request.scopes), now
        )
        decided = evaluate(
            request,
            snapshot,
            now=now,
            session_id=session_id,
            payment_ceiling=self.payment_ceiling,
        )
        if decided.spend is not None:
            version = await self.store.authority.spend_grant(decided.spend, now=now)
            if version is None:
                return PolicyDecision(
                    verdict=Verdict.ASK,
                    reason=f"one-time grant {decided.spend} was just used by another action",
                    basis=f"grant:{decided.spend}",
                    rule_id=decided.rule_id,
                )
            policy.spent(decided.spend, version)
        if decided.charge is not None and decided.grant_id is not None:
            total = await self.store.authority.charge_grant(
                decided.grant_id,
                person_id=request.person_id,
                amount=decided.charge,
                task_id=request.task_id,
                now=now,
            )
            if total is None:
                return PolicyDecision(
                    verdict=Verdict.ASK,
                    reason=f"grant {decided.grant_id}'s allowance for this period would be "
                    f"exceeded by {decided.charge:g}",
                    basis=f"grant:{decided.grant_id}",
                    rule_id=decided.rule_id,
                )
        return decided

    async def check(self, request: ActionRequest) -> Decision:
        """Decide, and record the decision (and what decided it) in the audit log."""
        return (await self.judge(request)).decision()

    async def judge(self, request: ActionRequest, *, actor: str | None = None) -> PolicyDecision:
        """:meth:`decide`, and record the decision (and what decided it) in the audit log, as
        proposed by ``actor`` (by default the request's task's agent): the full decision, for
        callers that act on what decided it, such as the skill library."""
        decided = await self.decide(request)
        await self.store.audit.append_audit(
            person_id=request.person_id,
            kind="decision",
            actor=actor or f"agent:{request.task_id}",
            data={
                "tool": request.tool,
                "verdict": decided.verdict.value,
                "basis": decided.basis,
                "reason": decided.reason,
                "wake": request.wake_reason,
                "audience": str(request.audience),
                "untrusted_args": request.untrusted_args,
                **({"data": list(request.data_classes)} if request.data_classes else {}),
                **({"charged": decided.charge} if decided.charge is not None else {}),
            },
            now=self.clock.now(),
        )
        return decided
