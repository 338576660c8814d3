"""How the mail connector fails, in plain words: a certain refusal (:class:`MailError`) or a
server gone (:class:`MailUnreachable`), the server's own words for a refusal, and the text
that is never sent to a server."""

from __future__ import annotations

import ast
import contextlib
import re
from collections.abc import Iterable

from steward.errors import EffectFailed, StewardRuntimeError

CONTROL = re.compile(r"[\x00-\x1f\x7f]")
"""Characters never sent to the server: imapclient quotes an argument but lets CR and LF
through, and a line break ends the command (the rest would be read as another one)."""


class MailError(EffectFailed):
    """The server or the account certainly did not do what was asked (the message says why, in
    plain words): refused sign-in, unknown folder or message, a refused command."""


class MailUnreachable(StewardRuntimeError):
    """The server could not be reached or stopped answering: try again later. For a write, its
    outcome is unknown."""


def text_of(value: object) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


def server_words(exc: BaseException) -> str:
    """An IMAP error's text in the server's words: without the bytes notation (one line or a
    list of lines), response codes and Dovecot's timings around them; imapclient's hint about
    search syntax (the lines after the first) is for programmers."""
    text = next(iter(str(exc.args[0] if exc.args else exc).strip().splitlines()), "")
    if text.startswith(("b'", 'b"', "[b")):
        with contextlib.suppress(ValueError, SyntaxError, MemoryError, RecursionError):
            value = ast.literal_eval(text)
            lines = value if isinstance(value, list | tuple) else [value]
            text = " ".join(text_of(line) for line in lines)
    text = re.sub(r"\[[A-Z-]+\]\s*", "", text)
    text = re.sub(r"\s*\([\d.]+( \+ [\d.]+)* secs\)", "", text)
    return " ".join(text.split()).strip(" .") or "no reason given"


def refuse_control(values: Iterable[object]) -> None:
    """:class:`MailError` when one of ``values`` (or of a list in them) is text with a line
    break or another control character."""
    for value in values:
        if isinstance(value, list | tuple):
            refuse_control(value)
        elif isinstance(value, str) and CONTROL.search(value):
            raise MailError(
                "a search, a folder name or a label cannot contain a line break or another "
                "control character"
            )
