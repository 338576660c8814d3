"""The facade's foundation: who is asking, and the checks every method makes.

A service acts for a :class:`Principal` or, with none, for the machine's owner at a local
console (who holds the database anyway). :meth:`ServiceBase.authenticate` turns an API token
into a service bound to the token's person and scopes: every method then acts for that person
only — an id of anyone else's goal, task, trigger, approval, notification, effect, grant, rule,
connection, secret or token is :class:`~steward.errors.NotFound`, exactly like an id that does
not exist — and needs the token's ``read`` or ``control`` scope
(:class:`~steward.errors.Forbidden` otherwise). A few maintenance operations over everyone's
data (pruning history, verifying the whole audit chain, rotating the vault key) are the
owner's only.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, Self

from steward.domain import (
    ApiToken,
    Approval,
    Goal,
    Person,
    Task,
    Trigger,
)
from steward.domain.clock import Clock
from steward.domain.tokens import READ, require_scope
from steward.errors import ConfigError, Forbidden, NotFound, UsageError

# the memory book, the vault and the store are imported where they are used: a client of a
# server's facade (the CLI's remote mode) loads the facade for its signatures alone
if TYPE_CHECKING:
    from steward.memory.book import MemoryBook
    from steward.memory.embedding import Embedder
    from steward.memory.rerank import Reranker
    from steward.sentinel.vault import Vault
    from steward.store import Store


@dataclass(kw_only=True, frozen=True)
class Principal:
    """Who a bound service acts for: a person, through an API token."""

    person_id: str
    """The token's person: the only one whose data the service touches."""
    token: ApiToken
    """The token, with its scopes (``read``, ``control``)."""

    @property
    def actor(self) -> str:
        """How decisions made through it are recorded (never the token's secret)."""
        return f"token:{self.token.id}"


class WorkNotifier(Protocol):
    """What the facade needs of an in-process runtime
    (:class:`~steward.runtime.runtime.Runtime`): to hear that work arrived."""

    def notify_work(self) -> None: ...

    def notify_scheduler(self) -> None: ...


class ServiceBase:
    """State and checks shared by the facade's parts."""

    def __init__(
        self,
        store: Store,
        clock: Clock | None = None,
        runtime: WorkNotifier | None = None,
        *,
        principal: Principal | None = None,
        data_dir: Path | None = None,
        embedder: Embedder | None = None,
        reranker: Reranker | None = None,
        task_kinds: Collection[str] | Callable[[], Collection[str]] | None = None,
        no_model: bool = False,
    ) -> None:
        self.store = store
        self.clock = clock or Clock()
        self.runtime = runtime
        """An in-process :class:`~steward.runtime.runtime.Runtime` to nudge, if any."""
        self.principal = principal
        """Who it acts for; None: the machine's owner, for anyone."""
        self.data_dir = data_dir
        """Where the vault's key file lives (None: no vault)."""
        self.embedder = embedder
        """Embeds memories for semantic recall (None: lexical only)."""
        self.reranker = reranker
        """Takes a second look at the person's memory searches (None: the fused order)."""
        self._task_kinds: frozenset[str] | Callable[[], Collection[str]] | None = (
            task_kinds if task_kinds is None or callable(task_kinds) else frozenset(task_kinds)
        )
        self.no_model = no_model
        """This process runs agent tasks without a model configured: the dashboard says so,
        and how to set one."""

    @cached_property
    def memory(self) -> MemoryBook:
        """The person's memories, with the rules every write follows."""
        from steward.memory.book import MemoryBook

        return MemoryBook(self.store, self.clock, embedder=self.embedder, reranker=self.reranker)

    @property
    def task_kinds(self) -> frozenset[str] | None:
        """The task kinds the workers run (``steward.app.task_kinds``): a new task or trigger
        of another kind is refused (None: not checked, for tests that run no worker). Given as
        a callable, it is asked the first time a task is checked: a command that only reads
        does not import the harnesses that name them."""
        if callable(self._task_kinds):
            self._task_kinds = frozenset(self._task_kinds())
        return self._task_kinds

    # --- who is asking ------------------------------------------------------------------

    async def authenticate(self, token: str) -> Self:
        """A service bound to the person and scopes of ``token`` (stored hashed; a missing,
        unknown or revoked token is :class:`~steward.errors.Unauthorized`)."""
        found = await self.store.tokens.authenticate(token, now=self.clock.now())
        return type(self)(
            self.store,
            self.clock,
            self.runtime,
            principal=Principal(person_id=found.person_id, token=found),
            data_dir=self.data_dir,
            embedder=self.embedder,
            reranker=self.reranker,
            task_kinds=self._task_kinds,
            no_model=self.no_model,
        )

    def _may(self, scope: str) -> None:
        if self.principal is not None:
            require_scope(self.principal.token, scope)

    def _for(self, person_id: str | None, scope: str) -> str:
        """The person to act for: a bound service's own (naming anyone else is not found)."""
        self._may(scope)
        if self.principal is None:
            if not person_id:
                raise UsageError("say which person to act for")
            return person_id
        if person_id and person_id != self.principal.person_id:
            raise NotFound("person", person_id)
        return self.principal.person_id

    def _mine(self, scope: str, person_id: str | None = None) -> str | None:
        """Whose data a listing is limited to: a bound service's own person's (naming anyone
        else is not found); for the owner, ``person_id``'s (None: everyone's)."""
        if self.principal is None:
            self._may(scope)
            return person_id
        return self._for(person_id, scope)

    def _owned(self, kind: str, object_id: str, person_id: str) -> None:
        if self.principal is not None and person_id != self.principal.person_id:
            raise NotFound(kind, object_id)

    def _owner_only(self, what: str) -> None:
        if self.principal is not None:
            raise Forbidden(f"{what} is for the machine's owner, not an API token")

    async def _goal(self, goal_id: str, scope: str) -> Goal:
        self._may(scope)
        goal = await self.store.goals.get_goal(goal_id)
        self._owned("goal", goal_id, goal.person_id)
        return goal

    async def _task(self, task_id: str, scope: str) -> Task:
        self._may(scope)
        task = await self.store.tasks.get_task(task_id)
        self._owned("task", task_id, task.person_id)
        return task

    async def _trigger(self, trigger_id: str, scope: str) -> Trigger:
        self._may(scope)
        trigger = await self.store.schedule.get_trigger(trigger_id)
        self._owned("trigger", trigger_id, trigger.person_id)
        return trigger

    async def _approval(self, approval_id: str, scope: str) -> Approval:
        self._may(scope)
        approval = await self.store.inbox.get_approval(approval_id)
        self._owned("approval", approval_id, approval.person_id)
        return approval

    async def _vault(self) -> Vault:
        if self.data_dir is None:
            raise ConfigError("no data directory is configured, so there is no vault key")
        from steward.sentinel.vault import Vault, VaultKeys

        stored = await self.store.secrets.count_secrets()
        return Vault(VaultKeys.load(self.data_dir, stored_secrets=stored))

    def _decider(self, given: str) -> str:
        return given if self.principal is None else self.principal.actor

    # --- persons ------------------------------------------------------------------------

    async def ensure_person(self, name: str = "me") -> Person:
        """The person to act for: the first one, created on first use (a bound service's own
        person)."""
        if self.principal is not None:
            return await self.person(None)
        persons = await self.store.persons.list_persons()
        if persons:
            return persons[0]
        return await self.store.persons.create_person(name=name, now=self.clock.now())

    async def person(self, person_id: str | None) -> Person:
        if self.principal is not None:
            return await self.store.persons.get_person(self._for(person_id, READ))
        if person_id:
            return await self.store.persons.get_person(person_id)
        return await self.ensure_person()

    def _nudge(self, *, scheduler: bool = False) -> None:
        if self.runtime is None:
            return
        self.runtime.notify_work()
        if scheduler:
            self.runtime.notify_scheduler()
