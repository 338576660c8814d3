"""The agent harness: runs tasks of kind ``agent`` one activation at a time.

An activation (``steward.harness.activation``) is a chain of small steps
(``steward.harness.steps``) over the task's typed, checkpointed state
(``steward.harness.state``): resume what the task waited for, ask the model, authorize and run
each call (``steward.harness.authorize``), carry out control directives
(``steward.harness.directives``), suspend (``steward.harness.suspend``) or finish.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from contextlib import AbstractAsyncContextManager

from steward.domain.actions import Sentinel
from steward.domain.outcome import Fail, Outcome
from steward.domain.personal import NoPersonalContext, PersonalContext
from steward.domain.task import Task
from steward.errors import UsageError
from steward.harness.activation import Activation
from steward.harness.config import AGENT_KIND, SYSTEM_PROMPT, AgentConfig
from steward.harness.control import control_tools
from steward.harness.steps import drive
from steward.harness.tools import Tool, ToolRegistry
from steward.harness.workspace import Workspace
from steward.models.base import Model, OnDelta
from steward.models.errors import ContextOverflow
from steward.runtime.harness import Harness
from steward.runtime.run import TaskRun
from steward.sentinel.defaults import DefaultSentinel

__all__ = ["AGENT_KIND", "SYSTEM_PROMPT", "AgentConfig", "AgentHarness"]


class AgentHarness:
    """Runs tasks of kind ``agent`` (others go to ``fallback``)."""

    def __init__(
        self,
        *,
        model: Model,
        workspace: Workspace,
        tools: ToolRegistry | Iterable[Tool] = (),
        sentinel: Sentinel | None = None,
        personal: PersonalContext | None = None,
        config: AgentConfig | None = None,
        summarizer: Model | None = None,
        fallback: Harness | None = None,
        on_delta: OnDelta | None = None,
        around: Callable[[Task], AbstractAsyncContextManager[None]] | None = None,
    ) -> None:
        self.model = model
        self.workspace = workspace
        registry = tools if isinstance(tools, ToolRegistry) else ToolRegistry(tools)
        for control in control_tools():
            if control.name not in registry:
                registry.add(control)
        self.tools = registry
        self.sentinel: Sentinel = sentinel or DefaultSentinel()
        self.personal: PersonalContext = personal or NoPersonalContext()
        self.config = config or AgentConfig()
        self.summarizer = summarizer
        """Model that writes compaction summaries; None: the deterministic summary."""
        self.fallback = fallback
        self.on_delta = on_delta
        self.around = around
        """Wraps each activation (the environment's: e.g. the person's browser, closed when
        the activation ends, is suspended or is cancelled)."""

    async def activate(self, run: TaskRun) -> Outcome:
        if run.task.kind != AGENT_KIND:
            if self.fallback is None:
                return Fail(reason=f"no harness for task kind {run.task.kind!r}")
            return await self.fallback.activate(run)
        try:
            if self.around is None:
                return await drive(Activation(self, run))
            async with self.around(run.task):
                return await drive(Activation(self, run))
        except (UsageError, ContextOverflow) as exc:
            # a bad key, an unknown model, a malformed task input, a prompt that cannot fit:
            # retrying cannot help
            return Fail(reason=str(exc))
