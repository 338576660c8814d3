"""The facade's web-watch part: setting up, listing, pausing and removing watched pages.

Everything is checked at the door — the URL, the selector's syntax, the conditions, the
interval (at least :data:`~steward.domain.webwatch.MIN_INTERVAL_SECONDS`), the goal — and a
refused watch stores nothing. A watch that wakes a goal comes with that goal's event trigger
on its ``web.changed`` events (matched by the watch's id), made in the same transaction; the
trigger's task is an agent task that is given the event, old and new values included, as
someone else's text.
"""

from __future__ import annotations

from collections.abc import Sequence

from steward.domain.ids import new_id
from steward.domain.tokens import CONTROL, READ
from steward.domain.webwatch import Condition, Extract, Reading, WebWatch
from steward.service.ids import IdService


class WebWatchService(IdService):
    async def add_watch(
        self,
        *,
        person_id: str,
        url: str,
        extract: Extract,
        conditions: Sequence[Condition] = (),
        every_seconds: float = 3600.0,
        name: str = "",
        goal_id: str | None = None,
        jitter_seconds: float | None = None,
    ) -> WebWatch:
        """Watch ``url``: read ``extract`` every ``every_seconds`` (± jitter: a tenth of the
        interval, at most 10 minutes, unless given) and tell the person — and wake
        ``goal_id``, if given — when all ``conditions`` hold (none: when it changes)."""
        from steward.connectors.web.watchplan import make_watch, plan_watch

        person = await self.store.persons.get_person(self._for(person_id, CONTROL))
        plan = plan_watch(
            url=url,
            extract=extract,
            conditions=conditions,
            every_seconds=every_seconds,
            name=name,
            jitter_seconds=jitter_seconds,
        )
        if goal_id is not None:
            await self._goal(goal_id, CONTROL)  # the store checks it is this person's
        watch, trigger = make_watch(
            plan,
            person_id=person.id,
            goal_id=goal_id,
            now=self.clock.now(),
            watch_id=new_id("wch"),
            trigger_id=new_id("trg"),
        )
        created = await self.store.webwatches.create(watch, trigger)
        self._nudge(scheduler=True)
        return created

    async def list_watches(self, *, person_id: str | None = None) -> list[WebWatch]:
        return await self.store.webwatches.list_for(self._mine(READ, person_id))

    async def get_watch(self, watch_id: str) -> WebWatch:
        return await self._watch(watch_id, READ)

    async def find_watch(self, ref: str, *, person_id: str | None = None) -> WebWatch:
        """The person's watch with id (or enough of its start) or name ``ref`` (names compared
        ignoring case)."""
        return await self._watch(await self.resolve_id(ref, "wch", person_id=person_id), READ)

    async def watch_history(self, watch_id: str, *, limit: int = 1000) -> list[Reading]:
        """The watch's values over time, oldest first."""
        await self._watch(watch_id, READ)
        return await self.store.webwatches.readings(watch_id, limit=max(1, min(limit, 1000)))

    async def set_watch_enabled(self, watch_id: str, enabled: bool) -> WebWatch:
        """Pause a watch (and its goal trigger), or resume it: checked again at once."""
        await self._watch(watch_id, CONTROL)
        watch = await self.store.webwatches.set_enabled(
            watch_id, enabled=enabled, now=self.clock.now()
        )
        self._nudge(scheduler=True)
        return watch

    async def remove_watch(self, watch_id: str) -> WebWatch:
        """Remove a watch and its history; its goal trigger is disabled."""
        await self._watch(watch_id, CONTROL)
        return await self.store.webwatches.delete(watch_id)

    async def _watch(self, watch_id: str, scope: str) -> WebWatch:
        self._may(scope)
        watch = await self.store.webwatches.get(watch_id)
        self._owned("watch", watch_id, watch.person_id)
        return watch
