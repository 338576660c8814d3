"""Talking to the agent from a terminal: ``steward ask``, ``steward chat``, approvals, the inbox
and answers to a waiting task.

``ask`` and ``chat`` follow the task's journal in the store, so they show the same steps
whichever process runs the task: a ``steward up`` (or worker) registered on the same database that
can run agent tasks, or else a runtime in this process.
"""

from __future__ import annotations

import asyncio
import json
import sys
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, TypeVar

import typer
from rich.markup import escape
from rich.text import Text

from steward.cli.common import (
    AudienceOption,
    DbOption,
    JsonOption,
    PersonOption,
    as_caller,
    console,
    emit,
    run,
    service,
)
from steward.domain import ApprovalStatus, Step, Task, TaskStatus
from steward.domain.audience import Audience
from steward.errors import UsageError

if TYPE_CHECKING:
    from steward.service import Service

T = TypeVar("T")
approval_app = typer.Typer(help="Approvals the agent is waiting for.", no_args_is_help=True)
POLL_SECONDS = 0.2


@asynccontextmanager
async def _live(db: str | None) -> AsyncIterator[Service]:
    """A service with a runtime running in this process (or a server's, which runs tasks
    itself)."""
    from steward.app import (
        build_harness,
        process_identity,
        server_runs_agents,
        task_kinds,
    )
    from steward.cli.remote import remote_login, remote_service
    from steward.config import Settings, private_data_dir
    from steward.domain.clock import Clock
    from steward.memory.embedding import embedder_from
    from steward.runtime.runtime import Runtime, RuntimeConfig
    from steward.service import Service
    from steward.store import Store

    login = remote_login(db)
    if login is not None:
        async with remote_service(login) as remote:
            yield remote
        return
    settings = Settings()
    private_data_dir(settings)
    store = await Store.open(db or settings.resolved_database_url())
    clock = Clock()

    try:
        svc = await as_caller(
            Service(
                store,
                clock,
                data_dir=settings.data_dir,
                embedder=embedder_from(settings),
                task_kinds=task_kinds(),
            )
        )
        if server_runs_agents(await svc.status()):
            # a server (or worker) on this database runs agent tasks: this command only
            # enqueues and follows the journal, with no worker of its own to take them
            yield svc
            return
        # no token streaming here: this runtime may run other tasks (and persons) too, and
        # steps are shown from the journal whichever process runs them
        harness = await build_harness(settings, store, clock)
        runtime = Runtime(
            store,
            harness,
            clock,
            RuntimeConfig(poll_seconds=0.5),
            identity=process_identity(settings, harness, cli=True),
        )
        svc.runtime = runtime
        running = asyncio.create_task(runtime.run())
        try:
            yield svc
        finally:
            runtime.stop()
            await running
    finally:
        await store.close()


async def _in_thread(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """A blocking terminal read in a daemon thread: unlike ``asyncio.to_thread``, whose
    executor is joined at exit, it cannot keep the process alive after Ctrl-C."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()

    def settle(value: Any, error: BaseException | None) -> None:
        if future.done():
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(value)

    def read() -> None:
        try:
            value = fn(*args, **kwargs)
        except BaseException as exc:  # EOF, Ctrl-C at the prompt: re-raised in the loop
            loop.call_soon_threadsafe(settle, None, exc)
        else:
            loop.call_soon_threadsafe(settle, value, None)

    threading.Thread(target=read, daemon=True).start()
    return await future


def _short(text: str, width: int = 300) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= width else text[: width - 1] + "…"


def _show_step(step: Step) -> None:
    out: dict[str, Any] = step.output if isinstance(step.output, dict) else {}
    if step.kind == "model":
        response = out.get("response", {})
        if response.get("content"):
            console.print(Text(str(response["content"]), style="cyan"))
        for call in response.get("tool_calls", []):
            console.print(
                Text(f"  → {call['name']}({_short(call['arguments'], 200)})", style="yellow")
            )
    elif step.kind == "tool":
        style = "red" if out.get("error") else "green"
        console.print(
            Text(f"  ← {out.get('name')}: {_short(out.get('observation', ''))}", style=style)
        )
    elif step.kind == "summary":
        console.print(f"  (compacted steps up to #{out.get('through')})", style="dim")


async def _follow(svc: Service, task_id: str, *, interactive: bool, after: int = 0) -> Task:
    """Print the task's steps as they are committed; answer its questions and approvals at the
    terminal when ``interactive``. Returns the task once it ends or waits on something the
    terminal cannot give."""
    seen = after
    tried: int | None = None
    while True:
        for step in await svc.steps(task_id, after=seen):
            _show_step(step)
            seen = step.seq
        task = await svc.get_task(task_id)
        if task.status.terminal:
            return task
        if tried is not None and task.attempts > tried:
            _show_retry(task)
        tried = task.attempts
        if task.status is TaskStatus.WAITING and task.wait is not None:
            kind = task.wait.kind
            if kind == "approval" and interactive and task.wait.ref:
                await _decide_at_terminal(svc, task.wait.ref)
            elif kind == "input" and interactive and not _chat_reply(task):
                answer = await _in_thread(typer.prompt, f"? {task.wait.prompt or 'answer'}")
                await svc.answer_task(task_id, answer)
            elif kind != "children":  # its subtasks run here too: keep following
                return task
        await asyncio.sleep(POLL_SECONDS)


def _show_retry(task: Task) -> None:
    """An attempt failed and the task will be tried again: say why, and when (rather than stay
    silent through the backoff)."""
    when = task.run_at.astimezone().strftime("%H:%M:%S")
    console.print(
        Text(
            f"  attempt {task.attempts} of {task.max_attempts} failed: {_short(task.error or '')}"
            f"; trying again at {when}",
            style="yellow",
        )
    )


def _chat_reply(task: Task) -> bool:
    return task.input.get("mode") == "chat" and (task.state.get("waiting") or {}).get("kind") == (
        "reply"
    )


async def _decide_at_terminal(svc: Service, approval_id: str) -> None:
    item = await svc.get_approval(approval_id)
    if item.status is not ApprovalStatus.PENDING:
        return
    # others' text (a subject, a recipient) is printed as text, never read as Rich markup
    console.print(Text.assemble(("approve? ", "bold"), item.headline))
    for name, values in item.targets:
        console.print(Text(f"  {name}: {', '.join(values)}"))
    console.print(Text(f"  why I ask: {item.reason}"))
    exact = f"  exactly: {item.tool}({json.dumps(item.args, sort_keys=True)})"
    console.print(Text(exact, style="dim"))
    approve = await _in_thread(typer.confirm, "approve this exact action?", default=False)
    await svc.decide_approval(approval_id, approve=approve, decided_by="cli")


def _final(task: Task) -> None:
    if task.status is TaskStatus.SUCCEEDED:
        result = task.result or {}
        text = result.get("text") if isinstance(result, dict) else result
        console.print(f"\n[bold green]done[/bold green]: {escape(str(text))}")
        read = result.get("untrusted_sources") if isinstance(result, dict) else None
        if read:
            console.print(f"  written after reading others' text: {escape(', '.join(read))}")
    elif task.status is TaskStatus.DEAD_LETTERED:  # its error starts "gave up after N attempts"
        console.print(f"\n[bold red]{escape(str(task.error))}[/bold red]")
        raise typer.Exit(1)
    elif task.status.terminal:
        console.print(f"\n[bold red]{task.status.value}[/bold red]: {escape(str(task.error))}")
        raise typer.Exit(1)
    else:
        wait = task.wait
        what = f"{wait.kind} {wait.ref or ''}".strip() if wait else task.status.value
        console.print(f"\n[bold]task {task.id} is waiting ({what})[/bold]")
        if wait is not None and wait.kind == "approval":
            console.print(f"  approve: steward approval approve {wait.ref}")
        elif wait is not None and wait.kind == "input":
            console.print(f"  answer:  steward answer {task.id} '<your answer>'")


def ask(
    request: str = typer.Argument(..., help="What you want done."),
    goal: str | None = typer.Option(None, help="Run under this goal (its authority, budget)."),
    tool: list[str] | None = typer.Option(None, help="Only offer these tools (repeatable)."),
    max_steps: int | None = typer.Option(None, help="Step budget of each activation."),
    audience: str = AudienceOption,
    skill: str | None = typer.Option(
        None, help="Run this skill's workflow first, without a model (see `steward skill list`)."
    ),
    skill_input: list[str] | None = typer.Option(
        None, "--input", help="An input of the skill, name=value (repeatable)."
    ),
    person: str | None = PersonOption,
    db: str | None = DbOption,
) -> None:
    """Ask the agent to do something now, and follow its steps as they happen."""

    async def main() -> None:
        heard_by = Audience.parse(audience)  # a bad value fails before anything starts
        inputs = _inputs(skill_input or [])
        async with _live(db) as svc:
            who = await svc.person(person)
            task = await svc.ask_agent(
                skill=skill,
                inputs=inputs,
                person_id=who.id,
                instructions=request,
                goal_id=await svc.resolve_id(goal, "gol", person_id=who.id) if goal else None,
                tools=tool,
                budget={"max_steps": max_steps} if max_steps else None,
                audience=heard_by,
            )
            console.print(f"[dim]task {task.id}[/dim]")
            _final(await _follow(svc, task.id, interactive=sys.stdin.isatty()))

    run(main)


def _inputs(pairs: list[str]) -> dict[str, str]:
    """``name=value`` pairs as a dict (a bad pair is a usage error, before anything starts)."""
    found: dict[str, str] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name.strip():
            raise UsageError(f"bad --input {pair!r}: use name=value")
        found[name.strip()] = value
    return found


def chat(
    task_id: str | None = typer.Option(None, "--task", help="Continue this conversation."),
    audience: str = AudienceOption,
    person: str | None = PersonOption,
    db: str | None = DbOption,
) -> None:
    """A conversation with the agent (empty line or Ctrl-D to leave; it can be continued)."""

    async def main() -> None:
        heard_by = Audience.parse(audience)  # a bad value fails before anything starts
        async with _live(db) as svc:
            who = await svc.person(person)
            current = await svc.resolve_id(task_id, "tsk") if task_id else None
            seen = 0
            if current is not None:
                seen = (await svc.get_task(current)).step_seq
            while True:
                try:
                    line = (await _in_thread(input, "you> ")).strip()
                except EOFError:
                    line = ""
                if not line:
                    if current:
                        console.print(f"[dim]continue with: steward chat --task {current}[/dim]")
                    return
                if current is None:
                    task = await svc.ask_agent(
                        person_id=who.id, instructions=line, chat=True, audience=heard_by
                    )
                    current = task.id
                else:
                    await svc.answer_task(current, line)
                task = await _follow(svc, current, interactive=True, after=seen)
                seen = task.step_seq
                if task.status.terminal:
                    _final(task)
                    return

    run(main)


def answer(
    task_id: str,
    text: str = typer.Argument(..., help="Your answer."),
    db: str | None = DbOption,
) -> None:
    """Answer a task that waits for you (a question, a hand-off, a budget stop)."""

    async def main() -> None:
        async with service(db) as svc:
            whole = await svc.resolve_id(task_id, "tsk")
            await svc.answer_task(whole, text)
            console.print(f"answered; task {whole} resumes")

    run(main)


@approval_app.command("list")
def approval_list(
    all_: bool = typer.Option(False, "--all", help="Include decided ones."),
    person: str | None = PersonOption,
    db: str | None = DbOption,
    as_json: bool = JsonOption,
) -> None:
    """Approvals waiting for you."""

    async def main() -> None:
        async with service(db) as svc:
            who = await svc.person(person)
            items = await svc.list_approvals(
                person_id=who.id, status=None if all_ else ApprovalStatus.PENDING
            )
            emit(
                items,
                ["id", "headline", "status", "reason", "created_at", "expires_at"],
                as_json=as_json,
                title="approvals",
            )

    run(main)


def _decide_command(name: str, approve: bool, doc: str) -> None:
    @approval_app.command(name, help=doc)
    def command(
        approval_id: str,
        note: str | None = typer.Option(None, help="A comment the agent will see."),
        for_: str = typer.Option(
            "once",
            "--for",
            help="Approving also allows, for this tool and these recipients/hosts only: once, "
            "task (rest of this task), hours, always.",
        ),
        hours: float | None = typer.Option(None, help="With --for hours: how many."),
        db: str | None = DbOption,
    ) -> None:
        async def main() -> None:
            async with service(db) as svc:
                decided = await svc.decide_approval(
                    await svc.resolve_id(approval_id, "apr"),
                    approve=approve,
                    decided_by="cli",
                    note=note,
                    scope=for_ if approve else "once",
                    hours=hours,
                )
                console.print(
                    f"{decided.id}: {decided.status.value}; task {decided.task_id} resumes"
                )

        run(main)


_decide_command("approve", True, "Approve exactly the action that was asked about.")
_decide_command("deny", False, "Deny it; the agent is told.")


def inbox(
    unread: bool = typer.Option(False, help="Only unread."),
    person: str | None = PersonOption,
    db: str | None = DbOption,
    as_json: bool = JsonOption,
) -> None:
    """Notifications: questions, approvals, budget stops, hand-offs."""

    async def main() -> None:
        async with service(db) as svc:
            who = await svc.person(person)
            items = await svc.list_notifications(person_id=who.id, unread=unread)
            emit(
                items,
                ["created_at", "kind", "title", "task_id", "ref", "read_at"],
                as_json=as_json,
                title="inbox",
            )

    run(main)
