"""One exception hierarchy, split by audience.

* :class:`Signal` — raised by user code (step functions, tools) *into* the runtime to ask for
  something: retry later, wait, stop. They are control flow, not failures.
* :class:`UsageError` — the caller's mistake (bad input, unknown id, illegal transition). The
  message says how to fix it; API layers map these to 4xx status codes.
* :class:`StewardRuntimeError` — something went wrong inside Steward or a backend.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any


class StewardError(Exception):
    """Base of every exception Steward raises on purpose."""

    status_code: int = 500


# --- signals -------------------------------------------------------------------------------


class Signal(StewardError):
    """Control flow raised by user code into the runtime."""


class RetryLater(Signal):
    """The step failed in a way worth retrying; the runtime applies backoff and max attempts."""

    def __init__(
        self, reason: str, *, delay_seconds: float | None = None, attempt: bool = True
    ) -> None:
        super().__init__(reason)
        self.reason = reason
        self.delay_seconds = delay_seconds
        self.attempt = attempt
        """False: the step only has to wait (an effect that may still be in flight), which
        does not count as a failed attempt."""


class StopRequested(Signal):
    """Raised at a step boundary when the task was cancelled or paused from outside."""

    def __init__(self, kind: str) -> None:
        super().__init__(f"task {kind} requested")
        self.kind = kind


# --- usage errors --------------------------------------------------------------------------


class UsageError(StewardError):
    """The caller asked for something impossible; the message says what to change."""

    status_code = 400


class NotFound(UsageError):
    """A referenced object does not exist (or belongs to another person)."""

    status_code = 404

    def __init__(self, kind: str, ident: Any) -> None:
        super().__init__(f"{kind} {ident!r} not found")
        self.kind = kind
        self.ident = ident


class NoneStartsWith(NotFound):
    """No object of a kind the caller may see has an id starting with the given prefix."""

    def __init__(self, kind: str, prefix: str) -> None:
        UsageError.__init__(self, f"no {kind} starts with {prefix!r}")
        self.kind = kind
        self.ident = prefix


class InvalidTransition(UsageError):
    """A status change the state machine does not allow."""

    status_code = 409


class Conflict(UsageError):
    """The object changed since the caller read it; read it again and redo the change."""

    status_code = 409


class EffectMaybeInFlight(Conflict):
    """An effect whose outcome is unknown may still be on its way: the process that marked it
    sent could start the request until ``not_before`` (by the database's clock). Until then
    nobody may decide it did not happen, nor send it again without a key the service
    dedupes."""

    def __init__(self, message: str, *, not_before: datetime, seconds_left: float) -> None:
        super().__init__(message)
        self.not_before = not_before
        self.seconds_left = seconds_left


class ConfigError(UsageError):
    """Bad configuration (database URL, trigger spec, time zone, ...)."""


class Unauthorized(UsageError):
    """No valid credential: unknown, malformed or revoked token (never says which)."""

    status_code = 401


class Forbidden(UsageError):
    """A valid credential without the scope the request needs."""

    status_code = 403


class TooLarge(UsageError):
    """A request, or a value to store, beyond a limit (the message names the limit)."""

    status_code = 413


class TooMany(UsageError):
    """More at once than a person may have open (the message names the limit)."""

    status_code = 429


# --- runtime errors ------------------------------------------------------------------------


class StewardRuntimeError(StewardError):
    """A failure inside Steward or one of its backends."""


class LeaseLost(StewardRuntimeError):
    """A fenced write was rejected: another worker owns the task now. Stop touching it."""

    def __init__(self, task_id: str, epoch: int) -> None:
        super().__init__(f"lease on task {task_id} at epoch {epoch} was lost; write rejected")
        self.task_id = task_id
        self.epoch = epoch


class DatabaseUnavailable(StewardRuntimeError):
    """The database cannot be reached right now: restarting, failing over, refusing
    connections, or locked by another process beyond the busy timeout. The operation did not
    complete (a commit cut off mid-way may or may not have landed: the fence decides what a
    retry may still write). Try again later."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"database unavailable: {reason}")
        self.reason = reason


class DatabaseUnusable(StewardRuntimeError):
    """The database cannot be used at all, however long one waits: the file is not a
    database, its schema was written by a newer Steward, or it is read-only. The person must
    act (the message says how); nothing was changed."""


class EffectInDoubt(StewardRuntimeError):
    """A side effect may or may not have happened, and the tool cannot tell; a person decides."""

    def __init__(self, effect_id: str, key: str) -> None:
        super().__init__(f"effect {effect_id} (key {key}) is in doubt; it needs a decision")
        self.effect_id = effect_id
        self.key = key


class EffectFailed(StewardRuntimeError):
    """A tool says for certain that its side effect did not happen (and will not on retry)."""


class NotSent(StewardRuntimeError):
    """A request certainly did not leave: its send deadline passed before the bytes would
    have gone, a lookup it needed failed (the database, a name), or no address accepted the
    connection. Unlike a failure after sending, the effect is not in doubt: it is retried."""


class ChannelUnavailable(StewardRuntimeError):
    """A channel (a notification service, a push service, a mail server, a homeserver) could
    not take a message now; trying again later may work."""


class ChannelRefused(StewardRuntimeError):
    """A channel refused a message for good (a bad address, a revoked push subscription, an
    unknown room): retrying will not help; the person is told to fix the channel."""


class ChannelGone(ChannelRefused):
    """The channel's far end is gone for good (a push subscription the browser dropped, the
    app removed): the channel is turned off and the person told to set it up again."""
