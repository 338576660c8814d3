"""``steward demo``: see the whole system work in a minute, offline, without an API key."""

from __future__ import annotations

from pathlib import Path

import typer

from steward.cli.common import console, run


def demo(
    port: int | None = typer.Option(
        None, help="Serve the API and dashboard here (0: any; default 8470)."
    ),
    data_dir: Path | None = typer.Option(
        None,
        "--data-dir",
        help="The demo's own directory, wiped on each run (default: 'demo' in the user data "
        "directory; never your database).",
    ),
    seconds: float | None = typer.Option(None, help="Stop after this many seconds."),
    every: float | None = typer.Option(
        None, help="Seconds between scheduled inbox checks (default 20)."
    ),
    notify: str | None = typer.Option(
        None,
        help="An Apprise address (ntfys://ntfy.sh/my-topic, tgram://…) the demo's reports also "
        "reach, as a channel of the demo's person: the only thing that leaves this machine.",
    ),
    private_network: bool = typer.Option(
        False, "--private-network", help="The --notify service runs on this machine or network."
    ),
) -> None:
    """Run a self-contained demo: a person, goals, approvals, memories and skills, a fake mail
    service and a scripted model, with the dashboard; nothing leaves this machine (but the
    reports, with --notify)."""
    # the demo (its web server, its scripted model) is imported only when it runs
    from steward.demo import DemoOptions, default_demo_dir, run_demo
    from steward.demo.run import DEFAULT_EVERY, DEFAULT_PORT

    options = DemoOptions(
        data_dir=data_dir or default_demo_dir(),
        port=DEFAULT_PORT if port is None else port,
        every=DEFAULT_EVERY if every is None else every,
        notify=notify,
        notify_private_network=private_network,
    )

    async def main() -> None:
        await run_demo(
            options,
            seconds=seconds,
            say=lambda line: console.print(line, soft_wrap=True, highlight=False, markup=False),
            handle_signals=True,
        )

    run(main)
