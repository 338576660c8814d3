"""The facade's ids part: what a person types in place of a whole id, completed.

An argument that starts with a kind's prefix and ``_`` (``gol_01a2c``) is an id, whole or the
start of one that names only one of the caller's objects; anything else is a name, for the
kinds whose objects have one the person gave (a goal's title; a trigger's, skill's, channel's,
connection's, token's or watch's name), compared ignoring case.
"""

from __future__ import annotations

from collections.abc import Callable

from steward.domain.ids import new_id
from steward.domain.skill import skill_name
from steward.domain.tokens import READ
from steward.errors import NoneStartsWith, NotFound, UsageError
from steward.service.base import ServiceBase

ID_KINDS = {
    "gol": "goal",
    "tsk": "task",
    "trg": "trigger",
    "apr": "approval",
    "eff": "effect",
    "mem": "memory",
    "mps": "memory pass",
    "skl": "skill",
    "chn": "channel",
    "con": "connection",
    "tok": "token",
    "grt": "grant",
    "rul": "rule",
    "wch": "watch",
}
"""The kinds of id :meth:`IdService.resolve_id` completes, in plain words, by the prefix their
ids start with (the store's :data:`steward.store.ids.KINDS`)."""
NAME_FORMS: dict[str, Callable[[str], str]] = {"skl": skill_name}
"""How a typed name is written before it is compared, for kinds that keep names in one form
(a skill's ``Fetch invoice total`` is ``fetch-invoice-total``); others: words single-spaced."""
MEMORY_ID_LENGTH = len("mem_") + 20
"""A memory's id is ``mem_`` and 20 hex digits (:mod:`steward.memory.book`), not a
:func:`~steward.domain.ids.new_id`: how long a whole one is."""
AMBIGUOUS_SHOWN = 5
"""How many of the objects an ambiguous prefix or name matches are named in the refusal."""


class IdService(ServiceBase):
    async def resolve_id(
        self, ref: str, kind: str | None = None, *, person_id: str | None = None
    ) -> str:
        """The whole id of the caller's object that ``ref`` names: an id or the start of one
        (``gol_01a2c``), or, when ``kind`` (a prefix, ``gol``) has names, its name. ``kind``
        also refuses an id of another kind. ``person_id`` limits the search to that person's
        (a bound service: always its own)."""
        from steward.store.ids import KINDS

        if kind is not None and kind not in ID_KINDS:
            raise UsageError(f"unknown kind of id {kind!r}")
        owner = self._mine(READ, person_id)
        prefix, sep, _ = ref.partition("_")
        if sep and prefix in ID_KINDS:
            if kind is not None and prefix != kind:
                raise UsageError(
                    f"{ref!r} is {_a(ID_KINDS[prefix])}'s id; give {_a(ID_KINDS[kind])} ({kind}_…)"
                )
            return await self._by_prefix(prefix, ref, owner)
        if kind is not None and KINDS[kind].name is not None:
            return await self._by_name(kind, ref, owner)
        if kind is not None:
            raise UsageError(f"{ref!r} is not {_a(ID_KINDS[kind])}'s id: it starts with {kind}_")
        kinds = ", ".join(f"{k}_ ({what})" for k, what in ID_KINDS.items())
        raise UsageError(f"{ref!r} is not an id: a shortened id starts with {kinds}")

    async def _by_prefix(self, kind: str, prefix: str, owner: str | None) -> str:
        found = await self.store.ids.starting_with(
            kind, prefix, person_id=owner, limit=AMBIGUOUS_SHOWN + 1
        )
        if prefix in found or len(found) == 1:
            return prefix if prefix in found else found[0]
        what = ID_KINDS[kind]
        if not found:
            # a whole id is not found like anywhere else; a shortened one says it is a prefix
            whole = len(prefix) >= (MEMORY_ID_LENGTH if kind == "mem" else len(new_id(kind)))
            raise NotFound(what, prefix) if whole else NoneStartsWith(what, prefix)
        shown = ", ".join(found[:AMBIGUOUS_SHOWN]) + (", …" if len(found) > AMBIGUOUS_SHOWN else "")
        raise UsageError(f"more than one {what} starts with {prefix!r}: {shown}; give more of it")

    async def _by_name(self, kind: str, name: str, owner: str | None) -> str:
        form = NAME_FORMS.get(kind)
        wanted = (form(name) if form else " ".join(name.split())).casefold()
        named = await self.store.ids.names(kind, person_id=owner)
        found = [(i, n) for i, n in named if n.casefold() == wanted]
        what = ID_KINDS[kind]
        if not found:
            raise NotFound(what, name)
        if len(found) == 1:
            return found[0][0]
        shown = ", ".join(i for i, _ in found[:AMBIGUOUS_SHOWN])
        more = ", …" if len(found) > AMBIGUOUS_SHOWN else ""
        raise UsageError(
            f"more than one {what} is called {name!r}: {shown}{more}; give its id (or enough of "
            "its start)"
        )


def _a(what: str) -> str:
    return f"{'an' if what[0] in 'aeiou' else 'a'} {what}"
