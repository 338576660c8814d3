"""How a folder connection is set up: which of the person's folders it reaches, each under a
name, and the time zone file times are shown in.

A root is given as ``NAME=/absolute/path`` or as an absolute path alone (then named by its last
part). It must exist and be a folder when the connection is made; its real path (symbolic links
in it resolved) is what is kept, so the connection keeps pointing where the person pointed it.
A form or a command line gives the roots as one comma-separated text.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from steward.config import config_file
from steward.connectors.base import ConnectionFailed, ConnectorEnv
from steward.domain.authority import Connection

MAX_ROOT_NAME = 80
"""The longest name of a root."""


@dataclass(kw_only=True, frozen=True)
class Root:
    """One folder of the person's that a connection reaches."""

    name: str
    """What paths start with (``Documents`` in ``Documents/taxes/2025.txt``)."""
    path: str
    """Its absolute real path on this machine."""
    identity: str
    """Which folder it was when connected (``device:inode``): one put in its place since
    (moved there, or a link to elsewhere) is not this folder."""


class FolderSettings(BaseModel):
    """Some of the person's folders on this machine."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    roots: tuple[str, ...] = Field(
        description="your folders, each NAME=/absolute/path or an absolute path (named by its "
        "last part), comma-separated",
    )
    time_zone: str = Field(
        default="UTC", description="IANA time zone the person reads times in (Europe/Paris)"
    )

    identities: tuple[str, ...] = Field(
        default=(),
        description="filled in when connecting: which folder each root was (device:inode), "
        "so that another one put in its place is noticed",
    )

    @field_validator("roots", mode="before")
    @classmethod
    def _split(cls, given: object) -> object:
        if isinstance(given, str):
            given = tuple(part.strip() for part in given.split(",") if part.strip())
        if not given:
            raise _refused("name at least one folder: NAME=/absolute/path")
        return given

    @field_validator("roots")
    @classmethod
    def _existing_folders(cls, given: tuple[str, ...]) -> tuple[str, ...]:
        roots = [_root(entry) for entry in given]
        names: dict[str, Root] = {}
        for root in roots:
            same = names.get(root.name.casefold())
            if same is not None:
                raise _refused(f"two folders are named {root.name}: name each NAME=/path")
            names[root.name.casefold()] = root
        for inner in roots:
            for outer in roots:
                if inner is not outer and inner.path.startswith(outer.path.rstrip("/") + "/"):
                    raise _refused(
                        f"{inner.name} is inside {outer.name}: its files would be seen twice"
                    )
                if inner is not outer and inner.path == outer.path:
                    raise _refused(f"{inner.name} and {outer.name} are the same folder")
        return tuple(f"{r.name}={r.path}" for r in roots)

    @field_validator("time_zone")
    @classmethod
    def _known_zone(cls, name: str) -> str:
        try:
            ZoneInfo(name)
        except (ZoneInfoNotFoundError, ValueError):
            raise _refused(f"unknown time zone {name!r} (use an IANA name)") from None
        return name

    @model_validator(mode="after")
    def _identified(self) -> FolderSettings:
        """Connecting: note which folder each root is now. Kept settings keep theirs."""
        if not self.identities:
            found = tuple(_identity(path) for _, _, path in (r.partition("=") for r in self.roots))
            object.__setattr__(self, "identities", found)  # frozen: set once, while made
        elif len(self.identities) != len(self.roots):
            raise _refused("each folder needs its identity: connect the folders again")
        return self

    @property
    def folders(self) -> tuple[Root, ...]:
        """The roots, as checked and kept."""
        return tuple(
            Root(name=name, path=path, identity=identity)
            for (name, _, path), identity in zip(
                (entry.partition("=") for entry in self.roots), self.identities, strict=True
            )
        )

    @property
    def zone(self) -> ZoneInfo:
        """The person's time zone."""
        return ZoneInfo(self.time_zone)

    def root(self, name: str) -> Root | None:
        """The root called ``name`` (case does not matter), if there is one."""
        wanted = name.casefold()
        return next((r for r in self.folders if r.name.casefold() == wanted), None)


def _refused(why: str) -> PydanticCustomError:
    """A settings error reading just ``why`` (a ValueError would read "Value error, why")."""
    return PydanticCustomError("folder_settings", "{why}", {"why": why})


def _root(entry: str) -> Root:
    """``NAME=/path`` or ``/path``, checked: a name that can start a path, an absolute path to
    an existing folder."""
    if "\x00" in entry:
        raise _refused("a folder cannot contain a NUL character")
    if entry.startswith("/"):
        path = entry
        name = os.path.basename(os.path.normpath(entry))
    else:
        name, sep, path = entry.partition("=")
        if not sep:
            raise _refused(f"{entry!r} is not NAME=/absolute/path nor an absolute path")
        name = name.strip()
    if not os.path.isabs(path):
        raise _refused(f"{path!r} is not an absolute path (it must start with /)")
    if not name or name in (".", "..") or "/" in name or len(name) > MAX_ROOT_NAME:
        raise _refused(
            f"{name!r} cannot name a folder: give a short name without /, like Documents"
        )
    real = os.path.realpath(path)
    if not os.path.exists(real):
        raise _refused(f"there is no folder {path} on this machine")
    if not os.path.isdir(real):
        raise _refused(f"{path} is a file, not a folder")
    if real == "/":
        raise _refused("the whole machine cannot be connected: name your own folders")
    return Root(name=name, path=real, identity=_identity(real))


def _identity(path: str) -> str:
    found = os.stat(path)
    return f"{found.st_dev}:{found.st_ino}"


def steward_places(env: ConnectorEnv) -> tuple[str, ...]:
    """Where Steward keeps its own data: its data folder (the database, the vault key, the
    workspace: the workspace is always ``<data folder>/workspace``) and its config file."""
    return tuple(os.path.realpath(p) for p in (env.workspace.root.parent, config_file()))


def refuse_steward_places(settings: FolderSettings, places: Sequence[str]) -> None:
    """:class:`ConnectionFailed` when a root holds one of Steward's own ``places`` or lies
    inside one: the agent would reach the vault key, the database or the config file."""
    for root in settings.folders:
        for place in places:
            if place == root.path or place.startswith(root.path.rstrip("/") + "/"):
                why = "the folders inside it you want Steward to see"
                raise ConnectionFailed(
                    f"{root.name} ({root.path}) holds Steward's own data ({place}): connect {why}"
                )
            if root.path.startswith(place + "/"):
                raise ConnectionFailed(
                    f"{root.name} ({root.path}) is inside Steward's own data ({place}): "
                    "connect your own folders"
                )


def settings_of(connection: Connection) -> FolderSettings:
    """The connection's typed settings (checked when it was made; a folder since removed is a
    plain failure)."""
    try:
        return FolderSettings.model_validate(connection.settings)
    except ValidationError as exc:
        problems = "; ".join(err["msg"] for err in exc.errors())
        raise ConnectionFailed(
            f"the folders of {connection.name} no longer fit: {problems}"
        ) from None
