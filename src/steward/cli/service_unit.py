"""``steward service install|uninstall``: ``steward up`` as a systemd service (the person's own,
``--user``, or the machine's, ``--system``), started at boot and restarted after a failure.

A stop is systemd's SIGTERM: ``steward up`` then hands back the tasks it holds, each resumed
from its last checkpoint by the next start (nothing is lost). The unit is hardened where that
cannot break Steward: the whole file system read-only except the data directory (SQLite and its
WAL, the workspace, the log), a private /tmp, no privilege gains."""

from __future__ import annotations

import getpass
import os
import shutil
import sys
from pathlib import Path

import typer

UNIT = "steward.service"
STOP_SECONDS = 60
"""How long systemd waits for a stop before killing: a step in flight gets to finish."""
_CARRIED = ("STEWARD_DATA_DIR", "STEWARD_CONFIG")
"""Set in the environment ``install`` runs in, the service gets them too (the rest of the
settings are read from the config file in the data directory)."""

service_app = typer.Typer(help="Run `steward up` as a systemd service.", no_args_is_help=True)
UserOption = typer.Option(
    True, "--user/--system", help="The person's own (default), or the machine's."
)


@service_app.command("install")
def install(
    user: bool = UserOption,
    print_only: bool = typer.Option(False, "--print", help="Only print the unit."),
) -> None:
    """Write the systemd unit for `steward up` and say how to start it."""
    from steward.config import Settings, config_file, private_data_dir

    settings = Settings()
    private_data_dir(settings)  # systemd refuses to start a unit whose writable path is missing
    writable = [settings.data_dir]
    database = settings.resolved_database_url()
    if database.startswith("sqlite:///"):  # a database kept elsewhere, and its WAL beside it
        writable.append(Path(database.removeprefix("sqlite:///")).parent)
    unit = unit_text(settings.data_dir, writable=writable, config=config_file(), user=user)
    if print_only:
        typer.echo(unit, nl=False)
        return
    path = unit_dir(user=user) / UNIT
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(unit)
    except PermissionError:
        typer.echo(
            f"error: {path} is not writable by you; write it with: "
            f"steward service install --system --print | sudo tee {path}",
            err=True,
        )
        raise typer.Exit(1) from None
    ctl, journal = _commands(user)
    typer.echo(f"wrote {path}")
    typer.echo("start it now and at every boot:")
    typer.echo(f"  {ctl} daemon-reload && {ctl} enable --now steward")
    typer.echo(f"its state: {ctl} status steward")
    typer.echo(f"its output: {journal} -u steward -f  (or: steward logs -f)")
    if user:
        linger = f"loginctl enable-linger {getpass.getuser()}"
        typer.echo(f"to keep it running while you are logged out: {linger}")
    shell_only = sorted(n for n in os.environ if n.startswith("STEWARD_") and n not in _CARRIED)
    if shell_only:
        typer.echo(
            f"not passed to the service (set only in this shell): {', '.join(shell_only)}; put "
            f"them in {config_file()} (or as NAME=value lines in "
            f"{settings.data_dir / 'steward.env'})"
        )


@service_app.command("uninstall")
def uninstall(user: bool = UserOption) -> None:
    """Remove the systemd unit (stop and disable it first)."""
    directory = unit_dir(user=user)
    path = directory / UNIT
    ctl, _ = _commands(user)
    if any(directory.glob(f"*.wants/{UNIT}")):
        typer.echo(
            f"error: the service is enabled; first run: {ctl} disable --now steward", err=True
        )
        raise typer.Exit(1)
    if not path.exists():
        typer.echo(f"no unit at {path}: nothing to remove")
        return
    try:
        path.unlink()
    except PermissionError:
        typer.echo(f"error: {path} is not yours to remove; run: sudo rm {path}", err=True)
        raise typer.Exit(1) from None
    typer.echo(f"removed {path}; then run: {ctl} daemon-reload")


def unit_dir(*, user: bool) -> Path:
    """Where systemd reads a unit: the person's (``~/.config/systemd/user``) or the machine's."""
    if not user:
        return Path("/etc/systemd/system")
    config = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(config) / "systemd" / "user"


def unit_text(data_dir: Path, *, writable: list[Path], config: Path, user: bool) -> str:
    """The unit that runs ``steward up`` on ``data_dir`` (``config``: its settings file), able
    to write only under ``writable``."""
    data = data_dir.resolve()
    paths = dict.fromkeys(str(p.resolve()) for p in writable)
    environment = {"STEWARD_DATA_DIR": str(data)}
    if "STEWARD_CONFIG" in os.environ:
        environment["STEWARD_CONFIG"] = str(config.resolve())
    lines = [
        "[Unit]",
        "Description=Steward, a self-hosted personal agent",
        "Wants=network-online.target",
        "After=network-online.target",
        "",
        "[Service]",
        "Type=exec",
        f"ExecStart={_quoted(_steward())} up",
        f"WorkingDirectory={data}",  # one path: taken as it is, spaces included
        *(f"Environment={_quoted(f'{k}={v}')}" for k, v in environment.items()),
        # settings that should not sit in a unit file (an API key), if the person keeps them here
        f"EnvironmentFile=-{data / 'steward.env'}",
        # the runtime hands back its tasks on SIGTERM; the next start resumes them
        "KillSignal=SIGTERM",
        f"TimeoutStopSec={STOP_SECONDS}",
        "Restart=on-failure",
        "RestartSec=5",
        "NoNewPrivileges=yes",
        "ProtectSystem=strict",
        f"ReadWritePaths={' '.join(_quoted(p) for p in paths)}",
        "PrivateTmp=yes",
    ]
    if not user:
        lines.append(f"User={getpass.getuser()}")
    lines += ["", "[Install]", f"WantedBy={'default' if user else 'multi-user'}.target", ""]
    return "\n".join(lines)


def _steward() -> str:
    """The ``steward`` of this installation (its virtual environment's), by absolute path."""
    beside = Path(sys.executable).parent / "steward"
    found = str(beside) if beside.exists() else shutil.which("steward")
    if found is None:
        raise typer.BadParameter("no `steward` executable found beside this Python or on PATH")
    return str(Path(found).absolute())


def _quoted(value: str) -> str:
    """``value`` as one systemd word (quoted when it holds a space or a quote)."""
    if not any(c.isspace() or c in "\"'\\" for c in value):
        return value
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _commands(user: bool) -> tuple[str, str]:
    return ("systemctl --user", "journalctl --user") if user else ("sudo systemctl", "journalctl")
