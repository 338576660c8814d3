"""The agent's ``watch_page`` tool: a goal set up from conversation watches a page ("tell me
when the tent is under 200") with the same rules as ``steward watch add``
(:mod:`~steward.connectors.web.watchplan`).

Like the other goal tools (:mod:`steward.harness.goalsetup`) it is an action the person is
asked about by default, its arguments are checked before they are asked, and it runs through
the effect journal: the watch's and its trigger's ids derive from the effect key, so a replayed
call finds the watch the first one made.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Annotated, Any, Literal

from pydantic import Field

from steward.connectors.web.watchplan import WatchPlan, make_watch, plan_watch
from steward.domain.actions import EffectClass
from steward.domain.clock import Clock
from steward.domain.roles import Role
from steward.domain.webwatch import Condition, Extract, Extractor, every, parse_interval
from steward.errors import NotFound, UsageError
from steward.harness.tools import Tool, ToolArgumentError, ToolContext, ToolError, tool
from steward.runtime.standing import StandingWork, derived_id
from steward.store import Store

_CONDITIONS = (
    'When it matters, all must hold: {"kind": "below"|"above", "threshold": "200"}, '
    '{"kind": "contains"|"lacks", "text": "In stock"}, {"kind": "present"|"absent"} or '
    '{"kind": "changed"}; none: whenever the value changes.'
)


def _plan(args: Mapping[str, Any]) -> WatchPlan:
    """The watch the arguments ask for, checked (ToolArgumentError says what is wrong)."""
    try:
        conditions = [Condition.from_json(dict(c)) for c in args.get("conditions") or []]
    except (KeyError, ValueError, ArithmeticError) as exc:
        raise ToolArgumentError(f"a condition is not one of the kinds listed: {exc}") from exc
    try:
        return plan_watch(
            url=str(args["url"]),
            extract=Extract(how=Extractor(args.get("read", "text")), expr=args.get("selector")),
            conditions=conditions,
            every_seconds=parse_interval(str(args.get("every", "1h"))),
            name=str(args.get("name") or ""),
        )
    except (UsageError, ValueError) as exc:
        raise ToolArgumentError(str(exc)) from exc


def _summary(args: Mapping[str, Any]) -> str:
    plan = _plan(args)
    wanted = " and ".join(c.describe() for c in plan.conditions) or "it changes"
    return (
        f"Watch {plan.url} for your goal '{args['goal']}': {plan.extract.describe()}, checked "
        f"{every(plan.interval_seconds)}; wake the goal when {wanted}."
    )


def watch_page_tool(store: Store, work: StandingWork, clock: Clock) -> Tool:
    """``watch_page`` over ``store`` (``work`` finds the person's goal by title or id)."""

    @tool(name="watch_page", effect=EffectClass.EXTERNAL, idempotent=True)
    async def watch_page(
        ctx: ToolContext,
        goal: Annotated[
            str, Role.IDENTIFIER, Field(description="The goal's title (or id) to wake.")
        ],
        url: Annotated[str, Role.HOST, Field(description="The page (https).")],
        read: Annotated[
            Literal["text", "css", "xpath", "json"],
            Field(description="What to read: the page's text, or an element by selector."),
        ] = "text",
        selector: Annotated[
            str | None, Role.IDENTIFIER, Field(description="CSS selector, XPath or JSON path.")
        ] = None,
        conditions: Annotated[
            list[dict[str, str]] | None, Role.FREE_TEXT, Field(description=_CONDITIONS)
        ] = None,
        every: Annotated[
            str, Role.TIME, Field(description="How often to check: 15m, 1h, 1d.")
        ] = "1h",
        name: Annotated[str, Role.FREE_TEXT, Field(description="What to call it.")] = "",
    ) -> dict[str, Any]:
        """Watch a web page for a standing goal and wake the goal when it changes the way
        the person cares about (a price below a number, a text appearing)."""
        plan = _plan(
            {
                "url": url,
                "read": read,
                "selector": selector,
                "conditions": conditions,
                "every": every,
                "name": name,
            }
        )
        assert ctx.idempotency_key is not None  # a journalled tool always runs under a key
        watch_id = derived_id("wch", ctx.idempotency_key)
        try:
            made = await store.webwatches.get(watch_id)
        except NotFound:
            try:
                found = await work.live_goal(ctx.person_id, goal)
            except UsageError as exc:
                raise ToolError(str(exc)) from None
            watch, trigger = make_watch(
                plan,
                person_id=ctx.person_id,
                goal_id=found.id,
                now=clock.now(),
                watch_id=watch_id,
                trigger_id=derived_id("trg", ctx.idempotency_key),
            )
            made = await store.webwatches.create(watch, trigger)
        return {"watch_id": made.id, "name": made.name, "goal_id": made.goal_id}

    validate_schema = watch_page.validate

    def validate(args: dict[str, Any]) -> dict[str, Any]:
        checked = validate_schema(args)
        _plan(checked)
        return checked

    return replace(watch_page, validate=validate, summarize=_summary)
